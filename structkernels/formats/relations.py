"""Reading annotated relation corpora: interaction XML, BRAT standoff, JSON Lines, PubTator, BioC.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from structkernels.formats._collect import Reading, as_paths, read_corpus
from structkernels.formats.bioc import read_bioc, read_bioc_file
from structkernels.formats.brat import brat_documents, read_brat, read_brat_document
from structkernels.formats.interaction_xml import read_interaction_xml, read_xml_file
from structkernels.formats.jsonl import read_jsonl_file, read_relations_jsonl
from structkernels.formats.pubtator import is_pubtator_text, read_pubtator, read_pubtator_file
from structkernels.relations.corpus import RelationCorpus
from structkernels.utils import read_head

__all__ = ["read_relations", "read_interaction_xml", "read_brat", "read_relations_jsonl",
           "read_pubtator", "read_bioc", "read_file", "relation_format", "RELATION_FORMATS"]

#: The formats :func:`relation_format` names.
RELATION_FORMATS = ("xml", "jsonl", "brat", "pubtator", "bioc-xml", "bioc-json")
_NAMED = (("bioc-xml", (".bioc.xml", ".bioc.xml.gz", ".bioc")),
          ("bioc-json", (".bioc.json", ".bioc.json.gz")),
          ("pubtator", (".pubtator", ".pubtator.gz", ".pubtator.txt", ".pubtator.txt.gz")))
_XML = (".xml", ".xml.gz")
_JSONL = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
_BRAT = (".ann", ".txt")
_HEAD = 1 << 16  # bytes read from the start of a file to tell formats apart
_XML_SKIP = re.compile(rb"\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>)", re.S)
_ROOT = re.compile(rb"\s*<([A-Za-z_][\w.:-]*)")
_DOCUMENTS = re.compile(rb'"(?:documents|PubTator3)"\s*:\s*\[')


def _head(path: str) -> bytes:
    """:func:`read_head` without a UTF-8 byte-order mark."""
    data = read_head(path, _HEAD)
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def _xml_root(head: bytes) -> str | None:
    pos = 0
    while True:
        m = _XML_SKIP.match(head, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
    m = _ROOT.match(head, pos)
    return m.group(1).decode("ascii", "replace") if m else None


def _json_kind(head: bytes) -> str:
    """``"bioc-json"`` for a BioC collection (or a bare array), else ``"jsonl"``."""
    text = head.lstrip()
    if text[:1] == b"[":
        return "bioc-json"
    if text[:1] != b"{":
        return "jsonl"
    first, newline, _ = text.partition(b"\n")
    if newline:
        try:
            value = json.loads(first)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):  # one whole record on the first line
            return "bioc-json" if ("documents" in value or "PubTator3" in value) and "text" not in value else "jsonl"
    return "bioc-json" if _DOCUMENTS.search(text) else "jsonl"


def relation_format(path: Any) -> str:
    """The reader :func:`read_relations` uses for ``path``: one of :data:`RELATION_FORMATS`.

    A folder is BRAT.  Otherwise the name's ending decides (case-insensitive), looking
    into the first 64 KiB of the file (gunzipped) where an ending serves two formats:
    ``.xml`` is BioC when the root element is ``<collection>``; ``.json``/``.jsonl`` BioC
    when the file is one JSON object with a ``"documents"`` array (or a JSON array); a
    ``.txt`` without a ``.ann`` beside it PubTator when its first line opens a PubTator
    document (``PMID|t|``).

    Examples
    --------
    >>> relation_format("LLL-train.xml.gz"), relation_format("x.jsonl"), relation_format("doc.ann")
    ('xml', 'jsonl', 'brat')
    >>> relation_format("cdr.pubtator"), relation_format("x.bioc.json")
    ('pubtator', 'bioc-json')
    """
    path = os.fsdecode(path)
    if os.path.isdir(path):
        return "brat"
    name = os.path.basename(path).lower()
    for kind, endings in _NAMED:
        if name.endswith(endings):
            return kind
    if name.endswith(_XML):
        return "bioc-xml" if _xml_root(_head(path)) == "collection" else "xml"
    if name.endswith(_JSONL):
        return _json_kind(_head(path))
    if name.endswith(".txt") and not os.path.exists(path[:-4] + ".ann"):
        line = _head(path).split(b"\n", 1)[0].decode("utf-8", "replace")
        return "pubtator" if is_pubtator_text(line) else "brat"
    if name.endswith(_BRAT):
        return "brat"
    raise ValueError(
        f"{path}: unknown relation corpus format (expected .xml or .xml.gz: interaction XML "
        "or BioC; .jsonl, .json (or .gz): JSON Lines or BioC JSON; .pubtator: PubTator; "
        ".bioc.xml, .bioc.json: BioC; a .txt or .ann file or a folder: BRAT, or a .txt "
        "PubTator file)"
    )


def read_relations(paths: Any, *, on_error: str = "raise", max_entities: int | None = None,
                   max_pairs: int | None = None) -> RelationCorpus:
    """Read one corpus from files and folders of any of the formats.

    Parameters
    ----------
    paths : path or list of paths
        Files or BRAT folders, read in the order given, each by the reader of its format
        (:func:`relation_format`).
    on_error : {"raise", "skip"}
    max_entities, max_pairs : int, optional
        The most entities and candidate pairs a sentence may hold (default
        :data:`~structkernels.relations.corpus.MAX_ENTITIES_PER_SENTENCE`,
        :data:`~structkernels.relations.corpus.MAX_PAIRS_PER_SENTENCE`): a sentence over
        either is refused (``"raise"``) or left out and listed (``"skip"``).

    Returns
    -------
    RelationCorpus
        A sentence id, or a document id, met in two files is an error naming both.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     a, b = pathlib.Path(d, "a.jsonl"), pathlib.Path(d, "b.jsonl")
    ...     for f in (a, b):
    ...         _ = f.write_text('{"id": "s1", "text": "A B", "entities": []}\\n')
    ...     read_relations([a, b])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    structkernels.relations.corpus.RelationFormatError: .../b.jsonl:1: record s1: duplicate sentence id: also at .../a.jsonl:1
    """
    return read_corpus(paths, lambda item, reading: read_file(*item, reading), on_error,
                       max_entities, max_pairs, with_formats)


def with_formats(paths: Any) -> list[tuple[str, str]]:
    """Each path with its format, every path told before any is read."""
    items = as_paths(paths)
    return list(zip(items, [relation_format(p) for p in items], strict=True))


def read_file(path: Any, kind: str, reading: Reading) -> None:
    """Read one file (or BRAT folder) of format ``kind`` (:func:`relation_format`) into
    ``reading``: the one dispatch of :func:`read_relations` and of the streaming reader."""
    reader = _READERS.get(kind)
    if reader is not None:
        reader(path, reading)
    else:
        for txt, ann in brat_documents(path):
            read_brat_document(txt, ann, reading)


_READERS = {"xml": read_xml_file, "jsonl": read_jsonl_file, "pubtator": read_pubtator_file,
            "bioc-xml": read_bioc_file, "bioc-json": read_bioc_file}
