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
        ("rbf", {"sigma": 1.7}, lambda X, Y: pairwise.rbf_kernel(X, Y, gamma=1 / (2 * 1.7**2))),
        ("laplacian", {"sigma": 2.0}, lambda X, Y: pairwise.laplacian_kernel(X, Y, gamma=0.5)),
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
