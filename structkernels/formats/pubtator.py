r"""Reading the PubTator format (PubTator, PubTator Central, BioCreative V CDR).

A document is a block of lines (docs/relations.md, PubTator and BioC): ``PMID|t|title``,
``PMID|a|abstract`` (offsets are document-level: the abstract starts at ``len(title) + 1``),
annotations ``PMID<TAB>start<TAB>end<TAB>mention<TAB>type[<TAB>concept id]`` and relations
``PMID<TAB>type<TAB>id1<TAB>id2`` between concept ids.  The k-th annotation of a document
(from 1) is the entity ``T{k}:{concept}`` (``T{k}`` when the concept id is one of CDR's
"no concept" ``""``, ``-``, ``-1``; :func:`concept_of` reads it back).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from structkernels.formats._collect import Reading, read_corpus
from structkernels.formats._documents import (
    ABBREVIATIONS,
    NO_CONCEPT,
    DocumentBuilder,
    Link,
    Mention,
    split_sentences,
)
from structkernels.formats._lines import LineStream
from structkernels.relations.corpus import RelationCorpus
from structkernels.utils import decode_lines, one_line, read_once

__all__ = ["read_pubtator", "read_pubtator_file", "pubtator_documents", "PubTatorDocument",
           "concept_of", "split_sentences", "ABBREVIATIONS", "is_pubtator_text",
           "MAX_ANNOTATIONS_PER_DOCUMENT"]

#: The most annotation lines a document may hold: a document over it is refused, its
#: further annotation lines counted, never held.
MAX_ANNOTATIONS_PER_DOCUMENT = 10_000

_SECTION = re.compile(r"([^\s|]+)\|([A-Za-z]+)\|(.*)")
_INT = re.compile(r"-?\d+")
_PARTS = re.compile(r"[|;]")


def is_pubtator_text(line: str) -> bool:
    """Whether ``line`` opens a PubTator document (``PMID|t|`` or ``PMID|a|``).

    Examples
    --------
    >>> is_pubtator_text("12345|t|KinC binds SigE."), is_pubtator_text("KinC binds SigE.")
    (True, False)
    """
    m = _SECTION.match(line.lstrip("\ufeff"))
    return bool(m) and m.group(2) in ("t", "a")


def concept_of(entity_id: str) -> str | None:
    """The concept id a PubTator entity id carries (``"T3:MESH:D008750"`` -> ``"MESH:D008750"``).

    Examples
    --------
    >>> concept_of("T3:MESH:D008750"), concept_of("T4")
    ('MESH:D008750', None)
    """
    head, sep, concept = entity_id.partition(":")
    return concept if sep and concept else None


@dataclass
class PubTatorDocument:
    """One block of a PubTator file as written, each line with its number: ``title`` and
    ``abstract`` ``(line, text)`` or None, ``annotations`` and ``relations`` ``(line, fields)``,
    ``other`` the lines that are neither; ``over`` counts the annotation lines past
    :data:`MAX_ANNOTATIONS_PER_DOCUMENT` (not kept), the first at ``over_line``."""

    pmid: str
    line: int
    title: tuple[int, str] | None = None
    abstract: tuple[int, str] | None = None
    annotations: list[tuple[int, list[str]]] = field(default_factory=list)
    relations: list[tuple[int, list[str]]] = field(default_factory=list)
    other: list[tuple[int, str]] = field(default_factory=list)
    over: int = 0
    over_line: int = 0


def pubtator_documents(lines: Iterable[str]) -> Iterator[PubTatorDocument]:
    """The documents of a PubTator file's lines, in order (a blank line, or a title line
    of another document, ends one).

    Examples
    --------
    >>> docs = list(pubtator_documents(["1|t|A b.", "1|a|C d.", "1\\t0\\t1\\tA\\tX\\tc1", "",
    ...                                  "2|t|E."]))
    >>> [(d.pmid, d.title, len(d.annotations)) for d in docs]
    [('1', (1, 'A b.'), 1), ('2', (5, 'E.'), 0)]
    """
    doc: PubTatorDocument | None = None
    for n, raw in enumerate(lines, 1):
        line = raw.lstrip("\ufeff") if n == 1 else raw
        if not line.strip():
            if doc is not None:
                yield doc
            doc = None
            continue
        m = _SECTION.match(line)
        if m and "\t" not in line.split("|", 1)[0]:
            pmid, kind, text = m.groups()
            if doc is not None and (kind == "t" or pmid != doc.pmid):
                yield doc
                doc = None
            if doc is None:
                doc = PubTatorDocument(pmid, n)
            if kind == "t" and doc.title is None:
                doc.title = (n, text)
            elif kind == "a" and doc.abstract is None:
                doc.abstract = (n, text)
            else:
                doc.other.append((n, line))
            continue
        fields = line.split("\t")
        if doc is None:
            doc = PubTatorDocument(fields[0] if len(fields) > 1 else "", n)
        if len(fields) >= 2 and _INT.fullmatch(fields[1].strip()):
            if len(doc.annotations) < MAX_ANNOTATIONS_PER_DOCUMENT:
                doc.annotations.append((n, fields))
            else:
                doc.over += 1
                doc.over_line = doc.over_line or n
        elif len(fields) >= 4:
            doc.relations.append((n, fields))
        else:
            doc.other.append((n, line))
    if doc is not None:
        yield doc


def read_pubtator(files: Any, *, on_error: str = "raise", labelled: bool | None = None,
                  max_entities: int | None = None, max_pairs: int | None = None) -> RelationCorpus:
    """Read PubTator files (plain or gzip'd) into one :class:`RelationCorpus`.

    Parameters
    ----------
    on_error : {"raise", "skip"}
        ``"raise"``: the first problem raises :class:`RelationFormatError` naming the
        file, the line and the document (PMID).  ``"skip"``: a bad line is listed in
        ``corpus.skipped`` and left out, with the sentence of a bad annotation.
    labelled : bool, optional
        Whether the sentences carry gold relations (default: whether the file holds a
        relation line).
    files, max_entities, max_pairs
        As for :func:`~structkernels.relations.read_relations`.

    Returns
    -------
    RelationCorpus
        Sentences ``<PMID>.s<i>``, entities ``T<k>[:<concept>]``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> text = ("1|t|KinC activates SigE.\\n1|a|It is needed. SigE binds GerE.\\n"
    ...         "1\\t0\\t4\\tKinC\\tGene\\tD1\\n1\\t15\\t19\\tSigE\\tGene\\tD2\\n"
    ...         "1\\t35\\t39\\tSigE\\tGene\\tD2\\n1\\t46\\t50\\tGerE\\tGene\\tD3\\n1\\tCID\\tD2\\tD3\\n")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = pathlib.Path(d, "x.pubtator")
    ...     _ = path.write_text(text)
    ...     corpus = read_pubtator(path)
    >>> [(s.id, s.text) for s in corpus]
    [('1.s0', 'KinC activates SigE.'), ('1.s1', 'It is needed.'), ('1.s2', 'SigE binds GerE.')]
    >>> [(p.e1.id, p.e2.id, p.label) for p in corpus.pairs()]
    [('T1:D1', 'T2:D2', False), ('T3:D2', 'T4:D3', True)]
    """
    return read_corpus(files, lambda file, reading: read_pubtator_file(file, reading, labelled),
                       on_error, max_entities, max_pairs)


def read_pubtator_file(file: str, reading: Reading, labelled: bool | None = None) -> int:
    """Read one PubTator file into ``reading``; the number of its documents."""
    reading.files.append(file)
    got = reading.read_bytes(file)
    if got is None:
        return 0
    lines, not_utf8 = decode_lines(got[0])
    lost, got = got[1], None  # the bytes are let go: the documents are read one at a time
    if labelled is None:
        labelled = any(d.relations for d in pubtator_documents(lines))
    for n in sorted(not_utf8):
        reading.fail(f"not UTF-8 text ({not_utf8[n]})", file, n, None)
    count = 0
    for doc in pubtator_documents(lines):
        count += 1
        _read_document(doc, file, reading, labelled, set(not_utf8))
    _file_end(reading, file, count, lost, len(lines))
    return count


def iter_pubtator_file(file: str, reading: Reading, labelled: bool | None = None
                       ) -> Iterator[int]:
    """:func:`read_pubtator_file` a document at a time (yielding the documents read so far),
    without its whole-file size limit; a pipe without ``labelled`` is read whole."""
    if labelled is None and read_once(file):
        count = read_pubtator_file(file, reading)
        if count:
            yield count
        return
    reading.files.append(file)
    try:
        if labelled is None:
            labelled = any(d.relations for d in pubtator_documents(LineStream(file)))
        lines = LineStream(file)
        count, reported = 0, 0
        for count, doc in enumerate(pubtator_documents(lines), 1):
            for n in sorted(k for k in lines.not_utf8 if k > reported):
                reading.fail(f"not UTF-8 text ({lines.not_utf8[n]})", file, n, None)
            reported = max(lines.not_utf8, default=reported)
            _read_document(doc, file, reading, labelled, set(lines.not_utf8))
            yield count
        for n in sorted(k for k in lines.not_utf8 if k > reported):
            reading.fail(f"not UTF-8 text ({lines.not_utf8[n]})", file, n, None)
    except OSError as exc:
        reading.cannot_read(exc, file)
        return
    _file_end(reading, file, count, lines.lost, lines.count)


def _file_end(reading: Reading, file: str, count: int, lost: str | None, line: int) -> None:
    """A file without documents is a bad record; a lost end (``lost``) is listed."""
    if not count and not lost:
        reading.fail("no documents (a PubTator document starts with a 'PMID|t|title' line)",
                     file, None, None)
    if lost:
        reading.drop(lost, file, line, None)


def _read_document(doc: PubTatorDocument, file: str, reading: Reading, labelled: bool,
                   not_utf8: set[int]) -> None:
    pmid = doc.pmid or None
    if doc.title is None:
        reading.fail("a document starts with its 'PMID|t|title' line; this one has none "
                     f"(its {1 + len(doc.annotations) + len(doc.relations) + len(doc.other)} "
                     "lines are left out)", file, doc.line, pmid)
        return
    if doc.over:
        reading.fail(f"document {one_line(doc.pmid, 40)}: more than "
                     f"{MAX_ANNOTATIONS_PER_DOCUMENT} annotation lines "
                     f"({MAX_ANNOTATIONS_PER_DOCUMENT + doc.over}; MAX_ANNOTATIONS_PER_DOCUMENT); "
                     "the document is left out", file, doc.over_line, pmid)
        return
    problem = reading.document_problem(doc.pmid, file, doc.line, once=True)
    if problem:
        reading.fail(problem, file, doc.line, doc.pmid)
        return
    b = DocumentBuilder(reading, file, doc.pmid, labelled, doc.line)
    title = doc.title[1]
    b.passage(0, title, doc.title[0])
    if doc.abstract is not None:
        b.passage(len(title) + 1, doc.abstract[1], doc.abstract[0])
    for n, line in doc.other:
        if n in not_utf8:
            continue
        m = _SECTION.match(line)
        if m and m.group(2) in ("t", "a"):
            reason = f"a second '{m.group(2)}' line in document {one_line(doc.pmid, 40)}"
        elif m:
            reason = f"unknown section {one_line(m.group(2), 20)!r} (known: t, a)"
        else:
            reason = (f"not a PubTator line: {one_line(repr(line), 60)} (expected PMID<TAB>start"
                      "<TAB>end<TAB>mention<TAB>type<TAB>id, or PMID<TAB>type<TAB>id1<TAB>id2)")
        b.fail(reason, n)
    for k, (n, fields) in enumerate(doc.annotations, 1):
        if n not in not_utf8 and _pmid_ok(b, fields, n):
            _annotation(b, k, fields, n)
    for n, fields in doc.relations:
        if n in not_utf8 or not _pmid_ok(b, fields, n):
            continue
        a, c = fields[2].strip(), fields[3].strip()
        if not a or not c:
            b.fail("relation: not PMID<TAB>type<TAB>id1<TAB>id2 (an id is empty)", n)
            continue
        b.links.append(Link(f"R{len(b.links) + 1}", fields[1].strip() or None, a, c, True, n))
    b.build()


def _pmid_ok(b: DocumentBuilder, fields: list[str], n: int) -> bool:
    if fields[0].strip() == b.doc:
        return True
    b.fail(f"a line of document {one_line(repr(fields[0]), 40)} inside document "
           f"{one_line(b.doc, 40)} (a blank line ends a document)", n)
    return False


def _annotation(b: DocumentBuilder, k: int, fields: list[str], n: int) -> None:
    if len(fields) < 5 or not _INT.fullmatch(fields[2].strip()):
        b.fail(f"annotation {k}: not PMID<TAB>start<TAB>end<TAB>mention<TAB>type<TAB>id "
               "(start and end integers)", n)
        return
    start, end = int(fields[1]), int(fields[2])
    concept = fields[5].strip() if len(fields) > 5 else ""
    eid = f"T{k}" if concept in NO_CONCEPT else f"T{k}:{concept}"
    parts = tuple(c for c in (concept, *_PARTS.split(concept)) if c.strip() not in NO_CONCEPT)
    b.mentions.append(Mention(eid, ((start, end),), fields[3], fields[4].strip() or None,
                              tuple(dict.fromkeys(parts)), n))
