"""What the PubTator and BioC readers share: a :class:`DocumentBuilder` cuts one document's
passages into sentences and maps its mentions and relations onto them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from structkernels.formats._collect import Reading
from structkernels.relations.corpus import (
    Entity,
    Interaction,
    blank_problem,
    same_mention_problem,
    span_text,
)
from structkernels.utils import one_line

#: Words whose full stop does not end a sentence (compared lower-cased, without the stop).
ABBREVIATIONS = frozenset({
    "e.g", "i.e", "al", "fig", "figs", "vs", "cf", "dr", "mr", "mrs", "ms", "prof", "approx",
    "ca", "no", "nos", "vol", "ref", "refs", "eq", "eqs", "sp", "spp", "st", "resp", "incl",
    "ph.d", "u.s", "inc", "ltd", "co", "jr", "sr", "viz", "var", "subsp", "mol", "wt",
})
_END = re.compile(r"[.!?]+[\"')\]]*(?=\s)")
_WORD_BEFORE = re.compile(r"([\w.]+)\.$")
#: Concept ids that mean "no concept" (BioCreative V CDR writes -1).
NO_CONCEPT = frozenset({"", "-", "-1"})


def split_sentences(text: str, protected: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``: a simple, deterministic splitter.

    A sentence ends after ``.``, ``!`` or ``?`` (and any closing quotes or brackets)
    followed by white space, when the next sentence starts with anything but a lower-case
    letter, unless the stop ends an abbreviation (:data:`ABBREVIATIONS`, or a single
    letter: an initial such as ``E. coli``'s), or the cut would fall inside one of the
    ``protected`` spans (the mentions: a sentence never splits an entity).  Sentences are
    stripped of surrounding white space; blank ones are left out.

    Examples
    --------
    >>> text = "KinC binds SigE. Dr. Smith et al. found it. It was (p < 0.05) low."
    >>> [text[s:e] for s, e in split_sentences(text)]
    ['KinC binds SigE.', 'Dr. Smith et al. found it.', 'It was (p < 0.05) low.']
    >>> [text[s:e] for s, e in split_sentences(text, [(11, 20)])]  # a mention "SigE. Dr."
    ['KinC binds SigE. Dr. Smith et al. found it.', 'It was (p < 0.05) low.']
    """
    cuts = [0]
    for m in _END.finditer(text):
        stop, nxt = m.end(), m.end()
        while nxt < len(text) and text[nxt].isspace():
            nxt += 1
        if nxt >= len(text) or text[nxt].islower():
            continue
        word = _WORD_BEFORE.search(text, max(0, m.start() - 20), m.start() + 1)
        if word and m.group().startswith(".") and m.group().rstrip("\"')]") == ".":
            w = word.group(1).lower()
            if w in ABBREVIATIONS or (len(w) == 1 and w.isalpha()):
                continue
        if any(s < nxt and e > stop for s, e in protected):
            continue
        cuts.append(stop)
    cuts.append(len(text))
    out = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        piece = text[a:b]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((a + lead, a + len(piece.rstrip())))
    return out


@dataclass
class Mention:
    """An annotation: its entity id, document-level spans, text as given (None: read the
    text at the spans), type, the concept ids it answers to, where it was read."""

    id: str
    spans: tuple[tuple[int, int], ...]
    text: str | None
    type: str | None
    concepts: tuple[str, ...] = ()
    line: int | None = None


@dataclass
class Link:
    """A relation: two mention ids (``by_concept`` False) or two concept ids."""

    id: str | None
    type: str | None
    a: str
    b: str
    by_concept: bool
    line: int | None = None


@dataclass
class _Region:
    offset: int
    text: str
    line: int | None
    sentences: list[tuple[int, str, int | None]] | None = None  # given (offset, text, line)


@dataclass
class DocumentBuilder:
    """The passages, mentions and relations of one document being read."""

    reading: Reading
    file: str
    doc: str
    labelled: bool
    line: int | None = None
    passages: list[_Region] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # mention id -> why

    def fail(self, reason: str, line: int | None) -> None:
        self.reading.fail(reason, self.file, line, self.doc)

    def passage(self, offset: int, text: str, line: int | None,
                sentences: list[tuple[int, str, int | None]] | None = None) -> None:
        self.passages.append(_Region(offset, text, line, sentences))

    def _sentences(self) -> list[_Region]:
        out: list[_Region] = []
        for p in sorted(self.passages, key=lambda r: r.offset):
            if p.sentences is not None:
                for off, text, line in p.sentences:
                    lead = len(text) - len(text.lstrip())
                    if text.strip():
                        out.append(_Region(off + lead, text.strip(), line))
                continue
            end = p.offset + len(p.text)
            protected = [(m.spans[0][0] - p.offset, max(e for _, e in m.spans) - p.offset)
                         for m in self.mentions
                         if p.offset <= m.spans[0][0] and max(e for _, e in m.spans) <= end]
            out += [_Region(p.offset + s, p.text[s:e], p.line)
                    for s, e in split_sentences(p.text, protected)]
        return out

    def _passage_text(self, m: Mention) -> str | None:
        """The text at ``m``'s spans (pieces joined by a space), None when outside a passage."""
        for p in self.passages:
            if p.offset <= m.spans[0][0] and max(e for _, e in m.spans) <= p.offset + len(p.text):
                return span_text(p.text, [(s - p.offset, e - p.offset) for s, e in m.spans])
        return None

    def build(self) -> None:
        """Check everything read and add the document's sentences to the reading."""
        sents = self._sentences()
        for k in range(1, len(sents)):
            prev = sents[k - 1]
            if sents[k].offset < prev.offset + len(prev.text):
                self.fail(f"sentence at offset {sents[k].offset} overlaps the one before it "
                          f"(offset {prev.offset})", sents[k].line)
                return
        placed: dict[str, tuple[Entity, int, Mention]] = {}
        bad: set[int] = set()
        for m in self.mentions:
            got = self._mention(m, sents, placed)
            if isinstance(got, tuple):
                reason, k = got
                self.left_out[m.id] = "a bad annotation"
                self.fail(reason, m.line)
                if k is not None:
                    bad.add(k)
        inters: list[list[Interaction]] = [[] for _ in sents]
        for j, link in enumerate(self.links):
            self._link(j, link, placed, inters)
        ents: list[list[Entity]] = [[] for _ in sents]
        for ent, k, _ in placed.values():
            ents[k].append(ent)
        for k, r in enumerate(sents):
            if k in bad:
                continue
            self.reading.sentence(f"{self.doc}.s{k}", r.text, self.doc, ents[k], inters[k],
                                  self.labelled, self.file, r.line)

    def _mention(self, m: Mention, sents: list[_Region],
                 placed: dict[str, tuple[Entity, int, Mention]]) -> tuple[str, int | None] | None:
        """Place ``m`` in its sentence; ``(reason, sentence index or None)`` when it is bad."""
        name = f"annotation {one_line(m.id, 60)}"
        where = ",".join(f"{s}-{e}" for s, e in m.spans)
        if m.id in placed or m.id in self.left_out:
            return f"{name}: id given twice in the document", None
        try:
            Entity(m.id, m.spans, m.text or "", m.type)
        except ValueError as exc:
            return str(exc), None
        found = self._passage_text(m)
        if found is None:
            return (f"{name}: offsets {where} lie outside every passage of the document "
                    "(offsets are document-level)"), None
        k = next((i for i, r in enumerate(sents)
                  if r.offset <= m.spans[0][0] < r.offset + len(r.text)), None)
        covered = None
        if len(m.spans) > 1:
            first, last = m.spans[0][0], max(e for _, e in m.spans)
            covered = self._passage_text(Mention(m.id, ((first, last),), None, None))
        if m.text is not None and m.text != found and m.text != covered:
            return (f"{name}: text {one_line(repr(m.text), 60)} differs from the text at {where}, "
                    f"{one_line(repr(found), 60)}"), k
        blank = blank_problem(m.id, m.spans, found)
        if blank:
            return blank, k
        if k is None or max(e for _, e in m.spans) > sents[k].offset + len(sents[k].text):
            return f"{name}: {where} crosses a sentence boundary", None
        off = sents[k].offset
        ent = Entity(m.id, tuple((s - off, e - off) for s, e in m.spans), found, m.type)
        placed[m.id] = (ent, k, m)
        return None

    def _link(self, j: int, link: Link, placed: dict[str, tuple[Entity, int, Mention]],
              inters: list[list[Interaction]]) -> None:
        name = f"relation {one_line(link.id, 60)}" if link.id else f"relation {j + 1}"
        if link.a == link.b:
            self.fail(f"{name}: joins {one_line(link.a, 60)} with itself", link.line)
            return
        ends: list[list[tuple[Entity, int, Mention]]] = []
        for ref in (link.a, link.b):
            if link.by_concept:
                found = [p for p in placed.values() if ref == p[0].id or ref in p[2].concepts]
            else:
                found = [placed[ref]] if ref in placed else []
            if not found:
                what = "concept or annotation" if link.by_concept else "annotation"
                why = (f"names {what} {one_line(ref, 60)}, which was left out ({self.left_out[ref]})"
                       if ref in self.left_out else
                       f"names {what} {one_line(ref, 60)}, which the document does not have")
                self.fail(f"{name}: {why}", link.line)
                return
            ends.append(found)
        pairs = [(a, b) for a in ends[0] for b in ends[1] if a[1] == b[1] and a[0].id != b[0].id]
        if not link.by_concept and pairs and pairs[0][0][0].spans == pairs[0][1][0].spans:
            self.fail(same_mention_problem(name, pairs[0][0][0], pairs[0][1][0]), link.line)
            return
        pairs = [(a, b) for a, b in pairs if a[0].spans != b[0].spans]
        if not pairs:
            where = sorted({f"{self.doc}.s{p[1]}" for e in ends for p in e})
            self.reading.drop(
                f"{name}: {one_line(link.a, 40)} and {one_line(link.b, 40)} lie in different "
                f"sentences ({', '.join(where[:4])}): not a sentence-level candidate",
                self.file, link.line, self.doc)
            return
        base = link.id or f"R{j + 1}"
        for n, (a, b) in enumerate(pairs):
            iid = base if len(pairs) == 1 else f"{base}.{n}"
            inters[a[1]].append(Interaction(a[0].id, b[0].id, iid, link.type))
