"""The all-paths graph of a candidate entity pair in a dependency-parsed sentence.

After Airola et al. (2008), "All-paths graph kernel for protein-protein interaction
extraction with evaluation of cross-corpus learning", BMC Bioinformatics 9(Suppl 11):S2:
two unconnected subgraphs, the dependency one (tokens and dependencies as vertices, the
shortest path's edges weighing more, its vertices' labels repeated with ``IP_``) and the
linear one (tokens in order, labels prefixed ``B_``, ``M_`` or ``A_`` by their place
against the pair), compared by :class:`~structkernels.kernels.allpaths.AllPathsGraphKernel`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from numbers import Real
from typing import Any

import networkx as nx

from structkernels.graphs.model import Graph, as_networkx
from structkernels.structures import GraphFrame, LabelledGraph

__all__ = ["AllPathsSentence", "allpaths_graph", "shortest_dependency_path"]


def _tokens(G: nx.MultiDiGraph) -> list[Any]:
    """The graph's nodes in sentence order (their ``index``), checked."""
    indices = {}
    for node, index in G.nodes(data="index"):
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(
                f"node {node!r} has no integer 'index' (its token position): the all-paths "
                "graph is built from a dependency graph of one sentence, as from_spacy or "
                "read_conllu make them"
            )
        indices[node] = index
    order = sorted(indices, key=indices.__getitem__)
    for a, b in zip(order, order[1:], strict=False):
        if indices[a] == indices[b]:
            raise ValueError(f"nodes {a!r} and {b!r} share the token index {indices[a]}")
    return order


def _entity(G: nx.MultiDiGraph, keys: Any, what: str) -> tuple[Any, ...]:
    """An entity's node keys (a bare str is one key), checked against the graph."""
    keys = (keys,) if isinstance(keys, str) else keys
    if not isinstance(keys, Iterable):
        raise TypeError(f"{what} must be a sequence of node keys, got {keys!r}")
    keys = tuple(dict.fromkeys(keys))
    if not keys:
        raise ValueError(f"{what} names no token")
    missing = [k for k in keys if k not in G]
    if missing:
        raise ValueError(f"{what} names {missing[0]!r}, which is not a node of the graph")
    return keys


def shortest_dependency_path(graph: Graph | nx.MultiDiGraph, e1: Sequence[str] | str,
                             e2: Sequence[str] | str) -> list[str]:
    """The shortest undirected path from a token of ``e1`` to a token of ``e2``.

    ``graph`` is a dependency graph of one sentence (nodes with an integer ``index``),
    ``e1`` and ``e2`` the node keys of the two entities' tokens (a bare str is one key).
    The path is the first a breadth-first search finds, from ``e1``'s tokens and through
    neighbours in sentence order (a shared token alone when the entities share one).  A key
    that is not a node, or entities in unconnected parts of the graph: a ``ValueError``.

    Examples
    --------
    >>> from structkernels.graphs.model import new_graph, add_node
    >>> G = new_graph("s1", "dependency", root="2")
    >>> for i, w in enumerate(["Ras", "binds", "Raf", "strongly"], 1):
    ...     add_node(G, str(i), w, index=i)
    >>> _ = G.add_edge("2", "1", role="nsubj"), G.add_edge("2", "3", role="dobj")
    >>> shortest_dependency_path(G, ["1"], ["3"])
    ['1', '2', '3']
    """
    sentence = AllPathsSentence(graph)
    return sentence._shortest(sentence._entity(e1, "e1"), sentence._entity(e2, "e2"))


def _weight(value: Any, name: str) -> float:
    if type(value) is float and 0.0 < value <= 1.0:
        return value
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < float(value) <= 1.0:
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    return float(value)


def _dedupe(labels: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(labels))


def _prefixed(prefix: str, labels: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Each label tuple with its labels prefixed ``prefix``."""
    add = prefix.__add__
    return [tuple(map(add, labs)) for labs in labels]


def allpaths_graph(graph: Graph | nx.MultiDiGraph, e1: Sequence[str] | str,
                   e2: Sequence[str] | str, **options: Any) -> LabelledGraph:
    """The all-paths graph (Airola et al. 2008) of the candidate pair ``e1``, ``e2``.

    Parameters
    ----------
    graph : Graph or networkx.MultiDiGraph
        The dependency graph of one sentence, as :func:`~structkernels.graphs.from_spacy`
        or :func:`~structkernels.graphs.read_conllu` make it: node keys ``"1"``, ``"2"``
        ..., node attributes ``concept`` (the word), ``pos`` and ``index`` (the token's
        position), edge attribute ``role`` (the dependency type).
    e1, e2 : sequence of str, or str
        The node keys of the candidate entities' tokens (a bare str is one key).
    entities : iterable of sequences of str
        The node keys of the sentence's other entities (read ``PROT`` when blinded).
    blind : bool, default True
        Replace the entities' words by ``PROT1``, ``PROT2`` and ``PROT``.  A token of both
        candidates reads ``PROT1`` and ``PROT2`` (two labels); a candidate's token that
        also lies in another entity keeps its candidate mark.
    shortest_path_weight, other_weight, linear_weight : float in (0, 1]
        Weights of the dependency edges on the shortest path (0.9), of the other
        dependency edges (0.3) and of the linear edges (0.9), the paper's values.

    Returns
    -------
    LabelledGraph
        Vertices ``0 .. T-1``: the tokens of the dependency subgraph in sentence order;
        ``T .. T+D-1``: its dependencies, ordered by (head position, dependent position,
        type); ``T+D .. 2T+D-1``: the tokens of the linear subgraph in sentence order.  The
        shortest path is :func:`shortest_dependency_path`'s, with every dependency joining
        two of its consecutive tokens.

    Examples
    --------
    >>> from structkernels.graphs.model import new_graph, add_node
    >>> G = new_graph("s1", "dependency", root="2")
    >>> for i, (w, p) in enumerate([("Ras", "NN"), ("binds", "VBZ"), ("Raf", "NN")], 1):
    ...     add_node(G, str(i), w, pos=p, index=i)
    >>> _ = G.add_edge("2", "1", role="nsubj"), G.add_edge("2", "3", role="dobj")
    >>> g = allpaths_graph(G, ["1"], ["3"])
    >>> g.labels[1], g.labels[3]
    (('binds', 'VBZ', 'IP_binds', 'IP_VBZ'), ('nsubj', 'IP_nsubj'))
    >>> g.labels[5:]
    (('M_PROT1', 'M_NN'), ('M_binds', 'M_VBZ'), ('M_PROT2', 'M_NN'))
    """
    return AllPathsSentence(graph).graph(e1, e2, **options)


class AllPathsSentence:
    """The all-paths graphs (those of :func:`allpaths_graph`) of the candidate pairs of the
    dependency graph of one sentence, what they share read once.

    Examples
    --------
    >>> from structkernels.graphs import parse_conllu
    >>> G = parse_conllu("1\\tRas\\tRas\\tPROPN\\t_\\t_\\t2\\tnsubj\\t_\\t_\\n"
    ...                  "2\\tbinds\\tbind\\tVERB\\t_\\t_\\t0\\troot\\t_\\t_\\n"
    ...                  "3\\tRaf\\tRaf\\tPROPN\\t_\\t_\\t2\\tobj\\t_\\t_\\n")
    >>> sentence = AllPathsSentence(G)
    >>> sentence.graph(["1"], ["3"]) == allpaths_graph(G, ["1"], ["3"])
    True
    """

    def __init__(self, graph: Graph | nx.MultiDiGraph):
        self.G = as_networkx(graph)
        self.tokens = _tokens(self.G)
        self.position = {u: i for i, u in enumerate(self.tokens)}
        self._adjacency: dict[Any, list[Any]] | None = None
        self._read: tuple | None = None
        self._kept: dict[tuple, Any] = {}
        self._frame: GraphFrame | None = None
        self._weights: tuple | None = None

    def _parts(self) -> tuple:
        """``(pos, plain, deps, by_step, roles)``: each token's parts of speech and unblinded
        labels, the sorted dependencies ``(head, dependent, type)``, those joining each pair
        of tokens, and each dependency's labels off the shortest path."""
        if self._read is None:
            nodes = self.G.nodes
            pos_of, plain = [], []
            for u in self.tokens:
                data = nodes[u]
                concept, pos = data.get("concept"), data.get("pos")
                p = [pos] if isinstance(pos, str) and pos else []
                pos_of.append(p)
                if isinstance(concept, str) and concept:
                    plain.append((concept,) if not p or pos == concept else (concept, pos))
                else:
                    plain.append(tuple(p))
            deps = []
            for head, dep, role in self.G.edges(data="role"):
                if not isinstance(role, str) or not role:
                    raise ValueError(f"the dependency {head!r} -> {dep!r} has no 'role' (its type)")
                deps.append((self.position[head], self.position[dep], role))
            deps.sort()
            by_step: dict[tuple, list[int]] = {}
            for d, (h, t, _) in enumerate(deps):
                if h != t:  # the step either way
                    a, b = self.tokens[h], self.tokens[t]
                    by_step.setdefault((a, b), []).append(d)
                    if (b, a) not in by_step:
                        by_step[b, a] = by_step[a, b]
            self._read = (pos_of, plain, deps, by_step, [(role,) for _, _, role in deps])
        return self._read

    def _shortest(self, e1: tuple, e2: tuple) -> list[Any]:
        """:func:`shortest_dependency_path` of checked entities (the neighbours kept)."""
        position = self.position
        if self._adjacency is None:  # undirected neighbours of every node, in sentence order
            around: dict[Any, set[Any]] = {u: set() for u in self.G}
            for head, dep in self.G.edges():
                around[head].add(dep)
                around[dep].add(head)
            self._adjacency = {u: sorted(nbrs, key=position.__getitem__)
                               for u, nbrs in around.items()}
        targets = set(e2)
        sources = sorted(e1, key=position.__getitem__)
        shared = [u for u in sources if u in targets]
        if shared:
            return [shared[0]]
        parent: dict[Any, Any] = dict.fromkeys(sources)
        queue = deque(sources)
        while queue:
            u = queue.popleft()
            for v in self._adjacency[u]:
                if v in parent:
                    continue
                parent[v] = u
                if v in targets:
                    path = [v]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    return path[::-1]
                queue.append(v)
        raise ValueError(f"no dependency path joins the entities {list(e1)} and {list(e2)}: "
                         "they lie in unconnected parts of the parse")

    def _memo(self, key: tuple, make: Callable[..., Any], *args: Any) -> Any:
        """``make(*args)``, made once per ``key`` for all the pairs of the sentence (at the
        first pair that needs it)."""
        got = self._kept.get(key)
        if got is None:
            got = self._kept[key] = make(*args)
        return got

    def _entity(self, keys: Any, what: str) -> tuple[Any, ...]:
        """:func:`_entity`, kept by the keys as given when they are a tuple."""
        if type(keys) is not tuple:
            return _entity(self.G, keys, what)
        return self._memo(("entity", keys), _entity, self.G, keys, what)

    def _frame_weights(self, w_other: float, w_linear: float) -> tuple[GraphFrame, list]:
        """The pairs' frame and the edges' weights off the shortest path."""
        deps = self._read[2]
        T, D = len(self.tokens), len(deps)
        if self._frame is None:
            offset = T + D
            self._frame = GraphFrame(
                2 * T + D, [(h, T + d) for d, (h, _, _) in enumerate(deps)]
                + [(T + d, t) for d, (_, t, _) in enumerate(deps)]
                + [(offset + i, offset + i + 1) for i in range(T - 1)])
        if self._weights is None or self._weights[0] != (w_other, w_linear):
            self._weights = ((w_other, w_linear),
                             [w_other] * (2 * D) + [w_linear] * max(T - 1, 0))
        return self._frame, self._weights[1]

    def graph(self, e1: Sequence[str] | str, e2: Sequence[str] | str, *,
              entities: Iterable[Sequence[str] | str] = (), blind: bool = True,
              shortest_path_weight: float = 0.9, other_weight: float = 0.3,
              linear_weight: float = 0.9) -> LabelledGraph:
        """The all-paths graph of the pair ``e1``, ``e2`` (see :func:`allpaths_graph`)."""
        w_path = _weight(shortest_path_weight, "shortest_path_weight")
        w_other = _weight(other_weight, "other_weight")
        w_linear = _weight(linear_weight, "linear_weight")
        if not isinstance(blind, bool):
            raise TypeError(f"blind must be True or False, got {blind!r}")
        tokens, position = self.tokens, self.position
        first, second = self._entity(e1, "e1"), self._entity(e2, "e2")
        if isinstance(entities, (str, bytes)):
            raise TypeError("entities must be a sequence of entities (each a sequence of node "
                            "keys)")
        others = [self._entity(keys, f"entities[{i}]") for i, keys in enumerate(entities)]
        path = self._shortest(first, second)
        pos_of, plain, deps, by_step, roles = self._parts()

        # words (blinded) and parts of speech: only the marked tokens differ from plain
        marks: dict[Any, tuple[str, ...]] = {}
        if blind:
            for keys in others:
                for u in keys:
                    marks[u] = ("PROT",)
            for u in first:
                marks[u] = ("PROT1",)
            for u in second:
                marks[u] = ("PROT1", "PROT2") if marks.get(u) == ("PROT1",) else ("PROT2",)
        base = list(plain)
        for u, m in marks.items():
            i = position[u]
            base[i] = self._memo(("blinded", i, m), _dedupe, [*m, *pos_of[i]])

        # dependency subgraph: the tokens, then the dependencies
        T = len(tokens)
        labels: list[tuple[str, ...]] = list(base)
        for u in dict.fromkeys(path):
            labs = base[position[u]]
            labels[position[u]] = self._memo(
                ("in path", labs), lambda x: _dedupe([*x, *map("IP_".__add__, x)]), labs)
        marked = set()
        for ds in map(by_step.get, zip(path, path[1:], strict=False)):
            if ds:
                marked.update(ds)
        frame, weights = self._frame_weights(w_other, w_linear)
        dep_labels = list(roles)
        if marked:
            weights = list(weights)
            D = len(deps)
            for d in marked:
                dep_labels[d] = self._memo(("dependency in path", d),
                                           lambda role: (role, "IP_" + role), deps[d][2])
                weights[d] = weights[D + d] = w_path
        labels += dep_labels

        # linear subgraph: B_ before the pair, M_ from its first token to its last, A_ after
        pair_at = [position[u] for u in (*first, *second)]
        lo, hi = min(pair_at), max(pair_at)
        for prefix, part in ("B_", slice(lo)), ("M_", slice(lo, hi + 1)), ("A_", slice(hi + 1, T)):
            labels += self._memo(("linear", prefix), _prefixed, prefix, plain)[part]
        offset = T + len(deps)
        for u in marks:
            i = position[u]
            prefix = "B_" if i < lo else ("A_" if i > hi else "M_")
            labels[offset + i] = self._memo(("prefixed", prefix, base[i]), _prefixed, prefix,
                                            [base[i]])[0]
        # every label tuple here is made of the parse's non-empty words, parts of speech
        # and dependency types (checked in _parts), prefixed or deduplicated: well formed
        return frame.graph(labels, weights, check_labels=False)
