"""The bag kernel against its definition: the dot product of feature counts."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import kernel

bags = st.lists(st.lists(st.sampled_from("abcdefg"), max_size=6).map(tuple), min_size=1,
                max_size=8)


def _literal(x, y, binary):
    cx = Counter(set(x)) if binary else Counter(x)
    cy = Counter(set(y)) if binary else Counter(y)
    return float(sum(cx[f] * cy[f] for f in set(cx) | set(cy)))


@pytest.mark.parametrize("binary", [True, False])
@given(X=bags, Y=bags)
@settings(max_examples=60, deadline=None)
def test_bag_gram_equals_definition(binary, X, Y):
    k = kernel("bag", binary=binary)
    want = np.array([[_literal(x, y, binary) for y in Y] for x in X])
    assert np.array_equal(k(X, Y), want)
    K = k(X)
    assert np.array_equal(K, K.T)
    assert np.linalg.eigvalsh(K).min() >= -1e-9 * max(1.0, np.abs(K).max())
    assert np.array_equal(k.diag(X), np.diag(K))


def test_bag_rejects_strings_and_non_strings():
    k = kernel("bag")
    with pytest.raises(TypeError, match="item 0 is a str"):
        k(["abc"])
    with pytest.raises(TypeError, match="holds 3"):
        k([("a", 3)])
    with pytest.raises(TypeError, match="binary must be a bool"):
        kernel("bag", binary=1)([("a",)])
