"""Compiled top-k selection over kernel values: the k-NN graph's block reduction
(:func:`topk_lines`) and the σ learner's leave-one-out votes (:mod:`structkernels.npk.sigma_knn`).

Every function here is compiled (numba, GIL-free) and works on blocks of kernel values the
engine computed.  Ties go to the smaller position everywhere.
"""

from __future__ import annotations

import numpy as np

from structkernels.utils import njit

__all__ = ["topk_rows_masked", "topk_merge_block", "topk_vote",
           "topk_lines"]


@njit(cache=True, nogil=True, inline="always")
def _put(best_v, best_j, filled, kk, p, v, j):  # pragma: no cover - compiled
    """Place ``v`` (at position ``j``) at rank ``p`` of the top ``kk``, the entries from ``p``
    on moved down one (the last falls off when full); returns the new count."""
    for q in range(filled if filled < kk else kk - 1, p, -1):
        best_v[q] = best_v[q - 1]
        best_j[q] = best_j[q - 1]
    best_v[p] = v
    best_j[p] = j
    return filled + 1 if filled < kk else filled


@njit(cache=True, nogil=True, inline="always")
def _topk_insert(best_v, best_j, filled, kk, v, j):  # pragma: no cover - compiled
    """Insert ``v`` (at position ``j``) into the descending top ``kk`` held in
    ``best_v[:filled]`` / ``best_j[:filled]``; returns the new count.  A value equal to
    the ``kk``-th does not enter: ties go to the smaller position, met first."""
    if filled == kk and not v > best_v[kk - 1]:
        return filled
    p = filled if filled < kk else kk - 1
    while p > 0 and v > best_v[p - 1]:
        p -= 1
    return _put(best_v, best_j, filled, kk, p, v, j)


@njit(cache=True, nogil=True, inline="always")
def _topk_insert_ordered(best_v, best_j, filled, kk, v, j):  # pragma: no cover - compiled
    """:func:`_topk_insert` for positions met in any order: ties to the smaller position
    whatever the order (a row merged from blocks holds what one pass in order holds).  Kept
    apart from :func:`_topk_insert`, whose inner loops are faster without the comparison."""
    if kk == 0:
        return 0
    if filled == kk:
        lv = best_v[kk - 1]
        if not (v > lv or (v == lv and j < best_j[kk - 1])):
            return filled
    p = filled if filled < kk else kk - 1
    while p > 0 and (v > best_v[p - 1] or (v == best_v[p - 1] and j < best_j[p - 1])):
        p -= 1
    return _put(best_v, best_j, filled, kk, p, v, j)


@njit(cache=True, nogil=True)
def topk_rows_masked(K, scale, rows, skip, k, p0, p1, vals, idx, filled):  # pragma: no cover
    """Start the running top ``k`` of rows ``rows[p0:p1]`` of a square ``K`` from its columns
    ``j`` with ``skip[j]`` False (and ``j`` not the row itself): the similarity of
    ``(i, j)`` is ``K[i, j] * scale[i] * scale[j]`` (ties to the smaller ``j``).  Row
    ``rows[p]`` is held in ``vals[p, :filled[p]]`` / ``idx[p, :filled[p]]``, descending;
    :func:`topk_merge_block` adds the skipped columns, :func:`topk_vote` scores the rows."""
    n = K.shape[1]
    for p in range(p0, p1):
        i = rows[p]
        si = scale[i]
        m = 0
        bv = vals[p]
        bj = idx[p]
        for j in range(n):
            if j != i and not skip[j]:
                m = _topk_insert(bv, bj, m, k, K[i, j] * si * scale[j], j)
        filled[p] = m


@njit(cache=True, nogil=True)
def _merge_rows(vals, idx, filled, k, block, pos, row_ids, col_ids, scale):  # pragma: no cover
    """The rows of ``block`` into the running top ``k`` held at ``pos`` (row factor first)."""
    na, nb = block.shape
    for a in range(na):
        i = row_ids[a]
        p = pos[a]
        si = scale[i]
        bv = vals[p]
        bj = idx[p]
        m = filled[p]
        for b in range(nb):
            j = col_ids[b]
            if j != i:
                m = _topk_insert_ordered(bv, bj, m, k, block[a, b] * si * scale[j], j)
        filled[p] = m


@njit(cache=True, nogil=True)
def topk_merge_block(vals, idx, filled, k, block, row_pos, col_pos, row_ids, col_ids,
                     scale, mirror):  # pragma: no cover - compiled
    """Merge ``block`` (values of the pairs ``(row_ids[a], col_ids[b])``) into the running
    top ``k`` of the rows held at positions ``row_pos`` (see :func:`topk_rows_masked`);
    with ``mirror`` also into the rows held at ``col_pos``, as ``K[j, i] = block[a, b]``.
    A pair of a row with itself is skipped.  The similarity is scaled as by
    :func:`topk_rows_masked`, row factor first."""
    _merge_rows(vals, idx, filled, k, block, row_pos, row_ids, col_ids, scale)
    if mirror:
        _merge_rows(vals, idx, filled, k, block.T, col_pos, col_ids, row_ids, scale)


@njit(cache=True, nogil=True)
def topk_vote(vals, idx, filled, y, rows, out):  # pragma: no cover - compiled
    """The similarity-weighted vote of each held row into ``out[rows[p]]``: the weighted
    positive share, weights the non-negative part, 0 where all are 0."""
    for p in range(len(rows)):
        num = 0.0
        den = 0.0
        for t in range(filled[p]):
            v = vals[p, t]
            w = v if v > 0.0 else 0.0
            num += w * y[idx[p, t]]
            den += w
        out[rows[p]] = num / den if den > 0.0 else 0.0


@njit(cache=True, nogil=True)
def topk_lines(S, line_ids, other_ids, k, transpose, mask_self,
                sr, sc, scaled, upper):  # pragma: no cover - compiled
    """Per line (row of ``S``, or column if ``transpose``) its ``k`` largest entries.

    The same choice as a sort of each line: ``-inf``/NaN never chosen, ties at the
    ``k``-th value to the smaller position; ``mask_self`` skips entries where the
    line's id equals the other side's id.  With ``scaled`` the entry ``S[a, b]`` is
    normalised as ``S[a, b] * (sr[a] * sc[b])`` (the arithmetic of
    :func:`~structkernels.engine.checks.normalize_gram`); with ``upper`` only the upper
    triangle of a symmetric ``S`` is read (its mirror, as the Gram engine places it).
    Returns ``(line ids, other ids, values)``.  Compiled without the GIL, so
    bucket blocks reduce in parallel threads.
    """
    n_lines = S.shape[1] if transpose else S.shape[0]
    n_other = S.shape[0] if transpose else S.shape[1]
    kk = min(k, n_other)
    out_l = np.empty(n_lines * kk, np.int64)
    out_o = np.empty(n_lines * kk, np.int64)
    out_v = np.empty(n_lines * kk, np.float64)
    best_v = np.empty(max(kk, 1), np.float64)
    best_j = np.empty(max(kk, 1), np.int64)
    n_out = 0
    for i in range(n_lines):
        filled = 0
        for j in range(n_other):
            if mask_self and line_ids[i] == other_ids[j]:
                continue
            a, b = (j, i) if transpose else (i, j)
            if upper and a > b:
                a, b = b, a
            v = S[a, b]
            if scaled:
                v = v * (sr[a] * sc[b])
            if np.isnan(v) or v == -np.inf:
                continue
            filled = _topk_insert(best_v, best_j, filled, kk, v, j)
        for q in range(filled):
            out_l[n_out] = line_ids[i]
            out_o[n_out] = other_ids[best_j[q]]
            out_v[n_out] = best_v[q]
            n_out += 1
    return out_l[:n_out], out_o[:n_out], out_v[:n_out]
