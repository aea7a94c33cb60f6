"""Reading AMR corpora in PENMAN notation.

A corpus file holds graphs separated by blank lines, each preceded by
``# ::id ... ::snt ...`` metadata comments (the layout of the AMR and Bio AMR
releases).  :func:`read_amr` decodes every graph with :mod:`penman` (AMR
model: inverse roles normalised) and builds its :mod:`networkx` model
(:mod:`structkernels.amr.graph`).  A malformed graph raises
:class:`AMRFormatError` naming the file, the line and the graph id; with
``on_error="skip"`` reading goes on and every skipped graph is listed, with
its line and the reason, in :attr:`AMRCorpus.skipped`.

Every graph is decoded on its own: a bad graph (malformed PENMAN, bytes that
are not UTF-8, nesting deeper than ``max_depth``, anything the decoder trips
on) costs that graph only, never the graphs around it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import penman
from penman import layout
from penman.exceptions import PenmanError

from structkernels.amr.graph import AMR_MODEL, to_networkx
from structkernels.utils import MAX_FILE_BYTES, RecordError, decode_lines, read_partial, split_lines

__all__ = [
    "AMRFormatError",
    "AMRGraph",
    "AMRCorpus",
    "SkippedGraph",
    "read_amr",
    "parse_amr",
    "MAX_DEPTH",
]

_CODEC = penman.PENMANCodec(model=AMR_MODEL)

#: Default nesting limit (open parentheses) of one graph.  Real AMRs are far
#: shallower (the Bio AMR releases reach 13); the PENMAN decoder recurses once
#: per level, so a deeper graph is refused, with its file, line and id, before
#: it is decoded.
MAX_DEPTH = 100


class AMRFormatError(ValueError):
    """A malformed AMR input, naming the file, the line and the graph id.

    Attributes
    ----------
    file : str or None
    line : int or None
        1-based line in ``file`` where the problem was found.
    graph_id : str or None
    reason : str
    """

    def __init__(
        self,
        reason: str,
        file: str | None = None,
        line: int | None = None,
        graph_id: str | None = None,
    ):
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
        where = [f"{self.file}, line {self.line}" if self.line else f"{self.file}"]
        if self.graph_id is not None:
            where.append(f"graph {self.graph_id!r}")
        return f"{': '.join(where)}: {self.reason}"


@dataclass(frozen=True, eq=False)
class AMRGraph:
    """One AMR: its id, sentence, :mod:`networkx` model and provenance.

    Attributes
    ----------
    id : str
        The ``::id`` metadata (``"<file name>:<line>"`` when absent).
    sentence : str
        The ``::snt`` metadata (``""`` when absent).
    graph : networkx.MultiDiGraph
        See :mod:`structkernels.amr.graph`.
    metadata : dict
        All ``::key value`` metadata.
    penman : penman.Graph
        The decoded PENMAN graph.
    file : str or None
    line : int or None
        Line of the graph's first line (its first metadata comment).
    id_given : bool
        True when the id comes from the input (``::id``, ``sent_id``, a
        graph attribute); False when a reader derived it from the file name
        and line (such an id is made unique with ``#2``, ``#3`` ...).
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
        return f"AMRGraph(id={self.id!r}, nodes={self.graph.number_of_nodes()})"


class AMRCorpus(Sequence):
    """The graphs read from one or more files, in file order.

    Attributes
    ----------
    graphs : list of AMRGraph
    skipped : list of SkippedGraph
        Graphs left out with ``on_error="skip"``, each with its file, line and
        reason (a duplicate id names the first place too); also, from
        :func:`structkernels.read_graphs` on a folder, the files of no known
        format (line 0: the whole file), in both modes.
    duplicates : list of SkippedGraph
        Graphs whose id was already read: left out with ``deduplicate=True``
        (first one kept), or kept under ``<id>#2`` ... with ``deduplicate=False``.
    files : list of str
    """

    def __init__(self, graphs, skipped=(), duplicates=(), files=()):
        self.graphs: list[AMRGraph] = list(graphs)
        self.skipped: list[SkippedGraph] = list(skipped)
        self.duplicates: list[SkippedGraph] = list(duplicates)
        self.files: list[str] = list(files)
        self._by_id = {g.id: g for g in reversed(self.graphs)}

    def __getitem__(self, i):  # type: ignore[override]
        return self.graphs[i]

    def __len__(self) -> int:
        return len(self.graphs)

    def __iter__(self) -> Iterator[AMRGraph]:
        return iter(self.graphs)

    def get(self, graph_id: str) -> AMRGraph | None:
        """The graph with this id, or None."""
        return self._by_id.get(graph_id)

    def __repr__(self) -> str:
        return (
            f"AMRCorpus({len(self.graphs)} graphs, {len(self.skipped)} skipped, "
            f"{len(self.duplicates)} duplicates, files={self.files!r})"
        )


def _metadata(comment_lines: Iterable[str]) -> dict[str, str]:
    """``# ::key value ::key2 value2`` comments as a dict (penman's own parser)."""
    meta: dict[str, str] = {}
    for line in comment_lines:
        body = line.lstrip("#").strip()
        if "::" not in body:
            continue
        for chunk in body.split("::")[1:]:
            key, _, value = chunk.strip().partition(" ")
            if key and value.strip():  # an empty ``# ::id`` is no id
                meta.setdefault(key, value.strip())
    return meta


def _blocks(lines: Sequence[str]) -> Iterator[tuple[int, list[str]]]:
    """``(first line number, lines)`` of each run of non-blank lines."""
    start, block = 0, []
    for i, line in enumerate(lines, 1):
        if line.strip():
            if not block:
                start = i
            block.append(line.rstrip("\n").rstrip("\r"))
        elif block:
            yield start, block
            block = []
    if block:
        yield start, block


def _scan(text: str) -> tuple[int, int, tuple[int, str] | None]:
    """``(max depth, offset of the deepest "(", text after the graph)`` of a graph's text.

    The text after the graph is ``(offset, text)`` of the first non-comment text
    after the graph's closing parenthesis, or None.  Iterative: any depth.
    """
    depth, max_depth, deepest, in_str, esc = 0, 0, 0, False, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "(":
            depth += 1
            if depth > max_depth:
                max_depth, deepest = depth, i
        elif ch == ")":
            depth -= 1
            if depth == 0:
                j = i + 1
                for ln in text[j:].split("\n"):
                    stripped = ln.strip()
                    if stripped and not stripped.startswith("#"):
                        k = text.index(stripped, j)
                        return max_depth, deepest, (k, stripped)
                    j += len(ln) + 1
                return max_depth, deepest, None
    return max_depth, deepest, None  # unbalanced: the PENMAN decoder reports it


def _decode_block(
    block: list[str],
    start: int,
    file: str,
    fallback_id: str,
    max_depth: int = MAX_DEPTH,
    bad_bytes: dict[int, str] | None = None,
) -> AMRGraph | None:
    """Decode one block; None for a comment-only block without an id (a file header).

    ``bad_bytes`` maps the line numbers of lines that are not UTF-8 to a
    description of the first bad byte (those lines arrive decoded with
    replacement characters, so that the graph id can still be named).
    Every failure is an :class:`AMRFormatError` naming this graph.
    """
    comments = [ln for ln in block if ln.lstrip().startswith("#")]
    meta = _metadata(comments)
    graph_id = meta.get("id")
    body_at = next((k for k, ln in enumerate(block) if not ln.lstrip().startswith("#")), None)
    if body_at is None:
        if graph_id is None:
            return None
        raise AMRFormatError("metadata without a graph", file, start + len(block) - 1, graph_id)
    if bad_bytes:
        bad = [ln for ln in range(start, start + len(block)) if ln in bad_bytes]
        if bad:
            raise AMRFormatError(
                f"not UTF-8 text ({bad_bytes[bad[0]]})", file, bad[0], graph_id
            )
    body = block[body_at:]
    first = body[0].lstrip()
    if not first.startswith("("):
        raise AMRFormatError(
            f"not a PENMAN graph: expected '(' to open a graph, found {first[:40]!r}",
            file,
            start + body_at,
            graph_id,
        )
    text = "\n".join(body)
    depth, deepest, rest = _scan(text)
    if depth > max_depth:
        raise AMRFormatError(
            f"graph nested {depth} levels deep; at most max_depth={max_depth} are decoded",
            file,
            start + body_at + text.count("\n", 0, deepest),
            graph_id,
        )
    if rest is not None:
        offset, tail = rest
        line = start + body_at + text.count("\n", 0, offset)
        if tail.startswith("("):
            reason = "a second graph in the same block; separate graphs with a blank line"
        else:
            reason = f"text after the end of the graph: {tail[:40]!r}"
        raise AMRFormatError(reason, file, line, graph_id)
    try:
        tree = _CODEC.parse(text)
        pg = layout.interpret(tree, AMR_MODEL)
    except PenmanError as exc:
        lineno = getattr(exc, "lineno", None)
        line = start + body_at + (min(max(int(lineno) - 1, 0), len(body) - 1) if lineno else 0)
        msg = getattr(exc, "message", None) or str(exc).strip().splitlines()[-1]
        if getattr(exc, "text", None) is not None and lineno:
            msg = f"{msg} (PENMAN syntax error near {exc.text.strip()[:60]!r})"
        raise AMRFormatError(
            f"not a well-formed PENMAN graph: {msg}", file, line, graph_id
        ) from None
    except RecursionError:
        raise AMRFormatError(
            f"graph nested {depth} levels deep: too deep for the PENMAN decoder; "
            "lower max_depth",
            file,
            start + body_at,
            graph_id,
        ) from None
    except Exception as exc:  # the decoder must cost this graph only
        raise AMRFormatError(
            f"the PENMAN decoder failed: {type(exc).__name__}: {exc}",
            file,
            start + body_at,
            graph_id,
        ) from None
    if graph_id is None:
        graph_id = fallback_id
    try:
        G = to_networkx(pg, graph_id, tree=tree)
    except ValueError as exc:
        raise AMRFormatError(str(exc), file, start + body_at, graph_id) from None
    if G.number_of_nodes() == 0:
        raise AMRFormatError("a graph without nodes", file, start + body_at, graph_id)
    return AMRGraph(
        id=graph_id,
        sentence=meta.get("snt", ""),
        graph=G,
        metadata=meta,
        penman=pg,
        file=file,
        line=start,
    )


#: Lines split at ``\\n``, ``\\r\\n`` or ``\\r`` only (as editors count them).
_split_lines = split_lines
#: Text lines of a file's bytes and ``{line: what is wrong}`` for lines that are not UTF-8.
_decode_lines = decode_lines


def parse_amr(text: str, graph_id: str | None = None, max_depth: int = MAX_DEPTH) -> AMRGraph:
    """Decode one AMR given as PENMAN text (metadata comments allowed).

    Parameters
    ----------
    text : str
        One graph in PENMAN notation.
    graph_id : str, optional
        Used when the text has no ``# ::id`` metadata (default ``"amr"``).
    max_depth : int, default :data:`MAX_DEPTH`
        A graph nested deeper (open parentheses) is refused with
        :class:`AMRFormatError` before decoding.

    Returns
    -------
    AMRGraph

    Examples
    --------
    >>> from structkernels.amr import parse_amr
    >>> g = parse_amr('(b / bind-01 :ARG1 (p / protein :name (n / name :op1 "Ras")))')
    >>> g.graph.nodes["p"]["name"], g.graph.nodes["b"]["concept"]
    ('Ras', 'bind-01')
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_amr expects PENMAN text (str), got {type(text).__name__}")
    _check_max_depth(max_depth)
    blocks = list(_blocks(_split_lines(text)))
    found = [
        g
        for start, block in blocks
        if (g := _decode_block(block, start, "<string>", graph_id or "amr", max_depth))
        is not None
    ]
    if len(found) != 1:
        raise AMRFormatError(f"expected one AMR graph, found {len(found)}", "<string>")
    g = found[0]
    if graph_id is not None and "id" not in g.metadata:
        object.__setattr__(g, "id", graph_id)
        g.graph.graph["id"] = graph_id
    return g


def read_amr(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    on_error: str = "raise",
    deduplicate: bool | None = None,
    max_depth: int = MAX_DEPTH,
) -> AMRCorpus:
    """Read AMR graphs in PENMAN notation from one file or several.

    Parameters
    ----------
    path : path or sequence of paths
        Corpus file(s), plain or gzip'd: graphs separated by blank lines,
        each with optional ``# ::id ... ::snt ...`` metadata.  Comment-only
        blocks without an ``::id`` (release headers) are ignored.
    on_error : {"raise", "skip"}
        ``"raise"``: the first malformed graph raises :class:`AMRFormatError`
        (file, line, graph id).  ``"skip"``: it is left out and listed in
        :attr:`AMRCorpus.skipped` with its line and the reason.
    deduplicate : bool or None
        What a second graph with an ``::id`` already read is:

        - None (default): a bad graph, as any other: strict mode refuses it
          naming both places (``b.amr, line 9: graph 'x': duplicate id: the
          graph at a.amr, line 1 has it too``); lenient mode leaves it out
          and lists it in :attr:`AMRCorpus.skipped` with both places;
        - True: the same sentence read twice (a release read with an
          earlier version of itself): the first is kept, the others are
          listed in :attr:`AMRCorpus.duplicates`;
        - False: every graph is kept, the later ones under ``<id>#2``,
          ``<id>#3`` ..., each listed in :attr:`AMRCorpus.duplicates`.

        A graph without ``::id`` gets ``<file name>:<line>`` (the path as
        given when two files share a name), made unique with ``#2`` ...
        if taken: such ids never collide.
    max_depth : int, default :data:`MAX_DEPTH`
        A graph nested deeper than this (open parentheses) is malformed
        input: refused (strict) or skipped (lenient) before it is decoded.

    Returns
    -------
    AMRCorpus

    Raises
    ------
    AMRFormatError
        A malformed graph (strict mode): bad PENMAN, a line that is not UTF-8,
        nesting deeper than ``max_depth``, a duplicate id, a truncated gzip
        file; or input that holds no AMR graph at all (empty file, non-AMR
        text).  In lenient mode only the bad graphs are left out, each listed
        in :attr:`AMRCorpus.skipped` (a file that cannot be read, or the lost
        end of a truncated ``.gz``, too: every graph before it is kept).
    OSError
        A file cannot be read (strict mode).

    Examples
    --------
    >>> from structkernels.amr import read_amr
    >>> corpus = read_amr("amr-release-dev-bio.txt")  # doctest: +SKIP
    >>> corpus[0].id, corpus[0].graph.nodes[corpus[0].graph.graph["root"]]["concept"]  # doctest: +SKIP
    ('a_pmid_2488_5690.10', 'and')
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if deduplicate not in (None, True, False):
        raise ValueError(f"deduplicate must be None, True or False, got {deduplicate!r}")
    _check_max_depth(max_depth)
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise ValueError("read_amr needs at least one file")
    graphs: list[AMRGraph] = []
    skipped: list[SkippedGraph] = []
    duplicates: list[SkippedGraph] = []
    ids = IdTable()
    names = fallback_names([os.fspath(p) for p in paths])
    for p in paths:
        file = os.fspath(p)
        try:
            lines, bad_bytes, lost = read_lines(file)
        except OSError as exc:
            if on_error == "raise":
                raise
            skipped.append(SkippedGraph(file, 0, None, unreadable(exc)))
            continue
        except AMRFormatError as exc:
            if on_error == "raise":
                raise
            skipped.append(SkippedGraph(file, 0, None, exc.reason))
            continue
        n_before, skipped_before, dupes_before = len(graphs), len(skipped), len(duplicates)
        for start, block in _blocks(lines):
            fallback = f"{names[file]}:{start}"
            try:
                g = _decode_block(block, start, file, fallback, max_depth, bad_bytes)
                if g is None:
                    continue
                if "id" not in g.metadata:
                    object.__setattr__(g, "id_given", False)
                first = ids.claim(g)
                if first is not None:
                    reason = duplicate_reason(first)
                    if deduplicate is True:
                        duplicates.append(SkippedGraph(file, start, g.id, f"{reason} (first kept)"))
                        continue
                    if deduplicate is False:
                        old = g.id
                        ids.rename(g, ids.free(old))
                        duplicates.append(
                            SkippedGraph(file, start, old, f"{reason}; kept as {g.id!r}")
                        )
                    else:
                        raise AMRFormatError(reason, file, start, g.id)
            except AMRFormatError as exc:
                if on_error == "raise":
                    raise
                skipped.append(SkippedGraph(file, exc.line or start, exc.graph_id, exc.reason))
                continue
            graphs.append(g)
        if lost is not None:
            if on_error == "raise":
                raise AMRFormatError(lost, file, len(lines) + 1)
            skipped.append(SkippedGraph(file, len(lines) + 1, None, lost))
        if (
            len(graphs) == n_before
            and len(skipped) == skipped_before
            and len(duplicates) == dupes_before
        ):
            raise AMRFormatError("no AMR graph found (empty file, or not PENMAN text)", file)
    if not graphs:
        first = f"; first: {skipped[0]}" if skipped else ""
        raise AMRFormatError(
            f"no AMR graph could be read ({len(skipped)} skipped{first})", os.fspath(paths[0])
        )
    return AMRCorpus(graphs, skipped, duplicates, [os.fspath(p) for p in paths])


# ---------------------------------------------------------------- shared by the graph readers
def read_lines(file: str) -> tuple[list[str], dict[int, str], str | None]:
    """``(lines, {line: not UTF-8 because}, why the end is lost or None)`` of a text file.

    Plain or gzip'd, at most :data:`structkernels.utils.MAX_FILE_BYTES`; a
    byte-order mark is dropped; lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only.
    A truncated or corrupt ``.gz`` gives the lines before the damage.

    Raises
    ------
    AMRFormatError
        The file is too large (naming it).
    OSError
        It cannot be read.
    """
    try:
        data, lost = read_partial(file, max_bytes=MAX_FILE_BYTES)
    except RecordError as exc:
        raise AMRFormatError(exc.reason, file) from None
    lines, bad = decode_lines(data)
    return lines, bad, lost


def unreadable(exc: OSError) -> str:
    """The reason a file could not be read, in one line."""
    return f"cannot read the file ({exc.strerror or type(exc).__name__})"


def fallback_names(files: Sequence[str]) -> dict[str, str]:
    """The name each file gives to derived ids: its base name, or its path as given when two
    files read together share a base name."""
    base = [os.path.basename(f) for f in files]
    return {f: (b if base.count(b) == 1 else f) for f, b in zip(files, base, strict=True)}


def duplicate_reason(first: tuple[str | None, int | None]) -> str:
    file, line = first
    where = f"{file}, line {line}" if line else f"{file}"
    return f"duplicate id: the graph at {where} has it too"


class IdTable:
    """The ids given to the graphs of one corpus, and where each graph was read.

    :meth:`claim` registers a graph.  An id derived by a reader (``id_given``
    False) never collides: when taken it becomes ``<id>#2``, ``<id>#3`` ...
    An id from the input that is taken is reported, with the first place.
    """

    def __init__(self) -> None:
        self.where: dict[str, tuple[str | None, int | None]] = {}

    def free(self, gid: str) -> str:
        """The first of ``gid#2``, ``gid#3`` ... not taken."""
        k = 2
        while f"{gid}#{k}" in self.where:
            k += 1
        return f"{gid}#{k}"

    def rename(self, g: AMRGraph, new_id: str) -> None:
        """Give ``g`` the id ``new_id`` (the wrapper and its networkx graph) and register it."""
        object.__setattr__(g, "id", new_id)
        g.graph.graph["id"] = new_id
        self.where[new_id] = (g.file, g.line)

    def claim(self, g: AMRGraph) -> tuple[str | None, int | None] | None:
        """Register ``g``; None when done, else the place of the graph that has its id."""
        first = self.where.get(g.id)
        if first is None:
            self.where[g.id] = (g.file, g.line)
            return None
        if not g.id_given:
            self.rename(g, self.free(g.id))
            return None
        return first


def _check_max_depth(max_depth: Any) -> None:
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"max_depth must be a positive int, got {max_depth!r}")


def _as_nx(amr: Any) -> nx.MultiDiGraph:
    """The networkx model of an AMRGraph, or a MultiDiGraph as is."""
    if isinstance(amr, AMRGraph):
        return amr.graph
    if isinstance(amr, nx.MultiDiGraph):
        return amr
    raise TypeError(f"expected an AMRGraph or a networkx.MultiDiGraph, got {type(amr).__name__}")
