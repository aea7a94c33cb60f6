"""Any :mod:`networkx` graph with named label attributes, and GraphML/GML files of them."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import networkx as nx

from structkernels.formats._reading import GraphReading
from structkernels.graphs.model import (
    KINDS,
    Graph,
    GraphCorpus,
    GraphFormatError,
    add_node,
    new_graph,
)

__all__ = ["from_networkx", "read_networkx", "read_networkx_file"]


def from_networkx(G: nx.Graph, label: str = "label", edge_label: str = "label",
                  kind: str = "amr", graph_id: str | None = None, root: Any = None,
                  sentence: str | None = None, name: str | None = "name",
                  lemma: str | None = "lemma", file: str | None = None) -> Graph:
    """A networkx graph whose nodes and edges carry labels, as a model graph.

    Parameters
    ----------
    G : networkx.Graph, DiGraph, MultiGraph or MultiDiGraph
        Edges of an undirected graph are read in the direction networkx lists them.
    label, edge_label : str
        Node attribute holding the node label (AMR concept or word), edge attribute holding
        the edge label (role or dependency relation).
    kind : {"amr", "dependency"}
    graph_id : str, optional
        Default ``G.graph["id"]``, else ``G.name``, else ``"graph"``.
    root : node, optional
        Default ``G.graph["root"]`` when present.
    sentence : str, optional
        Default ``G.graph["sentence"]`` (or ``"label"``), else ``""``.
    name, lemma : str or None
        Node attributes read as the entity name / the lemma (None: none).

    Raises
    ------
    GraphFormatError
        A node without ``label``, an edge without ``edge_label``, two node keys with the
        same text, or a root that is not a node.

    Examples
    --------
    >>> import networkx as nx
    >>> from structkernels.graphs import from_networkx
    >>> H = nx.DiGraph()
    >>> H.add_node(1, text="bind-01"); H.add_node(2, text="protein")
    >>> H.add_edge(1, 2, rel="ARG1")
    >>> g = from_networkx(H, label="text", edge_label="rel", graph_id="g1")
    >>> list(g.graph.edges(data="role"))
    [('1', '2', 'ARG1')]
    """
    if not isinstance(G, nx.Graph):
        raise TypeError(f"expected a networkx graph, got {type(G).__name__}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    gid = str(graph_id or G.graph.get("id") or G.name or "graph")
    M = new_graph(gid, kind)
    keys: dict[Any, str] = {}
    for v, d in G.nodes(data=True):
        key = str(v)
        if key in M:
            raise GraphFormatError(f"two nodes have the key {key!r} once written as text",
                                   file, None, gid, key)
        keys[v] = key
        lab = d.get(label)
        if lab is None or not str(lab).strip():
            raise GraphFormatError(f"no node label (attribute {label!r})", file, None, gid, key)
        extras = {k: val for k, val in d.items()
                  if k not in (label, name, lemma) and isinstance(val, (str, int, float))}
        attrs: dict[str, Any] = {"extra": extras}
        for field, attr in (("name", name), ("lemma", lemma)):
            if attr is not None and d.get(attr) is not None:
                attrs[field] = str(d[attr])
        if kind == "dependency":
            attrs["index"] = d.get("index")
        add_node(M, key, str(lab), **attrs)
    edges = G.edges(data=True, keys=False) if G.is_multigraph() else G.edges(data=True)
    for u, v, d in edges:
        rel = d.get(edge_label)
        if rel is None or not str(rel).strip():
            raise GraphFormatError(f"no edge label (attribute {edge_label!r})", file, None, gid,
                                   f"{keys[u]} -> {keys[v]}")
        M.add_edge(keys[u], keys[v], role=str(rel), inverted=False)
    r = root if root is not None else G.graph.get("root")
    if r is not None:
        if r not in keys and str(r) not in M:
            raise GraphFormatError(f"root {r!r} is not a node", file, None, gid)
        M.graph["root"] = keys.get(r, str(r))
    elif M.number_of_nodes():
        M.graph["root"] = next((v for v in M if M.in_degree(v) == 0), next(iter(M)))
    snt = sentence if sentence is not None else G.graph.get("sentence", G.graph.get("label", ""))
    return Graph(id=gid, sentence=str(snt or ""), graph=M, metadata={}, file=file)


def read_networkx(graphs: Iterable[nx.Graph], on_error: str = "raise",
                  **options: Any) -> GraphCorpus:
    """:func:`from_networkx` on each graph; ``on_error="skip"`` lists the bad ones.

    Graph ids default to ``G.graph["id"]``, ``G.name`` or the graph's position."""
    reading = GraphReading(on_error)
    for i, G in enumerate(graphs):
        gid = str(G.graph.get("id") or G.name or i) if isinstance(G, nx.Graph) else str(i)
        try:
            reading.graphs.append(from_networkx(G, graph_id=gid, **options))
        except GraphFormatError as exc:
            reading.skip(exc, exc.file or "<networkx>", i, gid)
    return reading.corpus("graph", "<networkx>", [], first=False)


def read_networkx_file(path: str | os.PathLike, **options: Any) -> Graph:
    """One GraphML or GML file (networkx's readers) through :func:`from_networkx`."""
    file = os.fspath(path)
    low = file.lower()
    try:
        if low.endswith(".graphml"):
            G = nx.read_graphml(file)
        elif low.endswith(".gml"):
            G = nx.read_gml(file, label="id")  # keep a "label" attribute as an attribute
        else:
            raise ValueError(f"{file}: not a GraphML (.graphml) or GML (.gml) file")
    except Exception as exc:  # networkx's errors, SyntaxError, xml.etree ParseError and friends
        if isinstance(exc, (ValueError, OSError)) and not type(exc).__name__.endswith("ParseError"):
            raise
        raise GraphFormatError(f"not a well-formed graph file: {exc}", file) from None
    stem = os.path.basename(file).rsplit(".", 1)[0]
    given = "graph_id" in options or bool(G.graph.get("id"))
    options.setdefault("graph_id", str(G.graph.get("id") or stem))
    g = from_networkx(G, file=file, **options)
    if not given:
        object.__setattr__(g, "id_given", False)  # derived from the file name
    return g
