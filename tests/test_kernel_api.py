"""The Kernel API: parameters, calls, Gram, diag, normalisation and algebra."""

from __future__ import annotations

import numpy as np
import pytest
from _kernels_for_tests import CountingOverlap, SlowDot
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone

import structkernels as sk
from structkernels import Kernel, Normalized
from structkernels.engine.checks import ZeroSelfSimilarityWarning
from structkernels.kernels.base import ProductKernel, ScaledKernel, SumKernel


def words(n, seed=0):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list("abcdefg"), size=rng.integers(0, 6))) for _ in range(n)]


def test_call_gives_float_and_gram_matches_pairwise_calls():
    k = CountingOverlap()
    X = words(17)
    K = k.gram(X)
    assert K.dtype == np.float64 and K.shape == (17, 17)
    assert np.array_equal(K, K.T)
    expected = np.array([[k.value(x, y) for y in X] for x in X])
    assert np.array_equal(K, expected)
    assert isinstance(k.value(X[0], X[1]), float)
    Y = words(5, seed=1)
    KY = k.gram(X, Y)
    assert KY.shape == (17, 5)
    assert np.array_equal(KY, [[k.value(x, y) for y in Y] for x in X])
    assert np.array_equal(k.diag(X), np.diag(K))


def test_params_clone_repr():
    k = sk.kernel("rbf", bandwidth=2.5)
    assert k.get_params() == {"bandwidth": 2.5, "sigma": None}
    c = clone(k)
    assert c is not k and c.get_params() == k.get_params()
    assert repr(k) == "RBFKernel(bandwidth=2.5)"
    s = sk.Normalized(k) + 0.5 * sk.kernel("linear")
    params = s.get_params(deep=True)
    assert params["k1__kernel__bandwidth"] == 2.5 and params["k2__scale"] == 0.5
    s.set_params(k1__kernel__bandwidth=1.0)
    assert s.k1.kernel.bandwidth == 1.0
    assert clone(s).get_params(deep=True)["k1__kernel__bandwidth"] == 1.0


def test_bad_params_are_reported_at_use():
    k = sk.kernel("rbf", bandwidth=-1.0)  # construction stores verbatim
    with pytest.raises(ValueError, match="bandwidth"):
        k.gram(np.ones((2, 2)))
    with pytest.raises(ValueError, match="scale"):
        (-1.0 * sk.kernel("linear")).gram(np.ones((2, 2)))


def test_algebra_values():
    X = np.random.default_rng(0).normal(size=(9, 3))
    lin, rbf = sk.kernel("linear"), sk.kernel("rbf", bandwidth=1.3)
    assert isinstance(lin + rbf, SumKernel)
    assert isinstance(lin * rbf, ProductKernel)
    assert isinstance(3 * lin, ScaledKernel) and isinstance(lin * 3, ScaledKernel)
    np.testing.assert_allclose((lin + rbf).gram(X), lin.gram(X) + rbf.gram(X), atol=1e-12)
    np.testing.assert_allclose((lin * rbf).gram(X), lin.gram(X) * rbf.gram(X), atol=1e-12)
    np.testing.assert_allclose((2.5 * rbf).gram(X), 2.5 * rbf.gram(X), atol=1e-12)
    np.testing.assert_allclose((lin + rbf).diag(X), lin.diag(X) + rbf.diag(X), atol=1e-12)


def test_normalized_diagonal_is_one_and_zero_self_similarity_warns():
    X = words(12) + ["", "ab"]
    k = Normalized(CountingOverlap())
    with pytest.warns(ZeroSelfSimilarityWarning):
        K = k.gram(X)
    nonzero = np.array([len(set(x)) > 0 for x in X])
    np.testing.assert_allclose(np.diag(K)[nonzero], 1.0)
    assert np.all(K[~nonzero] == 0) and np.all(K[:, ~nonzero] == 0)
    raw = CountingOverlap().gram(X)
    i, j = 0, 13
    assert K[i, j] == pytest.approx(raw[i, j] / np.sqrt(raw[i, i] * raw[j, j]))
    # the engine's normalize= option gives the same matrix
    with pytest.warns(ZeroSelfSimilarityWarning):
        np.testing.assert_allclose(sk.gram(CountingOverlap(), X, normalize=True), K)
    with pytest.warns(ZeroSelfSimilarityWarning):
        KY = sk.gram(CountingOverlap(), X[:5], X, normalize=True)
    np.testing.assert_allclose(KY, K[:5])


def test_bare_string_is_refused():
    with pytest.raises(TypeError, match="bare str"):
        CountingOverlap().gram("abc")


def test_subclass_with_only_gram_block_gets_call_and_diag():
    class Block(Kernel):
        def gram_block(self, X, Y):
            return np.array([[float(x == y) for y in Y] for x in X])

    k = Block()
    assert k.value("a", "a") == 1.0 and k.value("a", "b") == 0.0
    assert k.diag(["a", "b"]).tolist() == [1.0, 1.0]


def _psd(K, tol=1e-8):
    w = np.linalg.eigvalsh((K + K.T) / 2)
    return w.min() >= -tol * max(1.0, abs(w).max())


finite = st.floats(-3, 3, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(
    X=arrays(np.float64, st.tuples(st.integers(2, 12), st.integers(1, 4)), elements=finite),
    sigma=st.floats(0.2, 5.0),
    scale=st.floats(0.0, 4.0),
    degree=st.integers(1, 3),
)
def test_sums_and_products_of_psd_kernels_stay_psd(X, sigma, scale, degree):
    rbf = sk.kernel("rbf", bandwidth=sigma)
    lin = sk.kernel("linear")
    poly = sk.kernel("polynomial", degree=degree, gamma=0.5, coef0=1.0)
    for k in (rbf + lin, rbf * lin, scale * poly + rbf, Normalized(poly) * rbf, lin * lin + poly):
        K = k.gram(X)
        assert np.allclose(K, K.T)
        assert _psd(K)


@settings(max_examples=25, deadline=None)
@given(X=arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 4)), elements=finite))
def test_python_pair_kernel_symmetric_psd(X):
    K = SlowDot().gram(list(X))
    assert np.array_equal(K, K.T)
    assert _psd(K)
