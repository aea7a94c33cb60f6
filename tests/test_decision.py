"""The decision threshold and calibration (structkernels.relations.decision): chosen on
training data only, better than 0 on a skewed problem, monotone probabilities, fallback."""

from __future__ import annotations

import numpy as np
import pytest

from structkernels.relations.decision import (
    DecisionRule,
    best_f1_threshold,
    check_threshold,
    fallback_decision,
    fit_decision,
    prevalence_threshold,
)


def _skewed(seed: int = 0, n_pos: int = 30, n_neg: int = 150):
    """A linear-kernel problem, one positive in six, groups of three pairs."""
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(0.6, 1.0, (n_pos, 4)), rng.normal(-0.3, 1.0, (n_neg, 4))]
    y = np.r_[np.ones(n_pos, int), np.zeros(n_neg, int)]
    return X, y, np.arange(len(y)) // 3


def _f1(pred, y):
    tp = int(np.sum((pred == 1) & (y == 1)))
    return 2 * tp / max(int(pred.sum()) + int(y.sum()), 1)


def test_best_f1_threshold_picks_a_midpoint_and_the_one_nearest_zero_on_ties():
    assert best_f1_threshold([-2.0, -1.0, 0.5, 1.0], [0, 1, 1, 1]) == (-1.5, 1.0)
    # every cut between 0.5 and 3 separates: 0 is not among them, 1.75 is the midpoint
    t, f = best_f1_threshold([-1.0, 0.5, 3.0, 4.0], [0, 0, 1, 1])
    assert (t, f) == (1.75, 1.0)
    # 0 separates as well as any other: 0 is kept
    t, f = best_f1_threshold([-1.0, -0.5, 0.5, 1.0], [0, 0, 1, 1])
    assert (t, f) == (0.0, 1.0)


def _bag_items(seed: int, n: int):
    """Pairs with one "context" view: positives share feature words more often."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.25).astype(int)
    items = []
    for label in y:
        words = rng.choice(12, size=4, replace=False)
        feats = {f"w{w}" for w in words} | ({"m:binds"} if label and rng.random() < 0.7 else set())
        items.append({"context": tuple(sorted(feats))})
    return items, y


def test_the_threshold_comes_from_training_data_only():
    from structkernels.experiments.relations import evaluate_relations

    items, y = _bag_items(0, 120)
    groups = [f"d{i // 2}" for i in range(len(y))]
    tr, te = np.arange(90), np.arange(90, 120)
    runs = []
    for flip in (False, True):
        labels = y.copy()
        if flip:  # other test labels (both classes kept)
            labels[te] = 1 - labels[te]
        runs.append(evaluate_relations(items, labels, [(tr, te)], groups=groups,
                                       models=["n-gram SVM"], n_jobs=1, progress=False))
    first, second = (r["thresholds"]["n-gram SVM"] for r in runs)
    assert first == second and len(first) == 1
    assert runs[0]["models"] != runs[1]["models"]  # the test labels did change the scores
    # the procedure itself: training data in, the same rule out
    K = np.array([[len(set(a["context"]) & set(b["context"])) for b in items[:90]]
                  for a in items[:90]], dtype=float)
    assert fit_decision(K, y[:90], groups[:90]) == fit_decision(K, y[:90], groups[:90])
    zero = evaluate_relations(items, y, [(tr, te)], groups=groups, models=["n-gram SVM"],
                              n_jobs=1, progress=False, threshold="zero")
    assert zero["thresholds"] == {"n-gram SVM": [0.0]}
    assert zero["threshold_rule"] == "zero"


def test_it_beats_zero_on_a_skewed_problem():
    from sklearn.svm import SVC

    X, y, groups = _skewed(1, 40, 240)
    Xt, yt, _ = _skewed(2, 40, 240)
    K_tr, K_te = X @ X.T, Xt @ X.T
    rule = fit_decision(K_tr, y, groups, random_state=0, calibration=None)
    assert rule.rule == "inner-cv" and rule.n_folds == 3 and rule.fallback is None
    assert rule.threshold > 0  # balanced weights lean positive: the cut moves up
    score = SVC(kernel="precomputed", class_weight="balanced").fit(K_tr, y).decision_function(K_te)
    assert _f1(rule.predict(score), yt) > _f1((score > 0).astype(int), yt)
    assert 0 < rule.inner_f1 <= 1


@pytest.mark.parametrize("kind", ["platt", "isotonic"])
def test_probabilities_are_monotone_and_within_0_1(kind):
    X, y, groups = _skewed()
    rule = fit_decision(X @ X.T, y, groups, calibration=kind)
    s = np.linspace(-20, 20, 401)
    p = rule.probability(s)
    assert p.shape == s.shape and np.all(np.diff(p) >= 0)
    assert p.min() >= 0 and p.max() <= 1 and p[-1] > p[0]
    json = rule.calibration_json()
    assert json["kind"] == kind
    if kind == "platt":
        assert rule.platt[0] > 0 and set(json) == {"kind", "a", "b"}
    else:
        assert len(rule.isotonic_x) == len(rule.isotonic_y) >= 2


def test_zero_and_fixed_rules():
    X, y, groups = _skewed()
    K = X @ X.T
    zero = fit_decision(K, y, groups, threshold="zero", calibration=None)
    assert zero == DecisionRule(0.0, "zero") and zero.n_folds == 0  # no inner CV needed
    fixed = fit_decision(K, y, groups, threshold=0.3, calibration="platt")
    assert fixed.threshold == 0.3 and fixed.rule == "fixed" and fixed.n_folds == 3
    assert fixed.platt is not None and fixed.inner_f1 is not None
    with pytest.raises(ValueError, match="'inner-cv', 'prevalence', 'zero' or a finite number"):
        fit_decision(K, y, groups, threshold="best")
    with pytest.raises(ValueError, match="calibration"):
        fit_decision(K, y, groups, calibration="sigmoid")
    assert check_threshold(np.float64(1.5)) == 1.5
    with pytest.raises(ValueError):
        check_threshold(float("nan"))
    with pytest.raises(ValueError):
        check_threshold(True)


def test_prevalence_threshold_labels_as_many_positive_as_there_are():
    assert prevalence_threshold([3.0, -1.0, 2.0, 0.0, 1.0], [1, 0, 0, 1, 0]) == 1.5
    assert prevalence_threshold([1.0, 2.0], [0, 0]) == 3.0  # none: above every score
    assert prevalence_threshold([1.0, 2.0], [1, 1]) == 0.0  # all: below every score


def test_the_prevalence_rule_does_not_lean_where_inner_cv_does():
    X, y, groups = _skewed(1, 40, 240)
    Xt, _, _ = _skewed(2, 40, 240)
    K_tr, K_te = X @ X.T, Xt @ X.T
    f1_rule = fit_decision(K_tr, y, groups, random_state=0, calibration=None)
    rule = fit_decision(K_tr, y, groups, random_state=0, calibration="platt",
                        threshold="prevalence")
    assert rule.rule == "prevalence" and rule.n_folds == 3 and rule.fallback is None
    assert rule.threshold > f1_rule.threshold and 0 < rule.inner_f1 <= 1
    from sklearn.svm import SVC

    from structkernels.relations.models import PRECOMPUTED_SVC_PARAMS

    score = SVC(kernel="precomputed", **PRECOMPUTED_SVC_PARAMS).fit(K_tr, y).decision_function(K_te)
    predicted = {r.rule: int(r.predict(score).sum()) for r in (f1_rule, rule)}
    assert predicted["inner-cv"] > 60 and 25 <= predicted["prevalence"] <= 55  # 40 gold
    # the same rule with no inner folds falls back to 0, as inner-cv does
    assert fit_decision(np.eye(4) + 1, [0, 1, 0, 1], threshold="prevalence",
                        calibration=None).threshold == 0.0


def test_fallback_with_too_few_documents_or_positives():
    X, y, _ = _skewed()
    K = X @ X.T
    two_docs = np.arange(len(y)) % 2
    rule = fit_decision(K, y, two_docs, calibration="platt")
    assert rule.fallback is not None and "2 document(s)" in rule.fallback
    assert rule.threshold == 0.0 and rule.n_folds == 0 and rule.inner_f1 is None
    assert rule.platt is not None and rule.platt[0] > 0  # Platt on the training margins
    y2 = np.zeros_like(y)
    y2[:2] = 1
    rule = fit_decision(K, y2, None, calibration=None)
    assert rule.fallback is not None and "fewer than 3 of a class" in rule.fallback and rule.threshold == 0
    direct = fallback_decision(np.array([-1.0, 1.0, -2.0, 2.0]), [0, 1, 0, 1], "why",
                               calibration="isotonic")
    assert direct.fallback == "why" and direct.isotonic_x


def test_a_shape_mismatch_is_refused():
    with pytest.raises(ValueError, match=r"\(3, 3\) training Gram"):
        fit_decision(np.eye(2), [0, 1, 1])
