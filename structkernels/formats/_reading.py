"""What the graph readers share: reading a text file's lines, ids unique within a corpus."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from structkernels.graphs.model import Graph, GraphFormatError, SkippedGraph
from structkernels.utils import MAX_FILE_BYTES, RecordError, decode_lines, read_partial


# ---------------------------------------------------------------- shared by the graph readers
def read_lines(file: str) -> tuple[list[str], dict[int, str], str | None]:
    """``(lines, {line: not UTF-8 because}, why the end is lost or None)`` of a text file.

    Plain or gzip'd, at most :data:`structkernels.utils.MAX_FILE_BYTES`; a
    byte-order mark is dropped; lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only.
    A truncated or corrupt ``.gz`` gives the lines before the damage.

    Raises
    ------
    GraphFormatError
        The file is too large (naming it).
    OSError
        It cannot be read.
    """
    try:
        data, lost = read_partial(file, max_bytes=MAX_FILE_BYTES)
    except RecordError as exc:
        raise GraphFormatError(exc.reason, file) from None
    lines, bad = decode_lines(data)
    return lines, bad, lost



def lines_or_skip(
    file: str, on_error: str, skipped: list[SkippedGraph]
) -> tuple[list[str], dict[int, str], str | None] | None:
    """:func:`read_lines` of ``file`` for a reader's loop over files.

    A file that cannot be read, or is too large, raises with ``on_error="raise"``;
    with ``"skip"`` it is listed in ``skipped`` (line 0: the whole file) and None is
    returned, so the reader goes on to the next file.
    """
    try:
        return read_lines(file)
    except OSError as exc:
        if on_error == "raise":
            raise
        skipped.append(SkippedGraph(file, 0, None, unreadable(exc)))
    except GraphFormatError as exc:
        if on_error == "raise":
            raise
        skipped.append(SkippedGraph(file, 0, None, exc.reason))
    return None

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
