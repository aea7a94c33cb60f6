"""The decision threshold and calibrated probabilities of an SVM relation model, chosen on
training data only.

With balanced class weights on a corpus where most pairs do not interact, an SVM's margin
leans positive: the threshold 0 labels too many pairs as interacting.  :func:`fit_decision`
chooses the threshold and a calibration of the margin into a probability from the
**training** Gram alone, from out-of-fold margins of a grouped inner cross-validation, the
same way for the evaluation's SVM rows and for :class:`structkernels.extraction.RelationExtractor`.
When the inner folds cannot be formed it falls back to threshold 0 and a calibration on the
training margins (optimistic: those margins are the SVM's own); :attr:`DecisionRule.fallback`
says why.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = np.r_[rng.normal(1, 1, (20, 2)), rng.normal(-1, 1, (60, 2))]
>>> y = np.r_[np.ones(20, int), np.zeros(60, int)]
>>> rule = fit_decision(X @ X.T, y, groups=np.arange(80) // 2)
>>> rule.n_folds, rule.fallback is None, rule.calibration
(3, True, 'platt')
>>> p = rule.probability([-2.0, 0.0, 2.0])
>>> bool(np.all(np.diff(p) >= 0) and 0 <= p.min() and p.max() <= 1)
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "CALIBRATIONS",
    "INNER_FOLDS",
    "THRESHOLD_RULES",
    "DecisionRule",
    "best_f1_threshold",
    "check_threshold",
    "fallback_decision",
    "fit_decision",
    "prevalence_threshold",
]

#: The threshold rules: chosen on the inner cross-validation's margins for F1 or to match the
#: training prevalence, or 0 (the SVM's own).
THRESHOLD_RULES = ("inner-cv", "prevalence", "zero")
# the rules that need the inner cross-validation's margins
_INNER_RULES = ("inner-cv", "prevalence")
#: The calibrations of a margin into a probability.
CALIBRATIONS = ("platt", "isotonic")
#: The inner folds of :func:`fit_decision`.
INNER_FOLDS = 3
# the inverse regularisation of the Platt fit: large, a plain maximum-likelihood fit
_PLATT_C = 1e6


@dataclass(frozen=True)
class DecisionRule:
    """How margins become labels and probabilities.

    Parameters
    ----------
    threshold : float
        A pair is positive when its margin is ``> threshold``.
    rule : {"inner-cv", "prevalence", "zero", "fixed"}
        How the threshold was set: by :func:`fit_decision`'s inner cross-validation (for F1,
        or to match the training prevalence), 0, or given.
    calibration : {"platt", "isotonic"} or None
    platt : tuple of float or None
        ``(a, b)``: ``p = 1 / (1 + exp(-(a * margin + b)))``.
    isotonic_x, isotonic_y : tuple of float
        The isotonic breakpoints (margins increasing, probabilities non-decreasing).
    inner_f1 : float or None
        The F1 (0-1) of the out-of-fold margins at ``threshold`` (None without inner CV).
    n_folds : int
        The inner folds run (0: none).
    fallback : str or None
        Why the inner cross-validation could not run, or None when it did (or was not
        needed).

    Examples
    --------
    >>> r = DecisionRule(0.5, "fixed", "platt", platt=(2.0, -1.0))
    >>> r.predict([0.2, 0.7]).tolist(), r.probability([0.5]).round(3).tolist()
    ([0, 1], [0.5])
    """

    threshold: float = 0.0
    rule: str = "zero"
    calibration: str | None = None
    platt: tuple[float, float] | None = None
    isotonic_x: tuple[float, ...] = ()
    isotonic_y: tuple[float, ...] = ()
    inner_f1: float | None = None
    n_folds: int = 0
    fallback: str | None = None

    def predict(self, scores: Any) -> np.ndarray:
        """1 where a margin is ``> threshold``, else 0."""
        return (np.asarray(scores, dtype=np.float64) > self.threshold).astype(np.int64)

    def probability(self, scores: Any) -> np.ndarray | None:
        """The calibrated probability of each margin (None without a calibration)."""
        s = np.asarray(scores, dtype=np.float64)
        if self.calibration == "platt" and self.platt is not None:
            a, b = self.platt
            z = np.clip(a * s + b, -500.0, 500.0)
            return 1.0 / (1.0 + np.exp(-z))
        if self.calibration == "isotonic" and self.isotonic_x:
            return np.clip(np.interp(s, self.isotonic_x, self.isotonic_y), 0.0, 1.0)
        return None

    def calibration_json(self) -> dict[str, Any] | None:
        """The calibration as JSON: ``{"kind": "platt", "a", "b"}`` or ``{"kind":
        "isotonic", "x": [...], "y": [...]}``; None without one."""
        if self.calibration == "platt" and self.platt is not None:
            return {"kind": "platt", "a": self.platt[0], "b": self.platt[1]}
        if self.calibration == "isotonic":
            return {"kind": "isotonic", "x": list(self.isotonic_x), "y": list(self.isotonic_y)}
        return None


def check_threshold(threshold: Any, owner: str = "threshold") -> str | float:
    """One of :data:`THRESHOLD_RULES` or a finite float: the threshold settings; else
    ValueError.

    Examples
    --------
    >>> check_threshold("zero"), check_threshold(0.25)
    ('zero', 0.25)
    """
    if isinstance(threshold, str) and threshold in THRESHOLD_RULES:
        return threshold
    if (isinstance(threshold, (int, float, np.floating, np.integer))
            and not isinstance(threshold, bool) and math.isfinite(float(threshold))):
        return float(threshold)
    rules = ", ".join(repr(r) for r in THRESHOLD_RULES)
    raise ValueError(f"{owner} must be one of {rules} or a finite number, got {threshold!r}")


def best_f1_threshold(scores: Any, y: Any) -> tuple[float, float]:
    """``(threshold, F1)``: the threshold maximising the positive class's F1 of
    ``scores > threshold``; the candidates are 0 and the midpoints between consecutive
    distinct scores; of equally good ones, the one nearest 0 (the lower on a tie of
    distance).

    Examples
    --------
    >>> best_f1_threshold([-2.0, -1.0, 0.5, 1.0], [0, 1, 1, 1])
    (-1.5, 1.0)
    >>> best_f1_threshold([1.0, 2.0], [0, 0])
    (0.0, 0.0)
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(y).astype(bool)
    distinct = np.unique(s)
    candidates = np.unique(np.r_[0.0, (distinct[:-1] + distinct[1:]) / 2])
    order = np.sort(s)
    pos = np.sort(s[y])
    n_pos = len(pos)
    # predicted positives and true positives above each candidate
    predicted = len(order) - np.searchsorted(order, candidates, side="right")
    tp = n_pos - np.searchsorted(pos, candidates, side="right")
    denom = predicted + n_pos
    f1 = np.where(denom > 0, 2.0 * tp / np.maximum(denom, 1), 0.0)
    best = f1.max()
    ties = candidates[np.isclose(f1, best, rtol=0.0, atol=1e-12)]
    pick = ties[np.lexsort((ties, np.abs(ties)))[0]]
    return float(pick), float(best)


def prevalence_threshold(scores: Any, y: Any) -> float:
    """The threshold that labels as many of ``scores`` positive (``> threshold``) as ``y``
    holds positives: the midpoint between the ``n``-th and ``(n + 1)``-th highest scores
    (``n`` the positives; tied scores go together, so a few more or fewer may be labelled).

    Examples
    --------
    >>> prevalence_threshold([-2.0, -1.0, 0.5, 1.0], [0, 1, 1, 0])
    -0.25
    """
    s = np.sort(np.asarray(scores, dtype=np.float64))[::-1]
    n = int(np.sum(np.asarray(y).astype(bool)))
    if n == 0:
        return float(s[0]) + 1.0
    if n >= len(s):
        return float(s[-1]) - 1.0
    return float((s[n - 1] + s[n]) / 2)


def _inner_folds(y: np.ndarray, groups: np.ndarray, n_folds: int, random_state: Any
                 ) -> tuple[list[tuple[np.ndarray, np.ndarray]] | None, str | None]:
    """The inner folds, or None and why they cannot be formed."""
    from sklearn.model_selection import StratifiedGroupKFold

    n_groups = len(np.unique(groups))
    if n_groups < n_folds:
        return None, f"{n_groups} document(s): fewer than {n_folds} inner folds need"
    n_pos = int(y.sum())
    if min(n_pos, len(y) - n_pos) < n_folds:
        return None, (f"{n_pos} positive and {len(y) - n_pos} negative pair(s): fewer than "
                      f"{n_folds} of a class")
    cv = StratifiedGroupKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    folds = list(cv.split(np.zeros(len(y)), y, groups))
    for tr, te in folds:
        if len(np.unique(y[tr])) < 2 or len(te) == 0:
            return None, "an inner training part holds one class only"
    return folds, None


def _svm(K: np.ndarray, y: np.ndarray, C: float):
    from sklearn.svm import SVC

    from structkernels.relations.models import PRECOMPUTED_SVC_PARAMS  # scikit-learn's load

    return SVC(kernel="precomputed", C=C, **PRECOMPUTED_SVC_PARAMS).fit(K, y)


def _calibrate(kind: str | None, scores: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """The calibration fields of a :class:`DecisionRule` fitted on ``(scores, y)``."""
    if kind is None:
        return {}
    if kind == "platt":
        from sklearn.linear_model import LogisticRegression

        lr = LogisticRegression(C=_PLATT_C).fit(scores.reshape(-1, 1), y)
        a, b = float(lr.coef_[0, 0]), float(lr.intercept_[0])
        if not a > 0:  # margins that do not rank: the base rate for every pair
            rate = min(max(float(np.mean(y)), 1e-6), 1 - 1e-6)
            a, b = 0.0, math.log(rate / (1 - rate))
        return {"platt": (a, b)}
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(scores, y)
    return {"isotonic_x": tuple(float(v) for v in iso.X_thresholds_),
            "isotonic_y": tuple(float(v) for v in iso.y_thresholds_)}


def fit_decision(
    K: np.ndarray,
    y: Sequence[int],
    groups: Sequence[Any] | None = None,
    *,
    C: float = 1.0,
    random_state: Any = 0,
    threshold: str | float = "inner-cv",
    calibration: str | None = "platt",
    n_folds: int = INNER_FOLDS,
) -> DecisionRule:
    """The decision threshold and calibration of an SVM on the training Gram ``K``.

    On ``n_folds`` grouped inner folds (:class:`sklearn.model_selection.StratifiedGroupKFold`)
    an SVM (``SVC(kernel="precomputed", C=C, **SVM_PARAMS)``) gives every training pair an
    out-of-fold margin; the threshold and the calibration are fitted on those margins.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The training pairs' Gram under the model's kernel.
    y : sequence of int
        1 for an interacting pair.
    groups : sequence, optional
        The document of each pair (inner folds keep documents whole); None: each pair its
        own.
    C : float, default 1.0
        The SVM's C.
    random_state : int or None, default 0
        Shuffles the inner folds.
    threshold : "inner-cv", "prevalence", "zero" or float, default "inner-cv"
        ``"inner-cv"``: the best F1 threshold of the out-of-fold margins; ``"prevalence"``:
        the one that labels as many of them positive as ``y`` holds; ``"zero"``: 0; a
        number: that threshold.
    calibration : {"platt", "isotonic"} or None, default "platt"
    n_folds : int, default 3

    Returns
    -------
    DecisionRule
        The inner cross-validation runs only when the threshold or the calibration needs it.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.eye(4) + 1.0
    >>> rule = fit_decision(K, [0, 1, 0, 1], calibration=None)
    >>> rule.threshold, rule.fallback  # 4 pairs: no inner folds
    (0.0, '2 positive and 2 negative pair(s): fewer than 3 of a class')
    """
    threshold, rule, fixed = _settings(threshold, calibration)
    K = np.asarray(K, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    n = len(y)
    if K.shape != (n, n):
        raise ValueError(f"K must be the ({n}, {n}) training Gram, got shape {K.shape}")
    if threshold not in _INNER_RULES and calibration is None:
        return DecisionRule(fixed, rule)
    groups = np.arange(n) if groups is None else np.asarray(groups)
    folds, why = _inner_folds(y, groups, n_folds, random_state)
    if folds is None:
        train_scores = _svm(K, y, C).decision_function(K) if calibration is not None else None
        return fallback_decision(train_scores, y, why, threshold=threshold,
                                 calibration=calibration)
    oof = np.zeros(n, dtype=np.float64)
    for tr, te in folds:
        clf = _svm(K[np.ix_(tr, tr)], y[tr], C)
        oof[te] = clf.decision_function(K[np.ix_(te, tr)])
    if threshold == "inner-cv":
        chosen, f1 = best_f1_threshold(oof, y)
    else:
        chosen = prevalence_threshold(oof, y) if threshold == "prevalence" else fixed
        f1 = _f1(oof > chosen, y)
    return DecisionRule(chosen, rule, calibration, inner_f1=f1, n_folds=len(folds),
                        **_calibrate(calibration, oof, y))


def fallback_decision(scores: Any, y: Sequence[int], reason: str, *,
                      threshold: str | float = "inner-cv",
                      calibration: str | None = "platt") -> DecisionRule:
    """The rule when no inner cross-validation can run (``reason`` says why): threshold 0
    (or the number given), the calibration fitted on ``scores`` (the training margins of
    the SVM on all training pairs; None when ``calibration`` is None).

    Examples
    --------
    >>> r = fallback_decision([-1.0, -0.5, 0.5, 1.0], [0, 0, 1, 1], "too few documents")
    >>> r.threshold, r.rule, r.fallback, r.platt[0] > 0
    (0.0, 'inner-cv', 'too few documents', True)
    """
    _, rule, fixed = _settings(threshold, calibration)
    fields = {} if calibration is None else _calibrate(
        calibration, np.asarray(scores, dtype=np.float64), np.asarray(y, dtype=np.int64))
    return DecisionRule(fixed, rule, calibration, fallback=str(reason), **fields)


def _settings(threshold: Any, calibration: str | None) -> tuple[str | float, str, float]:
    """``(threshold, rule, fixed threshold)``, the settings checked."""
    threshold = check_threshold(threshold)
    if calibration is not None and calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be 'platt', 'isotonic' or None, got {calibration!r}")
    if isinstance(threshold, float):
        return threshold, "fixed", threshold
    return threshold, threshold, 0.0


def _f1(pred: np.ndarray, y: np.ndarray) -> float:
    tp = int(np.sum(pred & (y == 1)))
    denom = int(pred.sum()) + int(y.sum())
    return 2.0 * tp / denom if denom else 0.0
