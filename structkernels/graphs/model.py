"""The one graph model every reader builds, and its error and skip records.

Every reader of :mod:`structkernels.graphs` returns the model that
:mod:`structkernels.amr` builds from PENMAN (see
:mod:`structkernels.amr.graph`), so candidate extraction, paths, trees,
kernels, the σ learner and the command line treat all sources alike:

- a :class:`networkx.MultiDiGraph` with graph attributes ``id``, ``root``
  (the top node, or None) and ``kind`` (``"amr"`` or ``"dependency"``);
- node attributes ``concept`` (an AMR concept, a collapsed entity name, or a
  dependency node's word), ``attributes`` (constants, a tuple of pairs),
  ``name`` (an entity's name or None), ``wiki``; readers may add ``lemma``,
  ``pos``, ``index`` (1-based token position), ``collapsed`` (True for an
  AMR entity whose name subgraph was collapsed into the node) and
  ``extra`` (a dict of the source's other node attributes, e.g. the DOT
  ``gold_label``);
- edge attributes ``role`` (``ARG0``, ``op1``; ``nsubj``, ``prep_by``) and
  ``inverted``.

Each graph comes wrapped in an :class:`~structkernels.amr.AMRGraph` (id,
sentence, the networkx model, metadata, file, line) and a file's graphs in an
:class:`~structkernels.amr.AMRCorpus` whose ``skipped`` list names every
graph left out in lenient mode.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from structkernels.amr.reader import AMRCorpus, AMRFormatError, AMRGraph, SkippedGraph

__all__ = [
    "GraphFormatError",
    "GraphCorpus",
    "Graph",
    "SkippedGraph",
    "KINDS",
    "new_graph",
    "add_node",
    "graph_kind",
]

#: The kinds of graph the model carries.
KINDS = ("amr", "dependency")

#: A file's graphs (the container of the PENMAN reader).
GraphCorpus = AMRCorpus
#: One graph with its id, sentence, model, metadata and provenance.
Graph = AMRGraph


class GraphFormatError(AMRFormatError):
    """A malformed graph input, naming the file, the line or node, and the graph.

    Attributes
    ----------
    file, line, graph_id, reason
        As :class:`~structkernels.amr.AMRFormatError`.
    node : str or None
        The offending node (or ``"u -> v"`` for an edge), when known.
    """

    def __init__(
        self,
        reason: str,
        file: str | None = None,
        line: int | None = None,
        graph_id: str | None = None,
        node: str | None = None,
    ):
        self.node = node
        if node is not None:
            reason = f"{'edge' if ' -> ' in node else 'node'} {node!r}: {reason}"
        super().__init__(reason, file, line, graph_id)


def new_graph(graph_id: str, kind: str, root: str | None = None) -> nx.MultiDiGraph:
    """An empty model graph (graph attributes ``id``, ``root``, ``kind``)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return nx.MultiDiGraph(root=root, id=graph_id, kind=kind)


def add_node(G: nx.MultiDiGraph, node: str, concept: str, **attrs: Any) -> None:
    """Add a node with the model's attributes (``attributes``, ``name``, ``wiki`` default)."""
    data = {"concept": concept, "attributes": (), "name": None, "wiki": None}
    data.update(attrs)
    G.add_node(node, **data)


def graph_kind(G: nx.MultiDiGraph) -> str:
    """``"amr"`` unless the graph says otherwise (PENMAN graphs carry no kind)."""
    return G.graph.get("kind") or "amr"
