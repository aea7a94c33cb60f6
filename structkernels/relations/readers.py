"""Reading annotated relation corpora: interaction XML, BRAT standoff, JSON Lines.

:func:`read_relations` picks the reader by each path's form; several paths, in any mix of
formats, make one corpus whose sentence ids are unique and whose documents each come from
one file.  Every reader is strict by default (``on_error="raise"``: the first problem
raises :class:`RelationFormatError` naming file, line and record id) and lenient with
``on_error="skip"`` (a bad sentence is left out and listed in ``corpus.skipped``).
"""

from __future__ import annotations

import os
from typing import Any

from structkernels.relations._collect import Reading, as_paths
from structkernels.relations.brat import brat_documents, read_brat, read_brat_document
from structkernels.relations.interaction_xml import read_interaction_xml, read_xml_file
from structkernels.relations.jsonl import read_jsonl_file, read_relations_jsonl
from structkernels.relations.model import RelationCorpus

__all__ = ["read_relations", "read_interaction_xml", "read_brat", "read_relations_jsonl",
           "relation_format"]

_XML = (".xml", ".xml.gz")
_JSONL = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
_BRAT = (".ann", ".txt")


def relation_format(path: Any) -> str:
    """``"xml"``, ``"jsonl"`` or ``"brat"``: the reader :func:`read_relations` uses for ``path``.

    A folder is BRAT; otherwise the name's ending decides (case-insensitive).

    Examples
    --------
    >>> relation_format("LLL-train.xml.gz"), relation_format("x.jsonl"), relation_format("doc.ann")
    ('xml', 'jsonl', 'brat')
    """
    path = os.fsdecode(path)
    if os.path.isdir(path):
        return "brat"
    name = os.path.basename(path).lower()
    for kind, endings in (("xml", _XML), ("jsonl", _JSONL), ("brat", _BRAT)):
        if name.endswith(endings):
            return kind
    raise ValueError(
        f"{path}: unknown relation corpus format (expected .xml or .xml.gz: interaction XML; "
        ".jsonl, .json (or .gz): JSON Lines; a .txt or .ann file or a folder: BRAT)"
    )


def read_relations(paths: Any, *, on_error: str = "raise", max_entities: int | None = None,
                   max_pairs: int | None = None) -> RelationCorpus:
    """Read one corpus from files and folders of any of the three formats.

    Parameters
    ----------
    paths : path or list of paths
        ``.xml``/``.xml.gz``: :func:`read_interaction_xml`; ``.jsonl``/``.json``
        (optionally ``.gz``): :func:`read_relations_jsonl`; a ``.ann`` or ``.txt`` file
        or a folder: :func:`read_brat` (sentences are the text's lines).  Read in the
        order given.
    on_error : {"raise", "skip"}
    max_entities, max_pairs : int, optional
        The most entities and candidate pairs a sentence may hold (default
        :data:`~structkernels.relations.model.MAX_ENTITIES_PER_SENTENCE`,
        :data:`~structkernels.relations.model.MAX_PAIRS_PER_SENTENCE`): a sentence over
        either is refused (``"raise"``) or left out and listed (``"skip"``).

    Returns
    -------
    RelationCorpus
        A sentence id, or a document id, met in two files is an error naming both.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     a, b = os.path.join(d, "a.jsonl"), os.path.join(d, "b.jsonl")
    ...     for f in (a, b):
    ...         with open(f, "w") as fh:
    ...             _ = fh.write('{"id": "s1", "text": "A B", "entities": []}\\n')
    ...     read_relations([a, b])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    structkernels.relations.model.RelationFormatError: .../b.jsonl:1: record s1: duplicate sentence id: also at .../a.jsonl:1
    """
    reading = Reading(on_error, max_entities, max_pairs)
    items = as_paths(paths)
    kinds = [relation_format(p) for p in items]  # every path is checked before reading
    for path, kind in zip(items, kinds, strict=True):
        if kind == "xml":
            read_xml_file(path, reading)
        elif kind == "jsonl":
            read_jsonl_file(path, reading)
        else:
            for txt, ann in brat_documents(path):
                read_brat_document(txt, ann, reading)
    return reading.corpus()
