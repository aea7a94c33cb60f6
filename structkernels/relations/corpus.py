"""The model of an annotated relation corpus: entities, interactions, sentences, candidate
pairs, which every reader builds.  A :class:`Sentence` is valid by construction; the readers
bound the work of a sentence (:func:`sentence_limits_problem`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from structkernels.utils import StructkernelsError, one_line

__all__ = ["Entity", "Interaction", "Sentence", "EntityPair", "RelationCorpus",
           "RelationFormatError", "SkippedRecord", "span_text", "MAX_ENTITIES_PER_SENTENCE",
           "MAX_PAIRS_PER_SENTENCE", "same_span_pairs", "MAX_SENTENCE_CHARS",
           "sentence_limits_problem", "surrogate_problem"]

#: The most entities a sentence may hold: every pair of them is a candidate, so the work
#: of a sentence (its pairs' structures, their rows of every Gram) grows as its square.
#: The PPI corpora hold at most 21; 100 entities are 4,950 pairs.
MAX_ENTITIES_PER_SENTENCE = 100
#: The most candidate pairs a sentence may give (binding when ``max_entities`` is raised).
MAX_PAIRS_PER_SENTENCE = 5_000
#: The longest sentence, in characters: a pair's all-paths graph spans the whole sentence and
#: its walk sums are a dense square of its vertices, so a sentence's work grows as pairs
#: times the square of the length (the PPI corpora's longest sentence has 627 characters).
MAX_SENTENCE_CHARS = 1_000

_SURROGATE = re.compile("[\ud800-\udfff]")


def span_text(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The text at ``spans`` of ``text``: the pieces joined by a single space.

    Examples
    --------
    >>> span_text("muscle and brain actin", [(0, 6), (17, 22)])
    'muscle actin'
    """
    return " ".join(text[s:e] for s, e in spans)


def _where(file: str | None, line: int | None, record: str | None, reason: str) -> str:
    parts = []
    if file is not None:
        parts.append(f"{file}:{line}" if line else str(file))
    if record is not None:
        parts.append(f"record {one_line(record, 120)}")
    parts.append(reason)
    # a lone surrogate (an id read from JSON, a file name that is not UTF-8) is written as
    # its escape, so the message can be printed and logged as UTF-8
    return ": ".join(parts).encode("utf-8", "backslashreplace").decode("utf-8")


def surrogate_problem(what: str, value: object) -> str | None:
    """Why the string ``value`` is not Unicode text (a lone surrogate), else None.

    JSON can escape a lone surrogate (``"\\ud800"``); no UTF-8 file, parser or cache can
    hold one, so a record carrying one is refused where it is read.

    Examples
    --------
    >>> surrogate_problem("the sentence text", "KinC \\ud800binds")
    'the sentence text holds a lone surrogate U+D800 at character 5 (not Unicode text)'
    >>> surrogate_problem("the sentence text", "KinC binds") is None
    True
    """
    if not isinstance(value, str):
        return None
    m = _SURROGATE.search(value)
    if m is None:
        return None
    return (f"{what} holds a lone surrogate U+{ord(m.group()):04X} at character {m.start()} "
            "(not Unicode text)")


class RelationFormatError(StructkernelsError, ValueError):
    """A malformed relation corpus, in one line: ``FILE:LINE: record ID: REASON`` (the parts
    unknown left out); ``record`` is the sentence's (or a whole document's) id.

    Examples
    --------
    >>> str(RelationFormatError("no text", "a.jsonl", 3, "s1"))
    'a.jsonl:3: record s1: no text'
    """

    def __init__(self, reason: str, file: str | None = None, line: int | None = None,
                 record: str | None = None):
        self.reason, self.file, self.line, self.record = one_line(reason), file, line, record
        super().__init__(_where(file, line, record, self.reason))

    def __reduce__(self):
        return (type(self), (self.reason, self.file, self.line, self.record))


@dataclass(frozen=True)
class SkippedRecord:
    """What a reader left out (lenient mode, or a relation that cannot be a candidate).

    ``line`` is None for a whole file or document; ``str()`` is one line, as the error
    strict mode raises.
    """

    file: str | None
    line: int | None
    record: str | None
    reason: str

    def __str__(self) -> str:
        return _where(self.file, self.line, self.record, self.reason)


@dataclass(frozen=True)
class Entity:
    """A mention: sentence-relative character spans (end exclusive), its text and type.

    ``spans`` are sorted on construction; each is ``(start, end)`` with
    ``0 <= start < end``, and the pieces of a discontinuous entity do not overlap.

    Examples
    --------
    >>> e = Entity("e1", ((17, 22), (0, 6)), "muscle actin")
    >>> e.spans, e.start, e.end
    (((0, 6), (17, 22)), 0, 22)
    """

    id: str
    spans: tuple[tuple[int, int], ...]
    text: str
    type: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"an entity id must be a non-empty string, got {self.id!r}")
        try:
            spans = tuple(sorted((s, e) for s, e in self.spans))
        except (TypeError, ValueError):
            raise ValueError(f"entity {self.id}: spans must be (start, end) pairs, "
                             f"got {one_line(repr(self.spans), 80)}") from None
        if not spans:
            raise ValueError(f"entity {self.id}: no spans")
        for s, e in spans:
            if not (_is_int(s) and _is_int(e)):
                raise ValueError(f"entity {self.id}: offsets must be integers, got {s!r}-{e!r}")
            if s < 0 or s >= e:
                raise ValueError(f"entity {self.id}: span {s}-{e} is empty or reversed "
                                 "(start must be >= 0 and below the end, which is exclusive)")
        for (_, e0), (s1, _) in zip(spans, spans[1:], strict=False):
            if s1 < e0:
                raise ValueError(f"entity {self.id}: spans {_offsets(spans)} overlap")
        if not isinstance(self.text, str):
            raise ValueError(f"entity {self.id}: text must be a string, got {self.text!r}")
        if self.type is not None and not isinstance(self.type, str):
            raise ValueError(f"entity {self.id}: type must be a string, got {self.type!r}")
        for what, value in (("id", self.id), ("type", self.type)):
            problem = surrogate_problem(f"its {what}", value)
            if problem:
                raise ValueError(f"entity {one_line(repr(self.id), 60)}: {problem}")
        object.__setattr__(self, "spans", spans)

    @property
    def start(self) -> int:
        """The start of the first span."""
        return self.spans[0][0]

    @property
    def end(self) -> int:
        """The end (exclusive) of the last span."""
        return max(e for _, e in self.spans)


def blank_problem(eid: str, spans: Sequence[tuple[int, int]], found: str) -> str | None:
    """Why an entity whose spans hold ``found`` is no mention (only white space), else None."""
    if found.strip():
        return None
    return (f"entity {eid}: the text at {_offsets(spans)}, {one_line(repr(found), 40)}, is only "
            "white space (a mention needs a word to parse)")


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _offsets(spans: Sequence[tuple[int, int]]) -> str:
    return ",".join(f"{s}-{e}" for s, e in spans)


def entity_problem(entity: Entity, text: str) -> str | None:
    """Why ``entity`` does not fit the sentence ``text`` (None when it does): its spans lie in
    ``text`` and hold its ``text`` (pieces joined by one space), more than white space.

    Examples
    --------
    >>> entity_problem(Entity("e1", ((0, 4),), "KinC"), "KinC binds")
    >>> entity_problem(Entity("e1", ((0, 3),), "KinC"), "KinC binds")
    "entity e1: text 'KinC' differs from the text at 0-3, 'Kin' (offsets are end-exclusive: these look end-inclusive)"
    >>> entity_problem(Entity("e1", ((4, 5),), " "), "KinC binds")
    "entity e1: the text at 4-5, ' ', is only white space (a mention needs a word to parse)"
    """
    if entity.end > len(text):
        return (f"entity {entity.id}: offsets {_offsets(entity.spans)} lie outside the "
                f"sentence text ({len(text)} characters)")
    found = span_text(text, entity.spans)
    if found == entity.text:
        return blank_problem(entity.id, entity.spans, found)
    hint = ""
    inclusive = [(s, e + 1) for s, e in entity.spans]
    if inclusive[-1][1] <= len(text) and span_text(text, inclusive) == entity.text:
        hint = " (offsets are end-exclusive: these look end-inclusive)"
    return (f"entity {entity.id}: text {one_line(repr(entity.text), 80)} differs from the "
            f"text at {_offsets(entity.spans)}, {one_line(repr(found), 80)}{hint}")


@dataclass(frozen=True)
class Interaction:
    """A gold relation between two entities of a sentence (their ids), e.g. ``type="PPI"``."""

    e1: str
    e2: str
    id: str | None = None
    type: str | None = None


def interaction_problem(inter: Interaction, entity_ids: set[str] | Mapping[str, object]) -> str | None:
    """Why ``inter`` cannot join entities of a sentence with ``entity_ids`` (None when it can);
    given a mapping of ids to :class:`Entity`, two ids of one mention are refused too (a
    mention with itself, scored positive).

    Examples
    --------
    >>> interaction_problem(Interaction("e1", "e3", "i0"), {"e1", "e2"})
    'interaction i0: e2 names entity e3, which the sentence does not have'
    >>> a, b = Entity("e1", ((0, 4),), "KinC"), Entity("e2", ((0, 4),), "KinC")
    >>> interaction_problem(Interaction("e1", "e2", "i0"), {"e1": a, "e2": b})
    'interaction i0: joins e1 and e2, one mention (the same span 0-4) under two ids: a pair of a mention with itself'
    """
    name = f"interaction {inter.id}" if inter.id is not None else f"interaction {inter.e1}-{inter.e2}"
    for what, value in (("id", inter.id), ("type", inter.type)):
        if value is not None and not isinstance(value, str):
            return f"{name}: {what} must be a string, got {one_line(repr(value), 60)}"
        problem = surrogate_problem(f"its {what}", value)
        if problem:
            return f"{one_line(repr(name), 80)}: {problem}"
    for end in ("e1", "e2"):
        value = getattr(inter, end)
        if not isinstance(value, str) or not value:
            return f"{name}: {end} must be an entity id, got {value!r}"
        if value not in entity_ids:
            return f"{name}: {end} names entity {one_line(value, 80)}, which the sentence does not have"
    if inter.e1 == inter.e2:
        return f"{name}: joins entity {one_line(inter.e1, 80)} with itself"
    if isinstance(entity_ids, Mapping):
        a, b = entity_ids[inter.e1], entity_ids[inter.e2]
        if isinstance(a, Entity) and isinstance(b, Entity) and a.spans == b.spans:
            return same_mention_problem(name, a, b)
    return None


def same_mention_problem(name: str, a: Entity, b: Entity) -> str:
    """The reason refusing a relation ``name`` between two ids of one mention."""
    return (f"{name}: joins {one_line(a.id, 60)} and {one_line(b.id, 60)}, one mention (the same "
            f"span {_offsets(a.spans)}) under two ids: a pair of a mention with itself")


def same_span_pairs(sentence: Sentence) -> list[str]:
    """Why each pair of two entities of ``sentence`` with the same spans is no candidate
    (a sentence to predict on leaves it out of :meth:`Sentence.pairs`).

    Examples
    --------
    >>> s = Sentence("s1", "KinC", "d1", (Entity("a", ((0, 4),), "KinC"),
    ...                                   Entity("b", ((0, 4),), "KinC")), labelled=False)
    >>> same_span_pairs(s), s.pairs()
    (['entities a and b: one mention (the same span 0-4) under two ids: no candidate pair'], [])
    """
    out = []
    by_spans: dict[tuple, list[Entity]] = {}
    for ent in sentence.entities:
        for other in by_spans.get(ent.spans, []):
            out.append(f"entities {one_line(other.id, 60)} and {one_line(ent.id, 60)}: one "
                       f"mention (the same span {_offsets(ent.spans)}) under two ids: no "
                       "candidate pair")
        by_spans.setdefault(ent.spans, []).append(ent)
    return out


def sentence_limits_problem(sentence: Sentence, max_entities: int | None = None,
                            max_pairs: int | None = None,
                            max_chars: int | None = None) -> str | None:
    """Why ``sentence`` holds more work than a sentence may (None when it does not).

    Parameters
    ----------
    max_entities, max_pairs, max_chars : int, optional
        Defaults :data:`MAX_ENTITIES_PER_SENTENCE`, :data:`MAX_PAIRS_PER_SENTENCE`,
        :data:`MAX_SENTENCE_CHARS`.

    Examples
    --------
    >>> ents = tuple(Entity(f"e{i}", ((i, i + 1),), "x") for i in range(4))
    >>> sentence_limits_problem(Sentence("s", "xxxx", "d", ents), max_pairs=5)
    '4 entities give 6 candidate pairs; a sentence gives at most max_pairs=5 (MAX_PAIRS_PER_SENTENCE)'
    """
    max_entities = MAX_ENTITIES_PER_SENTENCE if max_entities is None else max_entities
    max_pairs = MAX_PAIRS_PER_SENTENCE if max_pairs is None else max_pairs
    max_chars = MAX_SENTENCE_CHARS if max_chars is None else max_chars
    n = len(sentence.entities)
    pairs = n * (n - 1) // 2
    if n > max_entities:
        return (f"{n} entities (every pair of them a candidate: {pairs:,} pairs); a sentence "
                f"holds at most max_entities={max_entities} (MAX_ENTITIES_PER_SENTENCE)")
    if pairs > max_pairs:
        return (f"{n} entities give {pairs:,} candidate pairs; a sentence gives at most "
                f"max_pairs={max_pairs} (MAX_PAIRS_PER_SENTENCE)")
    if len(sentence.text) > max_chars:
        return (f"sentence of {len(sentence.text):,} characters; a sentence holds at most "
                f"{max_chars:,} (MAX_SENTENCE_CHARS): split it")
    return None


@dataclass(frozen=True)
class Sentence:
    """One sentence, its entities and (when ``labelled``) its gold interactions.

    Attributes
    ----------
    document : str
        The document id: sentences of one document belong in one cross-validation fold.
    entities : tuple of Entity
        Spans relative to ``text``; entities may nest or overlap.
    labelled : bool
        False when no gold interactions are known (prediction input).
    file, line : str or None, int or None
        Where the sentence was read.

    Examples
    --------
    >>> s = Sentence("s1", "KinC and KinD activate Spo0A", "d1",
    ...              (Entity("e0", ((0, 4),), "KinC"), Entity("e1", ((9, 13),), "KinD"),
    ...               Entity("e2", ((23, 28),), "Spo0A")),
    ...              (Interaction("e2", "e0"),))
    >>> [(p.id, p.e1.text, p.e2.text, p.label) for p in s.pairs()]
    [('s1.p0', 'KinC', 'KinD', False), ('s1.p1', 'KinC', 'Spo0A', True), ('s1.p2', 'KinD', 'Spo0A', False)]
    """

    id: str
    text: str
    document: str
    entities: tuple[Entity, ...]
    interactions: tuple[Interaction, ...] = ()
    labelled: bool = True
    file: str | None = None
    line: int | None = None

    def __post_init__(self) -> None:
        for name in ("id", "document"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"the sentence {name} must be a non-empty string, got {value!r}")
        if not isinstance(self.text, str):
            raise ValueError(f"the sentence text must be a string, got {type(self.text).__name__}")
        for what, value in (("the sentence id", self.id), ("the document id", self.document),
                            ("the sentence text", self.text)):
            problem = surrogate_problem(what, value)
            if problem:
                raise ValueError(problem)
        object.__setattr__(self, "entities", tuple(self.entities))
        object.__setattr__(self, "interactions", tuple(self.interactions))
        ids: dict[str, Entity] = {}
        for ent in self.entities:
            if not isinstance(ent, Entity):
                raise ValueError(f"entities must be Entity objects, got {type(ent).__name__}")
            if ent.id in ids:
                raise ValueError(f"entity {ent.id}: id given twice in the sentence")
            ids[ent.id] = ent
            problem = entity_problem(ent, self.text)
            if problem:
                raise ValueError(problem)
        if self.interactions and not self.labelled:
            raise ValueError("an unlabelled sentence (labelled=False) has no interactions")
        seen: set[str] = set()
        for inter in self.interactions:
            if not isinstance(inter, Interaction):
                raise ValueError(f"interactions must be Interaction objects, got {type(inter).__name__}")
            problem = interaction_problem(inter, ids)
            if problem:
                raise ValueError(problem)
            if inter.id is not None:
                if inter.id in seen:
                    raise ValueError(f"interaction {inter.id}: id given twice in the sentence")
                seen.add(inter.id)

    def pairs(self) -> list[EntityPair]:
        """Every unordered pair of distinct entities (``i < j``), pair ``k`` with the id
        ``f"{sentence.id}.p{k}"``, labelled True when an interaction joins the two, None when
        the sentence is not labelled (then two ids of one mention are no pair)."""
        joined = {frozenset((i.e1, i.e2)) for i in self.interactions}
        out: list[EntityPair] = []
        for a, b in combinations(self.entities, 2):
            if not self.labelled and a.spans == b.spans:
                continue
            label = (frozenset((a.id, b.id)) in joined) if self.labelled else None
            out.append(EntityPair(f"{self.id}.p{len(out)}", self, a, b, label))
        return out

    def __repr__(self) -> str:
        return (f"Sentence(id={self.id!r}, document={self.document!r}, "
                f"entities={len(self.entities)}, interactions={len(self.interactions)}"
                f"{'' if self.labelled else ', labelled=False'})")


@dataclass(frozen=True)
class EntityPair:
    """A candidate: two distinct entities of one sentence and whether they interact."""

    id: str
    sentence: Sentence = field(repr=False, compare=False)
    e1: Entity
    e2: Entity
    label: bool | None


class RelationCorpus(Sequence[Sentence]):
    """The sentences read from one or more files, in file order.

    Attributes
    ----------
    skipped : list of SkippedRecord
        Bad records left out (``on_error="skip"``) and relations that cannot be candidates.

    Examples
    --------
    >>> s = Sentence("s1", "A binds B", "d1", (Entity("a", ((0, 1),), "A"), Entity("b", ((8, 9),), "B")))
    >>> corpus = RelationCorpus([s])
    >>> len(corpus), corpus.documents(), [p.label for p in corpus.pairs()]
    (1, ['d1'], [False])
    """

    def __init__(self, sentences=(), skipped=(), files=()):
        self.sentences: list[Sentence] = list(sentences)
        self.skipped: list[SkippedRecord] = list(skipped)
        self.files: list[str] = list(files)

    def __getitem__(self, i):  # type: ignore[override]
        return self.sentences[i]

    def __len__(self) -> int:
        return len(self.sentences)

    def __iter__(self) -> Iterator[Sentence]:
        return iter(self.sentences)

    def pairs(self) -> list[EntityPair]:
        """The candidate pairs of every sentence, in sentence order."""
        return [p for s in self.sentences for p in s.pairs()]

    def documents(self) -> list[str]:
        """The distinct document ids, in the order of their first sentence."""
        return list(dict.fromkeys(s.document for s in self.sentences))

    def __repr__(self) -> str:
        return (f"RelationCorpus({len(self.sentences)} sentences, {len(self.documents())} documents, "
                f"{len(self.skipped)} skipped, {len(self.files)} files)")
