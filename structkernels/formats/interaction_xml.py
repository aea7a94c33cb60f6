"""Reading interaction XML (the unified PPI corpora: AIMed, BioInfer, HPRD50, IEPA, LLL).

The format and what is checked: docs/relations.md (Interaction XML); a ``<!DOCTYPE`` is
refused (:mod:`~structkernels.formats.xml_safety`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from structkernels.formats._collect import Reading, read_corpus
from structkernels.formats.xml_safety import parse_xml, safe_parser
from structkernels.relations.corpus import (
    Entity,
    Interaction,
    RelationCorpus,
    RelationFormatError,
    entity_problem,
    interaction_problem,
    span_text,
)
from structkernels.utils import one_line

__all__ = ["read_interaction_xml"]

_OFFSETS = re.compile(r"\s*\d+\s*-\s*\d+\s*(?:,\s*\d+\s*-\s*\d+\s*)*")
_KNOWN = {"corpus", "document", "sentence", "entity", "interaction", "pair"}
_PLACE = {"document": "corpus", "sentence": "document", "entity": "sentence",
          "interaction": "sentence", "pair": "sentence"}


def read_interaction_xml(files: Any, *, on_error: str = "raise", max_entities: int | None = None,
                         max_pairs: int | None = None) -> RelationCorpus:
    """Read interaction XML files (plain or gzip'd) into one :class:`RelationCorpus`.

    Parameters
    ----------
    on_error : {"raise", "skip"}
        ``"raise"``: the first problem raises :class:`RelationFormatError` naming the
        file, the line and the sentence (or document) id.  ``"skip"``: a bad sentence is
        left out and listed in ``corpus.skipped``; XML that is not well-formed ends the
        file there (the sentences before it are kept).
    files, max_entities, max_pairs
        As for :func:`~structkernels.relations.read_relations` (a document or sentence id met
        twice is an error naming both places).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> xml = ('<corpus source="x"><document id="d0"><sentence id="d0.s0" text="KinC binds SigE">'
    ...        '<entity id="d0.s0.e0" charOffset="0-4" text="KinC"/>'
    ...        '<entity id="d0.s0.e1" charOffset="11-15" text="SigE"/>'
    ...        '<interaction id="d0.s0.i0" e1="d0.s0.e0" e2="d0.s0.e1" type="PPI"/>'
    ...        '</sentence></document></corpus>')
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = pathlib.Path(d, "x.xml")
    ...     _ = path.write_text(xml)
    ...     corpus = read_interaction_xml(path)
    >>> [(p.id, p.e1.text, p.e2.text, p.label) for p in corpus.pairs()]
    [('d0.s0.p0', 'KinC', 'SigE', True)]
    """
    return read_corpus(files, read_xml_file, on_error, max_entities, max_pairs)


def read_xml_file(file: str, reading: Reading) -> None:
    """Read one interaction XML file into ``reading``."""
    reading.files.append(file)
    got = reading.read_bytes(file)
    if got is not None:
        _XmlFile(file, reading).parse(*got)


class _XmlFile:
    """The expat handlers of one file and the state of the element being read."""

    def __init__(self, file: str, reading: Reading):
        self.file, self.reading = file, reading
        self.stack: list[str] = []
        self.ignored = 0  # depth inside an element passed over
        self.doc: str | None = None
        self.doc_bad: tuple[str, int] | None = None  # (reason, line) of a document left out
        self.doc_sentences = 0
        self.sent: dict[str, Any] | None = None
        p = safe_parser(self._refuse, doctype=(
            "a document type declaration (<!DOCTYPE>) is refused: interaction XML needs none, "
            "and entity declarations could expand without bound"))
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        self.parser = p

    def parse(self, data: bytes, lost: str | None) -> None:
        try:
            if not data.strip():
                raise RelationFormatError("empty file: no <corpus> element", self.file)
            parse_xml(self.parser, data, lost, self.file, self._record)
        except RelationFormatError as exc:
            self.reading.cut_short(exc)

    def _record(self) -> str | None:
        return (self.sent or {}).get("id") or self.doc

    def _refuse(self, reason: str) -> None:
        raise RelationFormatError(reason, self.file, self.parser.CurrentLineNumber)

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        if self.ignored:
            self.ignored += 1
            return
        line = self.parser.CurrentLineNumber
        parent = self.stack[-1] if self.stack else None
        if parent is None:
            if name != "corpus":
                raise RelationFormatError(f"the root element is <{name}>, not <corpus>", self.file, line)
            self.stack.append(name)
            return
        if parent not in ("corpus", "document", "sentence") or name not in _KNOWN:
            self.ignored = 1  # unknown elements, and anything inside an entity or interaction
            return
        if _PLACE.get(name) != parent:
            self._misplaced(name, parent, line)
            return
        self.stack.append(name)
        if name == "document":
            self._start_document(attrs, line)
        elif name == "sentence":
            self._start_sentence(attrs, line)
        elif self.sent is None or self.sent["problem"] or self.doc_bad:
            return  # a sentence left out is not read further
        elif name == "entity":
            self._entity(self.sent, attrs, line)
        else:
            self._interaction(self.sent, name, attrs, line)

    def _misplaced(self, name: str, parent: str, line: int) -> None:
        place = _PLACE.get(name)
        reason = (f"<{name}> inside <{parent}>: it belongs in <{place}>" if place
                  else f"<{name}> inside <{parent}>: only the root element is <{name}>")
        self.ignored = 1
        if self.sent is not None:
            self._problem(reason, line)
        else:
            self.reading.fail(reason, self.file, line, self.doc)

    def _start_document(self, attrs: dict[str, str], line: int) -> None:
        doc = attrs.get("id")
        self.doc, self.doc_sentences, self.doc_bad = doc or None, 0, None
        reason = (self.reading.document_problem(doc, self.file, line, once=True) if doc
                  else "a <document> without an id")
        if reason:
            if self.reading.strict:
                raise RelationFormatError(reason, self.file, line, self.doc)
            self.doc_bad = (reason, line)

    def _start_sentence(self, attrs: dict[str, str], line: int) -> None:
        sid, text = attrs.get("id"), attrs.get("text")
        self.doc_sentences += 1
        self.sent = {"id": sid or None, "text": text, "line": line, "entities": {},
                     "interactions": [], "problem": None}
        if self.doc_bad:
            return
        if not sid:
            self._problem(f"sentence {self.doc_sentences} of document {self.doc} has no id", line)
        elif text is None:
            self._problem("the sentence has no text attribute", line)

    def _problem(self, reason: str, line: int) -> None:
        """The first problem of the sentence being read: strict mode raises now."""
        sent = self.sent
        assert sent is not None
        if sent["problem"] is None:
            if self.reading.strict:
                raise RelationFormatError(reason, self.file, line, sent["id"])
            sent["problem"] = (reason, line)

    def _entity(self, sent: dict[str, Any], attrs: dict[str, str], line: int) -> None:
        eid, offsets = attrs.get("id"), attrs.get("charOffset")
        if not eid:
            return self._problem(f"entity {len(sent['entities']) + 1} has no id", line)
        if offsets is None:
            return self._problem(f"entity {eid}: no charOffset attribute", line)
        if not _OFFSETS.fullmatch(offsets):
            return self._problem(f"entity {eid}: charOffset {one_line(repr(offsets), 60)} "
                                 "is not start-end[,start-end...]", line)
        spans = tuple(tuple(int(x) for x in part.split("-")) for part in offsets.split(","))
        text = sent["text"]
        try:
            ent = Entity(eid, spans, attrs.get("text", ""), attrs.get("type"))  # type: ignore[arg-type]
            if "text" not in attrs and ent.end <= len(text):  # no text attribute: the text at the spans
                ent = replace(ent, text=span_text(text, ent.spans))
        except ValueError as exc:
            return self._problem(str(exc), line)
        problem = entity_problem(ent, text)
        if problem:
            return self._problem(problem, line)
        if eid in sent["entities"]:
            return self._problem(f"entity {eid}: id given twice in the sentence", line)
        sent["entities"][eid] = ent

    def _interaction(self, sent: dict[str, Any], name: str, attrs: dict[str, str],
                     line: int) -> None:
        iid = attrs.get("id")
        label = f"{name} {iid}" if iid else f"{name} {len(sent['interactions']) + 1}"
        for end in ("e1", "e2"):
            if not attrs.get(end):
                return self._problem(f"{label}: no {end} attribute", line)
        if name == "pair":
            flag = attrs.get("interaction", "").lower()
            if flag not in ("true", "false"):
                return self._problem(f"{label}: interaction must be True or False, "
                                     f"got {one_line(repr(attrs.get('interaction')), 40)}", line)
            if flag == "false":
                return None
        sent["interactions"].append((Interaction(attrs["e1"], attrs["e2"], iid, attrs.get("type")), line))
        return None

    def _end(self, name: str) -> None:
        if self.ignored:
            self.ignored -= 1
            return
        tag = self.stack.pop()
        if tag == "sentence":
            self._end_sentence()
        elif tag == "document":
            if self.doc_bad:
                reason, line = self.doc_bad
                self.reading.fail(f"{reason} (its {self.doc_sentences} sentences are left out)",
                                  self.file, line, self.doc)
            self.doc, self.doc_bad = None, None

    def _end_sentence(self) -> None:
        sent, self.sent = self.sent, None
        assert sent is not None
        if self.doc_bad:
            return
        if sent["problem"] is None:
            sent["problem"] = self._interactions_problem(sent)
        if sent["problem"]:  # strict reading raises it
            reason, line = sent["problem"]
            self.reading.fail(reason, self.file, line, sent["id"])
            return
        self.reading.sentence(sent["id"], sent["text"], self.doc or "", sent["entities"].values(),
                              (i for i, _ in sent["interactions"]), True, self.file, sent["line"])

    @staticmethod
    def _interactions_problem(sent: dict[str, Any]) -> tuple[str, int] | None:
        """The first interaction of the sentence that names no entity of it, or repeats an id."""
        ids: set[str] = set()
        for inter, line in sent["interactions"]:
            problem = interaction_problem(inter, sent["entities"])
            if problem is None and inter.id is not None and inter.id in ids:
                problem = f"interaction {inter.id}: id given twice in the sentence"
            if problem:
                return problem, line
            if inter.id is not None:
                ids.add(inter.id)
        return None
