"""Compiled steps of the incomplete Cholesky of an RBF kernel (numba).

Private module: :func:`structkernels_hsic.icd.icd_factor` runs these on a float64 RBF
source.  The per-column step (:func:`_rbf_step_py`, a parallel and a serial compilation)
fuses a kernel column, the factor's update and the residual's sum and arg-maximum in one
pass over the rows; the fixed-rank path (``tol = 0``) searches the pivots lazily on a heap
and completes the factor in one pass (comment above :func:`_rbf_row_py`).  Vectors held as
float32 numbers are read from a float32 copy (:func:`float32_exact`).
"""

from __future__ import annotations

import types

import numpy as np
from numba import njit, prange

NCHUNK = 64  # row chunks of one fused step (partial sums and arg-maxima per chunk)
_LAZY_COLUMNS = 16  # columns per bringing up to date of a row in the fixed-rank pivot search


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
    step = (n + NCHUNK - 1) // NCHUNK
    for c in prange(NCHUNK):
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


def float32_exact(X: np.ndarray) -> np.ndarray | None:
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
rbf_step_par = njit(cache=True, nogil=True, parallel=True, fastmath=_FM)(_named(_rbf_step_py, "_par"))
rbf_step_seq = njit(cache=True, nogil=True, fastmath=_FM)(_named(_rbf_step_py, "_seq"))


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
def take_pivot(X, sq, d, P, sqP, L, A, s, pivots, p, r):  # pragma: no cover (compiled)
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
def rbf_lazy_pivots(X, sq, g, d, r0, r_max, floor, P, sqP, L, A, s, pivots):  # pragma: no cover (compiled)
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
        take_pivot(X, sq, d, P, sqP, L, A, s, pivots, p, r)
        r += 1
    return r


def _rbf_complete_py(X, sq, g, P, sqP, L, A, d, s, r):  # pragma: no cover (compiled)
    """Bring every row to ``r`` columns (rows are independent: one pass, in parallel)."""
    for i in prange(X.shape[0]):
        if s[i] < r:
            _rbf_row(X, sq, g, P, sqP, L, A, d, s, i, r)


rbf_complete_par = njit(cache=True, nogil=True, parallel=True, fastmath=_FM)(_named(_rbf_complete_py, "_par"))
rbf_complete_seq = njit(cache=True, nogil=True, fastmath=_FM)(_named(_rbf_complete_py, "_seq"))
