"""Nyström low-rank factors ``A A^T ~ K`` of a kernel Gram matrix.

**Nyström** with ``m`` landmarks (Williams and Seeger 2001): ``A = C W^{+1/2}``
with ``C = K[:, S]`` and ``W = K[S, S]``.  Landmarks are drawn uniformly, by
approximate ridge leverage scores (Alaoui and Mahoney 2015: scores from a
uniform pilot Nyström of the same size, so ``2 m n`` column evaluations), or
are k-means centres (vector kernels only: the centres are points of the input
space).

As for the incomplete Cholesky factor (:mod:`structkernels_hsic.icd`), ``E = K - A A^T``
is positive semi-definite (a Schur complement), and the residual trace ``trace(E)`` is
returned; HSIC's error bound (:func:`structkernels_hsic.hsic.hsic_lowrank_bound`) is built
on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from structkernels.engine.source import KernelSource, PrecomputedSource
from structkernels_hsic._kernels import cross_source
from structkernels_hsic._lowrank import positive_diag

__all__ = ["nystrom_factor", "LANDMARKS"]

LANDMARKS = ("uniform", "leverage", "kmeans")


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
    d = positive_diag(source)
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
        C = np.asfortranarray(cross_source(source, centres).T)
        W = source.values(centres, centres)
        source.count(W.size)
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
