"""The plugin's estimators under scikit-learn's check_estimator, n_features_in_, and the
Nyström factor against scikit-learn's Nystroem."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import check_estimator
from structkernels_hsic import HSIC, PHSIC, IncompleteCholesky, StructuredHSIC, nystrom_factor
from structkernels_hsic._kernels import resolve_source

from structkernels import Path

#: Checks expected to fail with each estimator's default kernel, and why.
EXPECTED_FAILURES = {
    "HSIC": {},
    "PHSIC": {
        "check_n_features_in_after_fitting": (
            "PHSIC.score(X, Y) scores pairs: its second argument is the paired sample Y, which "
            "the check passes as the keyword y (the feature count itself is checked: "
            "test_n_features_in_is_set_and_checked)"
        ),
    },
    "StructuredHSIC": {
        "check_fit1d": (
            "a 1-D X is a sequence of scalar observations, read as one feature (docs/hsic.md)"
        ),
    },
    "IncompleteCholesky": {
        "check_dict_unchanged": (
            "n_kernel_evaluations_ counts transform's kernel evaluations too (documented)"
        ),
    },
}
ESTIMATORS = {"HSIC": HSIC, "PHSIC": PHSIC, "StructuredHSIC": StructuredHSIC,
              "IncompleteCholesky": IncompleteCholesky}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_check_estimator_passes_with_the_default_kernels(name):
    est = ESTIMATORS[name]()
    assert get_tags(est).input_tags.two_d_array  # rbf / cosine: vectors
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None, expected_failed_checks=EXPECTED_FAILURES[name])
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert failed == []
    assert len(results) > 30
    xfailed = {r["check_name"] for r in results if r["status"] == "xfail"}
    assert xfailed == set(EXPECTED_FAILURES[name])  # each stated failure still occurs


def _paths(n=12):
    return [Path([(None, "bind"), ("ARG0", f"a{i % 3}"), ("ARG1", f"b{i % 2}")]) for i in range(n)]


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_structure_kernels_and_precomputed_are_declared(name):
    kw = {"kernel": "path"} if name == "IncompleteCholesky" else {"kernel_x": "path"}
    assert not get_tags(ESTIMATORS[name](**kw)).input_tags.two_d_array
    if name != "StructuredHSIC":
        kw = {k: "precomputed" for k in kw}
        tags = get_tags(ESTIMATORS[name](**kw)).input_tags
        assert tags.pairwise and tags.two_d_array
    if name == "StructuredHSIC":
        assert not get_tags(StructuredHSIC(structure="grid")).input_tags.two_d_array


def test_n_features_in_is_set_and_checked():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(30, 4)), rng.normal(size=(30, 2))
    for est in (HSIC(), PHSIC(), PHSIC("rbf", "rbf", estimator="icd"),
                PHSIC("rbf", "rbf", estimator="naive"), StructuredHSIC(),
                StructuredHSIC(clique_kernel="concat")):
        assert est.fit(X, Y).n_features_in_ == 4
    model = PHSIC().fit(X, Y)
    with pytest.raises(ValueError, match="X has 3 features, but PHSIC is expecting 4 features"):
        model.score(X[:, :3], Y)
    icd = IncompleteCholesky().fit(X)
    assert icd.n_features_in_ == 4
    with pytest.raises(ValueError, match="X has 1 features, but IncompleteCholesky is expecting 4"):
        icd.transform(X[:, :1])
    with pytest.raises(ValueError, match="Reshape your data"):
        icd.transform(X[:, 0])
    # structures and Gram matrices have no features: a refit on them drops the attribute
    paths, y = _paths(), np.arange(12) % 2
    assert not hasattr(HSIC("path", "linear").fit(paths, y), "n_features_in_")
    h = HSIC().fit(X, Y)
    assert not hasattr(h.set_params(kernel_x="path", kernel_y="linear").fit(paths, y), "n_features_in_")
    K = X @ X.T
    assert not hasattr(PHSIC("precomputed", "precomputed", estimator="naive").fit(K, Y @ Y.T),
                       "n_features_in_")
    assert not hasattr(StructuredHSIC(structure="grid").fit(rng.normal(size=(5, 6)),
                                                            rng.normal(size=(5, 6))),
                       "n_features_in_")


def test_one_dimensional_x_is_refused_as_hsic_refuses_it():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=20), rng.normal(size=20)
    for est in (HSIC(), PHSIC("linear", "linear"), PHSIC("rbf", "rbf", estimator="icd"),
                IncompleteCholesky()):
        with pytest.raises(ValueError, match="Reshape your data"):
            est.fit(x, y) if not isinstance(est, IncompleteCholesky) else est.fit(x)
    # a 1-D Y is one column, and a 1-D sequence is one feature
    assert PHSIC("linear", "linear").fit(x[:, None], y).n_samples_ == 20
    assert StructuredHSIC().fit(x, y).n_features_in_ == 1


def test_nystrom_factor_equals_sklearns_nystroem_on_the_same_landmarks():
    """Uniform landmarks and a vector kernel: the same approximation A Aᵀ = C W⁺ Cᵀ."""
    from sklearn.kernel_approximation import Nystroem

    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 3))
    sigma = 1.3
    A, idx, residual, trace = nystrom_factor(
        resolve_source("rbf", {"sigma": sigma}, X), 15, landmarks="uniform", random_state=0)
    ny = Nystroem(kernel="rbf", gamma=1 / (2 * sigma**2), n_components=15).fit(X[idx])
    Z = ny.transform(X)
    np.testing.assert_allclose(A @ A.T, Z @ Z.T, atol=1e-10)
    assert residual == pytest.approx(trace - np.einsum("ij,ij->", Z, Z), abs=1e-8)
