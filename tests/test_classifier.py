"""KernelKNNClassifier against a literal k-NN vote, scikit-learn's estimator checks."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from structkernels import KernelKNNClassifier, Normalized, kernel
from structkernels.neighbors.classifier import positive_class_scores


def _blobs(n, seed=0, d=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)) + 1.2 * y[:, None]
    return X, y


def _literal_knn(kern, Xtr, ytr, Xte, k, weights):
    """By-definition kernel k-NN: rank by (-k(x, x_i), i), vote, ties to the smaller class."""
    classes = sorted(set(ytr.tolist()))
    preds = []
    for x in Xte:
        ranked = sorted((-kern.value(x, xi), i) for i, xi in enumerate(Xtr))[:k]
        votes = dict.fromkeys(classes, 0.0)
        for negs, i in ranked:
            votes[ytr[i]] += 1.0 if weights == "uniform" else max(-negs, 0.0)
        best = max(votes.values())
        preds.append(min(c for c in classes if votes[c] == best))
    return np.array(preds)


@pytest.mark.parametrize("weights", ["uniform", "similarity"])
@pytest.mark.parametrize("k", [1, 4, 8])
def test_exact_predictions_match_literal_vote(weights, k):
    X, y = _blobs(60, seed=k)
    Xte, _ = _blobs(25, seed=100 + k)
    kern = kernel("rbf", bandwidth=1.5)
    # threshold=None: the most voted class, the rule of the literal vote
    clf = KernelKNNClassifier(kern, n_neighbors=k, weights=weights, threshold=None).fit(X, y)
    np.testing.assert_array_equal(clf.predict(Xte), _literal_knn(kern, X, y, Xte, k, weights))
    assert clf.n_evaluations_ == 25 * 60


def test_predict_proba_literal():
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    y = np.array(["a", "b", "b", "a"])
    clf = KernelKNNClassifier("linear", n_neighbors=3, weights="uniform", threshold=None).fit(X, y)
    # similarities of x=1: 0, 1, 2, 10 -> neighbours 3, 2, 1 -> a, b, b
    np.testing.assert_allclose(clf.predict_proba(np.array([[1.0]])), [[1 / 3, 2 / 3]])
    clf.set_params(weights="similarity").fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(np.array([[1.0]])), [[10 / 13, 3 / 13]])
    assert clf.predict(np.array([[1.0]])).tolist() == ["a"]


def test_precomputed_equals_kernel():
    X, y = _blobs(50, seed=3)
    Xte, yte = _blobs(20, seed=4)
    k = Normalized(kernel("polynomial", degree=2))
    a = KernelKNNClassifier(k, n_neighbors=5, weights="similarity").fit(X, y)
    b = KernelKNNClassifier("precomputed", n_neighbors=5, weights="similarity").fit(
        k.gram(X), y
    )
    np.testing.assert_allclose(a.predict_proba(Xte), b.predict_proba(k.gram(Xte, X)))
    assert b.n_evaluations_ == 0
    c = KernelKNNClassifier("polynomial", n_neighbors=5, weights="similarity", normalize=True,
                            kernel_params={"degree": 2}).fit(X, y)
    np.testing.assert_allclose(a.predict_proba(Xte), c.predict_proba(Xte))
    assert a.score(Xte, yte) == b.score(k.gram(Xte, X), yte)
    with pytest.raises(ValueError, match="columns"):
        b.predict(np.zeros((3, 7)))
    with pytest.raises(ValueError, match="square"):
        KernelKNNClassifier("precomputed").fit(np.zeros((3, 4)), [0, 1, 0])


@pytest.mark.parametrize("hashing", ["random-knn", "klsh"])
def test_hashed_classifier(hashing):
    X, y = _blobs(900, seed=5)
    Xte, yte = _blobs(300, seed=6)
    kern = kernel("rbf", bandwidth=2.0)
    exact = KernelKNNClassifier(kern, n_neighbors=8).fit(X, y)
    acc_exact = exact.score(Xte, yte)
    clf = KernelKNNClassifier(kern, n_neighbors=8, hashing=hashing, n_tables=1, probe=1,
                              n_probes=None, random_state=0)
    clf.fit(X, y)
    pred = clf.predict(Xte)
    n_evals = clf.n_evaluations_
    assert n_evals < 300 * 900 / 2
    assert clf.n_fit_evaluations_ > 0
    assert np.mean(pred == yte) > acc_exact - 0.05
    # every neighbour found is a real training structure with its true kernel value
    idx, sims = clf.kneighbors(Xte[:20])
    for i in range(20):
        for j, s in zip(idx[i], sims[i], strict=True):
            if j >= 0:
                assert np.isclose(s, kern.value(Xte[i], X[j]))
    # deterministic under random_state, also after clone
    again = clone(clf).fit(X, y)
    np.testing.assert_array_equal(again.predict(Xte), pred)
    assert again.n_evaluations_ == n_evals


def test_hashed_candidates_are_bucket_and_references():
    """With one table and no probing, test x is compared with its training bucket and A."""
    X, y = _blobs(200, seed=8)
    Xte, _ = _blobs(30, seed=9)
    kern = kernel("rbf")
    clf = KernelKNNClassifier(kern, n_neighbors=3, hashing="random-knn", n_tables=1, probe=0,
                              random_state=2)
    clf.fit(X, y)
    h = clf.hashers_[0]
    codes = h.hash(Xte)
    idx, sims = clf.kneighbors(Xte)
    ref = set(h.reference_indices_.tolist())
    expected_evals = 30 * len(ref)
    for i, c in enumerate(codes.tolist()):
        members = clf.buckets_[0].get(c, np.array([], dtype=int)).tolist()
        expected_evals += len(members)
        cand = sorted(set(members) | ref)
        ranked = sorted((-kern.value(Xte[i], X[j]), j) for j in cand)[:3]
        assert idx[i].tolist() == [j for _, j in ranked]
    assert clf.n_evaluations_ == expected_evals


def test_positive_class_scores_by_hand():
    y_true = [1, 1, 1, 0, 0, 0, 0]
    y_pred = [1, 1, 0, 1, 0, 0, 0]
    s = positive_class_scores(y_true, y_pred)
    # tp = 2, fp = 1, fn = 1
    assert s == {"f1": 2 / 3, "precision": 2 / 3, "recall": 2 / 3, "support": 3}
    X, y = _blobs(40)
    clf = KernelKNNClassifier("rbf", n_neighbors=3).fit(X, y)
    r = clf.positive_class_scores(X, y)
    assert set(r) == {"f1", "precision", "recall", "support"} and r["support"] == int(y.sum())


def test_not_fitted_and_bad_params():
    X, y = _blobs(20)
    with pytest.raises(NotFittedError):
        KernelKNNClassifier("rbf").predict(X)
    with pytest.raises(ValueError, match="n_neighbors"):
        KernelKNNClassifier("rbf", n_neighbors=0).fit(X, y)
    with pytest.raises(ValueError, match="weights"):
        KernelKNNClassifier("rbf", weights="distance").fit(X, y)
    with pytest.raises(ValueError, match="hashing"):
        KernelKNNClassifier("rbf", hashing="minhash").fit(X, y)
    with pytest.raises(ValueError, match="precomputed"):
        KernelKNNClassifier("precomputed", hashing="klsh").fit(np.eye(3), [0, 1, 0])
    with pytest.raises(ValueError, match="only with hashing"):
        KernelKNNClassifier("rbf", probe=1).fit(X, y)
    with pytest.raises(ValueError, match="labels"):
        KernelKNNClassifier("rbf").fit(X, y[:-1])


def test_clone_and_params():
    clf = KernelKNNClassifier("path", n_neighbors=4, hashing="klsh", kernel_params={"lam": 0.8},
                              hash_params={"n_sample": 50}, random_state=3)
    c = clone(clf)
    assert c.get_params() == clf.get_params()
    assert c.kernel_params is not clf.kernel_params  # deep-copied by clone


def _expected_failures(est):
    out = {
        # the documented kernel-evaluation counter n_evaluations_ is updated by predict
        "check_dict_unchanged": "n_evaluations_ counts the last predict's kernel evaluations",
    }
    if est.threshold is not None:
        # as scikit-learn's own TunedThresholdClassifierCV: predict applies the tuned
        # threshold to predict_proba's positive share, not argmax (the majority rule is
        # checked by the threshold=None instance)
        out["check_classifiers_train"] = "Threshold at probability 0.5 does not hold"
    return out


@parametrize_with_checks(
    [
        KernelKNNClassifier(kernel="rbf", n_neighbors=3),
        KernelKNNClassifier(kernel="rbf", n_neighbors=3, threshold=None),
        KernelKNNClassifier(kernel="rbf", n_neighbors=3, hashing="random-knn", random_state=0),
    ],
    expected_failed_checks=_expected_failures,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ----------------------------------------------- the decision rule at a low positive rate
def _rare_positives(n=400, rate=0.06, seed=0):
    """1-D points: positives around 1.0 among negatives spread over [0, 1.2]; at this rate
    most positives have a majority of negative neighbours."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < rate).astype(int)
    x = np.where(y == 1, rng.normal(1.0, 0.05, n), rng.uniform(0.0, 1.2, n))
    return x[:, None], y


def test_auto_threshold_finds_rare_positives_that_the_majority_vote_misses():
    X, y = _rare_positives()
    Xt, yt = _rare_positives(seed=1)
    common = dict(kernel="rbf", kernel_params={"bandwidth": 0.02}, n_neighbors=8,
                  weights="similarity")
    majority = KernelKNNClassifier(**common, threshold=None).fit(X, y)
    auto = KernelKNNClassifier(**common, threshold="auto").fit(X, y)
    assert majority.threshold_ is None
    assert 0.0 < auto.threshold_ < 0.5  # chosen below a majority for the rare class
    assert len(auto.train_scores_) == len(y)
    f_maj = positive_class_scores(yt, majority.predict(Xt))["f1"]
    f_auto = positive_class_scores(yt, auto.predict(Xt))["f1"]
    assert f_auto > f_maj + 0.1
    # the leave-one-out search excludes the structure itself, and its cost is counted
    assert auto.n_fit_evaluations_ > majority.n_fit_evaluations_
    # a fixed threshold is used as given
    fixed = KernelKNNClassifier(**common, threshold=0.25).fit(X, y)
    proba = fixed.predict_proba(Xt)
    np.testing.assert_array_equal(fixed.predict(Xt), (proba[:, 1] >= 0.25).astype(int))


def test_auto_threshold_with_hashing_and_precomputed_and_errors():
    X, y = _rare_positives(n=300)
    h = KernelKNNClassifier("rbf", kernel_params={"bandwidth": 0.02}, hashing="random-knn",
                            threshold="auto", random_state=0).fit(X, y)
    assert h.threshold_ is not None and h.n_fit_evaluations_ > 0
    K = np.exp(-((X - X.T) ** 2) / (2 * 0.02**2))
    p = KernelKNNClassifier("precomputed", threshold="auto").fit(K, y)
    assert 0.0 < p.threshold_ <= 1.0
    # "auto" tunes a binary rule; with three classes it is the most voted class, and a number
    # is an error
    y3 = np.arange(len(y)) % 3
    three = KernelKNNClassifier("rbf", threshold="auto").fit(X, y3)
    assert three.threshold_ is None and three.train_scores_ is None
    majority = KernelKNNClassifier("rbf", threshold=None).fit(X, y3)
    np.testing.assert_array_equal(three.predict(X), majority.predict(X))
    with pytest.raises(ValueError, match="binary"):
        KernelKNNClassifier("rbf", threshold=0.3).fit(X, y3)
    with pytest.raises(ValueError, match="threshold"):
        KernelKNNClassifier("rbf", threshold=1.5).fit(X, y)


def test_string_labels_positive_class_scores():
    X, y = _rare_positives(n=200)
    ys = np.where(y == 1, "yes", "no")
    clf = KernelKNNClassifier("rbf", kernel_params={"bandwidth": 0.02}, threshold="auto").fit(X, ys)
    assert set(clf.predict(X)) <= {"yes", "no"}
    s = clf.positive_class_scores(X, ys)
    assert s["support"] == int(y.sum())
    assert positive_class_scores(["yes", "no"], ["yes", "yes"]) == {
        "f1": pytest.approx(2 / 3), "precision": 0.5, "recall": 1.0, "support": 1}
    with pytest.raises(ValueError, match="pos_label"):
        positive_class_scores(["a", "b", "c"], ["a", "b", "b"])
    with pytest.raises(ValueError, match="not among"):
        positive_class_scores([0, 1], [1, 1], pos_label="yes")


def test_threshold_sample_scores_a_stratified_subset():
    X, y = _rare_positives(n=400)
    clf = KernelKNNClassifier("rbf", kernel_params={"bandwidth": 0.02}, weights="similarity",
                              threshold="auto", threshold_sample=100, random_state=0).fit(X, y)
    full = KernelKNNClassifier("rbf", kernel_params={"bandwidth": 0.02}, weights="similarity",
                               threshold="auto", threshold_sample=None).fit(X, y)
    assert len(clf.train_scores_) == 100 and len(full.train_scores_) == 400
    assert clf.n_fit_evaluations_ < full.n_fit_evaluations_
    with pytest.raises(ValueError, match="threshold_sample"):
        KernelKNNClassifier("rbf", threshold="auto", threshold_sample=0).fit(X, y)


@pytest.mark.parametrize("hashing", ["random-knn", "klsh"])
def test_multi_probe_searches_the_least_firm_bits(hashing):
    X, y = _blobs(900, seed=5)
    Xte, _ = _blobs(200, seed=6)
    kern = kernel("rbf", bandwidth=2.0)
    common = dict(n_neighbors=8, hashing=hashing, n_bits=6, n_tables=1, random_state=0)
    own = KernelKNNClassifier(kern, probe=0, **common).fit(X, y)
    full = KernelKNNClassifier(kern, probe=1, n_probes=None, **common).fit(X, y)
    idx_own, _ = own.kneighbors(Xte)
    idx_full, s_full = full.kneighbors(Xte)
    ev_full = full.n_evaluations_
    # n_probes = n_bits is the whole Hamming-1 ball
    every = KernelKNNClassifier(kern, probe=1, n_probes=6, **common).fit(X, y)
    idx_every, s_every = every.kneighbors(Xte)
    np.testing.assert_array_equal(idx_every, idx_full)
    np.testing.assert_array_equal(s_every, s_full)
    # two probes: exactly the own bucket plus the buckets across the two least firm bits
    two = KernelKNNClassifier(kern, probe=1, n_probes=2, **common).fit(X, y)
    idx_two, _ = two.kneighbors(Xte)
    ev_two = two.n_evaluations_
    h, buckets = two.hashers_[0], two.buckets_[0]
    S = h._similarities(Xte)
    codes = h.bits_from_similarities(S) @ (1 << np.arange(h.n_bits_))
    weakest = np.argsort(h.margins_from_similarities(S), axis=1, kind="stable")[:, :2]
    full_set = [set() for _ in range(len(Xte))]
    for i, c in enumerate(codes):
        for code in [c, c ^ (1 << weakest[i, 0]), c ^ (1 << weakest[i, 1])]:
            full_set[i].update(buckets.get(int(code), np.empty(0, np.int64)).tolist())
        full_set[i].update(h.reference_indices_.tolist())  # reference structures are scored too
    Kte = kern.gram(Xte, X)
    for i in range(len(Xte)):
        cand = np.array(sorted(full_set[i]))
        best = cand[np.lexsort((cand, -Kte[i, cand]))][:8]
        assert set(idx_two[i][idx_two[i] >= 0]) == set(best.tolist())
    # fewer kernel evaluations than the whole ball, and recall between own bucket and the ball
    assert ev_two < ev_full
    exact = np.argsort(-Kte, axis=1, kind="stable")[:, :8]
    def recall(idx):
        return np.mean([len(set(a) & set(b)) for a, b in zip(idx, exact, strict=True)])
    assert recall(idx_own) <= recall(idx_two) <= recall(idx_full)


def test_hash_margins_order_bits_by_firmness():
    from structkernels import RandomKNNHash
    from structkernels.neighbors.hashing import KernelLSH

    X, _ = _blobs(300, seed=2)
    for h in (RandomKNNHash("rbf", n_bits=5, random_state=0, kernel_params={"bandwidth": 2.0}),
              KernelLSH("rbf", n_bits=5, random_state=0, kernel_params={"bandwidth": 2.0})):
        h.fit(X)
        S = h._similarities(X[:50])
        m = h.margins_from_similarities(S)
        assert m.shape == (50, 5) and np.all(m >= 0)
        if isinstance(h, RandomKNNHash):
            b1 = S[:, h.subsets_[:, 0, :]].max(axis=2)
            b2 = S[:, h.subsets_[:, 1, :]].max(axis=2)
            np.testing.assert_allclose(m, np.abs(b1 - b2))
        with pytest.raises(ValueError, match="shape"):
            h.margins_from_similarities(S[:, :-1])


def test_n_probes_validation():
    X, y = _blobs(60, seed=1)
    with pytest.raises(ValueError, match="n_probes"):
        KernelKNNClassifier("rbf", hashing="klsh", probe=1, n_probes=0).fit(X, y)
    with pytest.raises(ValueError, match="probe=1"):
        KernelKNNClassifier("rbf", hashing="klsh", probe=0, n_probes=2).fit(X, y)
    with pytest.raises(ValueError, match="probe=1"):
        KernelKNNClassifier("rbf", n_probes=2).fit(X, y)  # no hashing, no probing
    with pytest.raises(ValueError, match="n_tables"):
        KernelKNNClassifier("rbf", hashing="klsh", n_tables=0).fit(X, y)


def test_hash_settings_default_to_the_main_jobs_with_hashing():
    X, y = _blobs(200, seed=1)
    exact = KernelKNNClassifier("rbf").fit(X, y)
    assert (exact.n_tables_, exact.probe_, exact.n_probes_) == (1, 0, None)
    assert exact.hashers_ == []
    hashed = KernelKNNClassifier("rbf", hashing="random-knn", random_state=0).fit(X, y)
    assert (hashed.n_tables_, hashed.probe_, hashed.n_probes_) == (2, 1, 3)
    assert len(hashed.hashers_) == 2
    # each setting given is kept; n_probes="auto" follows probe
    own = KernelKNNClassifier("rbf", hashing="klsh", n_tables=1, probe=0, random_state=0).fit(X, y)
    assert (own.n_tables_, own.probe_, own.n_probes_) == (1, 0, None)
    every = KernelKNNClassifier("rbf", hashing="klsh", n_probes=None, random_state=0).fit(X, y)
    assert (every.n_tables_, every.probe_, every.n_probes_) == (2, 1, None)
    # the parameters stay as given (None, "auto"): clone and get_params see them verbatim
    assert hashed.get_params()["n_tables"] is None and hashed.get_params()["n_probes"] == "auto"


def test_defaults_are_the_main_jobs_settings():
    from structkernels import Path
    from structkernels.neighbors.classifier import MAIN_JOB_SETTINGS, PREVIOUS_DEFAULTS

    params = KernelKNNClassifier().get_params()
    for key in ("kernel", "n_neighbors", "weights", "threshold"):
        assert params[key] == MAIN_JOB_SETTINGS[key]
    assert params["hashing"] is None  # exact search: the one documented difference
    paths = [Path([(None, "bind"), ("ARG0", a), ("ARG1", b)])
             for a in ("kinase", "gene", "cell") for b in ("Raf", "Ras", "Akt")]
    y = np.array([int(p[1][1] == "kinase") for p in paths])
    clf = KernelKNNClassifier(n_neighbors=3).fit(paths, y)
    assert clf.kernel_.get_params()["node_mismatch"] == 0.9 and clf.kernel_.lam == 0.8
    assert clf.normalized_ and clf.threshold_ is not None
    same = KernelKNNClassifier(n_neighbors=3, **{
        k: v for k, v in MAIN_JOB_SETTINGS.items()
        if k not in ("n_neighbors", "hashing", "n_tables", "probe", "n_probes")}).fit(paths, y)
    np.testing.assert_array_equal(same.predict_proba(paths), clf.predict_proba(paths))
    # a kernel_params dict is used as given; normalize="auto" is off for vector kernels
    own = KernelKNNClassifier(kernel_params={"lam": 0.8}, n_neighbors=3).fit(paths, y)
    assert own.kernel_.get_params()["node_mismatch"] == 0.0
    assert not KernelKNNClassifier("rbf").fit(*_blobs(20)).normalized_
    # the 0.1 defaults, given explicitly: majority vote of raw, indicator path kernel values
    old = KernelKNNClassifier(n_neighbors=3, kernel_params={}, **PREVIOUS_DEFAULTS).fit(paths, y)
    assert not old.normalized_ and old.threshold_ is None and old.weights == "uniform"
    with pytest.raises(ValueError, match="normalize"):
        KernelKNNClassifier("rbf", normalize="yes").fit(*_blobs(20))
    with pytest.raises(ValueError, match="normalize do not apply"):
        KernelKNNClassifier("precomputed", normalize=True).fit(np.eye(3), [0, 1, 0])
