"""Compiled part of :class:`~structkernels.kernels.allpaths_features.AllPathsWeights` (numba).

Private module: a graph's ``G = L W L^T`` met with a weighted sum of other graphs' ``G``,
kept by rows of label pairs, without writing the graph's keys out: one graph from its walk
sums (:func:`weighted_dot`, graphs with cycles), or a batch of graphs without cycles in one
call (:func:`batch_weighted_dots`); the entries of a batch's ``G`` (:func:`batch_pair_entries`,
the weighted sum's side).  Releases the GIL.  :class:`FlatGraphs` lays a batch out for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

from structkernels.kernels._allpaths_numba import label_pairs, write_pairs
from structkernels.structures import LabelledGraph
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
def _flat_pairs(k, vstart, order, estart, src, dst, wts, loff, labels):  # pragma: no cover
    """``(G, local)`` of graph ``k`` of a batch laid out flat (as :func:`batch_weighted_dots`
    takes it), its walk sums by :func:`_bounded_walk_sums`: ``G = L W L^T`` over its
    ``local`` label ids (ascending); both empty for a graph without vertices, edges or
    labels."""
    v0 = vstart[k]
    n = vstart[k + 1] - v0
    e0 = estart[k]
    e1 = estart[k + 1]
    l0 = loff[v0]
    l1 = loff[v0 + n]
    if n == 0 or e1 == e0 or l1 == l0:
        return np.zeros((0, 0)), np.zeros(0, dtype=np.int64)
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
    return G, local


@njit(cache=True, nogil=True)
def batch_weighted_dots(vstart, order, estart, src, dst, wts, loff, labels, n_known, rows,
                         cols, values, dots, sq):  # pragma: no cover - compiled
    """:func:`weighted_dot` of each graph of a batch laid out flat, its walk sums by
    :func:`_bounded_walk_sums`: graph ``k`` has the vertices ``vstart[k]:vstart[k + 1]``
    (``order`` their topological order, local ids), the edges ``estart[k]:estart[k + 1]``
    (local ends, sorted by source) and vertex ``v``'s label ids are
    ``labels[loff[vstart[k] + v]:loff[vstart[k] + v + 1]]``; ``V`` as for :func:`_met`.
    Writes ``dots`` and ``sq``."""
    for k in range(len(vstart) - 1):
        G, local = _flat_pairs(k, vstart, order, estart, src, dst, wts, loff, labels)
        if len(local):
            dots[k], sq[k] = _met(G, local, n_known, rows, cols, values)


@njit(cache=True, nogil=True)
def batch_pair_entries(vstart, order, estart, src, dst, wts, loff, labels, apart, first,
                       limit):  # pragma: no cover - compiled
    """The non-zero entries of the ``G`` of a batch's graphs laid out flat (as
    :func:`batch_weighted_dots` takes them; as
    :func:`~structkernels.kernels._allpaths_numba.pair_entries` gives one graph's), from
    graph ``first`` on until ``limit`` entries are reached (the graph that reaches it
    included): ``(end, counts, keys, values)`` of the graphs ``first .. end - 1``, keys
    ``label << 32 | label'`` ascending in each; ``apart = (keys, values, offsets)``: the
    entries of graphs computed apart (with cycles), graph ``k``'s at
    ``offsets[k]:offsets[k + 1]``."""
    akeys, avals, aoff = apart
    n_graphs = len(vstart) - 1
    counts = np.zeros(n_graphs - first, dtype=np.int64)
    keys = np.empty(1024, dtype=np.int64)
    vals = np.empty(1024, dtype=np.float64)
    t = 0
    end = first
    while end < n_graphs and t < limit:
        G, local = _flat_pairs(end, vstart, order, estart, src, dst, wts, loff, labels)
        c = aoff[end + 1] - aoff[end] + np.count_nonzero(G)
        if t + c > len(keys):
            grown_k = np.empty(max(2 * len(keys), t + c), dtype=np.int64)
            grown_v = np.empty(len(grown_k), dtype=np.float64)
            grown_k[:t] = keys[:t]
            grown_v[:t] = vals[:t]
            keys, vals = grown_k, grown_v
        counts[end - first] = c
        c = aoff[end + 1] - aoff[end]
        keys[t:t + c] = akeys[aoff[end]:aoff[end + 1]]
        vals[t:t + c] = avals[aoff[end]:aoff[end + 1]]
        t = write_pairs(G, local, keys, vals, t + c)
        end += 1
    return end, counts[:end - first].copy(), keys[:t].copy(), vals[:t].copy()


class FlatGraphs:
    """Graphs laid out flat for one compiled call, each distinct tuple of vertex labels given
    its row of label ids once (a label of ``ids`` keeps its id, any other takes
    ``new(label)``): those without cycles in :attr:`slots`, those with in :attr:`cyclic`.
    ``every``: every graph has a slot (empty without edges or with cycles) and its labels
    met in turn."""

    def __init__(self, graphs: Sequence[LabelledGraph], ids: dict[str, int], new: Any,
                 who: str, every: bool = False):
        self.ids, self.new = ids, new
        self.index: dict[tuple[str, ...], int] = {}  # a vertex's label tuple -> its row
        self.rows: list[list[int]] = []
        self.slots: list[int] = []
        self.cyclic: list[int] = []
        self._lists: tuple[list, ...] = ([], [], [], [], [])
        tuples, edges, order, n_vertices, n_edges = self._lists
        lookup = self.index.get
        for i, g in enumerate(graphs):
            if not isinstance(g, LabelledGraph):
                raise TypeError(f"{who} expects LabelledGraph objects; item {i} is a "
                                f"{type(g).__name__}")
            if not g.edges or g.topological_order is None:
                if g.edges or every:
                    for t in g.labels:  # every label known before the new ones are ranked
                        self.row(t)
                self.cyclic += [i] if g.edges else []
                if every:
                    self.slots.append(i)
                    n_vertices.append(0)
                    n_edges.append(0)
                continue
            got = list(map(lookup, g.labels))
            if None in got:  # a label tuple not seen in the batch yet
                got = [r if r is not None else self.row(t)
                       for r, t in zip(got, g.labels, strict=True)]
            self.slots.append(i)
            tuples += got
            edges += g.edges
            order += g.topological_order
            n_vertices.append(len(got))
            n_edges.append(len(g.edges))

    def row(self, vlabels: tuple[str, ...]) -> int:
        got = self.index.get(vlabels)
        if got is None:
            got = self.index[vlabels] = len(self.rows)
            ids = self.ids
            self.rows.append([ids[lab] if lab in ids else self.new(lab) for lab in vlabels])
        return got

    def arrays(self, rows: list[list[int]]) -> tuple[np.ndarray, ...]:
        """The slots as :func:`batch_weighted_dots` takes them (``rows``: the label ids of
        each label tuple)."""
        tuples, edges, order, n_vertices, n_edges = self._lists
        sizes = np.fromiter(map(len, rows), np.int64, len(rows))
        starts = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(sizes[:-1], out=starts[1:])
        ids = np.fromiter(chain.from_iterable(rows), np.int64, int(sizes.sum()))
        tix = np.asarray(tuples, dtype=np.int64)
        counts = sizes[tix]
        loff = np.zeros(len(tix) + 1, dtype=np.int64)
        np.cumsum(counts, out=loff[1:])
        labels = ids[np.repeat(starts[tix] - loff[:-1], counts) + np.arange(loff[-1])]
        vstart = np.zeros(len(n_vertices) + 1, dtype=np.int64)
        np.cumsum(n_vertices, out=vstart[1:])
        estart = np.zeros(len(n_edges) + 1, dtype=np.int64)
        np.cumsum(n_edges, out=estart[1:])
        e = np.fromiter(chain.from_iterable(edges), np.float64, 3 * len(edges)).reshape(-1, 3)
        return (vstart, np.asarray(order, dtype=np.int64), estart, e[:, 0].astype(np.int64),
                e[:, 1].astype(np.int64), np.ascontiguousarray(e[:, 2]), loff, labels)
