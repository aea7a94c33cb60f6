"""The example plugin (plugins/structkernels-example) is found by name and works everywhere."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import structkernels as sk

labels = st.sampled_from(["a", "b", "c", "bind-01"])
edges = st.sampled_from(["ARG0", "ARG1", "op1"])
paths = st.lists(st.tuples(edges, labels), min_size=1, max_size=5).map(
    lambda ts: sk.Path([(None, ts[0][1])] + ts[1:])
)


def test_discovered_by_name():
    assert "bag-of-labels" in sk.list_kernels()
    k = sk.kernel("bag-of-labels", use_edges=False)
    assert type(k).__module__ == "structkernels_example"


def literal(x, y, use_edges=True):
    def bag(p):
        out = Counter(n for _, n in p)
        if use_edges:
            out.update(":" + e for e, _ in p if e is not None)
        return out

    bx, by = bag(x), bag(y)
    return float(sum(c * by[k] for k, c in bx.items()))


@settings(max_examples=30, deadline=None)
@given(X=st.lists(paths, min_size=1, max_size=8), use_edges=st.booleans())
def test_fast_path_equals_definition_and_is_psd(X, use_edges):
    k = sk.kernel("bag-of-labels", use_edges=use_edges)
    K = sk.gram(k, X)
    expected = np.array([[literal(x, y, use_edges) for y in X] for x in X])
    np.testing.assert_allclose(K, expected)
    assert np.linalg.eigvalsh(K).min() >= -1e-9 * max(1, np.abs(K).max())


def test_in_gram_transformer_and_parallel():
    rng = np.random.default_rng(0)
    X = [
        sk.Path([(None, "bind-01")] + [(str(rng.choice(["ARG0", "ARG1"])), str(rng.choice(list("abc"))))
                                       for _ in range(rng.integers(1, 5))])
        for _ in range(30)
    ]
    t = sk.GramTransformer("bag-of-labels", normalize=True).fit(X[:20])
    K = t.transform(X[20:])
    assert K.shape == (10, 20) and np.all(K <= 1 + 1e-12)
    np.testing.assert_allclose(sk.gram("bag-of-labels", X, n_jobs=2, block_size=8),
                               sk.gram("bag-of-labels", X))


def test_trees_too_and_bad_input():
    t = sk.Tree("bind-01", [("ARG1", sk.Tree("protein")), ("ARG2", sk.Tree("protein"))])
    assert sk.kernel("bag-of-labels").value(t, t) == 1 + 4 + 1 + 1
    with pytest.raises(TypeError, match="item 0 is a str"):
        sk.gram("bag-of-labels", ["not a path"])
