"""A choice among classifiers by inner cross-validation on the training data only.

Estimators that take a precomputed Gram (their ``input_tags.pairwise`` tag) are fitted on
``slice_gram(K, train, train)`` and scored on ``slice_gram(K, test, train)``: one Gram of the
training set serves every fold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from structkernels.structures import take
from structkernels.utils import check_int

__all__ = ["slice_gram", "select_by_inner_cv", "InnerCVClassifier", "cv_scores"]


def slice_gram(K: Any, rows: Any, cols: Any = None) -> np.ndarray:
    """The block ``K[rows][:, cols]`` of a Gram matrix (``cols`` defaults to ``rows``);
    ``rows``/``cols`` are integer positions or boolean masks.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.arange(16.0).reshape(4, 4)
    >>> slice_gram(K, [0, 2]).tolist()
    [[0.0, 2.0], [8.0, 10.0]]
    >>> slice_gram(K, [3], [0, 2]).tolist()
    [[12.0, 14.0]]
    """
    K = np.asarray(K)
    if K.ndim != 2:
        raise ValueError(f"slice_gram expects a 2-D Gram matrix, got shape {K.shape}")
    r = np.asarray(rows)
    c = r if cols is None else np.asarray(cols)
    for idx, size, what in ((r, K.shape[0], "rows"), (c, K.shape[1], "cols")):
        if idx.ndim != 1:
            raise ValueError(f"slice_gram: {what} must be 1-D, got shape {idx.shape}")
        if idx.dtype == bool:
            if len(idx) != size:
                raise ValueError(f"slice_gram: a boolean mask of {what} needs {size} entries, "
                                 f"got {len(idx)}")
        elif idx.size and idx.dtype.kind not in "iu":
            raise TypeError(f"slice_gram: {what} must be integer positions or a boolean mask")
    return K[np.ix_(r, c)]


def _pairwise(est: Any) -> bool:
    from sklearn.utils import get_tags

    return bool(get_tags(est).input_tags.pairwise)


def _splitter(cv: Any, groups: Any, random_state: Any):
    from sklearn.model_selection import GroupKFold, StratifiedKFold

    if hasattr(cv, "split"):
        return cv
    check_int(cv, "cv", 2)
    if groups is not None:
        return GroupKFold(n_splits=int(cv))
    return StratifiedKFold(n_splits=int(cv), shuffle=True, random_state=random_state)


def _split(X: Any, rows: np.ndarray, cols: np.ndarray | None, pairwise: bool) -> Any:
    """Rows of ``X`` (structures or array), or the block rows x cols of a Gram."""
    return slice_gram(X, rows, cols) if pairwise else take(X, rows)


def cv_scores(candidates: dict[str, Any], X: Any, y: Any, groups: Any = None, cv: Any = 3,
              scoring: Any = "f1", random_state: Any = None) -> dict[str, np.ndarray]:
    """Per candidate, its score on each fold (the work of :func:`select_by_inner_cv`)."""
    from sklearn.metrics import check_scoring

    if not isinstance(candidates, dict) or not candidates:
        raise ValueError("candidates must be a non-empty dict of name -> estimator")
    y = np.asarray(y)
    n = len(y)
    pairwise = {name: _pairwise(est) for name, est in candidates.items()}
    if len(set(pairwise.values())) > 1:
        # rows of a Gram as features would carry the held-out columns into training
        raise ValueError(
            "candidates mix precomputed-Gram estimators and estimators of structures; they "
            "all take one X")
    if any(pairwise.values()):
        K = np.asarray(X)
        if K.ndim != 2 or K.shape != (n, n):
            raise ValueError(
                f"a candidate takes a precomputed Gram: X must be the square ({n}, {n}) Gram of "
                f"the training set, got shape {K.shape}")
    if not isinstance(X, np.ndarray):
        X = list(X)
    if len(X) != n:
        raise ValueError(f"X has {len(X)} structures but y has {n} labels")
    if groups is not None:
        groups = np.asarray(groups)
        if len(groups) != n:
            raise ValueError(f"groups has {len(groups)} entries for {n} structures")
    splitter = _splitter(cv, groups, random_state)
    folds = list(splitter.split(np.zeros((n, 1)), y, groups))
    out: dict[str, np.ndarray] = {}
    for name, est in candidates.items():
        scorer = check_scoring(est, scoring=scoring)
        scores = []
        for train, test in folds:
            fitted = clone(est).fit(_split(X, train, train, pairwise[name]), y[train])
            scores.append(scorer(fitted, _split(X, test, train, pairwise[name]), y[test]))
        out[name] = np.asarray(scores, dtype=np.float64)
    return out


def select_by_inner_cv(candidates: dict[str, Any], X: Any, y: Any, groups: Any = None, cv: Any = 3,
                       scoring: Any = "f1",
                       random_state: Any = None) -> tuple[str, dict[str, float]]:
    """The candidate with the best mean inner cross-validation score on ``(X, y)``.

    Parameters
    ----------
    candidates : dict of str to estimator
        Unfitted estimators (cloned for every fold).  Those with the ``pairwise`` tag
        (``kernel="precomputed"``) read ``X`` as the training set's square Gram.
    X : sequence of structures, 2-D array, or (n, n) Gram matrix
        The training data only.
    y, groups : array-like of shape (n,)
        Labels, and optionally the group of each sample (kept inside one fold).
    cv : int or splitter, default 3
        ``GroupKFold(cv)`` with groups, else ``StratifiedKFold(cv, shuffle=True,
        random_state=random_state)``; a scikit-learn splitter is used as given.
    scoring : str or callable, default "f1"
        A scikit-learn scorer name or ``scorer(estimator, X, y)``.
    random_state : int, RandomState or None
        Seeds the stratified folds' shuffle.

    Returns
    -------
    best_name, scores : str, dict of str to float
        The highest mean score (the first candidate on a tie); every candidate's mean.

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels.classifiers import KernelSVC, select_by_inner_cv
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (30, 2)), rng.normal(2, 1, (30, 2))])
    >>> y = np.repeat([0, 1], 30)
    >>> best, scores = select_by_inner_cv(
    ...     {"narrow": KernelSVC("rbf", kernel_params={"bandwidth": 0.01}, n_jobs=1),
    ...      "wide": KernelSVC("rbf", kernel_params={"bandwidth": 1.0}, n_jobs=1)},
    ...     X, y, random_state=0)
    >>> best, {name: round(s, 2) for name, s in scores.items()}
    ('wide', {'narrow': 0.44, 'wide': 0.84})
    """
    folds = cv_scores(candidates, X, y, groups, cv, scoring, random_state)
    means = {name: float(np.mean(s)) for name, s in folds.items()}
    return _best(means), means


def _best(means: dict[str, float]) -> str:
    """The name of the highest mean, the first in order on a tie."""
    names = list(means)
    return max(names, key=lambda name: (means[name], -names.index(name)))


def _best_has(method: str):
    def check(self) -> bool:
        if hasattr(self, "best_estimator_"):
            return hasattr(self.best_estimator_, method)
        return all(hasattr(est, method) for est in self.candidates.values())
    return check


class InnerCVClassifier(ClassifierMixin, BaseEstimator):
    """Chooses among candidate classifiers by inner cross-validation, then refits the best.

    ``fit(X, y, groups=None)`` runs :func:`select_by_inner_cv` (whose parameters these are)
    on the data it is given and fits a clone of the winner on all of it; prediction is the
    winner's.  Nested in an outer evaluation, the choice sees only the outer training rows.

    Attributes
    ----------
    best_name_ : str
    best_estimator_ : estimator
        The winner, fitted on all of the training data.
    cv_scores_ : dict of str to ndarray
        Per candidate, its score on every inner fold (``scores_``: their means).
    scores_ : dict of str to float
    classes_ : ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels.classifiers import InnerCVClassifier, KernelSVC
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (30, 2)), rng.normal(3, 1, (30, 2))])
    >>> y = np.repeat([0, 1], 30)
    >>> clf = InnerCVClassifier({"svm": KernelSVC("rbf", n_jobs=1)}, random_state=0).fit(X, y)
    >>> clf.best_name_, clf.predict(np.array([[0.0, 0.0], [3.0, 3.0]])).tolist()
    ('svm', [0, 1])
    """

    def __init__(self, candidates: dict[str, Any], cv: Any = 3, scoring: Any = "f1",
                 random_state: Any = None):
        self.candidates = candidates
        self.cv = cv
        self.scoring = scoring
        self.random_state = random_state

    def fit(self, X: Any, y: Any, groups: Any = None) -> InnerCVClassifier:
        """Select on inner folds of ``(X, y)`` (grouped by ``groups``), refit the best on all."""
        self.cv_scores_ = cv_scores(self.candidates, X, y, groups, self.cv, self.scoring,
                                    self.random_state)
        self.scores_ = {name: float(np.mean(s)) for name, s in self.cv_scores_.items()}
        self.best_name_ = _best(self.scores_)
        self.best_estimator_ = clone(self.candidates[self.best_name_]).fit(X, y)
        self.classes_ = self.best_estimator_.classes_
        if hasattr(self.best_estimator_, "n_features_in_"):
            self.n_features_in_ = self.best_estimator_.n_features_in_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The best estimator's predictions."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    @available_if(_best_has("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        """The best estimator's decision values."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """The best estimator's class probabilities."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        cands = self.candidates if isinstance(self.candidates, dict) else {}
        tags.input_tags.pairwise = bool(cands) and all(_pairwise(e) for e in cands.values())
        return tags
