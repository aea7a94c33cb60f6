"""Features of the all-paths graph kernel of Airola et al. (2008), a graph's ``G = L W L^T``.

Airola, Pyysalo, Björne, Pahikkala, Ginter and Salakoski, "All-paths graph kernel for
protein-protein interaction extraction with evaluation of cross-corpus learning", BMC
Bioinformatics 9(Suppl 11):S2 (2008): ``k(G, G') = Σ_{l, l'} G[l, l'] G'[l, l']`` with
``W = Σ_{k>=1} A^k = (I - A)^{-1} - I`` the summed weights of every walk (``A`` the weighted
adjacency matrix) and ``L`` the allocation of labels to vertices.  :class:`AllPathsFeatures`
holds the ``G`` of a list of graphs in one column space: label pairs many graphs share
dense, the rare ones in CSR rows.
"""

from __future__ import annotations

import json
import mmap
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.kernels._allpaths_numba import (
    column_runs,
    dag_walk_sums,
    factorize,
    merge_counts,
    pair_entries,
    row_sq,
    sort_rows,
)
from structkernels.kernels._allpaths_weights_numba import (
    FlatGraphs,
    batch_pair_entries,
    batch_weighted_dots,
    weighted_dot,
)
from structkernels.structures import EncodedList, LabelledGraph
from structkernels.utils import check_finite

__all__ = ["AllPathsFeatures", "AllPathsWeights", "walk_sums", "label_pair_features"]

#: a label pair goes to the dense part of the features when at least this fraction of the
#: graphs has it (a dense product costs ~ n_x n_y per column, a sparse one ~ df_x df_y
#: operations each several times slower than BLAS's)
_DENSE_FRACTION = 0.2
#: ... and at least this many graphs (one graph alone: everything sparse)
_DENSE_MIN_COUNT = 8
#: most cells of the dense part (float64): the most frequent pairs first
_DENSE_MAX_CELLS = 1 << 26
_LOW = np.int64(0xFFFFFFFF)
#: :meth:`AllPathsFeatures.encode` interns the label pairs of about this many entries at a
#: time, keeping 12 bytes per entry (an index among the chunk's distinct pairs and the
#: value) until the column space is decided, then writes each chunk into the final arrays
_CHUNK_ENTRIES = 1 << 20
_OVERFLOW = "a walk sum overflowed: lower the edge weights of the graph"


def walk_sums(graph: LabelledGraph) -> np.ndarray:
    """``W = Σ_{k>=1} A^k = (I - A)^{-1} - I``: the summed weights of all walks ``u -> v``.

    On a graph without cycles the series is finite and ``W`` exact up to round-off (rows
    summed in reverse topological order, ``W[u] = Σ_{u -> v} w (e_v + W[v])``); with cycles
    it is the solution of ``(I - A) W = A``.  Entries with no walk are exactly 0.

    Examples
    --------
    >>> from structkernels.structures import LabelledGraph
    >>> g = LabelledGraph([("a",), ("b",), ("c",)], [(0, 1, 0.5), (1, 2, 0.5)])
    >>> walk_sums(g).tolist()
    [[0.0, 0.5, 0.25], [0.0, 0.0, 0.5], [0.0, 0.0, 0.0]]
    """
    if not isinstance(graph, LabelledGraph):
        raise TypeError(f"walk_sums expects a LabelledGraph, got {type(graph).__name__}")
    n = len(graph)
    if graph.topological_order is not None:
        src, dst, wts = _edge_arrays(graph)
        return dag_walk_sums(n, np.asarray(graph.topological_order, dtype=np.int64),
                              src, dst, wts)
    A = graph.adjacency()
    W = np.linalg.solve(np.eye(n) - A, A)
    # pairs with no walk are 0 by definition (not round-off): the transitive closure
    reach = A > 0
    while True:
        grown = reach | ((reach.astype(np.float64) @ reach.astype(np.float64)) > 0)
        if (grown == reach).all():
            break
        reach = grown
    W[~reach] = 0.0
    return np.maximum(W, 0.0)


def _edge_arrays(graph: LabelledGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sources, targets, weights)`` of the edges, sorted by source."""
    m = len(graph.edges)
    if not m:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    src, dst, wts = zip(*graph.edges, strict=True)
    return (np.fromiter(src, np.int64, m), np.fromiter(dst, np.int64, m),
            np.fromiter(wts, np.float64, m))


def label_pair_features(graph: LabelledGraph) -> dict[tuple[str, str], float]:
    """The non-zero entries of ``G = L W L^T`` as ``{(label, label'): value}``.

    The kernel is the sum of the products of these values over the label pairs two
    graphs share.  For inspection and tests; the kernel computes them in arrays.

    Examples
    --------
    >>> from structkernels.structures import LabelledGraph
    >>> g = LabelledGraph([("a",), ("b", "c")], [(0, 1, 0.5)])
    >>> label_pair_features(g)
    {('a', 'b'): 0.5, ('a', 'c'): 0.5}
    """
    W = walk_sums(graph)
    out: dict[tuple[str, str], float] = {}
    for u, v in zip(*np.nonzero(W), strict=True):
        w = float(W[u, v])
        for a in graph.labels[u]:
            for b in graph.labels[v]:
                out[(a, b)] = out.get((a, b), 0.0) + w
    return dict(sorted(out.items()))


def _graph_entries(graph: LabelledGraph, ids: dict[str, int], names: list[str]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted label-pair keys (``id << 32 | id'``) and values of ``G`` for one graph."""
    offsets = [0]
    labs: list[int] = []
    for vlabels in graph.labels:
        for lab in vlabels:
            i = ids.get(lab)
            if i is None:
                i = ids[lab] = len(names)
                names.append(lab)
            labs.append(i)
        offsets.append(len(labs))
    if not labs or not graph.edges:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    return pair_entries(walk_sums(graph), np.asarray(offsets, dtype=np.int64),
                         np.asarray(labs, dtype=np.int64))


def _entry_chunks(graphs: Sequence[LabelledGraph], ids: dict[str, int], names: list[str],
                  who: str | None = None):
    """The entries of each graph (:func:`_graph_entries`) in chunks of about
    ``_CHUNK_ENTRIES``: yields ``(first, end, keys, values)`` for graphs ``first .. end - 1``,
    one array of each per graph.  With ``who``, each graph is checked (type, finite)."""
    keys, vals, first, size = [], [], 0, 0
    for i, g in enumerate(graphs):
        if who and not isinstance(g, LabelledGraph):
            raise TypeError(f"{who} expects LabelledGraph objects; item {i} is a "
                            f"{type(g).__name__}")
        k, v = _graph_entries(g, ids, names)
        if who:
            check_finite(v, "all-paths graph features", ("entry",), hint=_OVERFLOW)
        keys.append(k)
        vals.append(v)
        size += len(k)
        if size >= _CHUNK_ENTRIES or i == len(graphs) - 1:
            yield first, i + 1, keys, vals
            keys, vals, first, size = [], [], i + 1, 0


def _intern_chunk(keys_parts: list[np.ndarray], vals_parts: list[np.ndarray],
                  n_labels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The entries of a chunk of graphs (the parts are emptied): ``(distinct keys, each
    entry's index among them, values, each distinct key's count)``, the first three in
    one memory map of their own (:func:`_mapped`)."""
    keys = np.concatenate(keys_parts)
    keys_parts.clear()
    uniq, inv = factorize(keys, max(n_labels, 1))
    del keys
    df = np.bincount(inv, minlength=len(uniq))
    m, u = len(inv), len(uniq)
    small = np.int32 if u <= np.iinfo(np.int32).max else np.int64
    kept, ids, vals = _mapped((u, np.int64), (m, small), (m, np.float64))
    kept[:] = uniq
    ids[:] = inv
    del uniq, inv
    np.concatenate(vals_parts, out=vals)
    vals_parts.clear()
    return kept, ids, vals, df


def _mapped(*shapes: tuple[int, type]) -> list[np.ndarray]:
    """Arrays of the given lengths and dtypes in one anonymous memory map of their own:
    when the last of them is dropped its pages go back to the system at once (freed blocks
    of the C heap would stay with the process, all the chunks of an encoding together)."""
    offsets, size = [], 0
    for n, dtype in shapes:
        offsets.append(size)
        size += -(-n * np.dtype(dtype).itemsize // 8) * 8
    buf = mmap.mmap(-1, max(size, 1))
    return [np.frombuffer(buf, dtype, n, offset)
            for (n, dtype), offset in zip(shapes, offsets, strict=True)]


def _fill_chunk(r0: int, r1: int, counts: np.ndarray, kind: np.ndarray, col: np.ndarray,
                vals: np.ndarray, dense: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
                data: np.ndarray, single: np.ndarray) -> None:
    """Write the entries of graphs ``r0 .. r1 - 1`` (``counts`` of each; the ``kind`` and
    ``col`` of each entry's label pair) into the features' arrays; ``indptr[r0]`` is set."""
    m = r1 - r0
    rows = np.repeat(np.arange(m, dtype=np.int64), counts)
    d = kind == 0
    dense[r0:r1][rows[d], col[d]] = vals[d]
    sp = ~d
    del d
    np.cumsum(np.bincount(rows[sp], minlength=m), out=indptr[r0 + 1:r1 + 1])
    indptr[r0 + 1:r1 + 1] += indptr[r0]
    a, b = int(indptr[r0]), int(indptr[r1])
    indices[a:b] = col[sp]
    data[a:b] = vals[sp]
    del sp
    sort_rows(indptr[r0:r1 + 1], indices, data)
    s = kind == 2
    sv = vals[s]
    single[r0:r1] = np.bincount(rows[s], weights=sv * sv, minlength=m)


class _Layout:
    """The column space of one encoding: the label names and the label pair of each column.

    Columns ``0 .. n_dense - 1`` are held densely; sparse column ``j`` is column
    ``n_dense + j``: first the ``n_shared`` pairs that two or more graphs of the encoding
    have (most frequent first), then those of one graph only (they meet no other graph of
    the encoding: the Gram adds them on the diagonal).  Pickles as its arrays.
    """

    __slots__ = ("names", "ids", "keys", "n_dense", "n_shared", "_sorted", "_cols", "_maps",
                 "__weakref__")

    def __init__(self, names: list[str], keys: np.ndarray, n_dense: int, n_shared: int):
        self.names = names
        self.ids = {lab: i for i, lab in enumerate(names)}
        self.keys = keys
        self.n_dense = int(n_dense)
        self.n_shared = int(n_shared)
        self._cols = np.argsort(keys, kind="stable")
        self._sorted = keys[self._cols]
        self._maps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __reduce__(self):
        return (_Layout, (self.names, self.keys, self.n_dense, self.n_shared))

    @property
    def n_sparse(self) -> int:
        return len(self.keys) - self.n_dense

    def column_map(self, other: _Layout) -> np.ndarray | None:
        """``map[c]``: the column of ``other`` holding this layout's column ``c`` (-1 when
        ``other`` has no such label pair); None when the columns are the same."""
        if other is self:
            return None
        try:
            return self._maps[other]
        except KeyError:
            pass
        if (self.n_dense == other.n_dense and np.array_equal(self.keys, other.keys)
                and self.names == other.names):
            cmap = None
        elif not len(other.keys):
            cmap = np.full(len(self.keys), -1, dtype=np.int64)
        else:
            lmap = np.fromiter((other.ids.get(lab, -1) for lab in self.names), dtype=np.int64,
                               count=len(self.names))
            a, b = lmap[self.keys >> 32], lmap[self.keys & _LOW]
            wanted = (np.maximum(a, 0) << 32) | np.maximum(b, 0)
            pos = np.minimum(np.searchsorted(other._sorted, wanted), len(other.keys) - 1)
            found = (a >= 0) & (b >= 0) & (other._sorted[pos] == wanted)
            cmap = np.where(found, other._cols[pos], -1)
        self._maps[other] = cmap
        return cmap


class AllPathsFeatures(EncodedList):
    """Labelled graphs with their all-paths features computed once (what
    :meth:`~structkernels.kernels.allpaths.AllPathsGraphKernel.check_input` returns).

    A sequence of :class:`~structkernels.structures.LabelledGraph`; slices and integer
    arrays give sub-lists sharing the column space, so Gram blocks cut from it compute
    nothing again.

    Attributes
    ----------
    dense : ndarray of shape (n_graphs, n_dense)
        Values of the label pairs that many graphs of the encoding share.
    indptr, indices, data : ndarray
        The other label pairs in CSR form, sorted by column in each row (``indptr`` may
        start above 0: a view).
    rows : ndarray of int
        Each graph's position in the encoding the list was cut from.

    Examples
    --------
    >>> from structkernels import kernel
    >>> from structkernels.structures import LabelledGraph
    >>> g = LabelledGraph([("a",), ("b",)], [(0, 1, 0.5)])
    >>> X = kernel("all-paths-graph").check_input([g, g])
    >>> len(X), X[0] == g, type(X[1:]).__name__
    (2, True, 'AllPathsFeatures')
    """

    __slots__ = ("layout", "dense", "indptr", "indices", "data", "rows", "single", "_items",
                 "_runs", "_span")
    kind = "graphs"

    def __init__(self, layout: _Layout, dense: np.ndarray, indptr: np.ndarray,
                 indices: np.ndarray, data: np.ndarray, rows: np.ndarray, single: np.ndarray,
                 items: list | None = None):
        self.layout = layout
        self.dense = dense
        self.indptr = indptr
        self.indices = indices
        self.data = data
        self.rows = rows
        self.single = single
        self._items = items
        # column runs of row ranges, shared by every list cut from this one by contiguous
        # slices: a Gram sorts each block row once, not once per block
        self._runs: dict | None = {}
        self._span: tuple[int, int] = (0, len(indptr) - 1)

    @property
    def vocab(self) -> list[str]:
        """The labels of the column space."""
        return self.layout.names

    @classmethod
    def encode(cls, graphs: Sequence[LabelledGraph]) -> AllPathsFeatures:
        """Compute ``G = L W L^T`` of every graph and intern the label pairs."""
        graphs = list(graphs)
        n = len(graphs)
        ids: dict[str, int] = {}
        names: list[str] = []
        counts = np.zeros(n, dtype=np.int64)
        # the entries a chunk of graphs at a time: interned in the chunk (its distinct
        # keys, a chunk-local id and the value of each entry), the chunk's key counts
        # merged into the document frequencies of the whole list
        chunks: list[list] = []
        uniq, df = np.empty(0, np.int64), np.empty(0, np.int64)
        offset = 0
        bad: tuple[np.ndarray, int] | None = None
        for first, end, keys_parts, vals_parts in _entry_chunks(graphs, ids, names):
            counts[first:end] = [len(k) for k in keys_parts]
            c_uniq, c_ids, vals, c_df = _intern_chunk(keys_parts, vals_parts, len(names))
            uniq, df = merge_counts(uniq, df, c_uniq, c_df)
            if bad is None and not np.isfinite(vals).all():
                bad = (vals, offset)
            chunks.append([first, end, c_uniq, c_ids, vals])
            offset += len(vals)
        if bad is not None:
            check_finite(bad[0], "all-paths graph features", ("entry",), offsets=(bad[1],),
                         hint=_OVERFLOW)
        # dense: the pairs most graphs have; shared: the other pairs of two graphs or
        # more, most frequent first; single: the pairs of one graph
        threshold = max(_DENSE_MIN_COUNT, int(np.ceil(_DENSE_FRACTION * n)))
        dense_cols = np.flatnonzero(df >= threshold)
        cap = _DENSE_MAX_CELLS // max(n, 1)
        if len(dense_cols) > cap:
            keep = np.argsort(-df[dense_cols], kind="stable")[:cap]
            dense_cols = np.sort(dense_cols[keep])
        kind = np.where(df > 1, 1, 2).astype(np.int8)
        kind[dense_cols] = 0
        shared_cols = np.flatnonzero(kind == 1)
        shared_cols = shared_cols[np.argsort(-df[shared_cols], kind="stable")]
        single_cols = np.flatnonzero(kind == 2)
        n_dense, n_shared = len(dense_cols), len(shared_cols)
        col = np.empty(len(uniq), dtype=np.int64)
        col[dense_cols] = np.arange(n_dense)
        col[shared_cols] = np.arange(n_shared)
        col[single_cols] = n_shared + np.arange(len(single_cols))
        layout = _Layout(names, np.concatenate([uniq[dense_cols], uniq[shared_cols],
                                                uniq[single_cols]]), n_dense, n_shared)
        n_entries = int(df[kind != 0].sum())
        dense = np.zeros((n, n_dense), dtype=np.float64)
        indptr = np.zeros(n + 1, dtype=np.int64)
        indices = np.empty(n_entries, dtype=np.int64)
        data = np.empty(n_entries, dtype=np.float64)
        single = np.zeros(n, dtype=np.float64)
        # each chunk written into the final arrays, then dropped
        while chunks:
            r0, r1, c_uniq, c_ids, vals = chunks.pop(0)
            at = np.searchsorted(uniq, c_uniq)[c_ids]
            del c_uniq, c_ids
            _fill_chunk(r0, r1, counts[r0:r1], kind[at], col[at], vals,
                        dense, indptr, indices, data, single)
            del at, vals
        return cls(layout, dense, indptr, indices, data, np.arange(n, dtype=np.int64), single,
                   graphs)

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def _build(self, i: int) -> LabelledGraph:
        raise ValueError("these features were kept without their graphs (arrays_only): "
                         f"graph {i} cannot be rebuilt from its label pairs")

    def _subset(self, idx: np.ndarray) -> AllPathsFeatures:
        n = len(idx)
        if n and idx[-1] - idx[0] == n - 1 and (n == 1 or (np.diff(idx) == 1).all()):
            r0, r1 = int(idx[0]), int(idx[-1]) + 1  # a contiguous run: views
            sub = AllPathsFeatures(self.layout, self.dense[r0:r1], self.indptr[r0:r1 + 1],
                                   self.indices, self.data, self.rows[r0:r1],
                                   self.single[r0:r1])
            sub._runs, sub._span = self._runs, (self._span[0] + r0, self._span[0] + r1)
            return sub
        starts, ends = self.indptr[idx], self.indptr[idx + 1]
        lengths = ends - starts
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        pos = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1], dtype=np.int64)
        sub = AllPathsFeatures(self.layout, self.dense[idx], indptr, self.indices[pos],
                               self.data[pos], self.rows[idx], self.single[idx])
        sub._runs = None
        return sub

    def _arrays(self) -> tuple:
        a, b = int(self.indptr[0]), int(self.indptr[-1])
        return (self.layout, np.ascontiguousarray(self.dense), self.indptr - a,
                self.indices[a:b], self.data[a:b], self.rows, self.single, self._items)

    def arrays_only(self) -> AllPathsFeatures:
        """The same list without the graph objects (``X[i]`` then cannot rebuild them)."""
        return AllPathsFeatures(*self._arrays()[:7])

    def __repr__(self) -> str:
        return (f"<AllPathsFeatures of {len(self)} graphs, {len(self.layout.keys)} label pairs "
                f"({self.layout.n_dense} dense)>")

    def column_runs(self, limit: int) -> tuple[np.ndarray, ...]:
        """The sparse entries of the columns below ``limit`` grouped by column: ``(columns,
        starts, rows, values)``; computed once per row range of an encoding."""
        return self._kept(int(limit), lambda: column_runs(self.indptr, self.indices,
                                                           self.data, limit))

    def squared_norms(self) -> np.ndarray:
        """``k(x, x)`` of every graph: the squared norm of its features."""
        out = np.einsum("ij,ij->i", self.dense, self.dense)
        return out + row_sq(self.indptr, self.data)

    def aligned(self, layout: _Layout) -> AllPathsFeatures:
        """The same graphs with their features in the columns of ``layout`` (another
        encoding's): label pairs ``layout`` lacks are dropped, as they meet none of its
        graphs' features.  Kept, per row range, for the next block of a Gram."""
        cmap = self.layout.column_map(layout)
        if cmap is None:
            return self
        return self._kept(layout, lambda: self._in_layout(layout, cmap))

    def _kept(self, key: Any, compute: Any) -> Any:
        """``compute()``, kept per row range of the encoding under ``key``."""
        key = (*self._span, key)
        out = None if self._runs is None else self._runs.get(key)
        if out is None:
            out = compute()
            if self._runs is not None:
                self._runs[key] = out
        return out

    def _in_layout(self, layout: _Layout, cmap: np.ndarray) -> AllPathsFeatures:
        """:meth:`aligned`, computed (``cmap`` from :meth:`_Layout.column_map`); its ``rows``
        are -1: it is no part of that encoding."""
        n = len(self)
        a, b = int(self.indptr[0]), int(self.indptr[-1])
        r_d, c_d = np.nonzero(self.dense)
        rows = np.concatenate([r_d, np.repeat(np.arange(n), np.diff(self.indptr))])
        cols = np.concatenate([c_d, self.indices[a:b] + self.layout.n_dense])
        vals = np.concatenate([self.dense[r_d, c_d], self.data[a:b]])
        target = cmap[cols]
        keep = target >= 0
        rows, target, vals = rows[keep], target[keep], vals[keep]
        nd = layout.n_dense
        d = target < nd
        dense = np.zeros((n, nd), dtype=np.float64)
        dense[rows[d], target[d]] = vals[d]
        s = ~d
        order = np.lexsort((target[s], rows[s]))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[s], minlength=n), out=indptr[1:])
        return AllPathsFeatures(layout, dense, indptr, (target[s] - nd)[order], vals[s][order],
                                np.full(n, -1, dtype=np.int64), np.zeros(n), self._items)


class AllPathsWeights:
    """A weighted sum of graphs' features as one vector: ``V = Σ_j c_j G_j``, so that
    ``Σ_j c_j k(x, r_j) = <G_x, V>`` (the all-paths graph kernel is linear in ``G``).

    A decision function over reference graphs then costs, per new graph, its own ``G``
    and one look-up per label pair, whatever the number of references.

    Parameters
    ----------
    graphs : sequence of LabelledGraph or AllPathsFeatures
        The reference graphs (their ``G`` computed here, a chunk of graphs at a time,
        never laid out as a Gram's features) or their features.
    coef : array-like of shape (len(graphs),)
        Their weights.
    normalized : bool, default False
        Divide each graph's weight by ``sqrt(k(r_j, r_j))`` (0 where that is 0): the
        weighted sum of the normalised kernel.

    Attributes
    ----------
    reference_squared_norms : ndarray of shape (len(graphs),)
        ``k(r_j, r_j)`` of each reference graph.

    Examples
    --------
    >>> from structkernels.structures import LabelledGraph
    >>> g = LabelledGraph([("a",), ("b",)], [(0, 1, 0.5)])
    >>> h = LabelledGraph([("a",), ("c",)], [(0, 1, 0.5)])
    >>> dots, sq = AllPathsWeights([g, h], [2.0, -1.0]).dots([g])
    >>> dots.tolist(), sq.tolist()  # 2 k(g, g) - k(g, h), and k(g, g)
    ([0.5], [0.25])
    """

    def __init__(self, graphs: Sequence[LabelledGraph] | AllPathsFeatures, coef: Sequence[float],
                 *, normalized: bool = False):
        c = np.asarray(coef, dtype=np.float64)
        if c.shape != (len(graphs),):
            raise ValueError(f"{len(c)} weights for {len(graphs)} graphs")
        if isinstance(graphs, AllPathsFeatures):
            self._from_features(graphs, c, normalized)
        else:
            self._from_graphs(graphs, c, normalized)
        self._index()

    def _index(self) -> None:
        """V by rows for the look-ups: each label's entries, their columns in 32 bits."""
        self._rows = np.searchsorted(
            self._keys, np.arange(len(self._names) + 1, dtype=np.int64) << 32)
        self._cols = (self._keys & _LOW).astype(np.int32)

    def arrays(self) -> dict[str, np.ndarray]:
        """What it holds as plain arrays (the labels as the UTF-8 of a JSON list), for
        :meth:`from_arrays`."""
        names = json.dumps(self._names, ensure_ascii=False).encode("utf-8")
        return {"names": np.frombuffer(names, dtype=np.uint8), "keys": self._keys,
                "values": self._values, "norms": self.reference_squared_norms}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> AllPathsWeights:
        """The weighted sum :meth:`arrays` gave, its parts checked: ``ValueError`` when
        they do not fit together."""
        names = json.loads(np.asarray(arrays["names"], dtype=np.uint8).tobytes())
        keys = np.asarray(arrays["keys"])
        values = np.asarray(arrays["values"])
        norms = np.asarray(arrays["norms"])
        if (not isinstance(names, list) or not all(isinstance(n, str) for n in names)
                or keys.dtype != np.int64 or values.dtype != np.float64
                or norms.dtype != np.float64 or keys.shape != values.shape or keys.ndim != 1
                or np.any(np.diff(keys) <= 0) or (len(keys) and (
                    keys[0] < 0 or keys[-1] >> 32 >= len(names)
                    or int((keys & _LOW).max()) >= len(names)))
                or not np.isfinite(values).all() or not np.isfinite(norms).all()):
            raise ValueError("the arrays of an AllPathsWeights do not fit together")
        out = cls.__new__(cls)
        out._names, out._ids = names, {n: i for i, n in enumerate(names)}
        out._keys, out._values, out.reference_squared_norms = keys, values, norms
        out._index()
        return out

    @staticmethod
    def _scaled(c: np.ndarray, sq: np.ndarray, normalized: bool) -> np.ndarray:
        if not normalized:
            return c
        scale = np.zeros(len(sq))
        pos = sq > 0
        scale[pos] = 1.0 / np.sqrt(sq[pos])
        return c * scale

    def _from_features(self, X: AllPathsFeatures, c: np.ndarray, normalized: bool) -> None:
        self.reference_squared_norms = X.squared_norms()
        c = self._scaled(c, self.reference_squared_norms, normalized)
        layout = X.layout
        a, b = int(X.indptr[0]), int(X.indptr[-1])
        owner = np.repeat(np.arange(len(X)), np.diff(X.indptr))
        v = np.concatenate([
            X.dense.T @ c if layout.n_dense else np.zeros(0),
            np.bincount(X.indices[a:b], weights=X.data[a:b] * c[owner],
                        minlength=layout.n_sparse)])
        self._names = list(layout.names)
        self._ids = dict(layout.ids)
        self._keys = layout._sorted
        self._values = np.asarray(v[layout._cols], dtype=np.float64)

    def _from_graphs(self, graphs: Sequence[LabelledGraph], c: np.ndarray,
                     normalized: bool) -> None:
        ids: dict[str, int] = {}
        names: list[str] = []

        def numbered(label: str) -> int:  # the references' labels numbered as first met
            ids[label] = len(names)
            names.append(label)
            return ids[label]

        layout = FlatGraphs(graphs, ids, numbered, "AllPathsWeights", every=True)
        arrays = layout.arrays(layout.rows)
        # the graphs with cycles apart: their entries from their walk sums
        own = [_graph_entries(graphs[i], ids, names) for i in layout.cyclic]
        sizes = np.zeros(len(graphs) + 1, dtype=np.int64)
        sizes[np.asarray(layout.cyclic, dtype=np.int64) + 1] = [len(k) for k, _ in own]
        apart = (np.concatenate([np.empty(0, np.int64), *(k for k, _ in own)]),
                 np.concatenate([np.empty(0), *(v for _, v in own)]), np.cumsum(sizes))
        sq = np.zeros(len(graphs))
        # per chunk of graphs (about _CHUNK_ENTRIES entries): their entries, their keys
        # interned and their weighted values summed (the weights need the chunk's norms)
        sums: list[tuple[np.ndarray, np.ndarray]] = []
        first = 0
        while first < len(graphs):
            end, counts, keys, vals = batch_pair_entries(*arrays, apart, first, _CHUNK_ENTRIES)
            parts = np.split(vals, np.cumsum(counts)[:-1])  # each graph's values
            if not np.isfinite(vals).all():
                for v in parts:  # the first graph with a value not finite named
                    check_finite(v, "all-paths graph features", ("entry",), hint=_OVERFLOW)
            sq[first:end] = [float(v @ v) for v in parts]
            w = self._scaled(c[first:end], sq[first:end], normalized)
            uniq, inv = factorize(keys, max(len(names), 1))
            sums.append((uniq, np.bincount(inv, weights=vals * np.repeat(w, counts),
                                           minlength=len(uniq))))
            first = end
        self.reference_squared_norms = sq
        if sums:
            # np.unique's keys and inverse, by the radix sort
            uniq, inv = factorize(np.concatenate([k for k, _ in sums]), max(len(names), 1))
            values = np.bincount(inv, weights=np.concatenate([v for _, v in sums]),
                                 minlength=len(uniq))
        else:
            uniq, values = np.empty(0, np.int64), np.empty(0)
        self._names = names
        self._ids = ids
        self._keys = np.asarray(uniq, dtype=np.int64)
        self._values = np.asarray(values, dtype=np.float64)

    def _cyclic(self, g: LabelledGraph, row: Any, rows: list[list[int]], n_known: int
                ) -> tuple[float, float]:
        """``(<G, V>, <G, G>)`` of one graph with cycles."""
        labs: list[int] = []
        offsets = [0]
        for vlabels in g.labels:
            labs += rows[row(vlabels)]
            offsets.append(len(labs))
        if not labs:
            return 0.0, 0.0
        return weighted_dot(walk_sums(g), np.asarray(offsets, dtype=np.int64),
                             np.asarray(labs, dtype=np.int64), n_known, self._rows,
                             self._cols, self._values)

    def dots(self, graphs: Sequence[LabelledGraph]) -> tuple[np.ndarray, np.ndarray]:
        """``(<G_x, V>, k(x, x))`` of each graph of ``graphs``.

        The graphs without cycles go to one compiled call, laid out flat (each distinct
        label tuple given its ids once); a graph with cycles takes :func:`walk_sums`."""
        n = len(graphs)
        dots, sq = np.zeros(n), np.zeros(n)
        n_known = len(self._names)
        new: dict[str, int] = {}  # labels of no reference: ids above theirs, meeting nothing
        layout = FlatGraphs(graphs, self._ids,
                            lambda label: new.setdefault(label, n_known + len(new)),
                            "AllPathsWeights.dots")
        rows = layout.rows
        if new:
            # the labels of no reference in the order of their names, not of their first
            # sight in the batch: a graph's sums run in the same order in any batch
            rank = np.empty(len(new), dtype=np.int64)
            rank[sorted(range(len(new)), key=list(new).__getitem__)] = np.arange(len(new))
            rows = [[lab if lab < n_known else n_known + int(rank[lab - n_known]) for lab in r]
                    for r in rows]
        for i in layout.cyclic:
            dots[i], sq[i] = self._cyclic(graphs[i], layout.index.__getitem__, rows, n_known)
        if layout.slots:
            d, s = np.zeros(len(layout.slots)), np.zeros(len(layout.slots))
            batch_weighted_dots(*layout.arrays(rows), n_known, self._rows, self._cols,
                                 self._values, d, s)
            dots[layout.slots] = d
            sq[layout.slots] = s
        check_finite(sq, "all-paths graph features: k(x, x)", ("graph",), hint=_OVERFLOW)
        return dots, sq
