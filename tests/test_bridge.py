"""scikit-learn bridge: GramTransformer in pipelines and grid search; kernel distances."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

import structkernels as sk
from structkernels import GramTransformer, kernel_to_distance
from structkernels.sklearn import GramTransformer as _GT


def blobs(n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, 3)) + 2.5 * y[:, None]
    return X, y


def test_transform_is_gram_against_training_set():
    X, _ = blobs()
    t = GramTransformer("rbf", kernel_params={"bandwidth": 1.5}).fit(X[:40])
    K = t.transform(X[40:])
    np.testing.assert_allclose(K, sk.gram("rbf", X[40:], X[:40], bandwidth=1.5))
    np.testing.assert_allclose(t.fit_transform(X[:40]), sk.gram("rbf", X[:40], bandwidth=1.5))
    assert t.kernel_.bandwidth == 1.5 and len(t.X_fit_) == 40


def test_normalize_option():
    X, _ = blobs()
    t = GramTransformer("polynomial", kernel_params={"degree": 2}, normalize=True)
    K = t.fit_transform(X)
    np.testing.assert_allclose(np.diag(K), 1.0)
    np.testing.assert_allclose(t.transform(X[:5]), K[:5], atol=1e-12)


def test_pipeline_with_precomputed_svc_and_grid_search():
    X, y = blobs(80)
    model = make_pipeline(GramTransformer("rbf"), SVC(kernel="precomputed"))
    model.fit(X[:60], y[:60])
    assert model.score(X[60:], y[60:]) >= 0.85
    grid = GridSearchCV(
        make_pipeline(GramTransformer(sk.kernel("rbf")), SVC(kernel="precomputed")),
        {"gramtransformer__kernel__bandwidth": [0.5, 2.0], "svc__C": [0.1, 1.0]},
        cv=3,
    )
    grid.fit(X, y)
    assert set(grid.best_params_) == {"gramtransformer__kernel__bandwidth", "svc__C"}
    assert grid.best_score_ >= 0.85


def test_structures_through_the_bridge():
    paths = [
        sk.Path([(None, "bind-01"), ("ARG1", "protein")]),
        sk.Path([(None, "bind-01"), ("ARG0", "enzyme")]),
        sk.Path([(None, "inhibit-01"), ("ARG1", "protein")]),
    ]
    t = GramTransformer("bag-of-labels").fit(paths)
    K = t.transform(paths)
    assert K.shape == (3, 3) and np.allclose(K, K.T)


def test_kernel_to_distance_with_knn():
    X, y = blobs(70)
    k = sk.kernel("rbf", bandwidth=2.0)
    Ktr, Kte = k.gram(X[:50]), k.gram(X[50:], X[:50])
    Dtr = kernel_to_distance(Ktr, np.diag(Ktr))
    Dte = kernel_to_distance(Kte, k.diag(X[50:]), np.diag(Ktr))
    assert np.allclose(np.diag(Dtr), 0) and np.all(Dtr >= 0)
    # for the linear kernel the induced distance is the Euclidean distance
    lin = sk.kernel("linear")
    D = kernel_to_distance(lin.gram(X), lin.diag(X))
    E = np.linalg.norm(X[:, None] - X[None], axis=-1)
    np.testing.assert_allclose(D, E, atol=1e-6)
    knn = KNeighborsClassifier(n_neighbors=3, metric="precomputed").fit(Dtr, y[:50])
    assert knn.score(Dte, y[50:]) >= 0.85
    with pytest.raises(ValueError, match="shape"):
        kernel_to_distance(Ktr, np.ones(3))


def test_not_fitted_and_feature_mismatch():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        GramTransformer().transform(np.ones((2, 2)))
    t = GramTransformer().fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="features"):
        t.transform(np.ones((2, 5)))


@parametrize_with_checks([_GT(), _GT(kernel="rbf", normalize=True)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
