"""The one graph model every reader builds, and its error and skip records.

A :class:`networkx.MultiDiGraph` with graph attributes ``id``, ``root`` and ``kind``
(``"amr"`` or ``"dependency"``); node attributes ``concept`` (an AMR concept, a collapsed
entity name, or a dependency node's word), ``attributes``, ``name``, ``wiki`` and, from
some readers, ``lemma``, ``pos``, ``index`` (1-based token position), ``collapsed`` and
``extra`` (the source's other node attributes); edge attributes ``role`` and ``inverted``.
Each graph comes wrapped in a :class:`Graph`, a file's graphs in a :class:`GraphCorpus`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import penman

from structkernels.utils import StructkernelsError

__all__ = ["GraphFormatError", "GraphCorpus", "Graph", "SkippedGraph", "KINDS", "new_graph",
           "add_node", "node_data", "graph_kind", "as_networkx", "concept_label", "unquote",
           "AMRGraph", "AMRCorpus", "AMRFormatError"]

#: The kinds of graph the model carries.
KINDS = ("amr", "dependency")


def new_graph(graph_id: str, kind: str, root: str | None = None) -> nx.MultiDiGraph:
    """An empty model graph (graph attributes ``id``, ``root``, ``kind``)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return nx.MultiDiGraph(root=root, id=graph_id, kind=kind)


def node_data(concept: str, **attrs: Any) -> dict[str, Any]:
    """A node's attributes in the model (``attributes``, ``name``, ``wiki`` default), for
    ``G.add_nodes_from`` where a graph's nodes are added in one call.

    Examples
    --------
    >>> node_data("bind-01", pos="VERB")
    {'concept': 'bind-01', 'attributes': (), 'name': None, 'wiki': None, 'pos': 'VERB'}
    """
    return {"concept": concept, "attributes": (), "name": None, "wiki": None, **attrs}


def add_node(G: nx.MultiDiGraph, node: str, concept: str, **attrs: Any) -> None:
    """Add a node with the model's attributes (:func:`node_data`)."""
    G.add_node(node, **node_data(concept, **attrs))


def graph_kind(G: nx.MultiDiGraph) -> str:
    """``"amr"`` unless the graph says otherwise (PENMAN graphs carry no kind)."""
    return G.graph.get("kind") or "amr"


class GraphFormatError(StructkernelsError, ValueError):
    """A malformed graph input, naming the ``file``, the 1-based ``line``, the ``graph_id``
    and the ``node`` (``"u -> v"`` for an edge) where known, and the ``reason``."""

    def __init__(self, reason: str, file: str | None = None, line: int | None = None,
                 graph_id: str | None = None, node: str | None = None):
        self.node = node
        if node is not None:
            reason = f"{'edge' if ' -> ' in node else 'node'} {node!r}: {reason}"
        self.reason, self.file, self.line, self.graph_id = reason, file, line, graph_id
        where = []
        if file is not None:
            where.append(f"{file}, line {line}" if line is not None else str(file))
        if graph_id is not None:
            where.append(f"graph {graph_id!r}")
        super().__init__(f"{': '.join(where)}: {reason}" if where else reason)


@dataclass(frozen=True)
class SkippedGraph:
    """A graph left out in lenient mode, with where and why."""

    file: str
    line: int
    graph_id: str | None
    reason: str

    def __str__(self) -> str:
        return str(GraphFormatError(self.reason, self.file, self.line or None, self.graph_id))


@dataclass(frozen=True, eq=False)
class Graph:
    """One graph: its id, sentence, :mod:`networkx` model and provenance.

    Attributes
    ----------
    id : str
        The ``::id`` metadata (``"<file name>:<line>"`` when absent).
    sentence : str
        The ``::snt`` metadata (``""`` when absent).
    metadata : dict
        All ``::key value`` metadata.
    penman : penman.Graph
        The decoded PENMAN graph.
    line : int or None
        The graph's first line.
    id_given : bool
        False when a reader derived the id from the file name and line (made unique with
        ``#2``, ``#3`` ...).
    """

    id: str
    sentence: str
    graph: nx.MultiDiGraph
    metadata: dict[str, str] = field(default_factory=dict)
    penman: penman.Graph | None = None
    file: str | None = None
    line: int | None = None
    id_given: bool = True

    def __repr__(self) -> str:
        return f"Graph(id={self.id!r}, nodes={self.graph.number_of_nodes()})"


class GraphCorpus(Sequence):
    """The ``graphs`` read from one or more ``files``, in file order.

    Attributes
    ----------
    skipped : list of SkippedGraph
        Graphs left out with ``on_error="skip"``; also, from
        :func:`structkernels.read_graphs` on a folder, the files of no known format.
    duplicates : list of SkippedGraph
        Graphs whose id was already read: left out with ``deduplicate=True``, or kept
        under ``<id>#2`` ... with ``deduplicate=False``.
    """

    def __init__(self, graphs, skipped=(), duplicates=(), files=()):
        self.graphs: list[Graph] = list(graphs)
        self.skipped: list[SkippedGraph] = list(skipped)
        self.duplicates: list[SkippedGraph] = list(duplicates)
        self.files: list[str] = list(files)
        self._by_id = {g.id: g for g in reversed(self.graphs)}

    def __getitem__(self, i):  # type: ignore[override]
        return self.graphs[i]

    def __len__(self) -> int:
        return len(self.graphs)

    def __iter__(self) -> Iterator[Graph]:
        return iter(self.graphs)

    def get(self, graph_id: str) -> Graph | None:
        """The graph with this id, or None."""
        return self._by_id.get(graph_id)

    def __repr__(self) -> str:
        return (f"GraphCorpus({len(self.graphs)} graphs, {len(self.skipped)} skipped, "
                f"{len(self.duplicates)} duplicates, files={self.files!r})")


def as_networkx(graph: Any) -> nx.MultiDiGraph:
    """The networkx model of a Graph, or a MultiDiGraph as is."""
    if isinstance(graph, Graph):
        return graph.graph
    if isinstance(graph, nx.MultiDiGraph):
        return graph
    raise TypeError(f"expected a Graph or a networkx.MultiDiGraph, got {type(graph).__name__}")


def unquote(value: Any) -> str:
    """A PENMAN constant as text: string constants lose their quotes."""
    if value is None:
        return ""
    s = str(value)
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1].replace('\\"', '"')
    return s


def concept_label(concept: str, senses: bool = False) -> str:
    """The node label used in paths and trees: without ``senses`` (as in Table 1 of the
    paper) a trailing PropBank sense number is removed (``"have-org-role-91"`` reads
    ``"have-org-role"``)."""
    if not senses:
        head, sep, tail = concept.rpartition("-")
        if sep and head and tail.isdigit():
            return head
    return concept


#: Names of the AMR releases' readers, kept: the model is one for every source.
AMRGraph = Graph
AMRCorpus = GraphCorpus
AMRFormatError = GraphFormatError
