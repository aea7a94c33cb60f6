""":func:`read_graphs`: any supported file or folder, the format inferred from its extension."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path as FilePath
from typing import Any

from structkernels.graphs.model import GraphCorpus, GraphFormatError

__all__ = ["read_graphs", "FORMATS", "infer_format"]

#: Format name -> file name endings.
FORMATS: dict[str, tuple[str, ...]] = {
    "dot": (".dot", ".gv"),
    "conllu": (".conllu", ".conll"),
    "penman": (".amr", ".penman", ".txt"),
    "graphml": (".graphml",),
    "gml": (".gml",),
}


def infer_format(path: str | os.PathLike) -> str:
    """The format of a file by its extension (``ValueError`` naming the file when unknown)."""
    low = os.fspath(path).lower()
    for fmt, suffixes in FORMATS.items():
        if low.endswith(suffixes):
            return fmt
    known = ", ".join(s for ss in FORMATS.values() for s in ss)
    raise ValueError(f"{os.fspath(path)}: cannot tell the graph format from the extension ({known}); pass format=")


def _read_one(files: list[str], fmt: str, on_error: str, options: dict[str, Any]) -> GraphCorpus:
    if fmt == "dot":
        from structkernels.graphs.dot import read_dot

        return read_dot(files, on_error=on_error, **options)
    if fmt == "conllu":
        from structkernels.graphs.conllu_reader import read_conllu

        return read_conllu(files, on_error=on_error)
    if fmt == "penman":
        from structkernels.amr import read_amr

        return read_amr(files, on_error=on_error)
    if fmt in ("graphml", "gml"):
        from structkernels.graphs.model import SkippedGraph
        from structkernels.graphs.networkx_reader import read_networkx_file

        graphs, skipped = [], []
        nx_options = {k: v for k, v in options.items() if k not in ("n_jobs", "progress")}
        for f in files:
            try:
                graphs.append(read_networkx_file(f, **nx_options))
            except GraphFormatError as exc:
                if on_error == "raise":
                    raise
                skipped.append(SkippedGraph(f, exc.line or 0, exc.graph_id, exc.reason))
        return GraphCorpus(graphs, skipped, (), files)
    raise ValueError(f"unknown graph format {fmt!r}; one of {sorted(FORMATS)}")


def read_graphs(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    format: str | None = None,
    on_error: str = "raise",
    **options: Any,
) -> GraphCorpus:
    """Read graphs from files or folders into the one graph model.

    Parameters
    ----------
    path : path, folder, or a sequence of them
        Folders are searched recursively for files of the known extensions
        (``.dot``/``.gv`` DOT, ``.conllu``/``.conll`` CoNLL-U,
        ``.amr``/``.penman``/``.txt`` PENMAN, ``.graphml``, ``.gml``).
    format : {"dot", "conllu", "penman", "graphml", "gml"}, optional
        Default: from each file's extension.
    on_error : {"raise", "skip"}
        Strict or lenient (every skip listed in ``corpus.skipped``).
    **options
        Passed to the reader: ``kind=``, ``n_jobs=``, ``progress=`` for
        DOT; ``label=``, ``edge_label=``, ``kind=`` for GraphML/GML.

    Returns
    -------
    GraphCorpus
        Graphs of all files in order; ``files`` and ``skipped`` of every reader.

    Examples
    --------
    >>> import structkernels
    >>> corpus = structkernels.read_graphs("sentences/")  # doctest: +SKIP
    >>> corpus = structkernels.read_graphs("parsed.conllu", on_error="skip")  # doctest: +SKIP
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if format is not None and format not in FORMATS:
        raise ValueError(f"unknown graph format {format!r}; one of {sorted(FORMATS)}")
    roots = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not roots:
        raise ValueError("read_graphs needs at least one file or folder")
    groups: dict[str, list[str]] = {}
    for r in roots:
        rp = FilePath(os.fspath(r))
        if rp.is_dir():
            if format == "dot" or (format is None and any(
                p.suffix.lower() in FORMATS["dot"] for p in rp.rglob("*")
            )):
                groups.setdefault("dot", []).append(os.fspath(rp))  # ids relative to the folder
                if format == "dot":
                    continue
            found = 0
            for f in sorted(p for p in rp.rglob("*") if p.is_file()):
                try:
                    fmt = infer_format(f)
                except ValueError:
                    continue  # a file of no known format (README, labels) in the folder
                if fmt == "dot":
                    continue
                if format is None or fmt == format:
                    groups.setdefault(fmt, []).append(os.fspath(f))
                    found += 1
            if not found and "dot" not in groups:
                raise GraphFormatError("no graph files of a known format in this folder", os.fspath(rp))
        elif not rp.exists():
            raise FileNotFoundError(f"no such file or folder: {rp}")
        else:
            groups.setdefault(format or infer_format(rp), []).append(os.fspath(rp))
    parts = [_read_one(files, fmt, on_error, options) for fmt, files in groups.items()]
    if len(parts) == 1:
        return parts[0]
    return GraphCorpus(
        [g for c in parts for g in c],
        [s for c in parts for s in c.skipped],
        [d for c in parts for d in c.duplicates],
        [f for c in parts for f in c.files],
    )
