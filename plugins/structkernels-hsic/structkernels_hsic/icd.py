"""Pivoted incomplete Cholesky decomposition of a kernel Gram matrix.

Fine and Scheinberg (2001); used for HSIC by Gretton et al. (2005, Lemma 2) and
for PHSIC by Yokoi et al. (2018, Appendix B, Eq. 28-29 and 33-34).  The factor
``A`` (n x r) satisfies ``A A^T ~ K``.  Step ``j`` picks the pivot with the
largest remaining diagonal (ties to the first index), evaluates *one kernel
column* ``k(., x_pivot)`` and updates the residual diagonal, so a structured
kernel never builds the n x n Gram: ICD costs ``n`` (diagonal) + ``r n``
kernel evaluations.

New points are projected "from halfway" (Eq. 34):
``a[j] = (k(x, x_(j)) - sum_{m<j} a[m] A[p_j, m]) / A[p_j, j]``, i.e. one
triangular solve against the pivot rows of ``A``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.base import BaseEstimator
from tqdm.auto import tqdm

from structkernels_hsic._kernels import KernelSource, PrecomputedSource, resolve_source, take

__all__ = ["IncompleteCholesky", "icd_factor"]


def _auto_prefetch(source: KernelSource | PrecomputedSource) -> int:
    """8 for batched (BLAS) kernels, whose 8 columns cost about one; else 1."""
    if source.precomputed:
        return 1
    return 8 if getattr(source.kernel, "preferred_block_size", 0) >= 1024 else 1


def icd_factor(
    source: KernelSource | PrecomputedSource,
    rank: int | None,
    tol: float = 1e-12,
    *,
    prefetch: int | str = "auto",
    progress: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Factor ``A`` (n x r, Fortran order), pivots and the residual trace.

    Stops after ``rank`` columns (``None``: n), or when the residual trace
    ``sum_i (K - A A^T)_ii`` falls to ``tol`` times the trace of ``K``, or
    when the largest remaining diagonal is numerically zero (below
    ``1e-14`` times the largest diagonal of ``K``).

    ``prefetch = b > 1`` fetches, with the pivot's column, those of the next
    ``b - 1`` largest residual diagonals in the same ``gram_block`` call and
    keeps them for later steps.  The pivots and the factor are the same as
    with ``b = 1`` (each column is still the exact ``k(., x_p)``); only the
    number of kernel evaluations grows (by the columns never used), while a
    BLAS kernel reads ``X`` once instead of ``b`` times.
    """
    n = source.n
    r_max = n if rank is None else min(int(rank), n)
    b = _auto_prefetch(source) if prefetch == "auto" else int(prefetch)
    if b < 1:
        raise ValueError(f"prefetch must be 'auto' or an int >= 1, got {prefetch!r}")
    d = source.diag()
    if np.any(d < -1e-12 * max(1.0, float(np.abs(d).max(initial=0.0)))):
        bad = np.flatnonzero(d < 0)[:10].tolist()
        raise ValueError(
            f"negative self-similarity k(x, x) at index(es) {bad}: the kernel is not positive "
            "semi-definite"
        )
    d = np.maximum(d, 0.0)
    trace0 = float(d.sum())
    floor = 1e-14 * float(d.max(initial=0.0))
    A = np.zeros((n, r_max), dtype=np.float64, order="F")
    pivots = np.empty(r_max, dtype=np.intp)
    cache: dict[int, np.ndarray] = {}
    r = 0
    disable = (r_max * n < 5_000_000) if progress is None else (not progress)
    with tqdm(total=r_max, desc="incomplete Cholesky", unit="col", disable=disable, leave=False) as bar:
        while r < r_max:
            residual = float(d.sum())
            if residual <= tol * trace0:
                break
            p = int(np.argmax(d))  # first index among ties
            if d[p] <= floor:
                break
            col = cache.pop(p, None)
            if col is None:
                cand = [p]
                if b > 1:
                    k = min(b * 2, n)
                    top = np.argpartition(-d, k - 1)[:k] if k < n else np.arange(n)
                    top = top[np.argsort(-d[top], kind="stable")]
                    cand += [int(i) for i in top if i != p and d[i] > floor and int(i) not in cache][: b - 1]
                block = source.columns(cand)
                col = block[:, 0]
                if len(cache) > 4 * b:
                    cache.clear()
                for j, i in enumerate(cand[1:], 1):
                    cache[i] = block[:, j]
            if r:
                col = col - A[:, :r] @ A[p, :r]
            piv = np.sqrt(d[p])
            a = col / piv
            a[pivots[:r]] = 0.0  # exact zeros on earlier pivots (round-off)
            a[p] = piv
            A[:, r] = a
            pivots[r] = p
            d -= a * a
            d[p] = 0.0
            np.maximum(d, 0.0, out=d)
            r += 1
            bar.update(1)
    return np.asfortranarray(A[:, :r]), pivots[:r].copy(), float(d.sum())


class IncompleteCholesky(BaseEstimator):
    """Low-rank factor ``A A^T ~ K`` of a kernel Gram matrix, evaluating only needed columns.

    Parameters
    ----------
    kernel : str, Kernel or "precomputed", default "rbf"
        A registered kernel name (built with ``kernel_params``), an instance,
        or ``"precomputed"`` (``fit`` then takes the Gram matrix).
    rank : int or None, default 100
        Maximal number of columns (pivots); None for no limit.
    tol : float, default 1e-12
        Stop when the residual trace is at most ``tol`` times ``trace(K)``.
    kernel_params : dict, optional
        Parameters of a kernel given by name; ``sigma="median"`` applies the
        median heuristic on the training data.
    prefetch : int or "auto", default "auto"
        Kernel columns fetched per ``gram_block`` call (see :func:`icd_factor`):
        the pivot's plus those of the next largest residual diagonals, kept for
        later steps; the result is the same, only evaluations and time change.
        ``"auto"``: 8 for kernels with a batched BLAS path (``preferred_block_size
        >= 1024``, the vector kernels), 1 otherwise (structured kernels: exactly
        the needed columns).
    progress : bool, optional
        Show a progress bar (default: on long decompositions).

    Attributes
    ----------
    factor_ : ndarray of shape (n_samples, rank_)
    pivots_ : ndarray of int, shape (rank_,)
        Training indices in the order they were chosen.
    rank_ : int
    residual_trace_ : float
        ``trace(K - A A^T)``.
    n_kernel_evaluations_ : int
        ``n + rank_ * n`` for ``fit`` with ``prefetch=1`` (more with prefetching);
        ``transform`` adds ``rank_`` per new point.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> icd = IncompleteCholesky("rbf", rank=50, tol=0.0).fit(X)
    >>> K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    >>> bool(np.allclose(icd.factor_ @ icd.factor_.T, K, atol=1e-8))
    True
    """

    def __init__(
        self,
        kernel: Any = "rbf",
        rank: int | None = 100,
        tol: float = 1e-12,
        kernel_params: dict | None = None,
        prefetch: int | str = "auto",
        progress: bool | None = None,
    ):
        self.kernel = kernel
        self.rank = rank
        self.tol = tol
        self.kernel_params = kernel_params
        self.prefetch = prefetch
        self.progress = progress

    def _validate(self) -> None:
        if self.rank is not None and (
            not isinstance(self.rank, (int, np.integer)) or isinstance(self.rank, bool) or self.rank < 1
        ):
            raise ValueError(f"rank must be a positive int or None, got {self.rank!r}")
        if not isinstance(self.tol, (int, float, np.floating)) or not (0 <= self.tol < 1):
            raise ValueError(f"tol must be a number in [0, 1), got {self.tol!r}")

    def fit(self, X: Any, y: Any = None) -> IncompleteCholesky:
        """Decompose the Gram matrix of ``X`` (or ``X`` itself when precomputed)."""
        self._validate()
        source = resolve_source(self.kernel, self.kernel_params, X, name="X")
        return self._fit_source(source)

    def _fit_source(self, source: KernelSource | PrecomputedSource) -> IncompleteCholesky:
        self._validate()
        self.source_ = source
        before = source.n_evaluations
        self.factor_, self.pivots_, self.residual_trace_ = icd_factor(
            source, self.rank, self.tol, prefetch=self.prefetch, progress=self.progress
        )
        self.rank_ = int(self.factor_.shape[1])
        self.n_samples_ = source.n
        self.n_kernel_evaluations_ = int(source.n_evaluations - before)
        self._pivot_block = np.ascontiguousarray(self.factor_[self.pivots_, :])
        if not source.precomputed:
            self.pivot_structures_ = take(source.X, self.pivots_)
        return self

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
        if self.rank_ == 0:
            n_new = len(self.source_.kernel.check_input(X)) if not self.source_.precomputed else len(X)
            return np.zeros((n_new, 0))
        before = self.source_.n_evaluations
        C = self.source_.cross(X, self.pivots_)
        self.n_kernel_evaluations_ += self.source_.n_evaluations - before
        # row j of the pivot block: A[p_j, :j+1], lower triangular
        return solve_triangular(self._pivot_block, C.T, lower=True, check_finite=False).T
