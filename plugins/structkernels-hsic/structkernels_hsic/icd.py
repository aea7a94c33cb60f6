"""Low-rank factors ``A A^T ~ K`` of a kernel Gram matrix: incomplete Cholesky and Nyström.

**Incomplete Cholesky** (Fine and Scheinberg 2001; used for HSIC by Gretton et
al. 2005, Lemma 2, and for PHSIC by Yokoi et al. 2018, Appendix B, Eq. 28-29
and 33-34).  Step ``j`` picks the pivot with the largest remaining diagonal
(ties to the first index), evaluates *one kernel column* ``k(., x_pivot)``
and updates the residual diagonal, so a structured kernel never builds the
n x n Gram: ICD costs ``n`` (diagonal) + ``rank n`` kernel evaluations, each
column evaluated once.  It stops when the residual trace
``trace(K - A A^T)`` is at most ``tol trace(K)``, or at ``max_rank`` columns
with a :class:`~sklearn.exceptions.ConvergenceWarning` stating the residual
reached.

**Nyström** with ``m`` landmarks (Williams and Seeger 2001): ``A = C W^{+1/2}``
with ``C = K[:, S]`` and ``W = K[S, S]``.  Landmarks are drawn uniformly, by
approximate ridge leverage scores (Alaoui and Mahoney 2015: scores from a
uniform pilot Nyström of the same size, so ``2 m n`` column evaluations), or
are k-means centres (vector kernels only: the centres are points of the input
space).

For both, ``E = K - A A^T`` is positive semi-definite (a Schur complement), and
``residual_ = trace(E) / trace(K)`` is reported; HSIC's error bound
(:func:`structkernels_hsic.hsic.hsic_lowrank_bound`) is built on it.

New points are projected "from halfway" (Eq. 34):
``a[j] = (k(x, x_(j)) - sum_{m<j} a[m] A[p_j, m]) / A[p_j, j]``, i.e. one
triangular solve against the pivot rows of ``A``.
"""

from __future__ import annotations

import contextlib
import threading
import types
import warnings
from typing import Any

import numpy as np
from numba import njit, prange, set_parallel_chunksize
from scipy.linalg import solve_triangular
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from structkernels.engine.checks import KernelOutputError
from structkernels_hsic._kernels import (
    KernelSource,
    PrecomputedSource,
    as_column,
    check_dtype,
    check_n_features,
    input_tags,
    resolve_source,
    set_n_features,
    take,
)

__all__ = ["IncompleteCholesky", "centred_cross", "icd_factor", "nystrom_factor", "pair_rank", "fit_pair", "LANDMARKS"]

LANDMARKS = ("uniform", "leverage", "kmeans")


def pair_rank(rank: Any) -> tuple[Any, Any]:
    """One value for both sides, or a pair ``(x, y)``."""
    if isinstance(rank, (tuple, list)):
        if len(rank) != 2:
            raise ValueError(f"max_rank must be an int, None or a pair (rank_x, rank_y), got {rank!r}")
        return rank[0], rank[1]
    return rank, rank


def fit_pair(n_jobs: int, fx, fy):
    """Run the two sides' decompositions, in two threads when ``n_jobs != 1`` (BLAS releases the GIL)."""
    if n_jobs == 1:
        return fx(), fy()
    from concurrent.futures import ThreadPoolExecutor

    # one BLAS thread per side: two multi-threaded GEMVs on the same cores only contend
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(fx), pool.submit(fy)
        return a.result(), b.result()


def centred_cross(A: np.ndarray, mean_a: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``(A - mean_a)^T B`` (r_A x r_B) of two factors, on one BLAS thread when the ranks are small.

    The product is long (``n``) and thin: one thread runs it near its peak, while BLAS
    threads started right after the compiled parallel passes of the decomposition contend
    with that runtime's still-spinning threads (at n = 1e5, rank 100 on 2 cores: 0.05 s on
    one thread, 0.6-2 s on two).
    """
    small = A.shape[1] <= 512 and B.shape[1] <= 512
    with threadpool_limits(limits=1, user_api="blas") if small else contextlib.nullcontext():
        return (A - mean_a).T @ B


_PARALLEL_MIN = 2_000_000  # values read per column above which the fused step runs on all cores
_WHOLE_FACTOR = 32 * 2**20  # values (256 MB): up to this the fused path allocates the whole factor
_NCHUNK = 64  # row chunks of one fused step (partial sums and arg-maxima per chunk)
_LAZY_COLUMNS = 16  # columns per bringing up to date of a row in the fixed-rank pivot search
_LAZY_FULL = 4  # first pivots of the fixed-rank search found by whole (parallel) passes


def _rbf_step_py(X, sq, g, p, piv, is_piv, A, r, d, part_sum, part_max, part_arg):  # pragma: no cover (compiled)
    """One ICD step for the RBF kernel, fused in one pass over the rows.

    Row ``i``: ``k = exp(-g max(sq_i - 2 x_i.x_p + sq_p, 0))`` (the formula of
    ``KernelSource.columns``), ``a = (k - A[i, :r] . A[p, :r]) / piv`` written
    to ``A[i, r]`` (``A`` row-major), ``d_i = max(d_i - a^2, 0)``; exact ``piv``
    on the pivot and zeros on earlier pivots.  ``X`` and ``A`` are read once;
    per chunk, the residual's partial sum and its first arg-maximum.
    """
    n, dim = X.shape
    sqp = sq[p]
    xp = X[p]
    ap = A[p, :r].copy()
    step = (n + _NCHUNK - 1) // _NCHUNK
    for c in prange(_NCHUNK):
        lo = c * step
        hi = min(lo + step, n)
        s = 0.0
        best = -1.0
        arg = -1
        for i in range(lo, hi):
            xi = X[i]
            dot = 0.0
            for k in range(dim):
                dot += np.float64(xi[k]) * np.float64(xp[k])  # exact products for float32-held X
            t = (-2.0 * dot + sq[i]) + sqp
            if t < 0.0:
                t = 0.0
            v = np.exp(-g * t)  # one kernel evaluation per row, pivots included
            if i == p:
                a = piv
                di = 0.0
            elif is_piv[i]:
                a = 0.0
                di = 0.0
            else:
                ai = A[i]
                u = 0.0
                for m in range(r):
                    u += ai[m] * ap[m]
                a = (v - u) / piv
                di = d[i] - a * a
                if di < 0.0:
                    di = 0.0
            A[i, r] = a
            d[i] = di
            s += di
            if di > best:
                best = di
                arg = i
        part_sum[c] = s
        part_max[c] = best
        part_arg[c] = arg


@njit(cache=True, nogil=True, parallel=True)
def _float32_copy(X, out):  # pragma: no cover (compiled)
    """Copy ``X`` into the float32 ``out``; whether every value was a float32 number (lossless)."""
    n, dim = X.shape
    bad = np.zeros(n, dtype=np.bool_)
    for i in prange(n):
        for k in range(dim):
            v = X[i, k]
            w = np.float32(v)
            out[i, k] = w
            if np.float64(w) != v:
                bad[i] = True
    return not bad.any()


def _float32_exact(X: np.ndarray) -> np.ndarray | None:
    """A float32 copy of the float64 ``X`` when every value is a float32 number, else None.

    The first row is checked before anything is copied: float64 data that is not float32
    data almost always shows it there.
    """
    head = X[:1]
    if not np.array_equal(head.astype(np.float32).astype(np.float64), head):
        return None
    out = np.empty(X.shape, dtype=np.float32)
    return out if _float32_copy(X, out) else None


def _named(f, suffix: str):
    """A copy of ``f`` under its own name: numba's on-disk cache is keyed by the function's
    qualified name and line, so two compilations of one function (parallel and serial) would
    load each other's machine code and the parallel one would run on one core."""
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__ + suffix, f.__defaults__, f.__closure__)
    g.__qualname__ = f.__qualname__ + suffix
    g.__doc__ = f.__doc__
    return g


_FM = {"reassoc", "contract", "nsz"}
_rbf_step_par = njit(cache=True, nogil=True, parallel=True, fastmath=_FM)(_named(_rbf_step_py, "_par"))
_rbf_step_seq = njit(cache=True, nogil=True, fastmath=_FM)(_named(_rbf_step_py, "_seq"))


# ---- fixed rank (tol = 0): pivots found lazily, the factor completed in one pass
#
# The per-column pass reads all of X and the factor for every column (memory-bound).  But
# the residual diagonal only decreases, so a row's last computed value bounds its current
# one.  Rows sit in a max-heap on those bounds (ties: lower index first, as np.argmax); the
# next pivot is found by bringing the top row up to date until the top is current: it is
# then the exact arg-maximum, as in the per-column pass.  Most rows are brought up to date
# rarely, up to _LAZY_COLUMNS columns per read of their vector (a row that then falls below
# the top leaves the rest for later); one parallel pass completes every row at the end.  The
# first _LAZY_FULL columns move nearly every row, so they are whole parallel passes.  Each
# factor entry is computed once by the same formula (the pivots' own rows
# need no kernel value after their pivot column: at most n + rank n evaluations).  A
# stopping tolerance needs the residual trace after every column (all rows), so only
# ``tol = 0`` takes this path.


def _rbf_row_py(X, sq, g, P, sqP, L, A, d, s, i, upto):  # pragma: no cover (compiled)
    """Bring row ``i`` of the factor from ``s[i]`` to ``upto`` columns.

    Column ``m``: ``k = exp(-g max(sq_i - 2 x_i.x_(p_m) + sq_(p_m), 0))``,
    ``a = (k - A[i, :m] . L[m, :m]) / L[m, m]``, ``d_i = max(d_i - a^2, 0)``
    (``L``: the pivot rows of the factor, ``P``: the pivots' vectors, float64).
    The dot products come first, four pivots per read of ``x_i``, held in the
    row's free entries ``A[i, s[i]:upto]`` until the update overwrites them.
    """
    dim = X.shape[1]
    xi = X[i]
    ai = A[i]
    m = s[i]
    while m + 4 <= upto:
        p0, p1, p2, p3 = P[m], P[m + 1], P[m + 2], P[m + 3]
        d0 = d1 = d2 = d3 = 0.0
        for k in range(dim):
            x = np.float64(xi[k])  # exact products for float32-held X
            d0 += x * p0[k]
            d1 += x * p1[k]
            d2 += x * p2[k]
            d3 += x * p3[k]
        ai[m] = d0
        ai[m + 1] = d1
        ai[m + 2] = d2
        ai[m + 3] = d3
        m += 4
    while m < upto:
        pm = P[m]
        d0 = 0.0
        for k in range(dim):
            d0 += np.float64(xi[k]) * pm[k]
        ai[m] = d0
        m += 1
    di = d[i]
    sqi = sq[i]
    for m in range(s[i], upto):
        t = (-2.0 * ai[m] + sqi) + sqP[m]
        if t < 0.0:
            t = 0.0
        v = np.exp(-g * t)
        lm = L[m]
        u = 0.0
        for q in range(m):
            u += ai[q] * lm[q]
        a = (v - u) / lm[m]
        ai[m] = a
        di = di - a * a
        if di < 0.0:
            di = 0.0
    d[i] = di
    s[i] = upto


_rbf_row = njit(cache=True, nogil=True, fastmath=_FM)(_rbf_row_py)


@njit(cache=True, nogil=True)
def _sift_down(heap, size, d, j):  # pragma: no cover (compiled)
    """Restore the max-heap (larger ``d`` first, then the lower index) below position ``j``."""
    x = heap[j]
    dx = d[x]
    while True:
        c = 2 * j + 1
        if c >= size:
            break
        hc = heap[c]
        if c + 1 < size:
            h2 = heap[c + 1]
            if d[h2] > d[hc] or (d[h2] == d[hc] and h2 < hc):
                c += 1
                hc = h2
        if d[hc] > dx or (d[hc] == dx and hc < x):
            heap[j] = hc
            j = c
        else:
            break
    heap[j] = x


@njit(cache=True, nogil=True)
def _take_pivot(X, sq, d, P, sqP, L, A, s, pivots, p, r):  # pragma: no cover (compiled)
    """Make the current row ``p`` pivot ``r``: ``A[p, r] = sqrt(d_p)``, zeros after it, its row
    of ``L``, its vector in ``P``; it leaves the candidates (``s[p] = A.shape[1]``)."""
    cap = A.shape[1]
    piv = np.sqrt(d[p])
    ap = A[p]
    for q in range(r):
        L[r, q] = ap[q]
    L[r, r] = piv
    ap[r] = piv
    for q in range(r + 1, cap):
        ap[q] = 0.0  # exact zeros on later columns (earlier pivots)
    for k in range(X.shape[1]):
        P[r, k] = X[p, k]
    sqP[r] = sq[p]
    d[p] = 0.0
    s[p] = cap
    pivots[r] = p


@njit(cache=True, nogil=True, fastmath=_FM)
def _rbf_lazy_pivots(X, sq, g, d, r0, r_max, floor, P, sqP, L, A, s, pivots):  # pragma: no cover (compiled)
    """Choose pivots ``r0, r0 + 1, ...`` up to ``r_max`` (largest residual, first index among
    ties); the number of pivots then held.

    Stops early when the largest residual is at most ``floor``.  On return, pivot rows are
    complete (``A[p_m, m] = sqrt(d)``, zeros after it) and ``s[i]`` counts the columns row
    ``i`` holds (``A.shape[1]`` for pivots, which are not candidates).
    """
    n, dim = X.shape
    cap = A.shape[1]
    heap = np.empty(n, dtype=np.intp)
    size = 0
    for i in range(n):
        if s[i] < cap:
            heap[size] = i
            size += 1
    for j in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, d, j)
    r = r0
    while r < r_max and size > 0:
        while True:  # the top is the arg-maximum once its value is current
            i = heap[0]
            if s[i] >= r:
                break
            # a few columns at a time: a row that falls below the top leaves the rest to
            # the completing pass (parallel, whole rows)
            _rbf_row(X, sq, g, P, sqP, L, A, d, s, i, min(r, s[i] + _LAZY_COLUMNS))
            _sift_down(heap, size, d, 0)
        p = heap[0]
        if d[p] <= floor:
            break
        size -= 1
        heap[0] = heap[size]
        if size > 0:
            _sift_down(heap, size, d, 0)
        _take_pivot(X, sq, d, P, sqP, L, A, s, pivots, p, r)
        r += 1
    return r


def _rbf_complete_py(X, sq, g, P, sqP, L, A, d, s, r):  # pragma: no cover (compiled)
    """Bring every row to ``r`` columns (rows are independent: one pass, in parallel)."""
    for i in prange(X.shape[0]):
        if s[i] < r:
            _rbf_row(X, sq, g, P, sqP, L, A, d, s, i, r)


_rbf_complete_par = njit(cache=True, nogil=True, parallel=True, fastmath=_FM)(_named(_rbf_complete_py, "_par"))
_rbf_complete_seq = njit(cache=True, nogil=True, fastmath=_FM)(_named(_rbf_complete_py, "_seq"))


def _lazy_ok(n: int, r_max: int, tol: float) -> bool:
    """Whether a fixed-rank decomposition (``tol = 0``) whose whole factor fits takes the lazy path."""
    return tol == 0 and n * r_max <= _WHOLE_FACTOR


def _icd_rbf_lazy(source, X, sq, g, d, r_max, floor, bar):
    """Fixed-rank incomplete Cholesky of an RBF source (see the comment above ``_rbf_row_py``)."""
    n, dim = X.shape
    A = np.empty((n, r_max), dtype=np.float64)  # rows are read only up to the columns they hold
    P = np.empty((r_max, dim), dtype=np.float64)
    sqP = np.empty(r_max, dtype=np.float64)
    L = np.zeros((r_max, r_max), dtype=np.float64)
    s = np.zeros(n, dtype=np.intp)
    pivots = np.empty(r_max, dtype=np.intp)
    big = n * (dim + r_max) >= _PARALLEL_MIN
    complete = _rbf_complete_par if big and threading.current_thread() is threading.main_thread() else _rbf_complete_seq
    # The first columns move nearly every row (all of an RBF diagonal is 1): whole passes
    # over the rows, in parallel, with the exact arg-maximum after each.
    r = 0
    while r < min(_LAZY_FULL, r_max):
        p = int(np.argmax(d))  # first index among ties
        if d[p] <= floor:
            break
        _take_pivot(X, sq, d, P, sqP, L, A, s, pivots, p, r)
        r += 1
        complete(X, sq, g, P, sqP, L, A, d, s, r)
    if r == _LAZY_FULL:
        r = int(_rbf_lazy_pivots(X, sq, g, d, r, r_max, floor, P, sqP, L, A, s, pivots))
        complete(X, sq, g, P, sqP, L, A, d, s, r)
    # every entry computed once: r per non-pivot row, m for the m-th pivot (its diagonal is d)
    source.n_evaluations += (n - r) * r + r * (r - 1) // 2
    bar.update(r)
    A = A if r == r_max else np.ascontiguousarray(A[:, :r])
    return A, pivots[:r].copy(), float(d.sum()), r


def check_rank_tol(max_rank: Any, tol: Any, name: str = "max_rank") -> None:
    if max_rank is not None and (
        not isinstance(max_rank, (int, np.integer)) or isinstance(max_rank, bool) or max_rank < 1
    ):
        raise ValueError(f"{name} must be a positive int or None, got {max_rank!r}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)) or not (0 <= tol < 1):
        raise ValueError(f"tol must be a number in [0, 1), got {tol!r}")



def resolve_ranks(rank: Any, max_rank: Any, tol: Any) -> tuple[Any, Any]:
    """The checked ``(rank_x, rank_y)`` of an estimator's ``max_rank`` (or deprecated ``rank``)."""
    if isinstance(rank, str) and rank == "deprecated":
        value, name = max_rank, "max_rank"
    else:
        # stacklevel: resolve_ranks -> the estimator's fit -> the user's call
        warnings.warn("rank is deprecated; use max_rank (and tol)", FutureWarning, stacklevel=3)
        value, name = rank, "rank"
    rx, ry = pair_rank(value)
    check_rank_tol(rx, tol, name)
    check_rank_tol(ry, tol, name)
    return rx, ry


def _positive_diag(source) -> np.ndarray:
    d = np.asarray(source.diag(), dtype=np.float64)
    if np.any(d < -1e-12 * max(1.0, float(np.abs(d).max(initial=0.0)))):
        bad = np.flatnonzero(d < 0)[:10].tolist()
        raise ValueError(
            f"negative self-similarity k(x, x) at index(es) {bad}: the kernel is not positive semi-definite"
        )
    return np.maximum(d, 0.0)


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
    prep = source._prepare()
    if prep is None or prep[0] != "rbf" or prep[1].dtype != np.float64:
        return None
    return np.ascontiguousarray(prep[1]), np.ascontiguousarray(prep[2], dtype=np.float64), float(prep[3])


def _fused_rbf(source) -> tuple | None:
    """``(X, sq, g)`` when ``source`` is a float64 RBF source the fused step can run on."""
    prep = _rbf_prep(source)
    if prep is None:
        return None
    X = prep[0]
    # Each column reads all of X (memory-bound): float64 values that are float32 numbers
    # (vectors stored in float32, as embeddings usually are) are read from a float32 copy,
    # half the bytes, with the same float64 products and sums.
    X32 = _float32_exact(X)
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
    step = _rbf_step_par if big and threading.current_thread() is threading.main_thread() else _rbf_step_seq
    # the whole factor at once when it is small enough (no regrowth copies); rows are only
    # read up to the columns written, so the buffer need not be zeroed
    cap = r_max if n * r_max <= _WHOLE_FACTOR else min(r_max, 64)
    A = np.empty((n, cap), dtype=np.float64)
    pivots = np.empty(r_max, dtype=np.intp)
    is_piv = np.zeros(n, dtype=np.bool_)
    part_sum = np.empty(_NCHUNK)
    part_max = np.empty(_NCHUNK)
    part_arg = np.empty(_NCHUNK, dtype=np.intp)
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
        source.n_evaluations += n
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
    d = _positive_diag(source)
    trace0 = float(d.sum())
    floor = 1e-14 * float(d.max(initial=0.0))
    # plugin and user kernels: symmetry and PSD checked on the values the factorisation
    # computes anyway (Kernel.output_validation)
    check = bool(getattr(source, "full_validation", False))
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


# Not sklearn.kernel_approximation.Nystroem, though with uniform landmarks it computes the same
# factor up to a rotation (tests/test_hsic_estimators.py): Nystroem evaluates a pairwise metric
# on numeric arrays, while the factor here reads any structkernels kernel through a source
# (paths and trees, precomputed Grams, evaluations counted, float32 end to end), draws
# landmarks by ridge leverage or k-means too, and returns the residual trace the error bound needs.
def _nystrom_from_columns(C: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``C W^{+1/2}`` through the eigendecomposition of ``W`` (tiny eigenvalues dropped)."""
    s, V = np.linalg.eigh((W + W.T) / 2)
    keep = s > 1e-12 * max(float(s.max(initial=0.0)), 1e-300)
    return np.asfortranarray(C @ (V[:, keep] / np.sqrt(s[keep])))


def nystrom_factor(
    source: KernelSource | PrecomputedSource,
    n_landmarks: int,
    landmarks: str = "leverage",
    random_state: Any = None,
) -> tuple[np.ndarray, np.ndarray | None, float, float]:
    """Nyström factor ``A`` (n x r, r <= n_landmarks), landmark indices, residual trace, trace.

    ``"uniform"``: landmarks drawn without replacement.  ``"leverage"``: a
    uniform pilot of ``n_landmarks`` gives a factor ``F``; each point's ridge
    leverage ``F_i (F^T F + lam I)^{-1} F_i^T`` with ``lam`` = the pilot's
    residual trace / ``n_landmarks`` (Musco and Musco 2017) is the sampling
    weight of the final landmarks.  ``"kmeans"`` (vector kernels): the
    k-means centres of the input (seeded), which are not data points (the
    returned indices are then None).  Kernel evaluations: ``n`` (diagonal) +
    ``n m`` (+ ``n m`` for the leverage pilot; + ``m^2`` for k-means).
    """
    if landmarks not in LANDMARKS:
        raise ValueError(f"landmarks must be one of {LANDMARKS}, got {landmarks!r}")
    rng = check_random_state(random_state)
    n = source.n
    m = min(int(n_landmarks), n)
    d = _positive_diag(source)
    trace0 = float(d.sum())
    if landmarks == "kmeans":
        if source.precomputed or not (isinstance(source.X, np.ndarray) and source.X.ndim == 2):
            raise ValueError(
                "landmarks='kmeans' needs vectors (the centres are points of the input space); "
                "use 'leverage' or 'uniform' for structured or precomputed kernels"
            )
        from sklearn.cluster import KMeans

        centres = KMeans(m, n_init=1, random_state=rng.randint(2**31 - 1)).fit(source.X).cluster_centers_
        centres = centres.astype(source.dtype)
        C = np.asfortranarray(source.cross(centres).T)
        W = source._block(centres, centres)
        source.n_evaluations += W.size
        A = _nystrom_from_columns(C, W)
        idx = None
    else:
        idx = np.sort(rng.choice(n, m, replace=False))
        C = source.columns(idx)
        if landmarks == "leverage":
            F = _nystrom_from_columns(C, C[idx])
            lam = max(trace0 - float(np.einsum("ij,ij->", F, F)), 1e-12 * trace0) / m
            G = F.T @ F
            G[np.diag_indices_from(G)] += lam
            scores = np.einsum("ij,ji->i", F, np.linalg.solve(G, F.T))
            scores = np.maximum(scores, 1e-15)
            idx = np.sort(rng.choice(n, m, replace=False, p=scores / scores.sum()))
            C = source.columns(idx)
        A = _nystrom_from_columns(C, C[idx])
    residual = max(trace0 - float(np.einsum("ij,ij->", A, A, dtype=np.float64)), 0.0)
    return A, idx, residual, trace0


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
        Parameters of a kernel given by name; ``sigma="median"`` applies the
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
        C = self.source_.cross(X, self.pivots_)
        self.n_kernel_evaluations_ += self.source_.n_evaluations - before
        # row j of the pivot block: A[p_j, :j+1], lower triangular
        return solve_triangular(self._pivot_block, C.T, lower=True, check_finite=False).T
