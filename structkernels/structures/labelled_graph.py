"""Directed graphs with weighted edges and sets of vertex labels (the all-paths graph kernel's input).

The representation of Airola et al. (2008), "All-paths graph kernel for protein-protein
interaction extraction with evaluation of cross-corpus learning", BMC Bioinformatics
9(Suppl 11):S2: each vertex carries a set of labels (a token's word and part of speech, a
dependency's type ...) and each directed edge a weight in (0, 1].
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import chain, compress, repeat
from numbers import Real
from operator import add, is_, le, mul, not_
from typing import Any

import numpy as np

from structkernels.structures.path import StructureError, check_label, load_json

__all__ = ["GraphFrame", "LabelledGraph"]

#: spectral radii at or above this are refused (the walk series would not converge)
_RADIUS_LIMIT = 1.0 - 1e-12


#: label tuples found well formed, by id (held, so that no other object takes the id): the
#: graphs of one sentence's candidate pairs share most of them
_WELL_FORMED: dict[int, tuple[str, ...]] = {}
_WELL_FORMED_MAX = 1 << 14


def _plain_labels(labels: Any) -> bool:
    """Whether ``labels`` is the common case, checked at once: tuples of non-empty str, none
    twice in a vertex."""
    if type(labels) is not list and type(labels) is not tuple:
        return False
    if not labels:
        return True
    known = list(map(is_, map(_WELL_FORMED.get, map(id, labels)), labels))
    if all(known):  # every label tuple found well formed before (the memo holds tuples only)
        return True
    if set(map(type, labels)) != {tuple}:
        return False
    fresh = list(compress(labels, map(not_, known)))  # the tuples not found well formed before
    every = tuple(chain.from_iterable(fresh))
    if every and (set(map(type, every)) != {str} or "" in every):
        return False
    # each vertex's labels distinct: a set of each as long as the tuple
    if list(map(len, map(set, fresh))) != list(map(len, fresh)):
        return False
    if len(_WELL_FORMED) > _WELL_FORMED_MAX:
        _WELL_FORMED.clear()
    _WELL_FORMED.update(zip(map(id, fresh), fresh, strict=True))
    return True


def _check_labels(labels: Any) -> tuple[tuple[str, ...], ...]:
    if _plain_labels(labels):
        return tuple(labels)
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise StructureError(
            f"labels must be a sequence (one entry per vertex) of sequences of str, got {labels!r}")
    out = []
    for v, labs in enumerate(labels):
        if isinstance(labs, (str, bytes)) or not isinstance(labs, Iterable):
            raise StructureError(
                f"the labels of vertex {v} must be a sequence of str (a bare string would be "
                f"read as characters), got {labs!r}")
        tup = tuple(check_label(lab, f"label {j} of vertex {v}") for j, lab in enumerate(labs))
        if len(set(tup)) != len(tup):
            dup = next(lab for lab in tup if tup.count(lab) > 1)
            raise StructureError(f"vertex {v} carries the label {dup!r} twice")
        out.append(tup)
    return tuple(out)


def _check_index(value: Any, what: str, n: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise StructureError(f"{what} must be an int vertex index, got {value!r}")
    if not 0 <= value < n:
        raise StructureError(f"{what} = {int(value)} is out of range for {n} vertices")
    return int(value)


def _checked_edge(e: Any, i: int, n: int) -> tuple[int, int, float]:
    """Edge ``i`` as ``(u, v, weight)`` (ints, a float), or the StructureError naming it."""
    if isinstance(e, (str, bytes)) or not isinstance(e, Sequence) or len(e) != 3:
        raise StructureError(f"edge {i} must be a (u, v, weight) triple, got {e!r}")
    u = _check_index(e[0], f"the source of edge {i}", n)
    v = _check_index(e[1], f"the target of edge {i}", n)
    w = e[2]
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, Real):
        raise StructureError(f"the weight of edge {i} ({u} -> {v}) must be a number, got {w!r}")
    w = float(w)
    if not (np.isfinite(w) and 0.0 < w <= 1.0):
        raise StructureError(
            f"the weight of edge {i} ({u} -> {v}) must be finite and lie in (0, 1], got {w!r}")
    return (u, v, w)


def _plain_edges(edges: Any, n: int) -> tuple[tuple, tuple[int, ...]] | None:
    """The common case checked at once (``(u, v, weight)`` tuples of in-range ints and a float
    in (0, 1], one per ordered pair): the edges and their ends ``u * n + v``, sorted; else
    None."""
    if type(edges) is not list and type(edges) is not tuple:
        return None
    if not edges:
        return (), ()
    if set(map(type, edges)) != {tuple} or set(map(len, edges)) != {3}:
        return None
    us, vs, ws = zip(*edges, strict=True)  # every edge a triple: checked above
    if {*map(type, us), *map(type, vs)} != {int} or set(map(type, ws)) != {float}:
        return None
    total = sum(ws)  # nan when a weight is nan
    if not (total == total and 0.0 < min(ws) and max(ws) <= 1.0 and 0 <= min(vs)
            and max(vs) < n):
        return None
    # with 0 <= v < n, 0 <= u < n is 0 <= u * n + v < n * n
    ends = sorted(map(add, map(mul, us, repeat(n)), vs))
    if not 0 <= ends[0] <= ends[-1] < n * n or len(set(ends)) != len(ends):
        return None
    return tuple(sorted(edges)), tuple(ends)


def _check_edges(edges: Any, n: int) -> tuple[tuple[int, int, float], ...]:
    if isinstance(edges, (str, bytes)) or not isinstance(edges, Iterable):
        raise StructureError(f"edges must be a sequence of (u, v, weight) triples, got {edges!r}")
    seen: dict[tuple[int, int], int] = {}
    out = []
    for i, e in enumerate(edges):
        e = _checked_edge(e, i, n)
        u, v = e[0], e[1]
        if (u, v) in seen:
            raise StructureError(
                f"edges {seen[(u, v)]} and {i} both join {u} -> {v}; give one edge per "
                "ordered pair of vertices")
        seen[(u, v)] = i
        out.append(e)
    out.sort()
    return tuple(out)


def _topological_order(n: int, ends: Iterable[tuple[int, int]]) -> tuple[int, ...] | None:
    """Kahn's algorithm (smallest vertex first); None when the graph has a cycle."""
    indegree = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v in ends:
        succ[u].append(v)
        indegree[v] += 1
    ready = [v for v in range(n) if indegree[v] == 0]
    ready.reverse()  # a stack whose top is the smallest ready vertex
    order = []
    while ready:
        u = ready.pop()
        order.append(u)
        for v in reversed(succ[u]):
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    return tuple(order) if len(order) == n else None


@lru_cache(maxsize=16)
def _order_of(n: int, ends: tuple[int, ...]) -> tuple[int, ...] | None:
    """:func:`_topological_order` of the edges ``divmod(end, n)``, kept: the graphs of one
    sentence's candidate pairs share their edges' ends."""
    return _topological_order(n, map(divmod, ends, repeat(n)))


class LabelledGraph:
    """An immutable directed graph with a set of labels per vertex and weighted edges.

    Parameters
    ----------
    labels : sequence of sequences of str
        ``labels[v]``: the labels of vertex ``v`` (non-empty strings, each at most once;
        a vertex may have none).  The number of vertices is ``len(labels)``.
    edges : sequence of (int, int, float)
        Directed edges ``(u, v, weight)`` with ``0 <= u, v < len(labels)`` and a finite
        ``weight`` in (0, 1]; one edge per ordered pair.  They are kept sorted.

    Raises
    ------
    StructureError
        A malformed label or edge, or a graph whose walk series ``Σ_{k>=1} A^k``
        diverges: the spectral radius of the weighted adjacency matrix ``A`` must be
        below 1 (always so for a graph without cycles).

    Examples
    --------
    >>> from structkernels.structures import LabelledGraph
    >>> g = LabelledGraph([("binds", "VBZ"), ("nsubj",), ("PROT1", "NN")],
    ...                   [(0, 1, 0.9), (1, 2, 0.9)])
    >>> len(g), g.edges[0], g.topological_order
    (3, (0, 1, 0.9), (0, 1, 2))
    >>> LabelledGraph.from_json(g.to_json()) == g
    True
    """

    __slots__ = ("_labels", "_edges", "_hash", "_order")

    def __init__(self, labels: Iterable[Iterable[str]], edges: Iterable[Sequence[Any]] = ()):
        labs = _check_labels(labels)
        n = len(labs)
        checked = _plain_edges(edges, n)
        if checked is None:  # anything else takes the full checks, naming the first bad edge
            edg = _check_edges(edges, n)
            ends = tuple(u * n + v for u, v, _ in edg)
        else:
            edg, ends = checked
        order = _order_of(n, ends)
        self._fill(labs, edg, order)
        if order is None:
            radius = self.spectral_radius()
            if not radius < _RADIUS_LIMIT:
                raise StructureError(
                    f"the sum over walks diverges: the weighted adjacency matrix has spectral "
                    f"radius {radius:.6g} >= 1 (a cycle whose weights are too large); lower "
                    "the weights on the cycles")

    def _fill(self, labels: tuple[tuple[str, ...], ...],
              edges: tuple[tuple[int, int, float], ...], order: tuple[int, ...] | None) -> None:
        object.__setattr__(self, "_labels", labels)
        object.__setattr__(self, "_edges", edges)
        object.__setattr__(self, "_order", order)
        object.__setattr__(self, "_hash", None)  # hashed when first asked

    @classmethod
    def _checked(cls, labels: tuple[tuple[str, ...], ...],
                 edges: tuple[tuple[int, int, float], ...], order: tuple[int, ...]
                 ) -> LabelledGraph:
        """A graph from parts already checked (:class:`GraphFrame`)."""
        g = object.__new__(cls)
        g._fill(labels, edges, order)
        return g

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("LabelledGraph is immutable")

    # ------------------------------------------------------------------ views
    @property
    def labels(self) -> tuple[tuple[str, ...], ...]:
        """The labels of each vertex."""
        return self._labels

    @property
    def edges(self) -> tuple[tuple[int, int, float], ...]:
        """The edges ``(u, v, weight)``, sorted."""
        return self._edges

    @property
    def topological_order(self) -> tuple[int, ...] | None:
        """The vertices in an order where every edge goes forward (smallest ready
        vertex first), or None when the graph has a cycle."""
        return self._order

    def __len__(self) -> int:
        return len(self._labels)

    def adjacency(self) -> np.ndarray:
        """The weighted adjacency matrix ``A`` (``A[u, v]`` = weight of ``u -> v``), dense."""
        n = len(self._labels)
        A = np.zeros((n, n), dtype=np.float64)
        if self._edges:
            u, v, w = zip(*self._edges, strict=True)
            A[list(u), list(v)] = w
        return A

    def spectral_radius(self) -> float:
        """The spectral radius of :meth:`adjacency` (0 for a graph without cycles)."""
        if self._order is not None or not self._edges:
            return 0.0
        return float(np.max(np.abs(np.linalg.eigvals(self.adjacency()))))

    # ------------------------------------------------------------ protocol
    def __eq__(self, other: object) -> bool:
        return (isinstance(other, LabelledGraph) and hash(self) == hash(other)
                and self._labels == other._labels and self._edges == other._edges)

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(("LabelledGraph", self._labels, self._edges)))
        return self._hash

    def __reduce__(self):
        return (LabelledGraph, (self._labels, self._edges))

    def __repr__(self) -> str:
        return f"LabelledGraph({[list(labs) for labs in self._labels]!r}, {list(self._edges)!r})"

    # ---------------------------------------------------------------- JSON
    def to_json(self) -> dict[str, list]:
        """``{"labels": [[str, ...], ...], "edges": [[u, v, weight], ...]}``."""
        return {
            "labels": [list(labs) for labs in self._labels],
            "edges": [[u, v, w] for u, v, w in self._edges],
        }

    @classmethod
    def from_json(cls, obj: Any) -> LabelledGraph:
        """Inverse of :meth:`to_json`; also accepts a JSON string."""
        obj = load_json(obj)
        if not isinstance(obj, dict) or "labels" not in obj:
            raise StructureError(
                f"a labelled graph in JSON is an object with 'labels' and 'edges', got {obj!r}")
        extra = sorted(set(obj) - {"labels", "edges"})
        if extra:
            raise StructureError(f"unknown keys in a labelled graph: {', '.join(map(repr, extra))}")
        labels, edges = obj["labels"], obj.get("edges", [])
        if not isinstance(labels, list) or not isinstance(edges, list):
            raise StructureError("'labels' and 'edges' of a labelled graph must be JSON lists")
        # JSON's lists as the tuples the checks take whole
        return cls([tuple(x) if type(x) is list else x for x in labels],
                   [tuple(e) if type(e) is list and len(e) == 3 else e for e in edges])


class GraphFrame:
    """The vertices and edges of a family of graphs that differ only in their labels and
    weights (the all-paths graphs of one sentence's pairs), checked once: :meth:`graph`
    gives the graph :class:`LabelledGraph` would, and raises the same errors.

    Parameters
    ----------
    n_vertices : int
        The number of vertices of every graph of the family.
    ends : sequence of (int, int)
        Each edge's ``(u, v)``, in the order :meth:`graph` takes the weights.

    Examples
    --------
    >>> from structkernels.structures import GraphFrame, LabelledGraph
    >>> frame = GraphFrame(3, [(1, 2), (0, 1)])
    >>> g = frame.graph([("binds", "VBZ"), ("nsubj",), ("PROT1", "NN")], [0.9, 0.3])
    >>> g == LabelledGraph([("binds", "VBZ"), ("nsubj",), ("PROT1", "NN")],
    ...                    [(1, 2, 0.9), (0, 1, 0.3)])
    True
    """

    __slots__ = ("n_vertices", "ends", "_perm", "_us", "_vs", "_order", "_last")

    def __init__(self, n_vertices: int, ends: Sequence[tuple[int, int]]):
        if (isinstance(n_vertices, (bool, np.bool_))
                or not isinstance(n_vertices, (int, np.integer)) or n_vertices < 0):
            raise StructureError(f"n_vertices must be an int >= 0, got {n_vertices!r}")
        n = int(n_vertices)
        pairs = ends if type(ends) is list or type(ends) is tuple else list(ends)
        # the common case checked at once: (u, v) tuples as plain edges of weight 1
        plain = (set(map(type, pairs)) <= {tuple} and set(map(len, pairs)) <= {2}
                 and _plain_edges([(*p, 1.0) for p in pairs], n) is not None)
        if not plain:  # the checks one edge at a time, naming the first bad one
            pairs = [_pair(e, i) for i, e in enumerate(pairs)]
            _check_edges([(u, v, 1.0) for u, v in pairs], n)
        self.n_vertices = n
        # ints as given (the plain case), else as int (numpy integers)
        self.ends = (tuple(pairs) if plain
                     else tuple((int(u), int(v)) for u, v in pairs))
        ends = self.ends
        # the edges are kept sorted: the weights reordered, unless given in that order
        if all(map(le, ends, ends[1:])):
            self._perm = None
            self._us, self._vs = (tuple(x) for x in zip(*ends, strict=True)) if ends else ((), ())
        else:
            perm = sorted(range(len(ends)), key=ends.__getitem__)
            self._perm = tuple(perm)
            self._us = tuple(ends[i][0] for i in perm)
            self._vs = tuple(ends[i][1] for i in perm)
        self._order = _order_of(n, tuple(map(add, map(mul, self._us, repeat(n)), self._vs)))
        self._last: tuple | None = None  # the edges of the last graph made

    def __len__(self) -> int:
        return len(self.ends)

    def __repr__(self) -> str:
        return f"GraphFrame({self.n_vertices}, {list(self.ends)!r})"

    def graph(self, labels: Sequence[Sequence[str]], weights: Sequence[float], *,
              check_labels: bool = True) -> LabelledGraph:
        """``LabelledGraph(labels, [(u, v, w) ...])``, ``weights[i]`` that of ``ends[i]``;
        ``check_labels=False`` for labels well formed by construction."""
        if check_labels:
            labs = _check_labels(labels)
        else:
            labs = labels if type(labels) is tuple else tuple(labels)
        if len(labs) != self.n_vertices:
            raise StructureError(f"{len(labs)} vertices' labels for a frame of "
                                 f"{self.n_vertices} vertices")
        ws = weights if type(weights) is list or type(weights) is tuple else list(weights)
        if len(ws) != len(self.ends):
            raise StructureError(f"{len(ws)} weights for a frame of {len(self.ends)} edges")
        # a family's weights take few distinct values: each checked once (nan fails 0 < w)
        if self._order is None or not all(type(w) is float and 0.0 < w <= 1.0
                                          for w in set(ws)):
            # a graph with cycles (its spectral radius checked), or a weight that is not a
            # float in (0, 1] (named): the full construction
            return LabelledGraph(labs, [(u, v, w) for (u, v), w in zip(self.ends, ws,
                                                                         strict=True)])
        if self._perm is not None:
            ws = list(map(ws.__getitem__, self._perm))
        last = self._last
        if last is None:
            edges = tuple(zip(self._us, self._vs, ws, strict=True))
        else:  # the previous graph's edge tuples where the weight is the same: kept once
            edges = tuple([e if e[2] == w else (e[0], e[1], w)
                           for e, w in zip(last, ws, strict=True)])
        self._last = edges
        return LabelledGraph._checked(labs, edges, self._order)


def _pair(e: Any, i: int) -> tuple[Any, Any]:
    if isinstance(e, (str, bytes)) or not isinstance(e, Sequence) or len(e) != 2:
        raise StructureError(f"edge {i} must be a (u, v) pair, got {e!r}")
    return e[0], e[1]
