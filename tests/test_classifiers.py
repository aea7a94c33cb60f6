"""KernelSVC, HashForestClassifier and inner cross-validation (structkernels.classifiers)."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from _kernels_for_tests import CountingOverlap, n_calls
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GroupKFold, cross_val_score
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from structkernels import Normalized, Path, kernel
from structkernels.classifiers import (
    ApproximationWarning,
    HashForestClassifier,
    InnerCVClassifier,
    KernelSVC,
    select_by_inner_cv,
    slice_gram,
)
from structkernels.classifiers.selection import cv_scores
from structkernels.utils import NonFiniteError

NODES = [["kinase", "Raf", "bind", "phosphorylate"], ["gene", "cell", "express", "Ras"]]
EDGES = [["ARG0", "ARG1"], ["mod", "op1"]]


def random_paths(n: int, seed: int, signal: float = 0.8) -> tuple[list[Path], np.ndarray]:
    """Random paths of two classes: each node and edge comes from its class's pool with
    probability ``signal``, else from either pool (the classes overlap)."""
    rng = random.Random(seed)
    paths, y = [], []

    def pick(pools: list[list[str]], label: int) -> str:
        return rng.choice(pools[label] if rng.random() < signal else pools[0] + pools[1])

    for _ in range(n):
        label = rng.randint(0, 1)
        paths.append(Path([(None, pick(NODES, label))] + [
            (pick(EDGES, label), pick(NODES, label)) for _ in range(rng.randint(1, 4))]))
        y.append(label)
    return paths, np.array(y)


def path_kernel():
    """The kernel of kernel="path" with kernel_params=None: the main job's, normalised."""
    return Normalized(kernel("path", lam=0.8, node_mismatch=0.9))


def blobs(n: int, seed: int = 0, gap: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return rng.normal(size=(n, 2)) + gap * y[:, None], y


@pytest.fixture(scope="module")
def path_data():
    Xtr, ytr = random_paths(80, seed=1)
    Xte, yte = random_paths(60, seed=2)
    assert 0 < ytr.sum() < len(ytr)
    return Xtr, ytr, Xte, yte


# ------------------------------------------------------------------ KernelSVC: exact
def test_exact_route_equals_sklearn_svc_on_the_same_gram(path_data):
    Xtr, ytr, Xte, _ = path_data
    kern = path_kernel()  # kernel_params=None and normalize="auto": the main job's, normalised
    K, K_te = kern.gram(Xtr), kern.gram(Xte, Xtr)
    ref = SVC(kernel="precomputed", C=2.0, class_weight="balanced").fit(K, ytr)
    ours = KernelSVC("path", C=2.0, n_jobs=1).fit(Xtr, ytr)
    assert ours.route_ == "exact" and ours.normalized_ and ours.approximation_error_ == 0.0
    assert ours.kernel_.kernel.get_params() == {**kernel("path").get_params(), "lam": 0.8,
                                                "node_mismatch": 0.9}
    assert ours.kernel_params is None
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_allclose(ours.decision_function(Xte), ref.decision_function(K_te),
                               rtol=0, atol=1e-8)
    np.testing.assert_array_equal(ours.predict(Xte), ref.predict(K_te))
    np.testing.assert_array_equal(ours.classes_, [0, 1])


def test_predict_with_support_vectors_only_equals_the_full_gram(path_data):
    Xtr, ytr, Xte, _ = path_data
    clf = KernelSVC("path", n_jobs=1).fit(Xtr, ytr)
    assert 0 < len(clf.support_) < len(Xtr)
    assert len(clf.support_vectors_) == len(clf.support_)
    alpha = np.zeros(len(Xtr))
    alpha[clf.support_] = clf.dual_coef_[0]
    K_te = path_kernel().gram(Xte, Xtr)
    full = K_te @ alpha + clf.intercept_[0]
    np.testing.assert_allclose(clf.decision_function(Xte), full, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(clf.predict(Xte), clf.classes_[(full > 0).astype(int)])


class CheckedOverlap(CountingOverlap):
    output_validation = "finite"  # no symmetry/PSD probe: every call is a Gram value


def test_predict_evaluates_the_kernel_against_support_vectors_only(tmp_path):
    log = str(tmp_path / "calls")
    rng = random.Random(0)
    X = ["".join(rng.choice("abcdef") for _ in range(4)) for _ in range(30)]
    y = np.array([int("a" in s) for s in X])
    clf = KernelSVC(CheckedOverlap(log), n_jobs=1).fit(X, y)
    assert not clf.normalized_  # the overlap kernel does not grow with size
    before = n_calls(log)
    clf.predict(X[:7])
    assert n_calls(log) - before == 7 * len(clf.support_) < 7 * len(X)


def test_any_two_labels_and_binary_only():
    X, y = blobs(40)
    names = np.array(["no", "yes"])[y]
    clf = KernelSVC("rbf", n_jobs=1).fit(X, names)
    assert clf.classes_.tolist() == ["no", "yes"]
    assert set(clf.predict(X).tolist()) <= {"no", "yes"}
    with pytest.raises(ValueError, match="Only binary"):
        KernelSVC("rbf", n_jobs=1).fit(X, np.arange(40) % 3)
    with pytest.raises(ValueError, match="1 class"):
        KernelSVC("rbf", n_jobs=1).fit(X, np.zeros(40))


# ------------------------------------------------------------------ KernelSVC: precomputed
def test_precomputed_mode_equals_the_kernel_mode(path_data):
    Xtr, ytr, Xte, _ = path_data
    kern = path_kernel()
    K, K_te = kern.gram(Xtr), kern.gram(Xte, Xtr)
    a = KernelSVC("path", n_jobs=1).fit(Xtr, ytr)
    b = KernelSVC("precomputed").fit(K, ytr)
    assert b.support_vectors_ is None and b.kernel_ is None and b.n_features_in_ == len(Xtr)
    np.testing.assert_allclose(a.decision_function(Xte), b.decision_function(K_te), atol=1e-10)
    with pytest.raises(ValueError, match="columns"):
        b.predict(K_te[:, :-1])
    with pytest.raises(ValueError, match="square"):
        KernelSVC("precomputed").fit(K[:, :-1], ytr)
    bad = K.copy()
    bad[3, 4] = np.nan
    with pytest.raises(NonFiniteError, match="row 3"):
        KernelSVC("precomputed").fit(bad, ytr)
    with pytest.raises(ValueError, match="do not apply"):
        KernelSVC("precomputed", kernel_params={"lam": 0.5}).fit(K, ytr)


# ------------------------------------------------------------------ KernelSVC: Nyström
def test_nystroem_route_reports_its_error_and_is_close_to_exact():
    X, y = blobs(400, seed=1)
    Xte, yte = blobs(200, seed=2)
    exact = KernelSVC("rbf", n_jobs=1).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ApproximationWarning)
        approx = KernelSVC("rbf", max_exact=100, n_components=60, random_state=0,
                           n_jobs=1).fit(X, y)
    assert approx.route_ == "nystroem" and exact.route_ == "exact"
    assert 0 <= approx.approximation_error_ <= approx.tol
    assert len(approx.landmark_indices_) == 60 and approx.normalization_.shape[0] == 60
    assert not hasattr(approx, "support_")
    assert abs(approx.score(Xte, yte) - exact.score(Xte, yte)) <= 0.03
    assert approx.score(Xte, yte) > 0.9
    # the same landmarks from a precomputed Gram give the same features
    pre = KernelSVC("precomputed", max_exact=100, n_components=60, random_state=0).fit(
        kernel("rbf").gram(X), y)
    np.testing.assert_array_equal(pre.landmark_indices_, approx.landmark_indices_)
    assert pre.approximation_error_ == pytest.approx(approx.approximation_error_, abs=1e-9)
    np.testing.assert_allclose(pre.decision_function(kernel("rbf").gram(Xte, X)),
                               approx.decision_function(Xte), atol=1e-6)


def test_nystroem_warns_when_tol_is_not_met(path_data):
    Xtr, ytr, Xte, _ = path_data
    with pytest.warns(ApproximationWarning, match="relative error"):
        clf = KernelSVC("path", max_exact=10, n_components=3, random_state=0, n_jobs=1).fit(
            Xtr, ytr)
    assert clf.approximation_error_ > clf.tol
    assert len(clf.landmarks_) == 3
    assert clf.predict(Xte).shape == (len(Xte),)
    # reproducible with random_state
    with pytest.warns(ApproximationWarning):
        again = KernelSVC("path", max_exact=10, n_components=3, random_state=0,
                          n_jobs=1).fit(Xtr, ytr)
    assert again.approximation_error_ == clf.approximation_error_


def test_refit_switches_route_and_drops_the_other_routes_state():
    X, y = blobs(60)
    clf = KernelSVC("rbf", max_exact=30, n_components=20, tol=1.0, random_state=0, n_jobs=1)
    assert clf.fit(X, y).route_ == "nystroem"
    clf.set_params(max_exact=100).fit(X, y)
    assert clf.route_ == "exact" and not hasattr(clf, "landmark_indices_")


# ------------------------------------------------------------------ HashForest
def test_hash_forest_is_reproducible_and_better_than_chance(path_data):
    Xtr, ytr, Xte, yte = path_data
    common = dict(n_bits=16, n_hashes=8, n_estimators=30, n_jobs=1)
    a = HashForestClassifier(random_state=0, **common).fit(Xtr, ytr)
    b = HashForestClassifier(random_state=0, **common).fit(Xtr, ytr)
    np.testing.assert_array_equal(a.reference_indices_, b.reference_indices_)
    np.testing.assert_array_equal(a.predict_proba(Xte), b.predict_proba(Xte))
    assert a.codes(Xte).shape == (len(Xte), 16 * 8)
    assert a.codes(Xte).dtype == bool
    np.testing.assert_array_equal(a.decision_function(Xte), a.predict_proba(Xte)[:, 1] - 0.5)
    c = HashForestClassifier(random_state=1, **common).fit(Xtr, ytr)
    assert not np.array_equal(a.codes(Xtr), c.codes(Xtr))
    # chance on a balanced score: 0.5
    from sklearn.metrics import balanced_accuracy_score

    assert balanced_accuracy_score(yte, a.predict(Xte)) > 0.7


def test_hash_forest_on_vectors_and_its_hashers_share_the_references():
    X, y = blobs(120, seed=3)
    Xte, yte = blobs(60, seed=4)
    clf = HashForestClassifier("rbf", n_bits=10, n_hashes=5, n_estimators=30, random_state=0,
                               n_jobs=1).fit(X, y)
    assert clf.score(Xte, yte) > 0.85
    assert len(clf.reference_indices_) == 11  # ceil(sqrt(120))
    for h in clf.hashers_:
        assert h.n_bits_ == 10 and len(h.reference_indices_) == 11


def test_hash_forest_precomputed_equals_the_kernel_mode(path_data):
    Xtr, ytr, Xte, _ = path_data
    kern = path_kernel()
    common = dict(n_bits=12, n_hashes=4, n_estimators=20, random_state=3, n_jobs=1)
    a = HashForestClassifier("path", **common).fit(Xtr, ytr)
    b = HashForestClassifier("precomputed", **common).fit(kern.gram(Xtr), ytr)
    assert b.reference_ is None
    np.testing.assert_array_equal(a.reference_indices_, b.reference_indices_)
    K_te = kern.gram(Xte, Xtr)
    np.testing.assert_array_equal(a.codes(Xte), b.codes(K_te))
    np.testing.assert_array_equal(a.predict_proba(Xte), b.predict_proba(K_te))
    with pytest.raises(ValueError, match="columns"):
        b.predict(K_te[:, :5])


def test_hash_forest_parameter_errors():
    X, y = blobs(20)
    with pytest.raises(ValueError, match="n_bits"):
        HashForestClassifier("rbf", n_bits=63).fit(X, y)
    with pytest.raises(ValueError, match="n_reference"):
        HashForestClassifier("rbf", n_reference=50).fit(X, y)
    with pytest.raises(ValueError, match="n_jobs"):
        HashForestClassifier("rbf", n_jobs=0).fit(X, y)


def test_hash_forest_on_what_check_classifiers_train_asks():
    """What scikit-learn's check_classifiers_train asks, spelled out: the decision function's
    sign (two classes) and argmax (more) are the prediction."""
    X, y = blobs(90, seed=5)
    clf = HashForestClassifier("rbf", n_bits=8, n_hashes=4, n_estimators=10, n_jobs=1,
                               random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.83
    with pytest.raises(ValueError, match="features"):
        clf.predict(X.T)
    with pytest.raises(ValueError, match="features"):
        clf.decision_function(X.T)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(proba, axis=1)])
    np.testing.assert_array_equal(clf.decision_function(X), proba[:, 1] - 0.5)
    np.testing.assert_array_equal(clf.classes_[(clf.decision_function(X) > 0).astype(int)],
                                  clf.predict(X))
    three = HashForestClassifier("rbf", n_bits=8, n_hashes=4, n_estimators=10, n_jobs=1,
                                 random_state=0).fit(X, np.arange(90) % 3)
    d = three.decision_function(X)
    assert d.shape == (90, 3)
    np.testing.assert_array_equal(three.classes_[np.argmax(d, axis=1)], three.predict(X))


# ------------------------------------------------------------------ selection
def test_slice_gram():
    K = np.arange(25.0).reshape(5, 5)
    assert slice_gram(K, [1, 3]).tolist() == [[6.0, 8.0], [16.0, 18.0]]
    assert slice_gram(K, [4], [0, 1]).shape == (1, 2)
    mask = np.array([True, False, True, False, False])
    np.testing.assert_array_equal(slice_gram(K, mask), K[np.ix_([0, 2], [0, 2])])
    with pytest.raises(ValueError, match="mask"):
        slice_gram(K, mask[:3])
    with pytest.raises(ValueError, match="2-D"):
        slice_gram(np.zeros(3), [0])


class GramSpy(ClassifierMixin, BaseEstimator):
    """A precomputed-Gram estimator that records every Gram it is fitted on or scores."""

    seen: list = []

    def __init__(self, kernel="precomputed"):
        self.kernel = kernel

    def fit(self, K, y):
        GramSpy.seen.append(("fit", np.array(K)))
        self.classes_ = np.unique(y)
        return self

    def predict(self, K):
        GramSpy.seen.append(("predict", np.array(K)))
        return np.full(len(K), self.classes_[-1])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = True
        return tags


def _decode(K):
    """Original (row, column) indices of an index-coded Gram K[i, j] = 1000 i + j."""
    K = K.astype(np.int64)
    return K // 1000, K % 1000


def test_selection_sees_only_training_rows_and_keeps_groups_together():
    n = 40
    idx = np.arange(n)
    K = 1000.0 * idx[:, None] + idx[None, :]
    y = idx % 2
    groups = idx // 4  # 10 groups of 4
    rng = np.random.default_rng(0)
    train = np.sort(rng.choice(n, size=28, replace=False))  # the outer training rows
    held_out = np.setdiff1d(idx, train)
    GramSpy.seen = []
    clf = InnerCVClassifier({"spy": GramSpy()}, cv=3).fit(
        slice_gram(K, train), y[train], groups=groups[train])
    assert clf.best_name_ == "spy" and len(clf.cv_scores_["spy"]) == 3
    fits = [k for what, k in GramSpy.seen if what == "fit"]
    predicts = [k for what, k in GramSpy.seen if what == "predict"]
    assert len(fits) == 4 and len(predicts) == 3  # three folds, then the refit
    scored = []
    for fit_k, pred_k in zip(fits[:3], predicts, strict=True):
        rows, cols = _decode(fit_k)
        fit_rows = rows[:, 0]
        assert fit_k.shape[0] == fit_k.shape[1] < len(train)
        np.testing.assert_array_equal(cols[0], fit_rows)  # square: rows = columns
        prow, pcol = _decode(pred_k)
        np.testing.assert_array_equal(pcol[0], fit_rows)  # test x train columns
        pred_rows = prow[:, 0]
        assert not set(pred_rows) & set(fit_rows)
        assert not set(groups[pred_rows]) & set(groups[fit_rows])  # GroupKFold
        assert not set(fit_rows) & set(held_out) and not set(pred_rows) & set(held_out)
        scored.extend(pred_rows.tolist())
    assert sorted(scored) == train.tolist()
    # the refit sees all of the training Gram and nothing else
    rows, cols = _decode(fits[3])
    assert fits[3].shape == (len(train), len(train))
    np.testing.assert_array_equal(rows[:, 0], train)
    assert clf.best_estimator_.classes_.tolist() == [0, 1]
    assert clf.__sklearn_tags__().input_tags.pairwise


def test_selection_agrees_with_sklearn_cross_validation_on_a_precomputed_gram(path_data):
    Xtr, ytr, _, _ = path_data
    K = path_kernel().gram(Xtr)
    groups = np.arange(len(Xtr)) // 5
    ours = cv_scores({"svm": KernelSVC("precomputed")}, K, ytr, groups=groups, cv=4)["svm"]
    theirs = cross_val_score(KernelSVC("precomputed"), K, ytr, groups=groups,
                             cv=GroupKFold(4), scoring="f1")
    np.testing.assert_allclose(ours, theirs)


def test_select_by_inner_cv_picks_the_better_candidate(path_data):
    Xtr, ytr, _, _ = path_data
    candidates = {
        "svm": KernelSVC(n_jobs=1),
        "constant": KernelSVC(C=1e-6, class_weight={0: 1.0, 1: 1e-6}, n_jobs=1),
    }
    best, scores = select_by_inner_cv(candidates, Xtr, ytr, cv=3, random_state=0)
    assert best == "svm" and scores["svm"] > scores["constant"]
    assert candidates["svm"].__dict__.get("classes_") is None  # candidates are never fitted
    with pytest.raises(ValueError, match="mix"):
        select_by_inner_cv({"a": KernelSVC(), "b": KernelSVC("precomputed")},
                           path_kernel().gram(Xtr), ytr)


# ------------------------------------------------------------------ scikit-learn protocol
@pytest.mark.parametrize("est", [
    KernelSVC("path", kernel_params={"lam": 0.5}, C=3.0, n_components=7, n_jobs=2),
    HashForestClassifier("path", kernel_params={"lam": 0.5}, n_bits=5, n_jobs=1),
])
def test_clone_and_params_verbatim(est):
    c = clone(est)
    assert c.get_params() == est.get_params()
    assert c.kernel_params is not est.kernel_params
    assert est.get_params()["kernel_params"] == {"lam": 0.5}


@pytest.mark.parametrize("est", [KernelSVC("rbf"), HashForestClassifier("rbf"),
                                 InnerCVClassifier({"svm": KernelSVC("rbf")})])
def test_not_fitted_errors(est):
    X, _ = blobs(5)
    with pytest.raises(NotFittedError):
        est.predict(X)


def test_tags():
    assert KernelSVC("precomputed").__sklearn_tags__().input_tags.pairwise
    assert not KernelSVC("path").__sklearn_tags__().input_tags.pairwise
    assert not KernelSVC("path").__sklearn_tags__().input_tags.two_d_array
    assert HashForestClassifier("precomputed").__sklearn_tags__().input_tags.pairwise


@parametrize_with_checks(
    [
        KernelSVC("rbf", n_jobs=1, random_state=0),
        HashForestClassifier("rbf", n_bits=8, n_hashes=4, n_estimators=10, n_jobs=1,
                             random_state=0),
    ],
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
