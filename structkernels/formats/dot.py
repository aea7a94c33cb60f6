"""Graphviz DOT graphs (one file per sentence, as in the NPK authors' release).

The AMR and dependency layouts read: docs/graphs.md (The formats as read).  ``kind="auto"``
takes the graph attribute ``kind``, else ``"dependency"`` when a ``root`` self-loop is present,
else ``"amr"``.  Parsing is :mod:`~structkernels.formats._dot_parser`'s (pydot's files and
errors); pydot is needed only to write (``structkernels[graphs]``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path as FilePath
from typing import Any

import networkx as nx

from structkernels.engine.parallel import map_tasks
from structkernels.formats._collect import unreadable
from structkernels.formats._dot_parser import DotError, DotGraph, DotNestingError, parse_graphs
from structkernels.formats._reading import GraphReading, check_max_depth, read_lines
from structkernels.formats.penman import AMR_MODEL
from structkernels.graphs.model import (
    Graph,
    GraphCorpus,
    GraphFormatError,
    add_node,
    as_networkx,
    graph_kind,
    new_graph,
)
from structkernels.utils import atomic_open, one_line, optional_module

__all__ = ["read_dot", "parse_dot", "to_dot", "write_dot", "DOT_SUFFIXES", "MAX_DOT_DEPTH"]

#: File name endings read as DOT.
DOT_SUFFIXES = (".dot", ".gv")
#: Default nesting limit of braces in one DOT file (a subgraph in the graph is depth 2): a
#: deeper file is refused before it is parsed.  Pydot's reading's limit, kept so that the
#: same files are read.
MAX_DOT_DEPTH = 6
_RESERVED = {"node", "edge", "graph"}  # pydot lists default-attribute statements as nodes
_KNOWN = {"label", "concept", "entity_name", "wiki", "collapsed", "lemma", "pos"}
_TOKEN = re.compile(r"^(.*?)(\d+)$")


def _esc(value: Any) -> str:
    """A value quoted for DOT (pydot leaves a quoted value as it is; its own quoting
    escapes no backslash and leaves ``<...>`` unquoted, as an HTML label)."""
    s = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + s.replace("\r", " ").replace("\n", " ") + '"'


def _parse_text(
    text: str, file: str, gid: str | None = None, max_depth: int | None = MAX_DOT_DEPTH
) -> list[DotGraph]:
    """The graphs of a DOT text; an error names its line (a syntax error, its column too)."""
    try:
        return parse_graphs(text, max_depth)
    except DotNestingError as exc:
        raise GraphFormatError(exc.what, file, exc.line, gid) from None
    except DotError as exc:
        if not exc.syntax:
            raise GraphFormatError(one_line(exc.what, 300), file, exc.line) from None
        raise GraphFormatError(
            f"not a well-formed DOT graph: {one_line(exc.what, 200)} (column {exc.column})",
            file, exc.line) from None


def _statements(dot: DotGraph, gid: str, file: str):
    """Node attributes (in order of first mention) and edges of a graph and its subgraphs."""
    nodes: dict[str, dict[str, str | None]] = {}
    edges: list[tuple[str, str, dict[str, str | None]]] = []

    def visit(g: DotGraph) -> None:
        for group in g.nodes.values():
            for name, attrs in group:
                if name in _RESERVED:
                    continue
                old = nodes.get(name)
                if old is None:
                    nodes[name] = dict(attrs)
                    continue
                for k, v in attrs.items():
                    if k in old and old[k] != v:
                        raise GraphFormatError(
                            f"declared twice with different {k!r} ({old[k]!r}, {v!r})",
                            file, None, gid, name)
                    old[k] = v
        for group in g.edges.values():
            for s, d, attrs in group:
                if s is None or d is None:
                    raise GraphFormatError("an edge to or from a subgraph is not supported",
                                           file, None, gid)
                nodes.setdefault(s, {})
                nodes.setdefault(d, {})
                edges.append((s, d, attrs))
        for group in g.subgraphs.values():
            for sub in group:
                visit(sub)

    visit(dot)
    return nodes, edges


def _guess_kind(dot: DotGraph, edges) -> str:
    declared = dot.attrs.get("kind")
    if declared in ("amr", "dependency"):
        return declared
    for s, d, a in edges:
        if s == d and (a.get("label") or "").lower() == "root":
            return "dependency"
    return "amr"


def _extra(attrs: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in attrs.items() if k not in _KNOWN}


def _edge_label(attrs: dict, what: str, s: str, d: str, gid: str, file: str) -> str:
    label = attrs.get("label")
    if label is None or not label.strip():
        raise GraphFormatError(f"edge without a label ({what})", file, None, gid, f"{s} -> {d}")
    return label


def _amr_model(nodes, edges, gid: str, file: str) -> nx.MultiDiGraph:
    top_sources = set()
    root = None
    other: set[str] = set()
    for s, d, a in edges:
        if (a.get("label") or "").upper() == "TOP":
            top_sources.add(s)
            if root is not None and root != d:
                raise GraphFormatError(f"two TOP edges ({root!r}, {d!r})", file, None, gid, s)
            root = d
        else:
            other.update((s, d))
    drop = {s for s in top_sources if s not in other}
    G = new_graph(gid, "amr")
    for v, attrs in nodes.items():
        if v in drop:
            continue
        label = attrs.get("label", v)
        if label is None or not label.strip():
            raise GraphFormatError("empty label", file, None, gid, v)
        concept = attrs.get("concept") or label
        name = attrs.get("entity_name")
        collapsed = str(attrs.get("collapsed", "")).lower() in ("1", "true", "yes")
        if "concept" not in attrs and " " in v:
            var, rest = v.split(" ", 1)
            if rest.strip() == label.strip():
                collapsed = True
        if collapsed and name is None:
            name = label
        add_node(G, v, concept, name=name, wiki=attrs.get("wiki"), collapsed=collapsed,
                 extra=_extra(attrs))
    for s, d, a in edges:
        role = _edge_label(a, "the AMR role", s, d, gid, file)
        if role.upper() == "TOP":
            continue
        role = role.strip().lstrip(":")
        inverted = AMR_MODEL.is_role_inverted(":" + role)
        if inverted:
            s, d = d, s
            role = AMR_MODEL.invert_role(":" + role)[1:]
        G.add_edge(s, d, role=role, inverted=inverted)
    if root is None:
        root = next((v for v in G if G.in_degree(v) == 0), next(iter(G), None))
    G.graph["root"] = root
    return G


def _dependency_model(nodes, edges, gid: str, file: str) -> nx.MultiDiGraph:
    G = new_graph(gid, "dependency")
    root = None
    for v, attrs in nodes.items():
        label = attrs.get("label")
        rest = v[len(label):] if label is not None and v.startswith(label) else ""
        if rest.isdigit():  # "HER31" labelled "HER3": token 1, not 31
            index = int(rest)
        else:
            m = _TOKEN.match(v)
            index = int(m.group(2)) if m else None
            if label is None:
                label = m.group(1) if m and m.group(1) else v
        if not label.strip():
            raise GraphFormatError("empty label", file, None, gid, v)
        add_node(G, v, label, index=index, lemma=attrs.get("lemma"), pos=attrs.get("pos"),
                 extra=_extra(attrs))
    for s, d, a in edges:
        rel = _edge_label(a, "the dependency relation", s, d, gid, file)
        if rel.lower() == "root" and (s == d or s.lower() == "root"):
            if root is not None and root != d:
                raise GraphFormatError(f"two roots ({root!r}, {d!r})", file, None, gid, d)
            root = d
            continue
        G.add_edge(s, d, role=rel.strip(), inverted=False)
    for name in ("ROOT", "root"):
        if name in G and G.degree(name) == 0 and root is not None:
            G.remove_node(name)
    G.graph["root"] = root
    return G


def _line_of(text: str, node: str | None) -> int | None:
    """Line of the first mention of a node (the source of an edge), for error messages."""
    if not node:
        return None
    def ref(name: str) -> str:
        quoted = re.escape('"' + name.replace('"', '\\"') + '"')
        return f"(?:{quoted}|(?<![\\w\"]){re.escape(name)}(?![\\w\"]))"

    parts = node.split(" -> ")
    m = re.search(r"\s*-[->]\s*".join(ref(p) for p in parts), text)
    if m is None and len(parts) > 1:
        m = re.search(ref(parts[0]), text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _to_graph(dot: DotGraph, gid: str, file: str, kind: str, text: str | None = None) -> Graph:
    try:
        nodes, edges = _statements(dot, gid, file)
        if not nodes:
            raise GraphFormatError("a graph without nodes", file, None, gid)
        k = _guess_kind(dot, edges) if kind == "auto" else kind
        G = (_amr_model if k == "amr" else _dependency_model)(nodes, edges, gid, file)
        if G.number_of_nodes() == 0:
            raise GraphFormatError("a graph without nodes", file, None, gid)
        return Graph(id=gid, sentence=dot.attrs.get("label") or "", graph=G,
                     metadata=dict(dot.attrs), file=file, line=1, id_given=False)
    except (TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:  # a guard
        raise GraphFormatError(
            f"cannot read this DOT graph ({type(exc).__name__}: {one_line(exc, 200)})",
            file, None, gid) from None
    except GraphFormatError as exc:
        if exc.line is not None or text is None:
            raise
        line = _line_of(text, exc.node)
        if line is None:
            raise
        err = GraphFormatError(exc.reason, exc.file, line, exc.graph_id)
        err.node = exc.node
        raise err from None


def _check_kind(kind: str) -> None:
    if kind not in ("auto", "amr", "dependency"):
        raise ValueError(f"kind must be 'auto', 'amr' or 'dependency', got {kind!r}")


def parse_dot(
    text: str, graph_id: str = "dot", kind: str = "auto", max_depth: int = MAX_DOT_DEPTH
) -> Graph:
    """Read one graph from DOT text.

    Examples
    --------
    >>> from structkernels.graphs import parse_dot
    >>> g = parse_dot('digraph { b [label="bind-01"]; "p Ras" [label=Ras]; b -> "p Ras" [label=ARG1]; }')
    >>> g.graph.nodes["p Ras"]["name"], g.graph.graph["kind"]
    ('Ras', 'amr')
    """
    _check_kind(kind)
    dots = _parse_text(text, "<string>", graph_id, max_depth)
    if len(dots) != 1:
        raise GraphFormatError(f"expected one DOT graph, found {len(dots)}", "<string>")
    return _to_graph(dots[0], graph_id, "<string>", kind, text)


def _files(path: FilePath) -> list[FilePath]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in DOT_SUFFIXES and p.is_file())
        if not files:
            raise GraphFormatError(f"no DOT files ({', '.join(DOT_SUFFIXES)}) in this folder", str(path))
        return files
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    return [path]


_BATCH = 64  # files per parallel task


def _read_file(f: FilePath, gid: str, kind: str, max_depth: int = MAX_DOT_DEPTH) -> list[Any]:
    """The graphs of one file, and ``(file, line, graph id, reason, node)`` for each failure."""
    file = os.fspath(f)
    try:
        try:
            lines, bad, lost = read_lines(file)  # a byte-order mark is dropped
        except OSError as exc:
            raise GraphFormatError(unreadable(exc), file) from None
        if lost is not None:
            raise GraphFormatError(lost, file, None, gid)
        if bad:
            first = min(bad)
            raise GraphFormatError(f"not UTF-8 text ({bad[first]})", file, first, gid)
        text = "\n".join(lines)
        if not text.strip():
            raise GraphFormatError("empty file: no DOT graph", file, None, gid)
        dots = _parse_text(text, file, gid, max_depth)
        if not dots:
            raise GraphFormatError("no DOT graph", file, None, gid)
    except GraphFormatError as exc:
        return [(file, exc.line, exc.graph_id or gid, exc.reason, getattr(exc, "node", None))]
    out: list[Any] = []
    for i, dot in enumerate(dots):
        g_id = gid if i == 0 else f"{gid}#{i + 1}"
        try:
            out.append(_to_graph(dot, g_id, file, kind, text))
        except GraphFormatError as exc:
            out.append((file, exc.line, g_id, exc.reason, exc.node))
    return out


def _read_batch(jobs: list[tuple[FilePath, str]], kind: str, max_depth: int) -> list[list[Any]]:
    return [_read_file(f, gid, kind, max_depth) for f, gid in jobs]


def read_dot(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    on_error: str = "raise",
    kind: str = "auto",
    progress: bool | None = None,
    n_jobs: int | None = 1,
    max_depth: int = MAX_DOT_DEPTH,
) -> GraphCorpus:
    """Read DOT graphs from a file, a folder of them (searched recursively) or a list.

    Parameters
    ----------
    path : path, folder or sequence of them
        A folder is read in sorted order of its ``*.dot``/``*.gv`` files; the graph id is
        the file's path relative to the folder without suffix (a file's stem otherwise;
        ``#2``, ``#3`` ... for further graphs of one file, and for an id already taken).
    on_error : {"raise", "skip"}
        ``"raise"``: the first malformed graph raises :class:`GraphFormatError` naming the
        file, the line or the node/edge, and the graph.  ``"skip"``: it is listed in
        ``corpus.skipped``.
    kind : {"auto", "amr", "dependency"}
    progress : bool, optional
        Show a progress bar (default: only on a terminal).
    n_jobs : int or None
        Processes parsing files in parallel (``-1``: all cores).
    max_depth : int, default :data:`MAX_DOT_DEPTH`
        Most nested braces (the graph's own included) parsed in one file.

    Examples
    --------
    >>> from structkernels.graphs import read_dot
    >>> corpus = read_dot("graphs/", on_error="skip")  # doctest: +SKIP
    >>> [str(s) for s in corpus.skipped]  # doctest: +SKIP
    """
    from tqdm.auto import tqdm

    reading = GraphReading(on_error)
    _check_kind(kind)
    roots = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not roots:
        raise ValueError("read_dot needs at least one file or folder")
    jobs: list[tuple[FilePath, str]] = []
    for r in roots:
        rp = FilePath(os.fspath(r))
        for f in _files(rp):
            gid = f.relative_to(rp).with_suffix("").as_posix() if rp.is_dir() else f.stem
            jobs.append((f, gid))
    disable = None if progress is None else not progress
    check_max_depth(max_depth)
    if n_jobs == 1 or len(jobs) < 2 * _BATCH:
        results = (_read_file(f, gid, kind, max_depth) for f, gid in jobs)
    else:
        batches = [jobs[i : i + _BATCH] for i in range(0, len(jobs), _BATCH)]
        per_batch = map_tasks(functools.partial(_read_batch, kind=kind, max_depth=max_depth),
                              batches, n_jobs=n_jobs, backend="processes")
        results = (r for batch in per_batch for r in batch)
    for outcomes in tqdm(results, total=len(jobs), desc="DOT files", unit="file", disable=disable):
        for item in outcomes:
            if isinstance(item, Graph):
                reading.ids.claim(item)  # a derived id: made unique, never refused
                reading.graphs.append(item)
                continue
            file, line, gid, reason, node = item
            err = GraphFormatError(reason, file, line, gid)
            err.node = node
            reading.skip(err, file, line or 1, gid)
    return reading.corpus("DOT graph", roots[0], [os.fspath(f) for f, _ in jobs])


def to_dot(graph: Graph | nx.MultiDiGraph, collapse_names: bool = False, sentence: str | None = None) -> str:
    """Write a model graph as DOT text in the authors' layout (read back by :func:`read_dot`).

    Parameters
    ----------
    collapse_names : bool
        AMR only: write each named entity as one node ``"<var> <name>"`` labelled with
        the name, its ``name`` subgraph left out (the authors' layout).  Default False:
        the graph reads back equal.
    sentence : str, optional
        The graph's ``label`` (default: the Graph's sentence).

    Examples
    --------
    >>> from structkernels.amr import parse_amr
    >>> from structkernels.graphs import to_dot, parse_dot
    >>> g = parse_amr('(b / bind-01 :ARG1 (p / protein :name (n / name :op1 "Ras")))')
    >>> print(to_dot(g, collapse_names=True).splitlines()[1:4])
    ['"b" [label="bind-01"];', '"p Ras" [label="Ras"];', 'TOP -> "b" [label=TOP];']
    """
    pydot = optional_module("pydot", "writing DOT needs pydot: pip install "
                            "'structkernels[graphs]' (or pip install pydot)")
    G = as_networkx(graph)
    if sentence is None:
        sentence = graph.sentence if isinstance(graph, Graph) else ""
    kind = graph_kind(G)
    dot = pydot.Dot(graph_type="digraph")
    if sentence:
        dot.set("label", _esc(sentence))
    if kind == "dependency":
        dot.set("kind", "dependency")
    ids: dict[str, str] = {}
    dropped: set[str] = set()
    if collapse_names and kind == "amr":
        for u, v, role in G.edges(data="role"):
            if (role == "name" and G.nodes[v].get("concept") == "name" and G.nodes[u].get("name")
                    and G.degree(v) == 1):
                dropped.add(v)
                ids[u] = f"{u} {G.nodes[u]['name']}"

    def nid(v: Any) -> str:
        return _esc(ids.get(v, v))

    for v, d in G.nodes(data=True):
        if v in dropped:
            continue
        attrs: dict[str, Any] = {}
        if v in ids:
            attrs["label"] = d["name"]
        else:
            attrs["label"] = d["concept"]
            if d.get("collapsed") and d.get("name") == d["concept"] and " " not in str(v):
                attrs["collapsed"] = "true"
            if d.get("name") and not d.get("collapsed"):
                attrs["entity_name"] = d["name"]
        for k in ("wiki", "lemma", "pos"):
            if d.get(k):
                attrs[k] = d[k]
        for k, val in (d.get("extra") or {}).items():
            attrs.setdefault(k, val)
        node = pydot.Node(nid(v))
        for k, val in attrs.items():  # set one by one: "name" is also Node's own argument
            node.set(k, _esc(val))
        dot.add_node(node)
    root = G.graph.get("root")
    if root is not None and root in G:
        if kind == "dependency":
            dot.add_edge(pydot.Edge(nid(root), nid(root), label="root"))
        else:
            dot.add_edge(pydot.Edge("TOP", nid(root), label="TOP"))
    for u, v, d in G.edges(data=True):
        if u in dropped or v in dropped:
            continue
        if kind == "amr" and d.get("inverted"):  # written as in PENMAN: v -> u, ARG0-of
            inv = AMR_MODEL.invert_role(":" + d["role"])[1:]
            dot.add_edge(pydot.Edge(nid(v), nid(u), label=_esc(inv)))
        else:
            dot.add_edge(pydot.Edge(nid(u), nid(v), label=_esc(d["role"])))
    return dot.to_string()


def write_dot(
    graphs: Iterable[Graph], folder: str | os.PathLike, collapse_names: bool = False
) -> list[str]:
    """Write each graph to ``folder/<id>.dot`` (id characters outside ``[\\w.-]`` become ``_``).

    Returns the files written, in order.  Each file is written under a temporary
    name and renamed when complete (an interrupted call leaves every file whole).
    """
    out = FilePath(os.fspath(folder))
    out.mkdir(parents=True, exist_ok=True)
    files = []
    seen: set[str] = set()
    for g in graphs:
        stem = re.sub(r"[^\w.-]", "_", str(g.id))
        if stem in seen:
            raise ValueError(f"two graphs map to the file name {stem!r}.dot (graph {g.id!r})")
        seen.add(stem)
        f = out / f"{stem}.dot"
        with atomic_open(f) as fh:  # each file complete under its name, or not at all
            fh.write(to_dot(g, collapse_names=collapse_names))
        files.append(os.fspath(f))
    return files
