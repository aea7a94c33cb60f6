"""Incomplete Cholesky factors ``A A^T ~ K`` of a kernel Gram matrix.

**Incomplete Cholesky** (Fine and Scheinberg 2001; used for HSIC by Gretton et
al. 2005, Lemma 2, and for PHSIC by Yokoi et al. 2018, Appendix B, Eq. 28-29
and 33-34).  Step ``j`` picks the pivot with the largest remaining diagonal
(ties to the first index), evaluates *one kernel column* ``k(., x_pivot)``
and updates the residual diagonal, so a structured kernel never builds the
n x n Gram: ICD costs ``n`` (diagonal) + ``rank n`` kernel evaluations, each
column evaluated once.  It stops when the residual trace
``trace(K - A A^T)`` is at most ``tol trace(K)``, or at ``max_rank`` columns
with a :class:`~sklearn.exceptions.ConvergenceWarning` stating the residual
reached.  An RBF kernel on float64 vectors runs compiled steps
(:mod:`structkernels_hsic._icd_compiled`).

``E = K - A A^T`` is positive semi-definite (a Schur complement), and
``residual_ = trace(E) / trace(K)`` is reported; HSIC's error bound
(:func:`structkernels_hsic.hsic.hsic_lowrank_bound`) is built on it.

New points are projected "from halfway" (Eq. 34):
``a[j] = (k(x, x_(j)) - sum_{m<j} a[m] A[p_j, m]) / A[p_j, j]``, i.e. one
triangular solve against the pivot rows of ``A``.

The Nyström factor (:func:`nystrom_factor`, ``LANDMARKS``) lives in
:mod:`structkernels_hsic.nystrom`, the rank arguments and the two sides' helpers
(:func:`pair_rank`, :func:`fit_pair`, :func:`centred_cross`, ``check_rank_tol``,
``resolve_ranks``) in :mod:`structkernels_hsic._lowrank`; both are served here too.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from typing import Any

import numpy as np
from numba import set_parallel_chunksize
from scipy.linalg import solve_triangular
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from structkernels.engine.checks import KernelOutputError, validation_level
from structkernels.engine.source import KernelSource, PrecomputedSource
from structkernels.structures import take
from structkernels_hsic._icd_compiled import (
    NCHUNK,
    float32_exact,
    rbf_complete_par,
    rbf_complete_seq,
    rbf_lazy_pivots,
    rbf_step_par,
    rbf_step_seq,
    take_pivot,
)
from structkernels_hsic._kernels import (
    as_column,
    check_dtype,
    check_n_features,
    cross_source,
    input_tags,
    resolve_source,
    set_n_features,
)
from structkernels_hsic._lowrank import (
    centred_cross,
    check_rank_tol,
    fit_pair,
    pair_rank,
    positive_diag,
    resolve_ranks,  # noqa: F401 (served here too)
)
from structkernels_hsic.nystrom import LANDMARKS, nystrom_factor

__all__ = ["IncompleteCholesky", "centred_cross", "icd_factor", "nystrom_factor", "pair_rank", "fit_pair", "LANDMARKS"]

_PARALLEL_MIN = 2_000_000  # values read per column above which the fused step runs on all cores
_WHOLE_FACTOR = 32 * 2**20  # values (256 MB): up to this the fused path allocates the whole factor
_LAZY_FULL = 4  # first pivots of the fixed-rank search found by whole (parallel) passes


def _lazy_ok(n: int, r_max: int, tol: float) -> bool:
    """Whether a fixed-rank decomposition (``tol = 0``) whose whole factor fits takes the lazy path."""
    return tol == 0 and n * r_max <= _WHOLE_FACTOR


def _icd_rbf_lazy(source, X, sq, g, d, r_max, floor, bar):
    """Fixed-rank incomplete Cholesky of an RBF source (see the comment above ``_rbf_row_py`` in
    :mod:`structkernels_hsic._icd_compiled`)."""
    n, dim = X.shape
    A = np.empty((n, r_max), dtype=np.float64)  # rows are read only up to the columns they hold
    P = np.empty((r_max, dim), dtype=np.float64)
    sqP = np.empty(r_max, dtype=np.float64)
    L = np.zeros((r_max, r_max), dtype=np.float64)
    s = np.zeros(n, dtype=np.intp)
    pivots = np.empty(r_max, dtype=np.intp)
    big = n * (dim + r_max) >= _PARALLEL_MIN
    main = threading.current_thread() is threading.main_thread()
    complete = rbf_complete_par if big and main else rbf_complete_seq
    # The first columns move nearly every row (all of an RBF diagonal is 1): whole passes
    # over the rows, in parallel, with the exact arg-maximum after each.
    r = 0
    while r < min(_LAZY_FULL, r_max):
        p = int(np.argmax(d))  # first index among ties
        if d[p] <= floor:
            break
        take_pivot(X, sq, d, P, sqP, L, A, s, pivots, p, r)
        r += 1
        complete(X, sq, g, P, sqP, L, A, d, s, r)
    if r == _LAZY_FULL:
        r = int(rbf_lazy_pivots(X, sq, g, d, r, r_max, floor, P, sqP, L, A, s, pivots))
        complete(X, sq, g, P, sqP, L, A, d, s, r)
    # every entry computed once: r per non-pivot row, m for the m-th pivot (its diagonal is d)
    source.count((n - r) * r + r * (r - 1) // 2)
    bar.update(r)
    A = A if r == r_max else np.ascontiguousarray(A[:, :r])
    return A, pivots[:r].copy(), float(d.sum()), r


def _check_tolerance(source, dmax0: float) -> float:
    """Round-off allowed in a residual: relative to the largest k(x, x), per dtype."""
    rel = 1e-6 if source.dtype is np.float64 else 1e-3
    return rel * max(dmax0, np.finfo(np.float64).tiny)


def _check_pivot_residual(source, col: np.ndarray, earlier: np.ndarray, p: int, dmax0: float) -> None:
    """A symmetric kernel leaves exactly 0 (up to round-off) at the earlier pivots of a new
    column's residual: ``k(x_q, x_p) - (A A^T)_qp = k(x_q, x_p) - k(x_p, x_q)`` for the last."""
    res = np.abs(np.asarray(col[earlier], dtype=np.float64))
    if res.size and float(res.max()) > _check_tolerance(source, dmax0):
        q = int(earlier[int(np.argmax(res))])
        raise KernelOutputError(
            f"{type(source.kernel).__name__}: not symmetric: k(X[{q}], X[{p}]) and "
            f"k(X[{p}], X[{q}]) differ (the incomplete Cholesky residual at pivot {q} is "
            f"{float(col[q]):.6g}, not 0); a kernel must have k(x, y) = k(y, x)"
        )


def _check_residual_diag(source, d: np.ndarray, dmax0: float) -> None:
    """A PSD kernel's residual diagonal ``k(x, x) - sum_k A[i, k]^2`` never goes below 0."""
    low = float(d.min(initial=0.0))
    if low < -_check_tolerance(source, dmax0):
        i = int(np.argmin(d))
        raise KernelOutputError(
            f"{type(source.kernel).__name__}: not positive semi-definite: the incomplete "
            f"Cholesky residual k(x, x) - sum_k A[{i}, k]^2 of X[{i}] is {low:.6g} < 0"
        )


def _rbf_prep(source) -> tuple | None:
    """``(X, sq, g)`` when ``source`` is a float64 RBF source the compiled steps can run on."""
    if source.precomputed or source.dtype is not np.float64:
        return None
    prep = source.column_function()  # the kernel's own ColumnFunction, or None
    if prep is None or getattr(prep, "kind", None) != "rbf" or prep.X.dtype != np.float64:
        return None
    return np.ascontiguousarray(prep.X), np.ascontiguousarray(prep.sq, dtype=np.float64), float(prep.gamma)


def _fused_rbf(source) -> tuple | None:
    """``(X, sq, g)`` when ``source`` is a float64 RBF source the fused step can run on."""
    prep = _rbf_prep(source)
    if prep is None:
        return None
    X = prep[0]
    # Each column reads all of X (memory-bound): float64 values that are float32 numbers
    # (vectors stored in float32, as embeddings usually are) are read from a float32 copy,
    # half the bytes, with the same float64 products and sums.
    X32 = float32_exact(X)
    if X32 is not None:
        X = X32
    return X, prep[1], prep[2]


def _icd_rbf(source, fused, d, r_max, tol, trace0, floor, bar):
    """The incomplete Cholesky of an RBF source, one fused pass over ``X`` and ``A`` per column.

    Same pivots and values as the generic loop (up to the summation order of
    the dot products): the factor is kept row-major while it is built, so that
    a row's update ``A[i, :r] . A[p, :r]`` and its kernel value are computed
    together, and the residual's sum and arg-maximum come out of the same pass.
    """
    X, sq, g = fused
    n = source.n
    # Two threads per column pay off on large passes only (a parallel region costs tens of
    # microseconds, milliseconds on a loaded machine); inside fit_pair's threads, one each.
    big = n * (X.shape[1] + r_max) >= _PARALLEL_MIN
    step = rbf_step_par if big and threading.current_thread() is threading.main_thread() \
        else rbf_step_seq
    # the whole factor at once when it is small enough (no regrowth copies); rows are only
    # read up to the columns written, so the buffer need not be zeroed
    cap = r_max if n * r_max <= _WHOLE_FACTOR else min(r_max, 64)
    A = np.empty((n, cap), dtype=np.float64)
    pivots = np.empty(r_max, dtype=np.intp)
    is_piv = np.zeros(n, dtype=np.bool_)
    part_sum = np.empty(NCHUNK)
    part_max = np.empty(NCHUNK)
    part_arg = np.empty(NCHUNK, dtype=np.intp)
    residual = float(d.sum())
    p = int(np.argmax(d))
    r = 0
    while r < r_max:
        if residual <= tol * trace0 or d[p] <= floor:
            break
        if r == cap:
            cap = min(2 * cap, r_max)
            A2 = np.empty((n, cap), dtype=np.float64)
            A2[:, :r] = A[:, :r]
            A = A2
        old = set_parallel_chunksize(1)  # chunks handed out as threads come free (a busy core lags)
        try:
            step(X, sq, g, p, float(np.sqrt(d[p])), is_piv, A, r, d, part_sum, part_max, part_arg)
        finally:
            set_parallel_chunksize(old)
        source.count(n)
        pivots[r] = p
        is_piv[p] = True
        r += 1
        residual = float(part_sum.sum())
        c = int(np.argmax(part_max))  # first chunk holding the maximum; its first row
        p = int(part_arg[c])
        bar.update(1)
    return np.ascontiguousarray(A[:, :r]), pivots[:r].copy(), float(d.sum()), r


def icd_factor(
    source: KernelSource | PrecomputedSource,
    max_rank: int | None,
    tol: float = 1e-3,
    *,
    progress: bool | None = None,
    name: str = "X",
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Factor ``A`` (n x r, contiguous), pivots, residual trace and ``trace(K)``.

    Stops after ``max_rank`` columns (``None``: as many as needed, at most n),
    or when the residual trace ``sum_i (K - A A^T)_ii`` falls to ``tol``
    times ``trace(K)``, or when the largest remaining diagonal is numerically
    zero (below ``1e-14`` times the largest diagonal of ``K``).  Stopping at
    ``max_rank`` with ``tol > 0`` not met warns (``ConvergenceWarning``) with
    the relative residual reached.  Each kernel value is evaluated once: at most
    ``n + r n`` evaluations (``n + (n - r) r + r (r - 1) / 2`` for a fixed-rank
    RBF decomposition, which needs none in a pivot's row after its column).
    Memory grows with the rank (``n r`` values), never ``n x n``.
    """
    n = source.n
    r_max = n if max_rank is None else min(int(max_rank), n)
    dt = source.dtype
    d = positive_diag(source)
    trace0 = float(d.sum())
    floor = 1e-14 * float(d.max(initial=0.0))
    # plugin and user kernels: symmetry and PSD checked on the values the factorisation
    # computes anyway (Kernel.output_validation)
    check = not source.precomputed and validation_level(source.kernel) == "full"
    dmax0 = float(d.max(initial=0.0))
    lazy = _rbf_prep(source) if _lazy_ok(n, r_max, tol) else None
    fused = _fused_rbf(source) if lazy is None else lazy
    cap = min(r_max, 64)
    A = np.zeros((n, 0 if fused else cap), dtype=dt, order="F")
    pivots = np.empty(r_max, dtype=np.intp)
    r = 0
    residual = trace0
    disable = (r_max * n < 5_000_000) if progress is None else (not progress)
    # Each step is a few BLAS-2 calls on n-vectors; below ~16k rows a multi-threaded BLAS
    # spends more on waking its threads than it gains (5x slower at n = 1,000 on a loaded machine).
    blas = threadpool_limits(limits=1, user_api="blas") if n < 16_384 else contextlib.nullcontext()
    with blas, tqdm(total=r_max, desc=f"incomplete Cholesky ({name})", unit="col", disable=disable,
                    leave=False) as bar:
        if lazy is not None:
            A, pivots, residual, r = _icd_rbf_lazy(source, *lazy, d, r_max, floor, bar)
        elif fused is not None:
            A, pivots, residual, r = _icd_rbf(source, fused, d, r_max, tol, trace0, floor, bar)
        while fused is None and r < r_max:
            residual = float(d.sum())
            if residual <= tol * trace0:
                break
            p = int(np.argmax(d))  # first index among ties
            if d[p] <= floor:
                break
            if r == cap:  # grow the factor geometrically (amortised O(n r) copying)
                cap = min(2 * cap, r_max)
                A2 = np.zeros((n, cap), dtype=dt, order="F")
                A2[:, :r] = A[:, :r]
                A = A2
            col = source.columns([p])[:, 0]
            if r:
                col = col - A[:, :r] @ A[p, :r]
            if check and r:
                _check_pivot_residual(source, col, pivots[:r], p, dmax0)
            piv = np.sqrt(d[p])
            a = col / dt(piv)
            a[pivots[:r]] = 0.0  # exact zeros on earlier pivots (round-off)
            a[p] = piv
            A[:, r] = a
            pivots[r] = p
            d -= a * a
            d[p] = 0.0
            if check:
                _check_residual_diag(source, d, dmax0)
            np.maximum(d, 0.0, out=d)
            r += 1
            bar.update(1)
        if fused is None:
            residual = float(d.sum())
    if r == r_max and tol > 0 and residual > tol * trace0:
        warnings.warn(
            f"incomplete Cholesky of {name} stopped at max_rank={r_max} with residual trace "
            f"{residual / trace0:.3g} of trace(K), above tol={tol:g}; the low-rank HSIC/PHSIC is "
            "approximate beyond the requested tolerance (raise max_rank, or see error_bound_)",
            ConvergenceWarning,
            stacklevel=3,
        )
    # the generic loop builds the factor column by column (Fortran order); the fused one row by
    # row (C order): either is returned as it is, without a transposing copy
    return (A if fused is not None else np.asfortranarray(A[:, :r])), pivots[:r].copy(), residual, trace0


class IncompleteCholesky(TransformerMixin, BaseEstimator):
    """Low-rank factor ``A A^T ~ K`` of a kernel Gram matrix to a set tolerance.

    Parameters
    ----------
    kernel : str, Kernel or "precomputed", default "rbf"
        A registered kernel name (built with ``kernel_params``), an instance,
        or ``"precomputed"`` (``fit`` then takes the Gram matrix).
    max_rank : int or None, default None
        Largest number of columns (pivots); None: as many as ``tol`` needs.
    tol : float, default 1e-3
        Stop when ``trace(K - A A^T) <= tol * trace(K)``.  With ``tol=0`` the
        decomposition runs to ``max_rank`` (a fixed rank) without a warning.
    kernel_params : dict, optional
        Parameters of a kernel given by name; ``bandwidth="median"`` applies the
        median heuristic on the training data.
    dtype : np.float64 or np.float32, default np.float64
        Arithmetic of the factor (float32 input is used as it is).
    progress : bool, optional
        Show a progress bar (default: on long decompositions).
    rank : int, optional
        Deprecated alias of ``max_rank``.

    Attributes
    ----------
    factor_ : ndarray of shape (n_samples, rank_)
    pivots_ : ndarray of int, shape (rank_,)
        Training indices in the order they were chosen.
    rank_ : int
    n_features_in_ : int
        Columns of ``X`` when it is a 2-D array (``transform`` checks them).
    residual_ : float
        ``trace(K - A A^T) / trace(K)``, to compare with ``tol``.
    residual_trace_ : float
        ``trace(K - A A^T)``.
    trace_ : float
        ``trace(K)``.
    n_kernel_evaluations_ : int
        At most ``n + rank_ * n`` for ``fit``; ``transform`` adds ``rank_`` per new point.

    Warns
    -----
    ConvergenceWarning
        When ``max_rank`` stops the decomposition before ``tol`` is met.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> icd = IncompleteCholesky("rbf", tol=1e-6).fit(X)
    >>> bool(icd.residual_ <= 1e-6)
    True
    >>> K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    >>> bool(np.abs(icd.factor_ @ icd.factor_.T - K).max() < 1e-4)
    True
    """

    def __init__(
        self,
        kernel: Any = "rbf",
        max_rank: int | None = None,
        tol: float = 1e-3,
        kernel_params: dict | None = None,
        dtype: Any = np.float64,
        progress: bool | None = None,
        rank: Any = "deprecated",
    ):
        self.kernel = kernel
        self.max_rank = max_rank
        self.tol = tol
        self.kernel_params = kernel_params
        self.dtype = dtype
        self.progress = progress
        self.rank = rank

    def _max_rank(self) -> Any:
        if isinstance(self.rank, str) and self.rank == "deprecated":
            check_rank_tol(self.max_rank, self.tol)
            return self.max_rank
        warnings.warn("rank is deprecated; use max_rank (and tol)", FutureWarning, stacklevel=3)
        check_rank_tol(self.rank, self.tol, name="rank")
        return self.rank

    def fit(self, X: Any, y: Any = None) -> IncompleteCholesky:
        """Decompose the Gram matrix of ``X`` (or ``X`` itself when precomputed)."""
        source = resolve_source(self.kernel, self.kernel_params, X, name="X", dtype=check_dtype(self.dtype),
                                allow_1d=False)
        set_n_features(self, None if source.precomputed else source.X)
        return self._fit_source(source)

    def _fit_source(self, source: KernelSource | PrecomputedSource, name: str = "X") -> IncompleteCholesky:
        max_rank = self._max_rank()
        self.source_ = source
        before = source.n_evaluations
        self.factor_, self.pivots_, self.residual_trace_, self.trace_ = icd_factor(
            source, max_rank, self.tol, progress=self.progress, name=name
        )
        self.residual_ = self.residual_trace_ / self.trace_ if self.trace_ > 0 else 0.0
        self.rank_ = int(self.factor_.shape[1])
        self.n_samples_ = source.n
        self.n_kernel_evaluations_ = int(source.n_evaluations - before)
        self._pivot_block = np.ascontiguousarray(self.factor_[self.pivots_, :])
        if not source.precomputed:
            self.pivot_structures_ = take(source.X, self.pivots_)
        return self

    def __sklearn_tags__(self):
        return input_tags(super().__sklearn_tags__(), self.kernel, self.kernel_params)

    def transform(self, X: Any) -> np.ndarray:
        """Project new points from halfway (Yokoi et al. 2018, Eq. 34).

        Parameters
        ----------
        X : structures, or with a precomputed kernel the cross Gram matrix of
            shape (n_new, n_train) against the training points.

        Returns
        -------
        ndarray of shape (n_new, rank_)
        """
        if not hasattr(self, "factor_"):
            raise ValueError("IncompleteCholesky is not fitted; call fit(X) first")
        if not self.source_.precomputed:
            X = as_column(self.source_.kernel, X, name="X", allow_1d=False)
        check_n_features(self, X)
        if self.rank_ == 0:
            n_new = len(self.source_.kernel.check_input(X)) if not self.source_.precomputed else len(X)
            return np.zeros((n_new, 0), dtype=self.factor_.dtype)
        before = self.source_.n_evaluations
        C = cross_source(self.source_, X, self.pivots_)
        self.n_kernel_evaluations_ += self.source_.n_evaluations - before
        # row j of the pivot block: A[p_j, :j+1], lower triangular
        return solve_triangular(self._pivot_block, C.T, lower=True, check_finite=False).T
