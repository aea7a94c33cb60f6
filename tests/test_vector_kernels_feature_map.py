"""Kernel.feature_map: the explicit map of the linear and cosine kernels gives their Gram,
and every other kernel says it has none."""

from __future__ import annotations

import numpy as np
import pytest

import structkernels as sk
from structkernels import Normalized


def _phi(A: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    return A if w is None else w[:, None] * A


@pytest.mark.parametrize("name", ["linear", "cosine"])
def test_feature_map_gives_the_gram(name):
    rng = np.random.default_rng(0)
    k = sk.kernel(name)
    X = k.check_input(rng.normal(size=(7, 4)) * 3.0)
    Y = k.check_input(np.vstack([rng.normal(size=(4, 4)), np.zeros((1, 4))]))  # a zero row
    PX, PY = _phi(*k.feature_map(X)), _phi(*k.feature_map(Y))
    np.testing.assert_allclose(PX @ PY.T, k(X, Y), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(PY @ PY.T, k(Y), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.einsum("ij,ij->i", PY, PY), k.diag(Y), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["linear", "cosine"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_feature_map_keeps_the_data_and_its_dtype(name, dtype):
    X = np.random.default_rng(1).normal(size=(5, 3)).astype(dtype)
    X[2] = 0.0
    A, w = sk.kernel(name).feature_map(X)
    assert A is X  # no copy
    if name == "linear":
        assert w is None
    else:
        assert w.dtype == dtype and w.shape == (5,)
        assert w[2] == 1.0  # a zero row keeps scale 1 (its features stay 0)
        np.testing.assert_allclose(w[[0, 1, 3, 4]], 1.0 / np.linalg.norm(X[[0, 1, 3, 4]], axis=1),
                                   rtol=1e-6)


@pytest.mark.parametrize(
    "k",
    [sk.kernel("rbf"), sk.kernel("laplacian"), sk.kernel("polynomial"),
     Normalized(sk.kernel("linear")), sk.kernel("linear") + sk.kernel("cosine"),
     2.0 * sk.kernel("linear")],
    ids=repr,
)
def test_kernels_without_an_explicit_map_return_none(k):
    X = np.random.default_rng(2).normal(size=(3, 2))
    assert k.feature_map(X) is None


def test_structured_kernel_has_no_explicit_map():
    k = sk.kernel("path")
    P = k.check_input([sk.Path([(None, "a"), ("e", "b")])])
    assert k.feature_map(P) is None
