"""What the classifiers of this package share: parameter constraints, kernel, input, label
and Gram checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.sparse import issparse

from structkernels.engine.source import check_precomputed_gram
from structkernels.kernels.base import Kernel, Normalized
from structkernels.kernels.names import takes_arrays
from structkernels.neighbors.graph import prepare_kernel
from structkernels.neighbors.hashing import set_n_features
from structkernels.neighbors.settings import classifier_kernel_params
from structkernels.utils import N_JOBS, Options, n_jobs_value

__all__ = [
    "is_precomputed", "resolve_kernel", "check_structures", "check_gram", "check_labels",
    "check_n_features", "KERNEL_CONSTRAINTS", "precomputed_refusals",
    "train_input", "values_against", "input_tags",
]


#: The parameter constraints every classifier of this package shares.
KERNEL_CONSTRAINTS: dict[str, list[Any]] = {
    "kernel_params": [None, dict],
    "normalize": ["boolean", Options(["auto"])],
    "random_state": ["random_state"],
    "n_jobs": N_JOBS,
}


def precomputed_refusals(est: Any) -> None:
    """``kernel_params`` and ``normalize`` do not apply to ``kernel="precomputed"``."""
    if is_precomputed(est.kernel) and (
            est.kernel_params or (not isinstance(est.normalize, str) and est.normalize)):
        raise ValueError(
            f"{type(est).__name__}: kernel_params and normalize do not apply to "
            "kernel='precomputed'"
        )


def is_precomputed(kernel: Any) -> bool:
    """Whether ``kernel`` is the string ``"precomputed"``."""
    return isinstance(kernel, str) and kernel == "precomputed"


def resolve_kernel(
    kernel: Any, kernel_params: dict | None, normalize: Any, owner: str
) -> tuple[Kernel, bool]:
    """The kernel to evaluate (a :class:`Normalized` one when normalising) and whether it is.

    ``kernel_params`` and ``normalize`` are checked by the caller (its parameter
    constraints).  A kernel name with ``kernel_params=None`` means its named
    configuration of :data:`~structkernels.neighbors.settings.CLASSIFIER_KERNELS`
    (``"path"``: partial credit 0.9 for tuples with equal edges and different nodes),
    as for :class:`~structkernels.KernelKNNClassifier`.

    ``normalize="auto"`` normalises kernels whose values grow with the structures'
    size (``Kernel.grows_with_size``); a :class:`Normalized` kernel given by the
    user is normalised whatever ``normalize`` says.
    """
    base, norm = prepare_kernel(kernel, classifier_kernel_params(kernel, kernel_params),
                                normalize)
    kern = Normalized(base) if norm else base
    kern.validate_params()
    return kern, norm


def check_structures(kern: Kernel, X: Any, owner: str) -> Sequence:
    """``X`` in the kernel's checked form (encoded paths or trees, float arrays)."""
    if issparse(X):
        raise TypeError(
            f"{owner}: sparse input is not supported; pass a dense array, a sequence of "
            "structures, or kernel='precomputed' with a dense Gram matrix"
        )
    if isinstance(X, (str, bytes)):
        raise TypeError(f"{owner}: expected a sequence of structures, got a bare string")
    if not isinstance(X, (list, tuple, np.ndarray)) and hasattr(X, "__array__"):
        X = np.asarray(X)
    return kern.check_input(X)


def check_gram(K: Any, n_cols: int | None, what: str, owner: str) -> np.ndarray:
    """A finite 2-D float Gram; square when ``n_cols`` is None, else with ``n_cols`` columns
    (:func:`structkernels.engine.source.check_precomputed_gram`)."""
    return check_precomputed_gram(K, n_cols=n_cols, label=f"the {what} Gram matrix", owner=owner)


def check_labels(y: Any, n: int, owner: str) -> np.ndarray:
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


def check_n_features(est: Any, X: Any) -> None:
    """Refuse 2-D array input whose width differs from the fitted one."""
    expected = getattr(est, "n_features_in_", None)
    if expected is not None and isinstance(X, np.ndarray) and X.shape[-1:] != (expected,):
        got = X.shape[1] if X.ndim == 2 else X.shape
        raise ValueError(
            f"X has {got} features, but {type(est).__name__} is expecting {expected} features "
            "as input"
        )


def train_input(est: Any, X: Any, y: Any) -> tuple[Sequence | None, np.ndarray | None,
                                                  np.ndarray]:
    """``(structures, None, y)``, or ``(None, Gram, y)`` when precomputed, ``y`` checked
    (:func:`check_labels`); sets the estimator's ``kernel_``, ``normalized_`` and
    ``n_features_in_``."""
    name = type(est).__name__
    if is_precomputed(est.kernel):
        K = check_gram(X, None, "train", name)
        est.kernel_, est.normalized_ = None, False
        est.n_features_in_ = K.shape[1]
        return None, K, check_labels(y, len(K), name)
    est.kernel_, est.normalized_ = resolve_kernel(est.kernel, est.kernel_params, est.normalize,
                                                  name)
    Xs = check_structures(est.kernel_, X, name)
    set_n_features(est, Xs)
    return Xs, None, check_labels(y, len(Xs), name)


def values_against(est: Any, X: Any, cols: np.ndarray, against: Any) -> np.ndarray:
    """Kernel values of ``X`` against the fitted structures ``against``; precomputed: the
    columns ``cols`` of the test Gram ``X``."""
    name = type(est).__name__
    if est.kernel_ is None:
        return check_gram(X, est.n_train_, "test", name)[:, cols]
    Xq = check_structures(est.kernel_, X, name)
    check_n_features(est, Xq)
    return est.kernel_.gram(Xq, against, n_jobs=n_jobs_value(est.n_jobs, est))


def input_tags(est: Any, tags: Any) -> Any:
    """scikit-learn's input tags of a classifier on structures or a precomputed Gram."""
    tags.input_tags.pairwise = is_precomputed(est.kernel)
    # structures (paths, trees) are not 2-D float arrays: sklearn's checks skip them
    tags.input_tags.two_d_array = takes_arrays(est.kernel, est.kernel_params)
    return tags
