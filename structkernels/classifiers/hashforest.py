"""Kernelised hash codes and a random forest (Garg et al., AAAI 2019).

A structure becomes the bits of ``n_hashes`` random k-NN hash functions over one shared
reference set of about ``sqrt(N)`` training structures (``M`` kernel values whatever the
number of bits); a random forest learns from the codes.
"""

from __future__ import annotations

import math
import numbers
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
from structkernels.kernels.lookup import GramLookup
from structkernels.neighbors.hashing import MAX_BITS, RandomKNNHash
from structkernels.structures import take
from structkernels.utils import Interval, ValidatedParamsMixin, n_jobs_value

__all__ = ["HashForestClassifier"]


class HashForestClassifier(ValidatedParamsMixin, ClassifierMixin, BaseEstimator):
    """Random forest on kernelised hash codes (KLSH-RF, Garg et al. 2019).

    Parameters
    ----------
    kernel : str or Kernel, default "path"
        A registered kernel name (built with ``kernel_params``), a Kernel instance, or
        ``"precomputed"``: ``fit`` then takes the square train Gram matrix and prediction the
        (n_test, n_train) one (only the reference structures' columns are read).
    kernel_params : dict, optional
        Parameters of a kernel given by name.  None with ``kernel="path"``:
        :data:`~structkernels.neighbors.settings.PATH_PARTIAL_CREDIT` (partial credit 0.9).
    n_bits : int, default 32
        Bits per hash function (at most 62).
    n_hashes : int, default 32
        Independent hash functions; the forest sees ``n_hashes * n_bits`` binary features.
    n_reference : int, optional
        Size ``M`` of the shared reference set; default ``ceil(sqrt(N))`` (at least 2).
    subset_size : int, optional
        Size of each of a bit's two reference subsets; default 2 (1 when ``M < 4``): small
        subsets make the bits more independent (the paper's small ``alpha``).
    n_estimators, max_features, class_weight : default 100, "sqrt", "balanced"
        The random forest's.
    normalize : bool or "auto", default "auto"
        Use ``k(x, y) / sqrt(k(x, x) k(y, y))``; ``"auto"``: for kernels whose values grow with
        the structures' size (``Kernel.grows_with_size``).  Not for ``"precomputed"``.
    random_state : int, RandomState or None
        Seeds the reference set, the hash functions and the forest.
    n_jobs : int or None, default None
        Workers of the Gram engine and the forest; None: every core the process may use.

    Attributes
    ----------
    classes_ : ndarray
    kernel_ : Kernel or None
        The kernel evaluated; None with ``"precomputed"``.
    normalized_ : bool
    reference_indices_, reference_
        The reference structures: their positions in the training set, and themselves (None
        when precomputed).
    hashers_ : list of RandomKNNHash
        The fitted hash functions, on ``reference_`` (their ``reference_indices_`` index it).
    forest_ : RandomForestClassifier
    n_train_ : int
    n_features_in_ : int
        Columns of 2-D array input (the training size when precomputed).

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels.classifiers import HashForestClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (40, 2)), rng.normal(4, 1, (40, 2))])
    >>> y = np.repeat([0, 1], 40)
    >>> clf = HashForestClassifier("rbf", n_bits=8, n_hashes=4, n_estimators=20,
    ...                            random_state=0, n_jobs=1).fit(X, y)
    >>> clf.predict(np.array([[0.0, 0.0], [4.0, 4.0]])).tolist()
    [0, 1]
    >>> clf.codes(X).shape, len(clf.reference_indices_)
    ((80, 32), 9)
    """

    _param_constraints = {
        **KERNEL_CONSTRAINTS,
        "n_bits": [Interval(numbers.Integral, 1, MAX_BITS)],
        "n_hashes": [Interval(numbers.Integral, 1, None)],
        "n_reference": [None, Interval(numbers.Integral, 2, None)],
        "subset_size": [None, Interval(numbers.Integral, 1, None)],
        "n_estimators": [Interval(numbers.Integral, 1, None)],
    }

    def __init__(self, kernel: Any = "path", kernel_params: dict | None = None, n_bits: int = 32,
                 n_hashes: int = 32, n_reference: int | None = None, subset_size: int | None = None,
                 n_estimators: int = 100, max_features: Any = "sqrt",
                 class_weight: Any = "balanced", normalize: bool | str = "auto",
                 random_state: Any = None, n_jobs: int | None = None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_bits = n_bits
        self.n_hashes = n_hashes
        self.n_reference = n_reference
        self.subset_size = subset_size
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.class_weight = class_weight
        self.normalize = normalize
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X: Any, y: Any) -> HashForestClassifier:
        """Draw the references and hash functions, hash ``X`` and grow the forest."""
        from sklearn.ensemble import RandomForestClassifier

        name = type(self).__name__
        Xs, K, y = train_input(self, X, y)
        n_jobs = n_jobs_value(self.n_jobs)
        n = len(y)
        if n < 2:
            raise ValueError(f"{name} needs at least 2 training structures, got n_samples={n}")
        m = self.n_reference if self.n_reference is not None else max(2, math.ceil(math.sqrt(n)))
        if m > n:
            raise ValueError(f"{name}.n_reference={m} exceeds the {n} training structures")
        rng = check_random_state(self.random_state)
        ref = np.sort(rng.choice(n, size=m, replace=False)).astype(np.int64)
        if self.kernel_ is None:
            hash_kernel, hashed = GramLookup(K[np.ix_(ref, ref)]), np.arange(m)
            self.reference_ = None
            S = K[:, ref]
        else:
            hash_kernel = self.kernel_
            hashed = self.reference_ = take(Xs, ref)
            S = self.kernel_.gram(Xs, self.reference_, n_jobs=n_jobs)
        # every hash function is fitted on the reference set: all share its M kernel values
        s = self.subset_size if self.subset_size is not None else (2 if m >= 4 else 1)
        seeds = rng.randint(np.iinfo(np.int32).max, size=int(self.n_hashes) + 1)
        self.hashers_ = [
            RandomKNNHash(hash_kernel, n_bits=int(self.n_bits), n_reference=m,
                          subset_size=s, random_state=int(seed)).fit(hashed)
            for seed in seeds[:-1]
        ]
        self.reference_indices_ = ref
        self.n_train_ = n
        self.forest_ = RandomForestClassifier(
            n_estimators=self.n_estimators, max_features=self.max_features,
            class_weight=self.class_weight, n_jobs=n_jobs, random_state=int(seeds[-1]),
        ).fit(self._codes_from(S), y)
        self.classes_ = self.forest_.classes_
        return self

    def _codes_from(self, S: np.ndarray) -> np.ndarray:
        return np.hstack([h.bits_from_similarities(S[:, h.reference_indices_])
                          for h in self.hashers_])

    def codes(self, X: Any) -> np.ndarray:
        """The binary hash codes of ``X``, shape (n, n_hashes * n_bits): the forest's features."""
        check_is_fitted(self, "classes_")
        return self._codes_from(values_against(self, X, self.reference_indices_, self.reference_))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of the forest, shape (n, n_classes)."""
        codes = self.codes(X)  # checks first that the classifier is fitted
        return self.forest_.predict_proba(codes)

    def decision_function(self, X: Any) -> np.ndarray:
        """Class probabilities centred on chance, scikit-learn's convention for a margin.

        Two classes: ``P(classes_[1]) - 0.5``, shape (n,); more: ``P - 1 / n_classes``, shape
        (n, n_classes).  It ranks as the probabilities do (ROC AUC, precision-recall curves).
        """
        proba = self.predict_proba(X)
        if proba.shape[1] == 2:
            return proba[:, 1] - 0.5
        return proba - 1.0 / proba.shape[1]

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        return input_tags(self, super().__sklearn_tags__())
