"""Vector kernels against scikit-learn's pairwise kernels."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import pairwise

import structkernels as sk


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    return rng.normal(size=(40, 6)), rng.normal(size=(13, 6))


@pytest.mark.parametrize(
    "name, params, reference",
    [
        ("linear", {}, lambda X, Y: pairwise.linear_kernel(X, Y)),
        ("cosine", {}, lambda X, Y: pairwise.cosine_similarity(X, Y)),
        ("rbf", {"bandwidth": 1.7}, lambda X, Y: pairwise.rbf_kernel(X, Y, gamma=1 / (2 * 1.7**2))),
        ("laplacian", {"bandwidth": 2.0}, lambda X, Y: pairwise.laplacian_kernel(X, Y, gamma=0.5)),
        (
            "polynomial",
            {"degree": 2, "gamma": 0.3, "coef0": 1.0},
            lambda X, Y: pairwise.polynomial_kernel(X, Y, degree=2, gamma=0.3, coef0=1.0),
        ),
        (
            "polynomial",
            {},
            lambda X, Y: pairwise.polynomial_kernel(X, Y, degree=3, gamma=None, coef0=1.0),
        ),
    ],
)
def test_equal_to_sklearn(data, name, params, reference):
    X, Y = data
    k = sk.kernel(name, **params)
    np.testing.assert_allclose(sk.gram(k, X), reference(X, X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(sk.gram(k, X, Y), reference(X, Y), rtol=0, atol=1e-10)
    # blocked and parallel paths give the same numbers
    np.testing.assert_allclose(
        sk.gram(k, X, block_size=7, n_jobs=2), reference(X, X), rtol=0, atol=1e-10
    )
    assert k.value(X[0], Y[0]) == pytest.approx(reference(X[:1], Y[:1])[0, 0], abs=1e-10)


def test_cosine_zero_vector_like_sklearn():
    X = np.array([[0.0, 0.0], [1.0, 2.0]])
    np.testing.assert_allclose(sk.gram("cosine", X), pairwise.cosine_similarity(X))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_refused_with_row(bad):
    X = np.ones((5, 3))
    X[3, 1] = bad
    with pytest.raises(ValueError, match=r"NaN or infinity in row\(s\) \[3\]"):
        sk.gram("rbf", X)


def test_wrong_shape_refused():
    with pytest.raises(ValueError, match="2-D"):
        sk.gram("linear", np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="2-D float array.*could not convert"):
        sk.gram("linear", [["a", "b"]])
    with pytest.raises(ValueError, match="Expected 2D array"):
        sk.gram("linear", np.ones(3))
    with pytest.raises(TypeError, match="sparse input is not supported"):
        import scipy.sparse

        sk.gram("linear", scipy.sparse.eye(3))


@pytest.mark.parametrize("name", ["linear", "cosine", "rbf", "laplacian", "polynomial"])
def test_batched_diag_equals_gram_diagonal(name):
    X = np.random.default_rng(3).normal(size=(25, 4))
    X[4] = 0.0
    k = sk.kernel(name)
    np.testing.assert_allclose(k.diag(X), np.diag(sk.gram(k, X)), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "name, params",
    [("linear", {}), ("cosine", {}), ("rbf", {"bandwidth": 0.7}), ("laplacian", {"bandwidth": 2.0}),
     ("polynomial", {"degree": 2}), ("polynomial", {"degree": 3, "gamma": 0.3, "coef0": 0.5})],
)
def test_sklearn_callable_pairs_equal_the_gram(name, params):
    """scikit-learn calls a callable kernel once per pair of 1-D rows; that fast path gives
    the Gram's values (a zero row included, for cosine)."""
    from sklearn.metrics.pairwise import pairwise_kernels

    X = np.random.default_rng(1).normal(size=(30, 4))
    X[5] = 0.0
    k = sk.kernel(name, **params)
    K = sk.gram(k, X)
    np.testing.assert_allclose(pairwise_kernels(X, metric=k), K, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(pairwise_kernels(X[:7], X[7:], metric=k), K[:7, 7:],
                               rtol=1e-12, atol=1e-13)


def test_sklearn_callable_pairs_are_checked():
    k = sk.kernel("rbf")
    with pytest.raises(ValueError, match="different dimensions, 2 and 3"):
        k(np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="NaN or infinity"):
        k(np.array([1.0, np.nan]), np.ones(2))
    with pytest.raises(TypeError, match="booleans"):
        k(np.array([True, False]), np.ones(2))
    with pytest.raises(ValueError, match=r"k\(x, y\)|overflow"):
        sk.kernel("linear")(np.array([1e300, 1e300]), np.array([1e300, 1e300]))
    with pytest.raises(ValueError, match="bandwidth"):
        sk.kernel("rbf", bandwidth=-1.0)(np.ones(2), np.ones(2))


@pytest.mark.parametrize("name", ["rbf", "laplacian"])
def test_sigma_is_the_deprecated_name_of_the_bandwidth(name):
    from structkernels.kernels.vector import BandwidthRenamedWarning
    from structkernels.utils import StructkernelsWarning

    X = np.random.default_rng(0).normal(size=(6, 3))
    with pytest.warns(BandwidthRenamedWarning, match="bandwidth") as record:
        old = sk.kernel(name, sigma=0.7)
    assert issubclass(record[0].category, StructkernelsWarning)
    assert issubclass(record[0].category, FutureWarning)
    np.testing.assert_array_equal(old.gram(X), sk.kernel(name, bandwidth=0.7).gram(X))
    with pytest.raises(ValueError, match="sigma"):
        sk.kernel(name, sigma=-1.0).gram(X)
