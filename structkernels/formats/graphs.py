""":func:`read_graphs`: any supported file or folder, the format inferred from its extension."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path as FilePath
from typing import Any

from structkernels.formats._collect import check_on_error, unreadable
from structkernels.formats._reading import GraphReading, IdTable, duplicate_reason
from structkernels.formats.conllu import read_conllu
from structkernels.formats.dot import read_dot
from structkernels.formats.networkx_graphs import read_networkx_file
from structkernels.formats.penman import read_amr
from structkernels.graphs.model import GraphCorpus, GraphFormatError, SkippedGraph

__all__ = ["read_graphs", "FORMATS", "infer_format"]

#: Format name -> file name endings (``.gz`` may follow those of CoNLL-U and PENMAN).
FORMATS: dict[str, tuple[str, ...]] = {
    "dot": (".dot", ".gv"),
    "conllu": (".conllu", ".conll"),
    "penman": (".amr", ".penman", ".txt"),
    "graphml": (".graphml",),
    "gml": (".gml",),
}
_GZ_OK = ("conllu", "penman")
_KNOWN = ", ".join(s for ss in FORMATS.values() for s in ss)
#: Bytes of a ``.txt`` file looked at to tell PENMAN from other text (a folder's README).
_SNIFF_BYTES = 1 << 16


def infer_format(path: str | os.PathLike) -> str:
    """The format of a file by its extension (``ValueError`` naming the file when unknown).

    Examples
    --------
    >>> infer_format("dev.amr.gz"), infer_format("s1.gv")
    ('penman', 'dot')
    """
    low = os.fspath(path).lower()
    for fmt, suffixes in FORMATS.items():
        if low.endswith(suffixes):
            return fmt
        if fmt in _GZ_OK and low.endswith(".gz") and low[:-3].endswith(suffixes):
            return fmt
    raise ValueError(f"{os.fspath(path)}: cannot tell the graph format from the extension "
                     f"({_KNOWN}); pass format=")


def _looks_like_penman(path: FilePath) -> bool:
    """Whether a ``.txt`` file's first line that is neither blank nor a ``#`` comment opens a
    PENMAN graph (``(``).  Reads at most :data:`_SNIFF_BYTES` (decompressed)."""
    import gzip
    import zlib

    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as fh:
                head = fh.read(_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):
        return True  # let the reader report the file (listed or raised by its mode)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    for line in head.replace(b"\r", b"\n").split(b"\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith(b"#"):
            return stripped.startswith(b"(")
    return False


def _folder_files(folder: FilePath, format: str | None) -> tuple[dict[str, list[str]], list[Any]]:
    """Files of a folder by format (DOT files excluded: read through the folder), and the
    files of no known format (``SkippedGraph`` each).  Hidden files and folders are not read."""
    groups: dict[str, list[str]] = {}
    others: list[Any] = []
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        if any(part.startswith(".") for part in f.relative_to(folder).parts):
            continue  # .git, .DS_Store, editor files
        try:
            fmt = infer_format(f)
        except ValueError:
            fmt = None
        if fmt == "dot":
            continue
        if format is not None:
            if fmt == format or (format == "penman" and f.suffix.lower() == ".txt"):
                groups.setdefault(format, []).append(os.fspath(f))
            continue
        if fmt == "penman" and f.name.lower().endswith((".txt", ".txt.gz")) and not _looks_like_penman(f):
            others.append(SkippedGraph(
                os.fspath(f), 0, None,
                "not a graph file: a .txt file is read as PENMAN only when its first line that "
                "is not a # comment opens a graph with '('",
            ))
            continue
        if fmt is None:
            others.append(SkippedGraph(os.fspath(f), 0, None,
                                       f"not a graph file of a known format ({_KNOWN})"))
            continue
        groups.setdefault(fmt, []).append(os.fspath(f))
    return groups, others


def _read_one(files: list[str], fmt: str, on_error: str, options: dict[str, Any]) -> GraphCorpus:
    if fmt == "dot":
        return read_dot(files, on_error=on_error, **options)
    if fmt == "conllu":
        return read_conllu(files, on_error=on_error)
    if fmt == "penman":
        return read_amr(files, on_error=on_error)
    reading = GraphReading(on_error)  # GraphML or GML
    nx_options = {k: v for k, v in options.items() if k not in ("n_jobs", "progress", "max_depth")}
    for f in files:
        try:
            reading.graphs.append(read_networkx_file(f, **nx_options))
        except GraphFormatError as exc:
            reading.skip(exc, f, exc.line or 0, exc.graph_id)
        except OSError as exc:
            reading.skip(exc, f, 0, None, unreadable(exc))
    return GraphCorpus(reading.graphs, reading.skipped, (), files)


def _merge(parts: list[GraphCorpus], others: list[Any], on_error: str) -> GraphCorpus:
    """One corpus of the parts' graphs, ids unique across parts (:func:`read_graphs`):
    the ids given by the input are claimed first, derived ids then."""
    graphs = [g for c in parts for g in c]
    skipped = list(others) + [s for c in parts for s in c.skipped]
    if len(parts) > 1:
        ids = IdTable()
        dropped: set[int] = set()
        for g in graphs:
            if g.id_given:
                first = ids.claim(g)
                if first is None:
                    continue
                reason = duplicate_reason(first)
                if on_error == "raise":
                    raise GraphFormatError(reason, g.file, g.line, g.id)
                skipped.append(SkippedGraph(g.file or "", g.line or 0, g.id, reason))
                dropped.add(id(g))
        for g in graphs:
            if not g.id_given:
                ids.claim(g)
        graphs = [g for g in graphs if id(g) not in dropped]
    return GraphCorpus(graphs, skipped, [d for c in parts for d in c.duplicates],
                       [f for c in parts for f in c.files])


def read_graphs(path: str | os.PathLike | Sequence[str | os.PathLike], format: str | None = None,
                on_error: str = "raise", **options: Any) -> GraphCorpus:
    """Read graphs from files or folders into the one graph model.

    Parameters
    ----------
    path : path, folder, or a sequence of them
        A file is read in the format of its extension (:data:`FORMATS`; CoNLL-U and
        PENMAN may be gzip'd).  A folder is searched recursively, hidden files and
        folders left out: a ``.txt`` file is PENMAN only when its first line that is
        neither blank nor a ``#`` comment opens a graph with ``(`` (a ``README.txt`` is
        not read), and every file of no known format is listed in ``corpus.skipped``
        (line 0), in both modes.  With ``format=`` a folder gives only the files of that
        format (every ``.txt`` for ``"penman"``), and lists no others.
    format : {"dot", "conllu", "penman", "graphml", "gml"}, optional
        Default: from each file's extension.
    on_error : {"raise", "skip"}
        Strict or lenient (every skip listed in ``corpus.skipped``): in lenient mode a bad
        graph, an unreadable file, a truncated ``.gz`` or a line not UTF-8 costs only itself.
    **options
        Passed to the reader: ``kind=``, ``n_jobs=``, ``progress=``, ``max_depth=`` for
        DOT; ``label=``, ``edge_label=``, ``kind=`` for GraphML/GML.

    Returns
    -------
    GraphCorpus
        Graphs of all files in order.  An id given by the input twice (in one file or
        across files and formats) is refused in strict mode naming both places, and left
        out and listed in lenient mode; an id a reader derived gets ``#2``, ``#3`` ...

    Examples
    --------
    >>> import structkernels
    >>> corpus = structkernels.read_graphs("sentences/")  # doctest: +SKIP
    >>> corpus = structkernels.read_graphs("parsed.conllu", on_error="skip")  # doctest: +SKIP
    """
    check_on_error(on_error)
    if format is not None and format not in FORMATS:
        raise ValueError(f"unknown graph format {format!r}; one of {sorted(FORMATS)}")
    roots = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not roots:
        raise ValueError("read_graphs needs at least one file or folder")
    groups: dict[str, list[str]] = {}
    others: list[Any] = []
    for r in roots:
        rp = FilePath(os.fspath(r))
        if rp.is_dir():
            has_dot = format in (None, "dot") and any(
                p.suffix.lower() in FORMATS["dot"] and p.is_file() for p in rp.rglob("*")
            )
            if has_dot:
                groups.setdefault("dot", []).append(os.fspath(rp))  # ids relative to the folder
            if format == "dot":
                if not has_dot:
                    raise GraphFormatError("no DOT files (.dot, .gv) in this folder", os.fspath(rp))
                continue
            found, unknown = _folder_files(rp, format)
            for fmt, files in found.items():
                groups.setdefault(fmt, []).extend(files)
            others.extend(unknown)
            if not found and not has_dot:
                raise GraphFormatError("no graph files of a known format in this folder", os.fspath(rp))
        elif not rp.exists():
            raise FileNotFoundError(f"no such file or folder: {rp}")
        else:
            groups.setdefault(format or infer_format(rp), []).append(os.fspath(rp))
    parts = [_read_one(files, fmt, on_error, options) for fmt, files in groups.items()]
    if len(parts) == 1 and not others:
        return parts[0]
    return _merge(parts, others, on_error)
