"""Reading AMR corpora in PENMAN notation into the graph model."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

import networkx as nx
import penman
from penman import layout
from penman.exceptions import PenmanError
from penman.models.amr import model as AMR_MODEL

from structkernels.formats._reading import GraphReading, blocks, check_max_depth, duplicate_reason
from structkernels.graphs.model import Graph, GraphCorpus, GraphFormatError, SkippedGraph, unquote
from structkernels.utils import split_lines

__all__ = ["read_amr", "parse_amr", "to_networkx", "AMR_MODEL", "MAX_DEPTH"]

_CODEC = penman.PENMANCodec(model=AMR_MODEL)

#: Default nesting limit (open parentheses) of one graph (the Bio AMR releases reach 13): the
#: PENMAN decoder recurses once per level, so a deeper graph is refused before it is decoded.
MAX_DEPTH = 100
#: A string (closed or not), or a parenthesis.
_PARENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[()]', re.S)


def _metadata(comment_lines: Iterable[str]) -> dict[str, str]:
    """``# ::key value ::key2 value2`` comments as a dict (penman's own parser)."""
    meta: dict[str, str] = {}
    for line in comment_lines:
        for chunk in line.lstrip("#").strip().split("::")[1:]:
            key, _, value = chunk.strip().partition(" ")
            if key and value.strip():  # an empty ``# ::id`` is no id
                meta.setdefault(key, value.strip())
    return meta


def _scan(text: str) -> tuple[int, int, tuple[int, str] | None]:
    """``(max depth, offset of the deepest "(", (offset, text) of the first non-comment text
    after the graph's closing parenthesis or None)`` of a graph's text, at any depth."""
    depth, max_depth, deepest = 0, 0, 0
    for m in _PARENS.finditer(text):
        if m.group() == "(":
            depth += 1
            if depth > max_depth:
                max_depth, deepest = depth, m.start()
        elif m.group() == ")":
            depth -= 1
            if depth == 0:
                j = m.end()
                for ln in text[j:].split("\n"):
                    stripped = ln.strip()
                    if stripped and not stripped.startswith("#"):
                        return max_depth, deepest, (text.index(stripped, j), stripped)
                    j += len(ln) + 1
                return max_depth, deepest, None
    return max_depth, deepest, None  # unbalanced: the PENMAN decoder reports it


def _decode_block(block: list[str], start: int, file: str, fallback_id: str,
                  max_depth: int = MAX_DEPTH, bad_bytes: dict[int, str] | None = None
                  ) -> Graph | None:
    """Decode one block; None for a comment-only block without an id (a file header).
    ``bad_bytes``: line -> why, for the lines not UTF-8."""
    meta = _metadata(ln for ln in block if ln.lstrip().startswith("#"))
    graph_id = meta.get("id")
    body_at = next((k for k, ln in enumerate(block) if not ln.lstrip().startswith("#")), None)
    if body_at is None:
        if graph_id is None:
            return None
        raise GraphFormatError("metadata without a graph", file, start + len(block) - 1, graph_id)
    if bad_bytes:
        bad = [ln for ln in range(start, start + len(block)) if ln in bad_bytes]
        if bad:
            raise GraphFormatError(f"not UTF-8 text ({bad_bytes[bad[0]]})", file, bad[0], graph_id)
    body = block[body_at:]
    first = body[0].lstrip()
    if not first.startswith("("):
        raise GraphFormatError(
            f"not a PENMAN graph: expected '(' to open a graph, found {first[:40]!r}",
            file, start + body_at, graph_id)
    text = "\n".join(body)
    depth, deepest, rest = _scan(text)
    if depth > max_depth:
        raise GraphFormatError(
            f"graph nested {depth} levels deep; at most max_depth={max_depth} are decoded",
            file, start + body_at + text.count("\n", 0, deepest), graph_id)
    if rest is not None:
        offset, tail = rest
        line = start + body_at + text.count("\n", 0, offset)
        if tail.startswith("("):
            reason = "a second graph in the same block; separate graphs with a blank line"
        else:
            reason = f"text after the end of the graph: {tail[:40]!r}"
        raise GraphFormatError(reason, file, line, graph_id)
    try:
        tree = _CODEC.parse(text)
        pg = layout.interpret(tree, AMR_MODEL)
    except PenmanError as exc:
        lineno = getattr(exc, "lineno", None)
        line = start + body_at + (min(max(int(lineno) - 1, 0), len(body) - 1) if lineno else 0)
        msg = getattr(exc, "message", None) or str(exc).strip().splitlines()[-1]
        if getattr(exc, "text", None) is not None and lineno:
            msg = f"{msg} (PENMAN syntax error near {exc.text.strip()[:60]!r})"
        raise GraphFormatError(f"not a well-formed PENMAN graph: {msg}", file, line,
                               graph_id) from None
    except RecursionError:
        raise GraphFormatError(
            f"graph nested {depth} levels deep: too deep for the PENMAN decoder; lower max_depth",
            file, start + body_at, graph_id) from None
    except Exception as exc:  # the decoder must cost this graph only
        raise GraphFormatError(f"the PENMAN decoder failed: {type(exc).__name__}: {exc}",
                               file, start + body_at, graph_id) from None
    graph_id = fallback_id if graph_id is None else graph_id
    try:
        G = to_networkx(pg, graph_id, tree=tree)
    except ValueError as exc:
        raise GraphFormatError(str(exc), file, start + body_at, graph_id) from None
    if G.number_of_nodes() == 0:
        raise GraphFormatError("a graph without nodes", file, start + body_at, graph_id)
    return Graph(id=graph_id, sentence=meta.get("snt", ""), graph=G, metadata=meta, penman=pg,
                 file=file, line=start)


def parse_amr(text: str, graph_id: str | None = None, max_depth: int = MAX_DEPTH) -> Graph:
    """Decode one AMR given as PENMAN text (metadata comments allowed).

    Parameters
    ----------
    graph_id : str, optional
        Used when the text has no ``# ::id`` metadata (default ``"amr"``).
    max_depth : int, default :data:`MAX_DEPTH`
        A graph nested deeper (open parentheses) is refused before decoding.

    Examples
    --------
    >>> from structkernels.amr import parse_amr
    >>> g = parse_amr('(b / bind-01 :ARG1 (p / protein :name (n / name :op1 "Ras")))')
    >>> g.graph.nodes["p"]["name"], g.graph.nodes["b"]["concept"]
    ('Ras', 'bind-01')
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_amr expects PENMAN text (str), got {type(text).__name__}")
    check_max_depth(max_depth)
    decoded = (_decode_block(block, start, "<string>", graph_id or "amr", max_depth)
               for start, block in blocks(split_lines(text)))
    found = [g for g in decoded if g is not None]
    if len(found) != 1:
        raise GraphFormatError(f"expected one AMR graph, found {len(found)}", "<string>")
    g = found[0]
    if graph_id is not None and "id" not in g.metadata:
        object.__setattr__(g, "id", graph_id)
        g.graph.graph["id"] = graph_id
    return g


def read_amr(path: str | os.PathLike | Sequence[str | os.PathLike], on_error: str = "raise",
             deduplicate: bool | None = None, max_depth: int = MAX_DEPTH) -> GraphCorpus:
    """Read AMR graphs in PENMAN notation from one file or several.

    Parameters
    ----------
    path : path or sequence of paths
        Corpus file(s), plain or gzip'd: graphs separated by blank lines, each with optional
        ``# ::id ... ::snt ...`` metadata (comment-only blocks without an ``::id`` ignored).
    on_error : {"raise", "skip"}
        ``"raise"``: the first malformed graph raises :class:`GraphFormatError` (file, line,
        graph id).  ``"skip"``: it is listed in :attr:`GraphCorpus.skipped`.
    deduplicate : bool or None
        What a second graph with an ``::id`` already read is: None (default), a bad graph
        naming both places; True, the same sentence read twice (the first is kept);
        False, kept under ``<id>#2``, ``<id>#3`` ...  The last two list it in
        :attr:`GraphCorpus.duplicates`.  A graph without ``::id`` gets
        ``<file name>:<line>``, made unique with ``#2`` ... if taken.
    max_depth : int, default :data:`MAX_DEPTH`
        A graph nested deeper than this (open parentheses) is malformed, before it is
        decoded.

    Raises
    ------
    GraphFormatError
        A malformed graph (strict mode), or input that holds no AMR graph at all.
    OSError
        A file cannot be read (strict mode; lenient mode lists it).

    Examples
    --------
    >>> from structkernels.amr import read_amr
    >>> corpus = read_amr("amr-release-dev-bio.txt")  # doctest: +SKIP
    >>> corpus[0].id, corpus[0].graph.nodes[corpus[0].graph.graph["root"]]["concept"]  # doctest: +SKIP
    ('a_pmid_2488_5690.10', 'and')
    """
    reading = GraphReading(on_error)
    if deduplicate not in (None, True, False):
        raise ValueError(f"deduplicate must be None, True or False, got {deduplicate!r}")
    check_max_depth(max_depth)
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise ValueError("read_amr needs at least one file")
    ids, duplicates = reading.ids, reading.duplicates

    def decode(file: str, start: int, block: list[str], bad_bytes: dict[int, str],
               name: str) -> Graph | None:
        g = _decode_block(block, start, file, f"{name}:{start}", max_depth, bad_bytes)
        if g is None:
            return None
        if "id" not in g.metadata:
            object.__setattr__(g, "id_given", False)
        first = ids.claim(g)
        if first is not None:
            reason = duplicate_reason(first)
            if deduplicate is True:
                duplicates.append(SkippedGraph(file, start, g.id, f"{reason} (first kept)"))
                return None
            if deduplicate is False:
                old = g.id
                ids.rename(g, ids.free(old))
                duplicates.append(SkippedGraph(file, start, old, f"{reason}; kept as {g.id!r}"))
            else:
                raise GraphFormatError(reason, file, start, g.id)
        return g

    files = reading.read_blocks(paths, decode,
                                "no AMR graph found (empty file, or not PENMAN text)")
    return reading.corpus("AMR graph", paths[0], files)


def _appears_inverted(graph: penman.Graph, triple) -> bool:
    """Whether an edge was written inverted (``:ARG0-of``) in the PENMAN text."""
    pushed = layout.get_pushed_variable(graph, triple)
    if pushed is not None:  # the branch introduced a node: it is the one pushed
        return pushed == triple[0]
    return bool(layout.appears_inverted(graph, triple))  # re-entrancy: slow path, rare


def _statement_inversions(tree: penman.Tree, model=AMR_MODEL) -> list[bool]:
    """For each branch of ``tree`` in the order :func:`penman.layout.interpret` makes its
    triples, whether it states an inverted relation (penman's epigraph data tells it for
    the first statement of a triple only).  Iterative: any depth."""
    variables = {v for v, _ in tree.nodes()}
    flags: list[bool] = []
    stack = [iter(tree.node[1])]
    while stack:
        branch = next(stack[-1], None)
        if branch is None:
            stack.pop()
            continue
        role, target = branch
        role = role.partition("~")[0] if role != "/" else role
        if isinstance(target, tuple):
            flags.append(role != "/" and model.is_role_inverted(role))
            stack.append(iter(target[1]))
        else:
            value = target.partition("~")[0] if target and not target.startswith('"') else target
            flags.append(role != "/" and model.is_role_inverted(role) and value in variables)
    return flags


def to_networkx(graph: penman.Graph, graph_id: str | None = None,
                tree: penman.Tree | None = None) -> nx.MultiDiGraph:
    """Build the :class:`networkx.MultiDiGraph` model of a PENMAN graph.

    Parameters
    ----------
    graph : penman.Graph
        A decoded graph (decode with ``model=structkernels.formats.penman.AMR_MODEL``
        so that inverse roles are normalised the AMR way).
    graph_id : str, optional
        Stored as the graph attribute ``id``.
    tree : penman.Tree, optional
        The parsed tree ``graph`` was interpreted from: it tells which statements of a
        relation stated more than once were inverted (penman's epigraph data tells it for
        a relation's first statement only).

    Raises
    ------
    ValueError
        A variable without a concept, or defined twice.

    Examples
    --------
    >>> import penman
    >>> from structkernels.formats.penman import AMR_MODEL, to_networkx
    >>> g = to_networkx(penman.decode('(p / protein :ARG0-of (b / bind-01))', model=AMR_MODEL))
    >>> list(g.edges(data="role")), g.edges["b", "p", 0]["inverted"]
    ([('b', 'p', 'ARG0')], True)
    """
    G = nx.MultiDiGraph(root=graph.top, id=graph_id)
    for var, _, concept in graph.instances():
        if concept is None:
            raise ValueError(f"variable {var!r} has no concept")
        if var in G:
            raise ValueError(f"variable {var!r} is defined twice")
        G.add_node(var, concept=str(concept), attributes=(), name=None, wiki=None)
    flags = _statement_inversions(tree) if tree is not None else []
    if len(flags) != len(graph.triples):
        flags = []  # not the tree of this graph: fall back to the epigraph
    inverted: dict[tuple, bool] = {}  # one edge per distinct triple, in first-seen order
    edges = set(graph.edges())
    for i, triple in enumerate(graph.triples):
        if triple not in edges:
            continue
        flag = flags[i] if flags else None
        if triple in inverted:
            if flag is not None:
                inverted[triple] = inverted[triple] and flag
            continue
        for v in (triple[0], triple[2]):
            if v not in G:
                raise ValueError(f"variable {v!r} has no concept")
        inverted[triple] = flag if flag is not None else _appears_inverted(graph, triple)
    for (src, role, tgt), inv in inverted.items():
        G.add_edge(src, tgt, role=role[1:], inverted=inv)
    attrs: dict[str, list[tuple[str, str]]] = {}
    for src, role, value in graph.attributes():
        if src not in G:
            raise ValueError(f"variable {src!r} has no concept")
        attrs.setdefault(src, []).append((role[1:], unquote(value)))
    for var, pairs in attrs.items():
        node = G.nodes[var]
        node["attributes"] = tuple(pairs)
        for role, value in pairs:
            if role == "wiki":
                node["wiki"] = value
    for src, tgt, role in G.edges(data="role"):
        if role == "name" and G.nodes[tgt]["concept"] == "name" and G.nodes[src]["name"] is None:
            ops = [(int(r[2:]), v) for r, v in G.nodes[tgt]["attributes"]
                   if r.startswith("op") and r[2:].isdigit()]
            if ops:
                G.nodes[src]["name"] = " ".join(v for _, v in sorted(ops))
    return G
