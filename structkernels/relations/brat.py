"""Reading BRAT standoff annotation: a ``.txt`` document and its ``.ann`` beside it.

Read from the ``.ann`` file:

- ``T1<TAB>Protein 0 5;10 15<TAB>text``: a text-bound annotation (an entity; ``;``
  separates the pieces of a discontinuous one, whose text is the pieces joined by a
  space).  Offsets are characters of the ``.txt`` document, end exclusive.
- ``R1<TAB>Type Arg1:T1 Arg2:T2``: a relation, which becomes an :class:`Interaction`.
- ``#`` notes, ``A``/``M`` attributes, ``N`` normalisations and ``*`` equivalences
  (``*<TAB>Equiv T1 T2``: the mentions are one entity, not an interaction) are passed over.
- ``E1<TAB>Type:T3 Theme:T1 Cause:T2`` events are not supported (their arguments may be
  other events): strict mode refuses them; lenient mode lists each in ``skipped`` and
  leaves its trigger (``T3``) out of the entities, since a trigger is no participant.

The document id is the file's stem.  ``sentences="lines"`` makes each non-blank line of
the document a sentence (``f"{doc}.s{i}"``, ``i`` from 0, offsets made relative to it);
``sentences="document"`` makes the whole text one sentence (``f"{doc}.s0"``).  An entity
crossing a sentence boundary is a bad record; a relation between entities of two
sentences cannot be a candidate and is listed in ``skipped`` in both modes.
"""

from __future__ import annotations

import os
import re
from typing import Any

from structkernels.relations._collect import Reading, as_paths, stem
from structkernels.relations.model import Entity, Interaction, RelationCorpus, Sentence, span_text
from structkernels.utils import decode_lines, one_line

__all__ = ["read_brat", "brat_documents"]

SENTENCES = ("lines", "document")
_SPANS = re.compile(r"\d+ \d+(?:;\d+ \d+)*")
_IGNORED = ("#", "A", "M", "N", "*")


def brat_documents(paths: Any) -> list[tuple[str, str]]:
    """The ``(txt, ann)`` pairs named by files (either of the two) or folders (searched
    recursively, in name order; hidden files passed over), each document once."""
    docs: dict[str, None] = {}
    for path in as_paths(paths):
        if os.path.isdir(path):
            found = []
            for folder, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [os.path.join(folder, n) for n in names
                          if n.endswith((".txt", ".ann")) and not n.startswith(".")]
            for f in sorted(found):
                docs.setdefault(os.path.splitext(f)[0], None)
        else:
            root, ext = os.path.splitext(path)
            if ext not in (".txt", ".ann"):
                raise ValueError(f"{path}: a BRAT document is a .txt file with its .ann beside it")
            docs.setdefault(root, None)
    return [(root + ".txt", root + ".ann") for root in docs]


def read_brat(paths: Any, *, on_error: str = "raise", sentences: str = "lines") -> RelationCorpus:
    """Read BRAT standoff documents into one :class:`RelationCorpus`.

    Parameters
    ----------
    paths : path or list of paths
        ``.txt`` or ``.ann`` files (the other one must lie beside it), or folders of them.
    on_error : {"raise", "skip"}
        ``"raise"``: the first problem raises :class:`RelationFormatError` naming the
        file, the line and the annotation.  ``"skip"``: a bad annotation is listed in
        ``corpus.skipped`` and left out with the sentence it lies in (whose candidate
        pairs would be incomplete); an entity crossing a sentence boundary is left
        out alone; a document without its ``.txt`` or ``.ann``, or whose text is not
        UTF-8, is left out.
    sentences : {"lines", "document"}
        How the document text is split into sentences.

    Returns
    -------
    RelationCorpus

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with open(os.path.join(d, "doc1.txt"), "w") as fh:
    ...         _ = fh.write("Title.\\nKinC activates SigE.\\n")
    ...     with open(os.path.join(d, "doc1.ann"), "w") as fh:
    ...         _ = fh.write("T1\\tProtein 7 11\\tKinC\\nT2\\tProtein 22 26\\tSigE\\n"
    ...                      "R1\\tPPI Arg1:T1 Arg2:T2\\n")
    ...     corpus = read_brat(d)
    >>> [(s.id, s.text) for s in corpus]
    [('doc1.s0', 'Title.'), ('doc1.s1', 'KinC activates SigE.')]
    >>> [(p.id, p.e1.spans, p.e2.text, p.label) for p in corpus.pairs()]
    [('doc1.s1.p0', ((0, 4),), 'SigE', True)]
    """
    if sentences not in SENTENCES:
        raise ValueError(f"sentences must be one of {SENTENCES}, got {sentences!r}")
    reading = Reading(on_error)
    for txt, ann in brat_documents(paths):
        read_brat_document(txt, ann, reading, sentences)
    return reading.corpus()


def _split(text: str, how: str) -> list[tuple[int, int, int]]:
    """``(start, end, line)`` of each sentence of ``text`` (lines: non-blank ones)."""
    if how == "document":
        return [(0, len(text), 1)]
    out, pos = [], 0
    for k, line in enumerate(text.split("\n"), 1):
        end = pos + len(line) - line.endswith("\r")
        if line.strip():
            out.append((pos, end, k))
        pos += len(line) + 1
    return out


def read_brat_document(txt: str, ann: str, reading: Reading, how: str = "lines") -> None:
    """Read one BRAT document (``txt`` and its ``ann``) into ``reading``."""
    doc = stem(txt)
    for f in (txt, ann):
        if not os.path.isfile(f):
            other = ann if f == txt else txt
            reading.fail(f"{os.path.basename(other)} has no {os.path.splitext(f)[1]} file beside it",
                         f, None, doc)
            return
    reading.files += [txt, ann]
    got, got_ann = reading.read_bytes(txt), reading.read_bytes(ann)
    if got is None or got_ann is None:
        return
    try:
        text = got[0].decode("utf-8")
    except UnicodeDecodeError as exc:
        reading.fail(f"not UTF-8 text ({exc.reason} at byte {exc.start})", txt, None, doc)
        return
    if text.startswith("\ufeff"):
        text = text[1:]
    problem = reading.document_problem(doc, txt, None, once=True)
    if problem:
        reading.fail(problem, txt, None, doc)
        return
    _Document(doc, txt, ann, text, reading, how).read(*decode_lines(got_ann[0]))


class _Document:
    def __init__(self, doc: str, txt: str, ann: str, text: str, reading: Reading, how: str):
        self.doc, self.txt, self.ann, self.text, self.reading = doc, txt, ann, text, reading
        self.bounds = _split(text, how)
        self.entities: dict[str, tuple[Entity, int, int]] = {}  # id -> (entity, sentence, line)
        self.relations: list[tuple[Interaction, int]] = []
        self.bad: set[int] = set()  # sentences left out
        self.ids: dict[str, int] = {}
        self.triggers: set[str] = set()
        self.outside: dict[str, str] = {}  # entities in no sentence (or triggers): why

    def fail(self, reason: str, line: int, sentence: int | None = None) -> None:
        """A bad annotation; in lenient mode ``sentence`` (its index) is left out with it."""
        self.reading.fail(reason, self.ann, line, self.doc if sentence is None else f"{self.doc}.s{sentence}")
        if sentence is not None:
            self.bad.add(sentence)

    def sentence_of(self, start: int, end: int) -> int | None:
        for k, (s, e, _) in enumerate(self.bounds):
            if s <= start and end <= e:
                return k
        return None

    def read(self, lines: list[str], not_utf8: dict[int, str]) -> None:
        for n, line in enumerate(lines, 1):
            if n in not_utf8:
                self.fail(f"not UTF-8 text ({not_utf8[n]})", n)
                continue
            if not line.strip() or line.startswith(_IGNORED):
                continue
            aid = line.split("\t", 1)[0].strip()
            if aid in self.ids:
                self.fail(f"annotation {one_line(aid, 40)}: id given twice (also line {self.ids[aid]})", n)
                continue
            self.ids[aid] = n
            if aid.startswith("T"):
                self.text_bound(aid, line, n)
            elif aid.startswith("R"):
                self.relation(aid, line, n)
            elif aid.startswith("E"):
                self.event(aid, line, n)
            else:
                self.fail(f"unknown annotation {one_line(line, 60)!r} (known: T, R, E, *, A, M, N, #)", n)
        self.build()

    def text_bound(self, aid: str, line: str, n: int) -> None:
        parts = line.split("\t")
        head = parts[1].split(" ", 1) if len(parts) == 3 else []
        if len(head) != 2 or not _SPANS.fullmatch(head[1]):
            self.fail(f"entity {aid}: not 'ID<TAB>TYPE START END[;START END...]<TAB>TEXT'", n)
            return
        spans = tuple(tuple(int(x) for x in piece.split(" ")) for piece in head[1].split(";"))
        try:
            ent = Entity(aid, spans, parts[2], head[0])  # type: ignore[arg-type]
        except ValueError as exc:
            self.fail(str(exc), n)
            return
        if ent.end > len(self.text):
            self.fail(f"entity {aid}: offsets {head[1]} lie outside the document text "
                      f"({len(self.text)} characters)", n)
            return
        found = span_text(self.text, ent.spans)
        k = self.sentence_of(ent.start, ent.end)
        # a line break inside an entity is written as a space in the .ann file
        if found.replace("\r\n", " ").replace("\n", " ").replace("\r", " ") != ent.text:
            self.fail(f"entity {aid}: text {one_line(repr(ent.text), 60)} differs from the text at "
                      f"{head[1]}, {one_line(repr(found), 60)}", n, k)
            return
        if k is None:
            self.outside[aid] = "crosses a sentence boundary"
            self.fail(f"entity {aid}: {head[1]} crosses a sentence boundary", n)
            return
        start = self.bounds[k][0]
        shifted = tuple((s - start, e - start) for s, e in ent.spans)
        self.entities[aid] = (Entity(aid, shifted, found, ent.type), k, n)

    def relation(self, aid: str, line: str, n: int) -> None:
        parts = line.split("\t")
        fields = parts[1].split() if len(parts) >= 2 else []
        args = [a.split(":", 1) for a in fields[1:]]
        if len(fields) != 3 or any(len(a) != 2 or not a[1] for a in args):
            self.fail(f"relation {aid}: not 'ID<TAB>TYPE ROLE1:ARG1 ROLE2:ARG2'", n)
            return
        self.relations.append((Interaction(args[0][1], args[1][1], aid, fields[0]), n))

    def event(self, aid: str, line: str, n: int) -> None:
        parts = line.split("\t")
        fields = parts[1].split() if len(parts) >= 2 else []
        trigger = fields[0].split(":", 1)[1] if fields and ":" in fields[0] else None
        if trigger:
            self.triggers.add(trigger)
        self.fail(f"event {aid}: event annotations (E) are not supported (their arguments may be "
                  "events); read with on_error='skip' to leave events and their triggers out", n)

    def build(self) -> None:
        for t in sorted(self.triggers & set(self.entities)):
            del self.entities[t]
            self.outside[t] = "is the trigger of an event (left out)"
        by_sentence: list[list[Interaction]] = [[] for _ in self.bounds]
        for inter, n in self.relations:
            places = [self.entities[e][1] if e in self.entities else None for e in (inter.e1, inter.e2)]
            known = [k for k in places if k is not None]
            missing = [e for e, k in zip((inter.e1, inter.e2), places, strict=True) if k is None]
            if missing:
                end = missing[0]
                if end in self.outside:  # never a sentence-level candidate: its sentence stays
                    self.fail(f"relation {inter.id}: argument {end} {self.outside[end]}", n)
                else:
                    why = "a bad annotation" if end in self.ids else "no annotation of the document"
                    self.fail(f"relation {inter.id}: argument {one_line(end, 40)} is {why}", n,
                              known[0] if known else None)
            elif inter.e1 == inter.e2:
                self.fail(f"relation {inter.id}: joins entity {inter.e1} with itself", n, known[0])
            elif known[0] != known[1]:
                self.reading.drop(
                    f"relation {inter.id}: {inter.e1} and {inter.e2} lie in different sentences "
                    f"({self.doc}.s{known[0]} and {self.doc}.s{known[1]}): not a sentence-level "
                    "candidate", self.ann, n, self.doc)
            else:
                by_sentence[known[0]].append(inter)
        ents: list[list[Entity]] = [[] for _ in self.bounds]
        for ent, k, _ in sorted(self.entities.values(), key=lambda x: x[2]):
            ents[k].append(ent)
        for k, (start, end, line) in enumerate(self.bounds):
            if k in self.bad:
                continue
            sid = f"{self.doc}.s{k}"
            try:
                sentence = Sentence(sid, self.text[start:end], self.doc, tuple(ents[k]),
                                    tuple(by_sentence[k]), True, self.txt, line)
            except ValueError as exc:
                self.reading.fail(str(exc), self.txt, line, sid)
                continue
            self.reading.add(sentence)
