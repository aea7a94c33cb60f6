"""What the low-rank factors and the estimators built on them share.

Private module: the rank arguments of :class:`~structkernels_hsic.icd.IncompleteCholesky`,
:class:`~structkernels_hsic.hsic.HSIC` and :class:`~structkernels_hsic.phsic.PHSIC`
(one value or a pair ``(x, y)``, checked with the tolerance), the check of ``k(x, x)``
every factorisation starts from, the two sides' decompositions run together, and the
centred cross product of two factors.  :mod:`structkernels_hsic.icd` serves the public
names.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from structkernels.engine.parallel import map_tasks


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
    # one BLAS thread per side: two multi-threaded GEMVs on the same cores only contend
    with threadpool_limits(limits=1, user_api="blas"):
        a, b = map_tasks(_call, (fx, fy), n_jobs=2)
        return a, b


def _call(f):
    return f()


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


def positive_diag(source) -> np.ndarray:
    d = np.asarray(source.diagonal(), dtype=np.float64)
    if np.any(d < -1e-12 * max(1.0, float(np.abs(d).max(initial=0.0)))):
        bad = np.flatnonzero(d < 0)[:10].tolist()
        raise ValueError(
            f"negative self-similarity k(x, x) at index(es) {bad}: the kernel is not positive semi-definite"
        )
    return np.maximum(d, 0.0)
