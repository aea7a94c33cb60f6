"""What the classifiers of this package share: kernel, input, label and Gram checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.sparse import issparse

from structkernels.engine.source import check_precomputed_gram
from structkernels.kernels.base import Kernel, Normalized
from structkernels.kernels.names import as_kernel
from structkernels.neighbors.settings import MAIN_JOB_SETTINGS
from structkernels.utils import check_int

__all__ = [
    "is_precomputed", "resolve_n_jobs", "resolve_kernel", "check_structures", "check_gram",
    "check_labels", "check_n_features", "set_n_features", "check_number", "check_int",
]


def is_precomputed(kernel: Any) -> bool:
    """Whether ``kernel`` is the string ``"precomputed"``."""
    return isinstance(kernel, str) and kernel == "precomputed"


def resolve_n_jobs(n_jobs: Any, owner: str) -> int:
    """``n_jobs`` for the Gram engine and joblib: None is -1, every core the process may use.

    joblib resolves -1 to the CPUs this process may run on (its affinity mask and
    container quota), the rule of :func:`structkernels.gram`.
    """
    if n_jobs is None:
        return -1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ValueError(f"{owner}.n_jobs must be None or a non-zero int, got {n_jobs!r}")
    return int(n_jobs)


def resolve_kernel(
    kernel: Any, kernel_params: dict | None, normalize: Any, owner: str
) -> tuple[Kernel, bool]:
    """The kernel to evaluate (a :class:`Normalized` one when normalising) and whether it is.

    ``kernel="path"`` with ``kernel_params=None`` is the main job's path kernel
    (``{"lam": 0.8, "node_mismatch": 0.9}``, partial credit for tuples with equal
    edges and different nodes), as :class:`~structkernels.KernelKNNClassifier`'s.

    ``normalize="auto"`` normalises kernels whose values grow with the structures'
    size (``Kernel.grows_with_size``); a :class:`Normalized` kernel given by the
    user is normalised whatever ``normalize`` says.
    """
    if not (isinstance(normalize, (bool, np.bool_)) or (
            isinstance(normalize, str) and normalize == "auto")):
        raise ValueError(f"{owner}.normalize must be True, False or 'auto', got {normalize!r}")
    if kernel_params is not None and not isinstance(kernel_params, dict):
        raise TypeError(f"{owner}.kernel_params must be a dict or None, got "
                        f"{type(kernel_params).__name__}")
    if kernel_params is None and isinstance(kernel, str) and kernel == "path":
        kernel_params = dict(MAIN_JOB_SETTINGS["kernel_params"])
    kern = as_kernel(kernel, **(kernel_params or {}))
    base, norm = (kern.kernel, True) if isinstance(kern, Normalized) else (kern, False)
    if isinstance(normalize, str):
        norm = norm or bool(getattr(base, "grows_with_size", False))
    else:
        norm = norm or bool(normalize)
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


def set_n_features(est: Any, X: Any) -> None:
    """``n_features_in_`` for 2-D array input (scikit-learn's convention); none for structures."""
    if isinstance(X, np.ndarray) and X.ndim == 2:
        est.n_features_in_ = int(X.shape[1])
    elif hasattr(est, "n_features_in_"):
        del est.n_features_in_


def check_n_features(est: Any, X: Any) -> None:
    """Refuse 2-D array input whose width differs from the fitted one."""
    expected = getattr(est, "n_features_in_", None)
    if expected is not None and isinstance(X, np.ndarray) and X.shape[-1:] != (expected,):
        got = X.shape[1] if X.ndim == 2 else X.shape
        raise ValueError(
            f"X has {got} features, but {type(est).__name__} is expecting {expected} features "
            "as input"
        )


def check_number(value: Any, what: str, *, positive: bool) -> float:
    """``value`` is a finite real number, > 0 when ``positive`` else >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or (value <= 0 if positive else value < 0):
        raise ValueError(f"{what} must be a finite number {'> 0' if positive else '>= 0'}, "
                         f"got {value!r}")
    return float(value)
