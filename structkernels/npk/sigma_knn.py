"""σ chosen by the k-NN classifier's own leave-one-out ranking (``objective="knn-ap"``).

Algorithm 1 of Garg et al. (2018) with each value of ``σ(l) ∈ {0, 1}`` scored by what the
classifier that uses σ does: the average precision of the leave-one-out scores of the
similarity-weighted ``n_neighbors``-NN vote on a stratified sample.  Cost: one exact Gram of
the sample, then per label and pass the block of the structures with the label: by Eq. (1)
no other raw kernel value depends on ``σ(l)`` (the normalisation does, from the diagonal).
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

    ``K`` is a square similarity matrix (its diagonal is ignored); the score of row ``i`` is
    ``Σ_j w_j y_j / Σ_j w_j`` over its ``n_neighbors`` most similar other rows (ties to the
    smaller index), ``w = max(K, 0)``, and 0 where every weight is 0.  With ``diag`` (the raw
    self-similarities) ``K`` is raw and is cosine-normalised on the fly
    (``K_ij / sqrt(d_i d_j)``, 0 where a self-similarity is 0), without forming the normalised
    matrix.  ``n_jobs`` threads take bands of rows (the scores do not depend on it).

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
    """The running top ``k`` of ``rows`` of ``K`` over its columns not in ``skip`` (``(vals,
    idx, filled)`` of :func:`topk_rows_masked`), in bands of rows."""
    vals = np.empty((len(rows), max(k, 1)))
    idx = np.empty((len(rows), max(k, 1)), dtype=np.int64)
    filled = np.zeros(len(rows), dtype=np.int64)
    _in_bands(len(rows), n_jobs, lambda p0, p1: topk_rows_masked(
        K, scale, rows, skip, k, p0, p1, vals, idx, filled))
    return vals, idx, filled


def _in_bands(n: int, n_jobs: int | None, work: Callable[[int, int], Any]) -> None:
    """``work(r0, r1)`` over bands of ``n`` rows: in one call, or in threads (compiled work
    without the GIL on disjoint rows) when there are enough rows for several."""
    workers = min(effective_n_jobs(n_jobs), max(1, n // 512))
    if workers == 1:
        work(0, n)
        return
    bands = np.linspace(0, n, 4 * workers + 1).astype(np.int64)
    list(map_tasks(lambda b: work(int(bands[b]), int(bands[b + 1])), range(len(bands) - 1),
                   n_jobs=workers))


#: rows of a tile of a σ trial's Gram (2 MB of float64 per square tile)
_TILE = 512
#: a trial's tiles are kept for R (when it wins) while they hold at most this many bytes;
#: beyond it they are computed again if the trial wins
_KEEP_BYTES = 64 << 20


@njit(cache=True, nogil=True)
def _swap_tile(R, rows, cols, block, diagonal):  # pragma: no cover - compiled
    """Exchange ``R[np.ix_(rows, cols)]`` and ``block`` in place, and set the mirror
    ``R[np.ix_(cols, rows)]`` to the new values (``R`` is symmetric).  A ``diagonal`` tile
    (``rows`` is ``cols``) is its own mirror."""
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

    Parameters
    ----------
    kernel_with : callable
        ``sigma -> Kernel``: the raw (unnormalised) kernel with these weights.
    X : sequence
        The sampled structures (checked input of the kernel).
    y : ndarray of 0/1
        Their labels.
    has : dict label -> ndarray of bool
        Which sampled structures contain each label.
    sigma : dict
        The starting σ (all learned labels at 1, fixed weights as given).
    n_neighbors, normalize, n_jobs
        As in the classifier and the Gram engine.
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
        # two stratified halves of the sample (alternate members of each class): a label is
        # dropped only when both halves agree, so that a gain seen in a few structures is not enough
        half = np.zeros(len(self.y), dtype=bool)
        for c in (0, 1):
            half[np.flatnonzero(self.y == c)[::2]] = True
        self.halves = (np.flatnonzero(half), np.flatnonzero(~half))
        self.R, info = gram(kernel_with(self.sigma), X, n_jobs=n_jobs, return_info=True,
                            progress=False)
        self.n_evaluations = int(info.n_evaluations)
        self.score = self._score()

    def _score(self) -> tuple[float, float, float]:
        """AP of the leave-one-out scores: on the whole sample and on each of its two halves."""
        diag = np.diag(self.R).copy() if self.normalize else None
        return self._ap(loo_knn_scores(self.R, self.y, self.n_neighbors, diag,
                                       n_jobs=self.n_jobs))

    def _ap(self, s: np.ndarray) -> tuple[float, float, float]:
        return tuple(float(average_precision_score(self.y[h], s[h]))
                     for h in (slice(None), *self.halves))

    def _start_votes(self, inside: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, tuple]:
        """The votes of the rows without the label (R's values under the new ``scale``) and
        the running top k of the rows with it over R's columns without it:
        ``(votes, (vals, idx, filled, k))``."""
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
        """Score the other value of ``σ(label)`` and keep the better one (a tie keeps σ = 1).

        Returns ``{"0": AP at σ = 0, "1": AP at σ = 1, "chosen": value, "size": structures
        with the label, "n_evaluations": ...}``.
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
        # the trial's leave-one-out votes without forming its Gram: only pairs of two
        # structures with the label change, computed in tiles of the upper triangle (the
        # evaluations of one symmetric Gram of the cell) and merged into each row's running
        # top k; R is written only when the trial wins (memory: R plus one tile, and the
        # tiles themselves while they fit in _KEEP_BYTES)
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
