"""What the classifiers of this package share: parameter constraints and input checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.sparse import issparse

from structkernels.engine.source import check_precomputed_gram
from structkernels.kernels.base import Normalized
from structkernels.kernels.names import takes_arrays
from structkernels.neighbors.graph import prepare_kernel
from structkernels.neighbors.hashing import check_n_features, set_n_features
from structkernels.neighbors.settings import classifier_kernel_params
from structkernels.utils import N_JOBS, Options, n_jobs_value

__all__ = ["KERNEL_CONSTRAINTS", "train_input", "values_against", "input_tags"]


#: The parameter constraints every classifier of this package shares.
KERNEL_CONSTRAINTS: dict[str, list[Any]] = {
    "kernel_params": [None, dict],
    "normalize": ["boolean", Options(["auto"])],
    "random_state": ["random_state"],
    "n_jobs": N_JOBS,
}


def _precomputed(kernel: Any) -> bool:
    return isinstance(kernel, str) and kernel == "precomputed"


def _structures(est: Any, X: Any) -> Sequence:
    """``X`` in the kernel's checked form (encoded paths or trees, float arrays)."""
    owner = type(est).__name__
    if issparse(X):
        raise TypeError(
            f"{owner}: sparse input is not supported; pass a dense array, a sequence of "
            "structures, or kernel='precomputed' with a dense Gram matrix")
    if isinstance(X, (str, bytes)):
        raise TypeError(f"{owner}: expected a sequence of structures, got a bare string")
    if not isinstance(X, (list, tuple, np.ndarray)) and hasattr(X, "__array__"):
        X = np.asarray(X)
    return est.kernel_.check_input(X)


def _labels(y: Any, n: int, owner: str) -> np.ndarray:
    """``y`` as a 1-D array of classification targets, one per structure."""
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import column_or_1d

    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None")
    y = column_or_1d(y, warn=True)
    check_classification_targets(y)
    if len(y) != n:
        raise ValueError(f"{owner}: X has {n} structures but y has {len(y)} labels")
    return y


def train_input(est: Any, X: Any, y: Any) -> tuple[Sequence | None, np.ndarray | None,
                                                  np.ndarray]:
    """The parameters checked, then ``(structures, None, y)``, or ``(None, Gram, y)`` when
    precomputed; sets the estimator's ``kernel_``, ``normalized_`` and ``n_features_in_``.

    A kernel name with ``kernel_params=None`` means its configuration of
    :data:`~structkernels.neighbors.settings.CLASSIFIER_KERNELS`; a :class:`Normalized`
    kernel is normalised whatever ``normalize`` says.
    """
    name = type(est).__name__
    est._validate_params()
    if _precomputed(est.kernel):
        if est.kernel_params or (not isinstance(est.normalize, str) and est.normalize):
            raise ValueError(
                f"{name}: kernel_params and normalize do not apply to kernel='precomputed'")
        K = check_precomputed_gram(X, n_cols=None, label="the train Gram matrix", owner=name)
        est.kernel_, est.normalized_ = None, False
        est.n_features_in_ = K.shape[1]
        return None, K, _labels(y, len(K), name)
    base, norm = prepare_kernel(est.kernel, classifier_kernel_params(est.kernel, est.kernel_params),
                                est.normalize)
    kern = Normalized(base) if norm else base
    kern.validate_params()
    est.kernel_, est.normalized_ = kern, norm
    Xs = _structures(est, X)
    set_n_features(est, Xs)
    return Xs, None, _labels(y, len(Xs), name)


def values_against(est: Any, X: Any, cols: np.ndarray, against: Any) -> np.ndarray:
    """Kernel values of ``X`` against the fitted structures ``against``; precomputed: the
    columns ``cols`` of the test Gram ``X``."""
    if est.kernel_ is None:
        return check_precomputed_gram(X, n_cols=est.n_train_, label="the test Gram matrix",
                                      owner=type(est).__name__)[:, cols]
    Xq = _structures(est, X)
    check_n_features(est, Xq)
    return est.kernel_.gram(Xq, against, n_jobs=n_jobs_value(est.n_jobs, est))


def input_tags(est: Any, tags: Any) -> Any:
    """scikit-learn's input tags of a classifier on structures or a precomputed Gram."""
    tags.input_tags.pairwise = _precomputed(est.kernel)
    # structures (paths, trees) are not 2-D float arrays: sklearn's checks skip them
    tags.input_tags.two_d_array = takes_arrays(est.kernel, est.kernel_params)
    return tags
