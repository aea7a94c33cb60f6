"""σ chosen by the k-NN classifier's own leave-one-out ranking (``objective="knn-ap"``).

Algorithm 1 of Garg et al. (2018) with each value of ``σ(l) ∈ {0, 1}`` scored by the average
precision of the leave-one-out similarity-weighted ``n_neighbors``-NN vote on a stratified
sample: one exact Gram of the sample, then per label and pass the block of the structures
with the label (by Eq. (1) no other raw kernel value depends on ``σ(l)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score

from structkernels.engine.checks import diagonal_scales
from structkernels.engine.gram import block_ranges, gram
from structkernels.engine.parallel import map_tasks
from structkernels.kernels.base import Kernel
from structkernels.neighbors.topk import (
    topk_merge_block,
    topk_rows_masked,
    topk_vote,
)
from structkernels.structures import take
from structkernels.utils import effective_n_jobs, njit

__all__ = ["loo_knn_scores", "SigmaKNNSearch"]


def loo_knn_scores(K: np.ndarray, y: np.ndarray, n_neighbors: int,
                   diag: np.ndarray | None = None, n_jobs: int | None = 1) -> np.ndarray:
    """Leave-one-out positive-class scores of the similarity-weighted k-NN vote.

    The score of row ``i`` of the square ``K`` is ``Σ_j w_j y_j / Σ_j w_j`` over its
    ``n_neighbors`` most similar other rows (ties to the smaller index), ``w = max(K, 0)``, 0
    where every weight is 0.  With ``diag`` (raw self-similarities) ``K`` is raw, normalised on
    the fly (0 where a self-similarity is 0).  The scores do not depend on ``n_jobs``.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[1, .9, .1], [.9, 1, .2], [.1, .2, 1.]])
    >>> loo_knn_scores(K, np.array([1, 1, 0]), 1).tolist()
    [1.0, 1.0, 1.0]
    """
    K = np.ascontiguousarray(K, dtype=np.float64)
    n = len(K)
    if K.ndim != 2 or K.shape != (n, n):
        raise ValueError(f"K must be a square matrix, got shape {K.shape}")
    scale = np.ones(n) if diag is None else diagonal_scales(diag)
    k = max(0, min(int(n_neighbors), n - 1))
    rows, out = np.arange(n, dtype=np.int64), np.zeros(n)
    held = _held_topk(K, scale, rows, np.zeros(n, dtype=bool), k, n_jobs)
    topk_vote(*held, np.asarray(y, dtype=np.float64), rows, out)
    return out


def _held_topk(K: np.ndarray, scale: np.ndarray, rows: np.ndarray, skip: np.ndarray, k: int,
               n_jobs: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The running top ``k`` (:func:`topk_rows_masked`) of ``rows`` of ``K`` over its columns
    not in ``skip``, in bands of rows, in threads when there are enough rows for several."""
    n = len(rows)
    vals, idx = np.empty((n, max(k, 1))), np.empty((n, max(k, 1)), dtype=np.int64)
    filled = np.zeros(n, dtype=np.int64)
    workers = min(effective_n_jobs(n_jobs), max(1, n // 512))
    bands = np.linspace(0, n, 4 * workers + 1 if workers > 1 else 2).astype(np.int64)
    list(map_tasks(lambda b: topk_rows_masked(K, scale, rows, skip, k, int(bands[b]),
                                              int(bands[b + 1]), vals, idx, filled),
                   range(len(bands) - 1), n_jobs=workers))
    return vals, idx, filled


#: rows of a tile of a σ trial's Gram
_TILE = 512
#: a trial's tiles are kept for R (if it wins) up to this many bytes, else computed again
_KEEP_BYTES = 64 << 20


@njit(cache=True, nogil=True)
def _swap_tile(R, rows, cols, block, diagonal):  # pragma: no cover - compiled
    """Exchange ``R[np.ix_(rows, cols)]`` and ``block`` in place, the mirror set too unless
    the tile is ``diagonal`` (``rows`` is ``cols``)."""
    n, m = block.shape
    for a in range(n):
        ra = rows[a]
        for b in range(m):
            cb = cols[b]
            v = R[ra, cb]
            R[ra, cb] = block[a, b]
            if not diagonal:
                R[cb, ra] = block[a, b]
            block[a, b] = v


class SigmaKNNSearch:
    """The state of the greedy search: the sample's raw Gram matrix under the current σ.

    ``kernel_with(sigma)`` is the raw kernel with these weights; ``X``, ``y`` the sampled
    structures (checked input) and their 0/1 labels; ``has[label]`` which of them contain
    it; ``sigma`` the starting σ (learned labels at 1, fixed weights as given).
    """

    def __init__(self, kernel_with: Callable[[dict[str, float]], Kernel], X: Sequence,
                 y: np.ndarray, has: dict[str, np.ndarray], sigma: dict[str, float],
                 n_neighbors: int, normalize: bool, n_jobs: int):
        self.kernel_with = kernel_with
        self.X = X
        self.y = np.asarray(y, dtype=np.int64)
        self.has = has
        self.sigma = dict(sigma)
        self.n_neighbors = n_neighbors
        self.normalize = normalize
        self.n_jobs = n_jobs
        # two stratified halves (alternate members of each class): a label is dropped only
        # when both agree, so that a gain seen in a few structures is not enough
        half = np.zeros(len(self.y), dtype=bool)
        for c in (0, 1):
            half[np.flatnonzero(self.y == c)[::2]] = True
        self.halves = (np.flatnonzero(half), np.flatnonzero(~half))
        self.R, info = gram(kernel_with(self.sigma), X, n_jobs=n_jobs, return_info=True,
                            progress=False)
        self.n_evaluations = int(info.n_evaluations)
        diag = np.diag(self.R).copy() if self.normalize else None
        self.score = self._ap(loo_knn_scores(self.R, self.y, self.n_neighbors, diag,
                                             n_jobs=self.n_jobs))

    def _ap(self, s: np.ndarray) -> tuple[float, float, float]:
        """AP of the leave-one-out scores ``s``: on the whole sample and on each half."""
        return tuple(float(average_precision_score(self.y[h], s[h]))
                     for h in (slice(None), *self.halves))

    def _start_votes(self, inside: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, tuple]:
        """``(votes, (vals, idx, filled, k))``: the votes of the rows without the label under
        the new ``scale``, and the running top k of the rows with it over the others."""
        n = len(self.R)
        k = max(0, min(int(self.n_neighbors), n - 1))
        skip = np.zeros(n, dtype=bool)
        skip[inside] = True
        outside = np.flatnonzero(~skip)
        votes = np.zeros(n)
        held_out = _held_topk(self.R, scale, outside, np.zeros(n, dtype=bool), k, self.n_jobs)
        held_in = _held_topk(self.R, scale, inside, skip, k, self.n_jobs)
        topk_vote(*held_out, self.y.astype(np.float64), outside, votes)
        return votes, (*held_in, k)

    def decide(self, label: str, min_gain: float) -> dict[str, Any]:
        """Score the other value of ``σ(label)`` and keep the better one (a tie keeps σ = 1):
        ``{"0": AP at σ = 0, "1": AP at σ = 1, "chosen", "size", "n_evaluations", "halves"}``.
        """
        current = float(self.sigma.get(label, 1.0))
        other = 0.0 if current else 1.0
        inside = np.flatnonzero(self.has[label])
        out: dict[str, Any] = {"size": int(len(inside)), "n_evaluations": 0}
        if len(inside) == 0:
            out.update({"0": self.score[0], "1": self.score[0], "chosen": current})
            return out
        trial = {**self.sigma, label: other}
        kern = self.kernel_with(trial)
        Xi = take(self.X, inside)
        inside = inside.astype(np.int64)
        # the trial's votes without its Gram: only pairs of two structures with the label
        # change, computed in tiles of the upper triangle and merged into each row's running
        # top k; R is written only when the trial wins (tiles kept while within _KEEP_BYTES)
        tiles = block_ranges(len(inside), _TILE)

        def tile(a: int, b: int, c: int, d: int) -> np.ndarray:
            """The trial's values of the pairs (a:b, c:d) of ``Xi``, evaluations counted."""
            blk, info = gram(kern, Xi[a:b], None if c == a else Xi[c:d], n_jobs=self.n_jobs,
                             return_info=True, progress=False)
            out["n_evaluations"] += int(info.n_evaluations)
            return np.ascontiguousarray(blk, dtype=np.float64)

        # first the diagonal tiles: the new self-similarities
        diagonal = [tile(a, b, a, b) for a, b in tiles]
        diag = np.diag(self.R).copy()
        diag[inside] = np.concatenate([np.diag(blk) for blk in diagonal])
        scale = diagonal_scales(diag) if self.normalize else np.ones(len(diag))
        votes, state = self._start_votes(inside, scale)
        kept: list | None = []
        kept_bytes = 0
        for t, (a, b) in enumerate(tiles):
            for c, d in tiles[t:]:
                blk = diagonal[t] if c == a else tile(a, b, c, d)
                pos_r, pos_c = np.arange(a, b), np.arange(c, d)
                topk_merge_block(*state, blk, pos_r, pos_c, inside[a:b], inside[c:d], scale,
                                 c != a)
                if kept is not None and kept_bytes + blk.nbytes <= _KEEP_BYTES:
                    kept.append((a, b, c, d, blk))
                    kept_bytes += blk.nbytes
                else:
                    kept = None
            diagonal[t] = None
        topk_vote(*state[:3], self.y.astype(np.float64), inside, votes)
        alt = self._ap(votes)
        ap = {current: self.score, other: alt}
        chosen = 0.0 if all(a > b + min_gain for a, b in zip(ap[0.0], ap[1.0], strict=True)) else 1.0
        if chosen == other:  # the trial's values go into R
            self.sigma, self.score = trial, alt
            if kept is None:  # computed again: they did not fit in memory beside R
                kept = ((a, b, c, d, tile(a, b, c, d))
                        for t, (a, b) in enumerate(tiles) for c, d in tiles[t:])
            for a, b, c, d, blk in kept:
                _swap_tile(self.R, inside[a:b], inside[c:d], blk, c == a)
        del kept
        self.n_evaluations += out["n_evaluations"]
        out.update({"0": ap[0.0][0], "1": ap[1.0][0], "chosen": chosen,
                    "halves": {"0": list(ap[0.0][1:]), "1": list(ap[1.0][1:])}})
        return out
