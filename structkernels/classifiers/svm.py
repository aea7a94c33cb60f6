"""A support vector machine on any registered kernel: exact, or Nyström above a size.

Up to ``max_exact`` training structures :class:`KernelSVC` solves ``SVC(kernel="precomputed")``
and keeps the support vectors; above, the Nyström method (Williams & Seeger, NIPS 2001) maps
every structure to ``k(x, L) K_LL^{-1/2}`` over random landmarks and trains ``LinearSVC``,
stating the approximation's error (``approximation_error_``).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from structkernels.classifiers._common import (
    KERNEL_CONSTRAINTS,
    input_tags,
    train_input,
    values_against,
)
from structkernels.engine.checks import ApproximationWarning
from structkernels.structures import take
from structkernels.utils import Interval, ValidatedParamsMixin, n_jobs_value

__all__ = ["KernelSVC", "ApproximationWarning", "ERROR_SAMPLE"]

#: Training structures (outside the landmarks) whose pairwise kernel values measure the
#: Nyström approximation's error.
ERROR_SAMPLE = 200
# fitted attributes of one route, removed when a refit takes the other
_ROUTE_ATTRIBUTES = (
    "support_", "support_vectors_", "dual_coef_", "n_support_",
    "landmark_indices_", "landmarks_", "normalization_", "coef_", "n_components_",
)


class KernelSVC(ValidatedParamsMixin, ClassifierMixin, BaseEstimator):
    """Binary support vector classifier on a structkernels kernel (exact or Nyström).

    Parameters
    ----------
    kernel : str or Kernel, default "path"
        A registered kernel name (built with ``kernel_params``), a Kernel instance, or
        ``"precomputed"`` (square train Gram to ``fit``, (n_test, n_train) ones after, as ``SVC``).
    kernel_params : dict, optional
        Parameters of a kernel given by name.  None with ``kernel="path"``:
        :data:`~structkernels.neighbors.settings.PATH_PARTIAL_CREDIT` (partial credit 0.9).
    C : float, default 1.0
        Penalty of the hinge loss (``SVC``'s and ``LinearSVC``'s ``C``).
    class_weight : "balanced", dict or None, default "balanced"
        As in ``SVC``; "balanced" suits a rare positive class (relations).
    max_exact : int, default 20000
        Largest training set solved exactly (the exact Gram has ``max_exact ** 2`` values).
    n_components : int, default 2000
        Nyström landmarks above ``max_exact`` (capped at the training size).
    tol : float, default 0.05
        Largest ``approximation_error_`` without an :class:`ApproximationWarning`.
    random_state : int, RandomState or None
        Seeds the landmarks, the error sample and ``LinearSVC``.
    n_jobs : int or None, default None
        Workers of the Gram engine; None: every core the process may use.
    normalize : bool or "auto", default "auto"
        Use ``k(x, y) / sqrt(k(x, x) k(y, y))``; ``"auto"``: for kernels whose values grow with
        the structures' size (``Kernel.grows_with_size``).  Not for ``"precomputed"``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    kernel_ : Kernel or None
        The kernel evaluated (:class:`~structkernels.Normalized` when normalising); None with
        ``"precomputed"``.
    normalized_ : bool
    route_ : {"exact", "nystroem"}
    support_, support_vectors_, dual_coef_, n_support_
        Exact route: ``SVC``'s (support vectors as positions in the training set and as
        structures, None when precomputed).
    landmark_indices_, landmarks_, n_components_, coef_
        Nyström route: the landmarks (positions, structures or None), the rank kept and the
        linear SVM's weights.
    normalization_ : ndarray of shape (n_landmarks, n_components_)
        Nyström route: ``K_LL^{-1/2}`` (eigenvalues at or below ``n_landmarks * eps * max``
        dropped: a pseudo-inverse).
    intercept_ : ndarray of shape (1,)
    approximation_error_ : float
        ``||K - K_approx|| / ||K||`` over the pairs (``i <= j``) of a random sample of at most
        :data:`ERROR_SAMPLE` training structures that are not landmarks; 0.0 on the exact route.
    n_features_in_ : int
        Columns of 2-D array input (the training size when precomputed).

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels.classifiers import KernelSVC
    >>> X = np.array([[0.0], [0.3], [0.6], [3.0], [3.3], [3.6]])
    >>> y = np.array(["no", "no", "no", "yes", "yes", "yes"])
    >>> clf = KernelSVC("rbf", random_state=0).fit(X, y)
    >>> clf.predict(np.array([[0.2], [3.1]])).tolist()
    ['no', 'yes']
    >>> clf.route_, clf.support_.tolist()
    ('exact', [0, 2, 3, 5])

    On paths (the path kernel, cosine-normalised):

    >>> from structkernels import Path
    >>> paths = [Path([(None, "bind"), ("ARG0", a), ("ARG1", b)])
    ...          for a in ("kinase", "gene", "cell") for b in ("Raf", "Ras")]
    >>> labels = [int(p[1][1] == "kinase") for p in paths]
    >>> svm = KernelSVC(random_state=0).fit(paths, labels)
    >>> svm.predict(paths).tolist(), svm.normalized_
    ([1, 1, 0, 0, 0, 0], True)
    """

    _param_constraints = {
        **KERNEL_CONSTRAINTS,
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_exact": [Interval(numbers.Integral, 1, None)],
        "n_components": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None)],
    }

    def __init__(self, kernel: Any = "path", kernel_params: dict | None = None, C: float = 1.0,
                 class_weight: Any = "balanced", max_exact: int = 20000, n_components: int = 2000,
                 tol: float = 0.05, random_state: Any = None, n_jobs: int | None = None,
                 normalize: bool | str = "auto"):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.C = C
        self.class_weight = class_weight
        self.max_exact = max_exact
        self.n_components = n_components
        self.tol = tol
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.normalize = normalize

    def fit(self, X: Any, y: Any) -> KernelSVC:
        """Train on structures ``X`` (or a square Gram) and their labels ``y`` (two classes)."""
        from sklearn.svm import SVC

        name = type(self).__name__
        Xs, K, y = train_input(self, X, y)
        C, tol, n_jobs = float(self.C), float(self.tol), n_jobs_value(self.n_jobs)
        for attr in _ROUTE_ATTRIBUTES:
            self.__dict__.pop(attr, None)
        n = len(y)
        classes = np.unique(y)
        if len(classes) != 2:
            if len(classes) > 2:
                raise ValueError(
                    f"Only binary classification is supported. {name}: y has {len(classes)} "
                    "classes; use sklearn.multiclass.OneVsRestClassifier(KernelSVC(...))")
            raise ValueError(f"{name} needs two classes; y has 1 class")
        rng = check_random_state(self.random_state)
        self.n_train_ = n
        if n <= self.max_exact:
            if K is None:
                K = self.kernel_.gram(Xs, n_jobs=n_jobs)
            svc = SVC(kernel="precomputed", C=C, class_weight=self.class_weight).fit(K, y)
            self.classes_ = svc.classes_
            self.support_ = np.asarray(svc.support_, dtype=np.int64)
            self.support_vectors_ = None if Xs is None else take(Xs, self.support_)
            self.dual_coef_ = np.array(svc.dual_coef_, dtype=np.float64)
            self.intercept_ = np.array(svc.intercept_, dtype=np.float64)
            self.n_support_ = np.array(svc.n_support_)
            self.route_ = "exact"
            self.approximation_error_ = 0.0
            return self
        self._fit_nystroem(Xs, K, y, C, tol, n_jobs, rng)
        return self

    def _fit_nystroem(self, Xs, K, y, C, tol, n_jobs, rng) -> None:
        from sklearn.svm import LinearSVC

        n = self.n_train_
        m = min(int(self.n_components), n)
        land = np.sort(rng.choice(n, size=m, replace=False)).astype(np.int64)
        if K is None:
            landmarks = take(Xs, land)
            K_nm = self.kernel_.gram(Xs, landmarks, n_jobs=n_jobs)
        else:
            landmarks = None
            K_nm = np.ascontiguousarray(K[:, land])
        K_mm = K_nm[land]
        s, U = np.linalg.eigh((K_mm + K_mm.T) / 2)
        top = float(s.max(initial=0.0))
        keep = s > top * m * np.finfo(np.float64).eps
        if top <= 0 or not keep.any():
            raise ValueError(
                f"{type(self).__name__}: the kernel matrix of the {m} Nyström landmarks has no "
                "positive eigenvalue (a zero kernel on them?)")
        W = U[:, keep] / np.sqrt(s[keep])
        features = K_nm @ W
        # the error off the landmarks (on them it is 0 by construction)
        pool = np.setdiff1d(np.arange(n), land)
        if len(pool) < 2:
            pool = np.arange(n)
        sample = np.sort(rng.choice(pool, size=min(ERROR_SAMPLE, len(pool)), replace=False))
        if K is None:
            exact = self.kernel_.gram(take(Xs, sample), n_jobs=n_jobs)
        else:
            exact = K[np.ix_(sample, sample)]
        approx = features[sample] @ features[sample].T
        iu = np.triu_indices(len(sample))
        num = float(np.linalg.norm(exact[iu] - approx[iu]))
        den = float(np.linalg.norm(exact[iu]))
        error = num / den if den > 0 else (0.0 if num == 0 else float("inf"))
        svm = LinearSVC(C=C, class_weight=self.class_weight,
                        random_state=rng.randint(np.iinfo(np.int32).max)).fit(features, y)
        self.classes_ = svm.classes_
        self.landmark_indices_ = land
        self.landmarks_ = landmarks
        self.normalization_ = W
        self.n_components_ = int(W.shape[1])
        self.coef_ = np.array(svm.coef_, dtype=np.float64)
        self.intercept_ = np.array(svm.intercept_, dtype=np.float64)
        self.route_ = "nystroem"
        self.approximation_error_ = error
        if error > tol:
            warnings.warn(
                f"{type(self).__name__}: the Nyström approximation with {m} landmarks (rank "
                f"{self.n_components_}) has relative error {error:.3g} on {len(sample)} "
                f"training structures, above tol={tol:g}; raise n_components or max_exact",
                ApproximationWarning, stacklevel=3)

    def decision_function(self, X: Any) -> np.ndarray:
        """Signed distance to the margin, shape (n,): positive means ``classes_[1]``."""
        check_is_fitted(self, "classes_")
        if self.route_ == "exact":
            K = values_against(self, X, self.support_, self.support_vectors_)
            return K @ self.dual_coef_[0] + self.intercept_[0]
        K = values_against(self, X, self.landmark_indices_, self.landmarks_)
        return (K @ self.normalization_) @ self.coef_[0] + self.intercept_[0]

    def predict(self, X: Any) -> np.ndarray:
        """``classes_[1]`` where :meth:`decision_function` is positive, else ``classes_[0]``."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.int64)]

    def __sklearn_tags__(self):
        tags = input_tags(self, super().__sklearn_tags__())
        tags.classifier_tags.multi_class = False
        return tags
