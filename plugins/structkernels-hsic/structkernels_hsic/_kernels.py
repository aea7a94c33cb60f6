"""Resolving the ``kernel_x`` / ``kernel_y`` parameters into Gram sources.

A *source* gives what the estimators need of one side of the data and nothing
more: the diagonal, a few columns (for incomplete Cholesky), full Gram blocks
(for the exact estimators) and cross blocks against new points.  Two kinds
exist: :class:`KernelSource` (a registered name or a
:class:`structkernels.Kernel`, consumed only through ``check_input``,
``gram_block``, ``diag_block`` and :func:`structkernels.gram`) and
:class:`PrecomputedSource` (``"precomputed"``: the Gram matrix itself, as in
scikit-learn).  Every source counts the kernel evaluations it makes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone

from structkernels import Kernel, as_kernel, gram
from structkernels.engine.checks import (
    PROBE_SIZE,
    NonFiniteKernelValueError,
    check_gram_sample,
    check_kernel_values,
    normalize_gram,
    validation_level,
)
from structkernels.engine.source import check_precomputed_gram
from structkernels.kernels.base import Normalized
from structkernels.kernels.names import takes_arrays
from structkernels.kernels.vector import VectorKernel
from structkernels.structures import take

__all__ = [
    "resolve_source",
    "KernelSource",
    "PrecomputedSource",
    "median_heuristic",
    "take",
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


def _check_vectors(kernel: Kernel, X: Any, dtype: type) -> np.ndarray:
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

    The bandwidth ``sigma`` of the RBF kernel ``exp(-||x - y||^2 / (2 sigma^2))``
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


def _with_median(kernel: Kernel, X: Any) -> Kernel:
    """Replace a ``sigma="median"`` parameter by the median heuristic on ``X``."""
    params = kernel.get_params(deep=False)
    if params.get("sigma") == "median":
        A = X if isinstance(X, np.ndarray) and X.dtype.kind == "f" else kernel.check_input(X)
        return clone(kernel).set_params(sigma=median_heuristic(A))
    return kernel


class KernelSource:
    """Gram access to ``X`` under a kernel, counting evaluations.

    Parameters
    ----------
    kernel : Kernel
    X : structures (checked here with ``kernel.check_input``)
    n_jobs : int
        Passed to :func:`structkernels.gram` for full Gram matrices.
    dtype : np.float64 or np.float32
        Arithmetic of the blocks.  With float32 the vector kernels read float32
        input as it is (no float64 copy) and compute in float32; other kernels
        compute as they do and their blocks are cast.

    The RBF and cosine kernels' columns for incomplete Cholesky are computed
    with the rows' squared norms (RBF) or the unit rows (cosine) prepared once,
    the same formulas as their ``gram_block`` without re-reading ``X`` per
    column (``X`` is read once per column instead of two or four times).
    """

    precomputed = False

    def __init__(self, kernel: Kernel, X: Any, n_jobs: int = 1, dtype: Any = np.float64):
        kernel.validate_params()
        self.kernel = kernel
        self.dtype = check_dtype(dtype)
        self.X = _check_vectors(kernel, X, self.dtype)
        self.n = len(self.X)
        self.n_jobs = n_jobs
        self.n_evaluations = 0
        self._prepared: tuple | None = None
        # A Normalized kernel: its inner diagonal is computed once (as the Gram
        # engine does), not once per column as Normalized.gram_block would.
        self._inner = kernel.kernel if isinstance(kernel, Normalized) else None
        self._inner_diag: np.ndarray | None = None
        # symmetry/PSD checks of plugin and user kernels (Kernel.output_validation), made on
        # values computed anyway: the first diagonal tile, the incomplete Cholesky's pivots
        self.full_validation = validation_level(kernel) == "full"

    def _checked(
        self,
        values: np.ndarray,
        *,
        offsets: tuple[int, int] = (0, 0),
        cols: Any = None,
        names: tuple[str, str] = ("X", "X"),
        diagonal: bool = False,
        kernel: Any = None,
    ) -> np.ndarray:
        """``values``, refused naming the pair if any is NaN or infinite (in this dtype).

        ``cols``: the column positions of ``values`` when they are not contiguous.
        """
        a = np.asarray(values)
        if np.isfinite(a).all():
            return values
        try:
            check_kernel_values(kernel or self.kernel, a, offsets=offsets, names=names,
                                diagonal=diagonal, cols=cols)
        except NonFiniteKernelValueError as exc:
            if self.dtype is np.float32 and np.isinf(exc.value):
                raise NonFiniteKernelValueError(
                    f"{str(exc).split('; ')[0]} in float32 (beyond 3.4e38); use "
                    "dtype=np.float64 or scale the input down",
                    exc.index,
                    exc.value,
                ) from None
            raise
        return values

    def _raw_diag(self) -> np.ndarray:
        if self._inner_diag is None:
            self._inner_diag = _InnerSource(self._inner, self.X, self).diag()
        return self._inner_diag

    def _block(
        self,
        Xa: Any,
        Xb: Any,
        da: np.ndarray | None = None,
        db: np.ndarray | None = None,
        symmetric: bool = False,
        offsets: tuple[int, int] = (0, 0),
        cols: Any = None,
        names: tuple[str, str] = ("X", "X"),
    ) -> np.ndarray:
        dt = self.dtype
        if self._inner is None:
            f = self.kernel.gram_block_symmetric if symmetric else self.kernel.gram_block
            return np.asarray(f(Xa) if symmetric else f(Xa, Xb), dtype=dt)
        f = self._inner.gram_block_symmetric if symmetric else self._inner.gram_block
        B = np.asarray(f(Xa) if symmetric else f(Xa, Xb), dtype=np.float64)
        # the raw values first: an overflow there is the kernel's, not the normalisation's
        self._checked(B, offsets=offsets, cols=cols, names=names, kernel=self._inner)
        if da is None:
            da = np.asarray(self._inner.diag_block(Xa), dtype=np.float64)
            self.n_evaluations += len(Xa)
        if db is None:
            db = np.asarray(self._inner.diag_block(Xb), dtype=np.float64)
            self.n_evaluations += len(Xb)
        return np.asarray(normalize_gram(B, da, db), dtype=dt)

    def diag(self) -> np.ndarray:
        if self._inner is not None:
            return (self._raw_diag() > 0).astype(np.float64)
        return self._plain_diag()

    def _plain_diag(self) -> np.ndarray:
        """``k(x_i, x_i)``: the kernel's own ``diag_block`` when it has one.

        A kernel that inherits the base class's per-pair ``diag_block`` but has
        a batched ``gram_block`` (the vector kernels) is asked for small
        diagonal blocks of ``chunk`` rows instead: ``chunk`` times the
        evaluations, but one BLAS call per block rather than one Python call
        per structure.
        """
        k = self.kernel
        base = type(k).diag_block is Kernel.diag_block
        batched = type(k).gram_block is not Kernel.gram_block
        if base and batched and self.n > 64:
            chunk = 128
            out = np.empty(self.n, dtype=np.float64)
            for s in range(0, self.n, chunk):
                e = min(s + chunk, self.n)
                Xb = self.X[s:e]
                out[s:e] = np.diagonal(np.asarray(k.gram_block(Xb, Xb), dtype=np.float64))
                self.n_evaluations += (e - s) ** 2
            return self._checked(out, diagonal=True, kernel=k)
        self.n_evaluations += self.n
        return self._checked(np.asarray(k.diag_block(self.X), dtype=np.float64), diagonal=True,
                             kernel=k)

    def _prepare(self) -> Any:
        """The kernel's own column function over ``X`` (per-row data prepared once:
        :meth:`structkernels.Kernel.column_function`), or None."""
        if self._prepared is None:
            self._prepared = (self.kernel.column_function(self.X),)
        return self._prepared[0]

    def columns(self, idx: Sequence[int]) -> np.ndarray:
        """``K[:, idx]`` (one kernel evaluation per entry)."""
        idx = np.asarray(idx, dtype=np.intp)
        columns_of = self._prepare()
        if columns_of is not None:
            cols = np.asarray(columns_of(idx), dtype=self.dtype)
            self.n_evaluations += cols.size
            return self._checked(cols, cols=idx)
        if self._inner is None:
            cols = self._block(self.X, take(self.X, idx), cols=idx)
        else:
            d = self._raw_diag()
            cols = self._block(self.X, take(self.X, idx), d, d[idx], cols=idx)
        self.n_evaluations += cols.size
        return self._checked(cols, cols=idx)

    def tile(self, a: tuple[int, int], b: tuple[int, int]) -> np.ndarray:
        """``K[a0:a1, b0:b1]``; a diagonal tile (``a == b``) through ``gram_block_symmetric``."""
        sym = a == b
        Xa = self.X[a[0] : a[1]]
        Xb = Xa if sym else self.X[b[0] : b[1]]
        at = (a[0], b[0])
        if self._inner is None:
            block = self._block(Xa, Xb, symmetric=sym, offsets=at)
        else:
            d = self._raw_diag()
            block = self._block(Xa, Xb, d[a[0] : a[1]], d[b[0] : b[1]], symmetric=sym, offsets=at)
        m = a[1] - a[0]
        self.n_evaluations += m * (m + 1) // 2 if sym else block.size
        self._checked(block, offsets=at)
        if sym and a[0] == 0 and self.full_validation:
            # the first diagonal tile, computed anyway: symmetry and PSD of its leading part
            t = min(m, PROBE_SIZE)
            check_gram_sample(self.kernel, np.asarray(block[:t, :t], dtype=np.float64))
        return block

    def full(self) -> np.ndarray:
        """The full Gram matrix through the Gram engine (symmetric blocks, ``n_jobs``)."""
        K, info = gram(self.kernel, self.X, n_jobs=self.n_jobs, return_info=True)
        self.n_evaluations += info.n_evaluations
        return self._checked(np.asarray(K, dtype=self.dtype))  # float32: no overflow in the cast

    def cross(self, X_new: Any, idx: Sequence[int] | None = None) -> np.ndarray:
        """``k(x_new, x_i)`` for new points against all (or the ``idx``) training points."""
        Xn = _check_vectors(self.kernel, as_column(self.kernel, X_new), self.dtype)
        ref = self.X if idx is None else take(self.X, idx)
        names = ("X_new", "X")
        if self._inner is None:
            block = self._block(Xn, ref, cols=idx, names=names)
        else:
            d = self._raw_diag()
            block = self._block(Xn, ref, None, d if idx is None else d[np.asarray(idx, dtype=np.intp)],
                                cols=idx, names=names)
        self.n_evaluations += block.size
        return self._checked(block, cols=idx, names=names)


class _InnerSource(KernelSource):
    """The un-normalised kernel of a Normalized one, sharing the owner's evaluation count."""

    def __init__(self, kernel: Kernel, X: Any, owner: KernelSource):
        self.kernel = kernel
        self.X = X
        self.n = len(X)
        self.owner = owner
        self._inner = None
        self.dtype = np.float64
        self.full_validation = False

    def diag(self) -> np.ndarray:
        before = self.n_evaluations = 0
        out = self._plain_diag()
        self.owner.n_evaluations += self.n_evaluations - before
        return out


class PrecomputedSource:
    """``"precomputed"``: ``X`` is the square Gram matrix; new points come as cross Grams."""

    precomputed = True

    def __init__(self, K: Any, name: str = "X", dtype: Any = np.float64):
        self.dtype = check_dtype(dtype)
        self.K = K = check_precomputed_gram(K, label=f"precomputed Gram matrix {name}",
                                            dtype=self.dtype)
        self.n = K.shape[0]
        self.name = name
        self.n_evaluations = 0

    def diag(self) -> np.ndarray:
        return np.diag(self.K).copy()

    def columns(self, idx: Sequence[int]) -> np.ndarray:
        return self.K[:, np.asarray(idx, dtype=np.intp)]

    def tile(self, a: tuple[int, int], b: tuple[int, int]) -> np.ndarray:
        return self.K[a[0] : a[1], b[0] : b[1]]

    def full(self) -> np.ndarray:
        return self.K

    def cross(self, K_new: Any, idx: Sequence[int] | None = None) -> np.ndarray:
        K_new = check_precomputed_gram(
            K_new, n_cols=self.n, label=f"precomputed cross Gram matrix of new {self.name}",
            dtype=self.dtype)
        return K_new if idx is None else K_new[:, np.asarray(idx, dtype=np.intp)]


def resolve_kernel(spec: Any, params: Mapping[str, Any] | None, X: Any) -> Kernel | None:
    """A Kernel (``sigma="median"`` resolved on ``X``), or None for ``"precomputed"``."""
    if isinstance(spec, str) and spec == "precomputed":
        if params:
            raise ValueError("kernel parameters cannot be given with kernel='precomputed'")
        return None
    kernel = as_kernel(spec, **dict(params or {}))
    inner = kernel.kernel if isinstance(kernel, Normalized) else kernel
    if "sigma" in inner.get_params(deep=False) and inner.get_params(deep=False)["sigma"] == "median":
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
        return PrecomputedSource(X, name, dtype=dtype)
    return KernelSource(kernel, X, n_jobs=n_jobs, dtype=dtype)
