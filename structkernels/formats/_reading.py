"""What the graph readers share: strict or lenient reading (:class:`GraphReading`), a file's
lines and their blocks, ids unique in a corpus."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from itertools import count, groupby
from typing import Any

from structkernels.formats._collect import check_on_error, unreadable
from structkernels.graphs.model import Graph, GraphCorpus, GraphFormatError, SkippedGraph
from structkernels.utils import MAX_FILE_BYTES, RecordError, decode_lines, read_partial


def read_lines(file: str) -> tuple[list[str], dict[int, str], str | None]:
    """``(lines, {line: not UTF-8 because}, why the end is lost or None)`` of a text file,
    plain or gzip'd; one too large raises GraphFormatError."""
    try:
        data, lost = read_partial(file, max_bytes=MAX_FILE_BYTES)
    except RecordError as exc:
        raise GraphFormatError(exc.reason, file) from None
    lines, bad = decode_lines(data)
    return lines, bad, lost


def blocks(lines: Sequence[str]) -> Iterator[tuple[int, list[str]]]:
    """``(first line number, lines)`` of each run of non-blank lines."""
    for filled, run in groupby(enumerate(lines, 1), key=lambda item: bool(item[1].strip())):
        if filled:
            numbered = list(run)
            yield numbered[0][0], [line for _, line in numbered]


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
    """The ids of the graphs of one corpus and where each was read: a derived id
    (``id_given`` False) that is taken becomes ``<id>#2``, ``<id>#3`` ...; a given one is
    reported."""

    def __init__(self) -> None:
        self.where: dict[str, tuple[str | None, int | None]] = {}

    def free(self, gid: str) -> str:
        """The first of ``gid#2``, ``gid#3`` ... not taken."""
        return next(f"{gid}#{k}" for k in count(2) if f"{gid}#{k}" not in self.where)

    def rename(self, g: Graph, new_id: str) -> None:
        """Give ``g`` the id ``new_id`` (the wrapper and its networkx graph) and register it."""
        object.__setattr__(g, "id", new_id)
        g.graph.graph["id"] = new_id
        self.where[new_id] = (g.file, g.line)

    def claim(self, g: Graph) -> tuple[str | None, int | None] | None:
        """Register ``g``; None when done, else the place of the graph that has its id."""
        first = self.where.get(g.id)
        if first is None:
            self.where[g.id] = (g.file, g.line)
            return None
        if not g.id_given:
            self.rename(g, self.free(g.id))
            return None
        return first


def check_max_depth(max_depth: Any) -> None:
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"max_depth must be a positive int, got {max_depth!r}")


class GraphReading:
    """The graphs, skipped graphs and ids of one graph corpus being read, strict or lenient
    (:meth:`skip`)."""

    def __init__(self, on_error: str):
        self.strict = check_on_error(on_error)
        self.graphs: list[Graph] = []
        self.skipped: list[SkippedGraph] = []
        self.duplicates: list[SkippedGraph] = []  # kept or dropped as asked, listed
        self.ids = IdTable()

    def skip(self, exc: Exception, file: str, line: int, graph_id: str | None,
             reason: str | None = None) -> None:
        """Raise ``exc`` (strict), or list the graph with ``reason`` (default ``exc.reason``)."""
        if self.strict:
            raise exc
        self.skipped.append(SkippedGraph(file, line, graph_id, reason or exc.reason))

    def read_blocks(self, paths: Sequence[Any], decode: Callable[..., Graph | None],
                    empty: str) -> list[str]:
        """Read each block of each of ``paths`` through ``decode(file, first line, lines,
        {line: not UTF-8 because}, name for derived ids)`` (the graph kept, or None); what
        fails is skipped, a file where nothing was found raises GraphFormatError(``empty``)."""
        files = [os.fspath(p) for p in paths]
        names = fallback_names(files)
        for file in files:
            try:
                lines, bad, lost = read_lines(file)
            except OSError as exc:
                self.skip(exc, file, 0, None, unreadable(exc))
                continue
            except GraphFormatError as exc:
                self.skip(exc, file, 0, None)
                continue
            before = len(self.graphs) + len(self.skipped) + len(self.duplicates)
            for start, block in blocks(lines):
                try:
                    g = decode(file, start, block, bad, names[file])
                except GraphFormatError as exc:
                    self.skip(exc, file, exc.line or start, exc.graph_id)
                    continue
                if g is not None:
                    self.graphs.append(g)
            if lost is not None:
                self.skip(GraphFormatError(lost, file, len(lines) + 1), file, len(lines) + 1, None)
            elif len(self.graphs) + len(self.skipped) + len(self.duplicates) == before:
                raise GraphFormatError(empty, file)
        return files

    def corpus(self, what: str, where: Any, files: Sequence[str], *, first: bool = True
               ) -> GraphCorpus:
        """The corpus read; none of its graphs read is an error naming ``where`` (and, with
        ``first``, the first graph skipped)."""
        if not self.graphs:
            shown = f"; first: {self.skipped[0]}" if first and self.skipped else ""
            raise GraphFormatError(
                f"no {what} could be read ({len(self.skipped)} skipped{shown})", os.fspath(where)
            )
        return GraphCorpus(self.graphs, self.skipped, self.duplicates, list(files))
