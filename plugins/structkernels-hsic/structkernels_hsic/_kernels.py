"""Resolving the ``kernel_x`` / ``kernel_y`` parameters into the core's kernel sources.

What the estimators need of one side of the data (the diagonal, a few columns for
incomplete Cholesky, Gram tiles for the exact estimators, cross blocks against new
points, float32 or float64) is asked of :class:`structkernels.engine.source.KernelSource`
(a registered name or a :class:`structkernels.Kernel`) or
:class:`structkernels.engine.source.PrecomputedSource` (``"precomputed"``: the Gram
matrix itself, as in scikit-learn); both count the kernel evaluations they make.  Here
live the plugin's input conventions: a 1-D array is one feature, float32 vectors are
read as they are, ``bandwidth="median"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.base import clone

from structkernels import Kernel, as_kernel
from structkernels.engine.source import KernelSource, PrecomputedSource
from structkernels.kernels.base import Normalized
from structkernels.kernels.names import takes_arrays
from structkernels.kernels.vector import VectorKernel

__all__ = [
    "resolve_source",
    "median_heuristic",
    "check_dtype",
    "input_tags",
    "set_n_features",
    "check_n_features",
]

DTYPES = (np.float64, np.float32)


def check_dtype(dtype: Any) -> type:
    """``np.float64`` or ``np.float32``; anything else is refused by name."""
    try:
        dt = np.dtype(dtype).type
    except TypeError:
        dt = None
    if dt not in DTYPES:
        raise ValueError(f"dtype must be np.float64 or np.float32, got {dtype!r}")
    return dt


def _base(kernel: Any) -> Any:
    return kernel.kernel if isinstance(kernel, Normalized) else kernel


def as_column(kernel: Any, X: Any, name: str = "Y", allow_1d: bool = True) -> Any:
    """A 1-D numeric array given to a vector kernel is one feature: a column (n, 1).

    With ``allow_1d=False`` (scikit-learn's convention for ``X``) it is refused
    with the usual "Expected 2D array" message instead.
    """
    if isinstance(_base(kernel), VectorKernel) and not isinstance(X, (str, bytes)):
        try:
            A = np.asarray(X)
        except (TypeError, ValueError):
            return X
        if A.ndim != 1 or not A.size:
            return X
        if A.dtype == object:
            try:
                A = A.astype(np.float64)
            except (TypeError, ValueError):
                return X
        if A.dtype.kind not in "biuf":
            return X
        if not allow_1d:
            raise ValueError(
                f"Expected 2D array, got 1D array instead: {name} of shape {A.shape}. Reshape your data "
                f"using {name}.reshape(-1, 1) for one feature (a 1-D Y is read as one column)"
            )
        return A.reshape(-1, 1)
    return X


def check_vectors(kernel: Kernel, X: Any, dtype: type) -> np.ndarray:
    """``kernel.check_input`` in ``dtype``: float32 input stays float32 (no float64 copy)."""
    if dtype is np.float64 or not isinstance(_base(kernel), VectorKernel):
        return kernel.check_input(X)
    from sklearn.utils import check_array

    name = type(_base(kernel)).__name__
    if isinstance(X, np.ndarray) and X.dtype.kind == "b":
        kernel.check_input(X)  # refused there, with the vector kernels' message
    if isinstance(X, np.ndarray) and X.dtype.kind == "f" and X.dtype.itemsize > 4 and X.size:
        # float64 values beyond float32's range would become infinities on conversion
        big = np.abs(X) > np.finfo(np.float32).max
        if big.any():
            at = tuple(int(v) for v in np.argwhere(big)[0])
            raise ValueError(
                f"{name}: row {at[0]} has a value ({float(X[at]):.3g}) beyond float32's range "
                "(3.4e38); use dtype=np.float64 or scale the input down"
            )
    try:
        A = check_array(X, dtype=np.float32, ensure_all_finite=False, ensure_min_samples=0, input_name=name)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} expects a 2-D float array (one row per vector): {exc}") from None
    if not np.isfinite(A).all():
        bad = np.flatnonzero(~np.isfinite(A).all(axis=1))
        raise ValueError(f"{name}: input contains NaN or infinity in row(s) {bad[:10].tolist()}")
    return A


def input_tags(tags: Any, kernel: Any, params: Mapping[str, Any] | None) -> Any:
    """``tags`` (scikit-learn's) of an estimator whose ``X`` is read by ``kernel``.

    ``"precomputed"`` takes Gram matrices (``pairwise``); a kernel on
    structures (paths, trees) takes no 2-D float array, so scikit-learn's
    checks skip what needs one (:func:`structkernels.kernels.names.takes_arrays`).

    Examples
    --------
    >>> from structkernels_hsic import HSIC
    >>> from sklearn.utils import get_tags
    >>> get_tags(HSIC("path")).input_tags.two_d_array, get_tags(HSIC()).input_tags.two_d_array
    (False, True)
    """
    tags.input_tags.pairwise = isinstance(kernel, str) and kernel == "precomputed"
    tags.input_tags.two_d_array = takes_arrays(kernel, dict(params or {}))
    return tags


def set_n_features(estimator: Any, X: Any) -> None:
    """``estimator.n_features_in_`` = the columns of a 2-D array ``X`` (scikit-learn's
    convention); removed when ``X`` is anything else (structures, a Gram matrix)."""
    if isinstance(X, np.ndarray) and X.ndim == 2:
        estimator.n_features_in_ = int(X.shape[1])
    elif "n_features_in_" in vars(estimator):
        del estimator.n_features_in_


def check_n_features(estimator: Any, X: Any) -> None:
    """A 2-D array ``X`` must have the ``n_features_in_`` columns seen by ``fit``."""
    expected = getattr(estimator, "n_features_in_", None)
    if expected is not None and isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[1] != expected:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{expected} features as input"
        )


def median_heuristic(X: Any, *, max_samples: int = 2000, random_state: int = 0) -> float:
    """Median of the pairwise Euclidean distances between distinct rows of ``X``.

    The bandwidth ``b`` of the RBF kernel ``exp(-||x - y||^2 / (2 b^2))``
    is set to this median, which is hyppo's convention (``gamma = 1 / (2 med^2)``)
    and Gretton et al.'s.  Above ``max_samples`` rows, a seeded subsample is used.
    A median of 0 (constant data) gives 1.0, as in hyppo.

    Examples
    --------
    >>> import numpy as np
    >>> median_heuristic(np.array([[0.0], [1.0], [3.0]]))
    2.0
    """
    from scipy.spatial.distance import pdist

    A = np.asarray(X)
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2 or len(A) < 2:
        raise ValueError(f"median heuristic needs a 2-D array of at least 2 rows, got shape {A.shape}")
    if len(A) > max_samples:  # subsample before any conversion: no copy of a large input
        rng = np.random.default_rng(random_state)
        A = A[np.sort(rng.choice(len(A), max_samples, replace=False))]
    A = np.asarray(A, dtype=np.float64)
    med = float(np.median(pdist(A)))
    return med if med > 0 else 1.0


def _median_key(kernel: Kernel) -> str | None:
    """The parameter set to ``"median"``: ``bandwidth``, or its deprecated name ``sigma``."""
    params = kernel.get_params(deep=False)
    return next((k for k in ("bandwidth", "sigma") if params.get(k) == "median"), None)


def _with_median(kernel: Kernel, X: Any) -> Kernel:
    """Replace a ``bandwidth="median"`` parameter by the median heuristic on ``X``."""
    key = _median_key(kernel)
    if key is not None:
        A = X if isinstance(X, np.ndarray) and X.dtype.kind == "f" else kernel.check_input(X)
        return clone(kernel).set_params(**{key: median_heuristic(A)})
    return kernel


def resolve_kernel(spec: Any, params: Mapping[str, Any] | None, X: Any) -> Kernel | None:
    """A Kernel (``bandwidth="median"`` resolved on ``X``), or None for ``"precomputed"``."""
    if isinstance(spec, str) and spec == "precomputed":
        if params:
            raise ValueError("kernel parameters cannot be given with kernel='precomputed'")
        return None
    kernel = as_kernel(spec, **dict(params or {}))
    inner = kernel.kernel if isinstance(kernel, Normalized) else kernel
    if _median_key(inner) is not None:
        resolved = _with_median(inner, X)
        kernel = Normalized(resolved) if isinstance(kernel, Normalized) else resolved
    return kernel


def resolve_source(
    spec: Any,
    params: Mapping[str, Any] | None,
    X: Any,
    *,
    name: str = "X",
    n_jobs: int = 1,
    dtype: Any = np.float64,
    allow_1d: bool = True,
) -> KernelSource | PrecomputedSource:
    """The Gram source of one side of the data (a 1-D array is one feature for a vector kernel)."""
    if not (isinstance(spec, str) and spec == "precomputed"):
        k = as_kernel(spec, **dict(params or {})) if isinstance(spec, str) else spec
        X = as_column(k, X, name=name, allow_1d=allow_1d)
    kernel = resolve_kernel(spec, params, X)
    if kernel is None:
        return precomputed_source(X, name, dtype)
    return kernel_source(kernel, X, dtype, n_jobs=n_jobs)


def precomputed_source(K: Any, name: str, dtype: Any) -> PrecomputedSource:
    """The source of a precomputed Gram matrix ``K`` of side ``name`` (errors name it)."""
    return PrecomputedSource(K, label=f"precomputed Gram matrix {name}", dtype=check_dtype(dtype),
                             cross_label=f"precomputed cross Gram matrix of new {name}")


def kernel_source(kernel: Kernel, X: Any, dtype: Any = np.float64, *, n_jobs: int = 1,
                  inner_diag: Any = None) -> KernelSource:
    """The source of ``kernel`` over ``X`` (float32 vectors read as they are); ``inner_diag``:
    a normalised kernel's inner diagonal known already (a saved model's)."""
    kernel.validate_params()
    dtype = check_dtype(dtype)
    return KernelSource(kernel, check_vectors(kernel, X, dtype), checked=True, n_jobs=n_jobs,
                        dtype=dtype, diag_x=inner_diag)


def cross_source(source: KernelSource | PrecomputedSource, X_new: Any,
                 idx: Any = None) -> np.ndarray:
    """``source``'s cross block against new points ``X_new`` read as its training side was
    (a 1-D array is one feature; float32 vectors as they are), or a precomputed cross Gram."""
    if source.precomputed:
        return source.cross(X_new, idx)
    k = source.kernel
    return source.cross(check_vectors(k, as_column(k, X_new), source.dtype), idx, checked=True)
