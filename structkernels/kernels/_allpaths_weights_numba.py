"""Compiled part of :class:`~structkernels.kernels.allpaths_features.AllPathsWeights` (numba).

Private module: a graph's ``G = L W L^T`` met with a weighted sum of other graphs' ``G``,
kept by rows of label pairs, without writing the graph's keys out: one graph from its walk
sums (:func:`weighted_dot`, graphs with cycles), or a batch of graphs without cycles in one
call (:func:`batch_weighted_dots`).  Releases the GIL.
"""

from __future__ import annotations

import numpy as np

from structkernels.kernels._allpaths_numba import label_pairs
from structkernels.utils import njit


@njit(cache=True, nogil=True)
def _met(G, local, n_known, rows, cols, values):  # pragma: no cover - compiled
    """``(<G, V>, <G, G>)`` of one graph's ``G`` over its ``local`` label ids (ascending;
    those of ``V``'s labels below ``n_known``).  ``V`` is kept by rows: label ``a``'s
    entries are ``cols[rows[a]:rows[a + 1]]`` (ascending) with their ``values``; a row is
    searched from the last place found, by doubling steps, then halving."""
    m = len(local)
    dot = 0.0
    sq = 0.0
    for a in range(m):
        la = local[a]
        known = la < n_known
        r0 = 0
        r1 = 0
        if known:
            r0 = rows[la]
            r1 = rows[la + 1]
        for b in range(m):
            g = G[a, b]
            if g == 0.0:
                continue
            sq += g * g
            lb = local[b]
            if not known or lb >= n_known or r0 >= r1:
                continue
            c = np.int32(lb)
            i = r0
            step = 1
            while i + step < r1 and cols[i + step] < c:
                i += step
                step <<= 1
            j = min(i + step, r1)
            if cols[i] >= c:
                j = i
            while i < j:
                mid = (i + j) >> 1
                if cols[mid] < c:
                    i = mid + 1
                else:
                    j = mid
            r0 = i
            if i < r1 and cols[i] == c:
                dot += g * values[i]
    return dot, sq


@njit(cache=True, nogil=True)
def weighted_dot(W, offsets, labels, n_known, rows, cols, values):  # pragma: no cover - compiled
    """``(<G, V>, <G, G>)`` of one graph from its walk sums ``W``:
    ``labels[offsets[v]:offsets[v + 1]]`` are vertex ``v``'s label ids, ``V`` as for
    :func:`_met`."""
    local = np.unique(labels)
    G = label_pairs(W, offsets, np.searchsorted(local, labels), len(local))
    return _met(G, local, n_known, rows, cols, values)


@njit(cache=True, nogil=True)
def _bounded_walk_sums(n, order, src, dst, wts, lo, hi):  # pragma: no cover - compiled
    """:func:`~structkernels.kernels._allpaths_numba._dag_walk_sums` keeping, per row, the
    bounds ``[lo[u], hi[u])`` of its non-zero columns, and adding a row into another only
    between them (a vertex reaches few of the others).  Same sums, same order of addition
    over the non-zero columns."""
    W = np.zeros((n, n))
    first = np.searchsorted(src, np.arange(n + 1))
    for u in range(n):
        lo[u] = n
        hi[u] = 0
    for t in range(n - 1, -1, -1):
        u = order[t]
        a = lo[u]
        b = hi[u]
        for e in range(first[u], first[u + 1]):
            v = dst[e]
            w = wts[e]
            W[u, v] += w
            if v < a:
                a = v
            if v + 1 > b:
                b = v + 1
            for x in range(lo[v], hi[v]):
                W[u, x] += w * W[v, x]
            if hi[v] > lo[v]:
                if lo[v] < a:
                    a = lo[v]
                if hi[v] > b:
                    b = hi[v]
        lo[u] = a
        hi[u] = b
    return W


@njit(cache=True, nogil=True)
def batch_weighted_dots(vstart, order, estart, src, dst, wts, loff, labels, n_known, rows,
                         cols, values, dots, sq):  # pragma: no cover - compiled
    """:func:`weighted_dot` of each graph of a batch laid out flat, its walk sums by
    :func:`_bounded_walk_sums`: graph ``k`` has the vertices ``vstart[k]:vstart[k + 1]``
    (``order`` their topological order, local ids), the edges ``estart[k]:estart[k + 1]``
    (local ends, sorted by source) and vertex ``v``'s label ids are
    ``labels[loff[vstart[k] + v]:loff[vstart[k] + v + 1]]``; ``V`` as for :func:`_met`.
    Writes ``dots`` and ``sq``."""
    n_graphs = len(vstart) - 1
    for k in range(n_graphs):
        v0 = vstart[k]
        n = vstart[k + 1] - v0
        e0 = estart[k]
        e1 = estart[k + 1]
        l0 = loff[v0]
        l1 = loff[v0 + n]
        if n == 0 or e1 == e0 or l1 == l0:
            continue
        lo = np.empty(n, dtype=np.int64)
        hi = np.empty(n, dtype=np.int64)
        W = _bounded_walk_sums(n, order[v0:v0 + n], src[e0:e1], dst[e0:e1], wts[e0:e1], lo, hi)
        labs = labels[l0:l1]
        local = np.unique(labs)
        m = len(local)
        at = np.searchsorted(local, labs)
        G = np.zeros((m, m))
        for u in range(n):
            pu0 = loff[v0 + u] - l0
            pu1 = loff[v0 + u + 1] - l0
            if pu1 == pu0:
                continue
            for x in range(lo[u], hi[u]):
                w = W[u, x]
                if w != 0.0:
                    for p in range(pu0, pu1):
                        a = at[p]
                        for q in range(loff[v0 + x] - l0, loff[v0 + x + 1] - l0):
                            G[a, at[q]] += w
        dots[k], sq[k] = _met(G, local, n_known, rows, cols, values)
