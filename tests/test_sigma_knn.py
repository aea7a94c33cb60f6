"""σ judged by the k-NN classifier's leave-one-out average precision (objective="knn-ap")."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from structkernels import NonstationaryLearner, Path
from structkernels.engine.gram import gram
from structkernels.kernels.names import kernel
from structkernels.npk.sigma_knn import SigmaKNNSearch, loo_knn_scores


def _by_definition(K, y, k, diag=None):
    K = np.array(K, dtype=float)
    n = len(K)
    if diag is not None:
        d = np.asarray(diag, dtype=float)
        s = np.array([1 / np.sqrt(v) if v > 0 else 0.0 for v in d])
        K = K * s[:, None] * s[None, :]
    out = np.zeros(n)
    for i in range(n):
        top = sorted((-K[i, j], j) for j in range(n) if j != i)[: min(k, n - 1)]
        w = np.array([max(-v, 0.0) for v, _ in top])
        lab = np.array([y[j] for _, j in top])
        out[i] = (w * lab).sum() / w.sum() if w.sum() > 0 else 0.0
    return out


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(2, 25), st.integers(1, 10), st.integers(0, 10**6))
def test_loo_scores_equal_their_definition(n, k, seed):
    rng = np.random.default_rng(seed)
    K = np.round(rng.normal(size=(n, n)), 1)  # rounding makes ties
    y = rng.integers(0, 2, n)
    d = np.abs(np.round(rng.normal(size=n), 1))  # zeros included
    np.testing.assert_allclose(loo_knn_scores(K, y, k), _by_definition(K, y, k))
    np.testing.assert_allclose(loo_knn_scores(K, y, k, d), _by_definition(K, y, k, d))


def _noisy(n=160, seed=0):
    """The class is the ARG0 node; three noise labels, six tuples each, dominate the similarity."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        lab = int(rng.random() < 0.3)
        p = [(None, "bind"), ("ARG0", "kinase" if lab else "phosphatase")]
        for e in ("location", "manner", "mod"):
            v = f"{e}-{rng.integers(3)}"
            p += [(e, v)] * 6
        X.append(Path(p))
        y.append(lab)
    return X, np.array(y)


def test_decide_equals_recomputing_the_whole_gram():
    X, y = _noisy(60, seed=3)
    def kern(sig):
        return kernel("path", lam=0.8, sigma=sig)
    has = {lab: np.array([any(e == lab for e, _ in p) for p in X]) for lab in ("location", "ARG0")}
    search = SigmaKNNSearch(kern, X, y, has, {}, 5, True, 1)
    for lab in ("location", "ARG0"):
        before = dict(search.sigma)
        res = search.decide(lab, 0.005)
        halves = search.halves
        for v in (0.0, 1.0):
            K = gram(kern({**before, lab: v}), X, normalize=True)
            s = _by_definition(K, y, 5)
            assert res[str(int(v))] == pytest.approx(average_precision_score(y, s), abs=1e-12)
            for h, got in zip(halves, res["halves"][str(int(v))], strict=True):
                assert got == pytest.approx(average_precision_score(y[h], s[h]), abs=1e-12)
        # σ = 0 only when both halves gain more than min_gain
        gain = [a - b for a, b in zip(res["halves"]["0"], res["halves"]["1"], strict=True)]
        assert (res["chosen"] == 0.0) == all(g > 0.005 for g in gain)
        # the kept raw Gram is the one of the chosen σ
        np.testing.assert_allclose(search.R, gram(kern(search.sigma), X), rtol=1e-12)


def test_knn_ap_learner_drops_noise_that_hurts_the_classifier_and_counts_evaluations():
    X, y = _noisy()
    learner = NonstationaryLearner("path", {"lam": 0.8}, top_fraction=1.0, objective="knn-ap",
                                   n_neighbors=5, max_evaluations=None, progress=False,
                                   random_state=0).fit(X, y)
    assert "ARG0" not in learner.ignored_labels_
    assert learner.ignored_labels_ and set(learner.ignored_labels_) <= {"location", "manner", "mod"}
    for v in learner.losses_.values():  # σ = 0 only with an AP gain above min_gain
        if v["chosen"] == 0.0:
            assert -v["0"] > -v["1"] + 0.005
    n = len(X)
    inside = [sum(any(e == lab for e, _ in p) for p in X) for lab in learner.labels_]
    assert learner.n_evaluations_ == n * (n + 1) // 2 + sum(m * (m + 1) // 2 for m in inside)
    # a sub-sample: stratified, and the count follows its size
    small = NonstationaryLearner("path", {"lam": 0.8}, top_fraction=1.0, objective="knn-ap",
                                 objective_sample=80, n_neighbors=5, max_evaluations=None,
                                 progress=False, random_state=0).fit(X, y)
    assert small.subset_sizes_ == [80]
    assert small.n_evaluations_ < learner.n_evaluations_
    # the default budget, one Gram matrix of all N: the sample shrinks until it fits
    budgeted = NonstationaryLearner("path", {"lam": 0.8}, top_fraction=1.0, objective="knn-ap",
                                    n_neighbors=5, progress=False, random_state=0).fit(X, y)
    assert budgeted.n_evaluations_ <= n * (n + 1) // 2 < learner.n_evaluations_
    assert budgeted.subset_sizes_[0] < n and budgeted.n_trimmed_ == 1


def test_knn_ap_parameters_are_checked():
    X, y = _noisy(20)
    for bad in ({"objective": "f1"}, {"objective_sample": 0}, {"n_neighbors": 0},
                {"min_gain": -0.1}, {"min_gain": True}):
        with pytest.raises(ValueError):
            NonstationaryLearner("path", progress=False, **{"objective": "knn-ap", **bad}).fit(X, y)


def test_one_class_sample_keeps_sigma_and_warns():
    X, _ = _noisy(20)
    with pytest.warns(RuntimeWarning, match="one class"):
        learner = NonstationaryLearner("path", top_fraction=1.0, objective="knn-ap",
                                       progress=False).fit(X, np.zeros(20, dtype=int))
    assert learner.ignored_labels_ == [] and set(learner.sigma_.values()) == {1.0}
