r"""Reading BRAT standoff annotation: a ``.txt`` document and its ``.ann`` beside it.

The format, and the offsets and line ends as brat counts them: docs/relations.md (BRAT).
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

from structkernels.formats._collect import Reading, as_paths, read_corpus, stem
from structkernels.relations.corpus import (
    Entity,
    Interaction,
    RelationCorpus,
    blank_problem,
    same_mention_problem,
    span_text,
)
from structkernels.utils import StructkernelsWarning, decode_lines, one_line

__all__ = ["read_brat", "brat_documents", "BratLineEndWarning"]

SENTENCES = ("lines", "document")
_SPANS = re.compile(r"\d+ \d+(?:;\d+ \d+)*")
_IGNORED = ("#", "A", "M", "N", "*")
_BOM = "\ufeff"
# what str.splitlines counts as a line end and brat does not: inside a line in brat
_OTHER_LINE_ENDS = re.compile("\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


class BratLineEndWarning(StructkernelsWarning):
    """A BRAT text holds line ends brat does not count (a lone ``\\r``, U+2028, ...): they are
    read inside a sentence, as brat shows them, though an editor shows a new line."""


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


def read_brat(paths: Any, *, on_error: str = "raise", sentences: str = "lines",
              max_entities: int | None = None, max_pairs: int | None = None) -> RelationCorpus:
    """Read BRAT standoff documents into one :class:`RelationCorpus`.

    Parameters
    ----------
    paths : path or list of paths
        ``.txt`` or ``.ann`` files (the other one must lie beside it), or folders of them.
    on_error : {"raise", "skip"}
        ``"raise"``: the first problem raises :class:`RelationFormatError` naming the
        file, the line and the annotation.  ``"skip"``: a bad annotation is listed in
        ``corpus.skipped`` and left out with the sentence it lies in; a document without
        its ``.txt`` or ``.ann``, or whose text is not UTF-8, is left out.
    sentences : {"lines", "document"}
        Each non-blank line a sentence, or the whole text one.
    max_entities, max_pairs : int, optional
        As for :func:`~structkernels.relations.read_relations`.

    Returns
    -------
    RelationCorpus
        Sentences ``<doc>.s<i>`` (``<doc>`` the file's stem), entities the ``T`` ids.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = pathlib.Path(d, "doc1.txt").write_text("Title.\\nKinC activates SigE.\\n")
    ...     _ = pathlib.Path(d, "doc1.ann").write_text("T1\\tProtein 7 11\\tKinC\\n"
    ...         "T2\\tProtein 22 26\\tSigE\\nR1\\tPPI Arg1:T1 Arg2:T2\\n")
    ...     corpus = read_brat(d)
    >>> [(s.id, s.text) for s in corpus]
    [('doc1.s0', 'Title.'), ('doc1.s1', 'KinC activates SigE.')]
    >>> [(p.id, p.e1.spans, p.e2.text, p.label) for p in corpus.pairs()]
    [('doc1.s1.p0', ((0, 4),), 'SigE', True)]
    """
    if sentences not in SENTENCES:
        raise ValueError(f"sentences must be one of {SENTENCES}, got {sentences!r}")
    return read_corpus(paths, lambda doc, reading: read_brat_document(*doc, reading, sentences),
                       on_error, max_entities, max_pairs, brat_documents)


def _split(text: str, how: str) -> list[tuple[int, int, int]]:
    """``(start, end, line)`` of each sentence of ``text`` (lines: non-blank ones), lines
    ending at ``\n`` only as in brat; the first starts after a byte-order mark."""
    first = 1 if text.startswith(_BOM) else 0
    if how == "document":
        return [(first, len(text), 1)]
    out, pos = [], 0
    for k, line in enumerate(text.split("\n"), 1):
        end = pos + len(line) - line.endswith("\r")
        start = max(pos, first)
        if text[start:end].strip():
            out.append((start, end, k))
        pos += len(line) + 1
    return out


def _warn_line_ends(text: str, txt: str, doc: str) -> None:
    """One :class:`BratLineEndWarning` when ``text`` holds line ends brat does not count."""
    found = list(_OTHER_LINE_ENDS.finditer(text))
    if not found:
        return
    first = found[0].start()
    line = text.count("\n", 0, first) + 1
    kinds = sorted({f"U+{ord(m.group()[0]):04X}" for m in found})
    warnings.warn(BratLineEndWarning(
        f"{txt}:{line}: record {doc}: {len(found)} line end(s) that brat does not count "
        f"({', '.join(kinds)}; the first at character {first}): brat shows them inside a "
        "line, and so they are read inside a sentence; if they end sentences, replace them "
        "with \\n (the offsets stay the same)".encode("utf-8", "backslashreplace").decode("utf-8")),
        stacklevel=4)


def _flat(text: str) -> str:
    """``text`` with its line breaks as spaces (how a .ann file writes an entity's text)."""
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


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
    problem = reading.document_problem(doc, txt, None, once=True)
    if problem:
        reading.fail(problem, txt, None, doc)
        return
    if how == "lines":
        _warn_line_ends(text, txt, doc)
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
        return next((k for k, (s, e, _) in enumerate(self.bounds) if s <= start and end <= e),
                    None)

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
            read = {"T": self.text_bound, "R": self.relation, "E": self.event}.get(aid[:1])
            if read is None:
                self.fail(f"unknown annotation {one_line(line, 60)!r} (known: T, R, E, *, A, M, N, #)", n)
            else:
                read(aid, line, n)
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
        if _flat(found) != ent.text:
            self.fail(f"entity {aid}: text {one_line(repr(ent.text), 60)} differs from the text at "
                      f"{head[1]}, {one_line(repr(found), 60)}{self.bom_hint(ent)}", n, k)
            return
        blank = blank_problem(aid, ent.spans, found)
        if blank:
            self.fail(blank, n, k)
            return
        if k is None:
            self.outside[aid] = "crosses a sentence boundary"
            self.fail(f"entity {aid}: {head[1]} crosses a sentence boundary", n)
            return
        start = self.bounds[k][0]
        shifted = tuple((s - start, e - start) for s, e in ent.spans)
        self.entities[aid] = (Entity(aid, shifted, found, ent.type), k, n)

    def bom_hint(self, ent: Entity) -> str:
        """A hint when the offsets would fit a text without its byte-order mark."""
        if not self.text.startswith(_BOM) or ent.end + 1 > len(self.text):
            return ""
        if _flat(span_text(self.text, [(s + 1, e + 1) for s, e in ent.spans])) != ent.text:
            return ""
        return (" (the text starts with a byte-order mark, which brat counts as character 0: "
                "these offsets do not count it)")

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
            elif self.entities[inter.e1][0].spans == self.entities[inter.e2][0].spans:
                (a, _, la), (b, _, lb) = self.entities[inter.e1], self.entities[inter.e2]
                self.fail(f"{same_mention_problem(f'relation {inter.id}', a, b)} "
                          f"(lines {la} and {lb})", n, known[0])
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
            self.reading.sentence(f"{self.doc}.s{k}", self.text[start:end], self.doc, ents[k],
                                  by_sentence[k], True, self.txt, line)
