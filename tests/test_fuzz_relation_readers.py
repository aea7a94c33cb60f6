"""Fuzzing the relation readers (issue 37): BRAT, JSON Lines and interaction XML.

Random texts with byte-order marks, mixed line ends (``\\n``, ``\\r\\n``, a lone ``\\r``,
U+2028, U+0085, form feeds), lone surrogates, overlapping and duplicated spans, white-space
and out-of-range offsets, wrong entity texts and crowded sentences.  The properties:

- strict mode returns the corpus or raises the one format error, on one line, naming the
  file and (for a record) the line of the first bad record;
- lenient mode never raises, keeps exactly the good sentences and lists every skip on one
  line naming its file; strict mode refuses whenever lenient mode skipped;
- the offsets of every entity read slice its sentence's text to the entity's text, and,
  for BRAT, the document's text (a BOM counted as brat counts it) at the ``.ann`` offsets;
- BRAT sentences are brat's lines (ending at ``\\n`` only).

Budget: a few seconds (``READERS``: 40 examples each; ``STRUCTKERNELS_FUZZ_LONG=1`` for more).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import warnings
from pathlib import Path
from xml.sax.saxutils import quoteattr

from _fuzz_strategies import FUZZ
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structkernels.relations import (
    RelationFormatError,
    read_brat,
    read_interaction_xml,
    read_relations_jsonl,
)
from structkernels.relations.corpus import span_text

READERS = settings(
    FUZZ, max_examples=400 if FUZZ.max_examples > 1000 else 40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WORDS = ["KinC", "SigE", "binds", "and", "GerE", "δ-cat", "x", "Ras"]
#: Defects of a sentence; None is a good sentence.
DEFECTS = [None, None, None, "text", "blank", "dup_rel", "range", "crowded"]
MAX_ENTITIES = 6  # the readers' max_entities in these tests: "crowded" holds 7


@contextlib.contextmanager
def _folder():
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def _check_error(exc: RelationFormatError, file: Path, line: int | None) -> None:
    msg = str(exc)
    assert "\n" not in msg and "\r" not in msg and "\u2028" not in msg, msg
    msg.encode("utf-8")
    assert str(file) in msg, msg
    if line is not None:
        assert exc.line == line and f"{file}:{line}:" in msg, (line, msg)


@st.composite
def segments(draw) -> list[str]:
    """Words of a line, joined by one or two spaces (sometimes none at all)."""
    return [draw(st.sampled_from(WORDS)) for _ in range(draw(st.integers(0, 4)))]


def _sentence(draw, words: list[str], defect: str | None, sid: str):
    """``(text, entities, relations)`` of one sentence: entities ``(id, start, end, text)``
    relative to ``text``, relations ``(id, e1, e2)``; ``defect`` made in it."""
    if defect == "crowded":
        words = (words + WORDS)[: MAX_ENTITIES + 1]
    if defect in ("blank", "dup_rel") and len(words) < 2:
        words = words + ["Ras", "GerE"]
    gap = draw(st.sampled_from([" ", "  "]))
    text, spans = "", []
    for w in words:
        if text:
            text += gap
        spans.append((len(text), len(text) + len(w)))
        text += w
    ents = []
    for k, (s, e) in enumerate(spans):
        if defect == "crowded" or draw(st.booleans()):
            ents.append((f"{sid}e{k}", s, e, text[s:e]))
    if len(spans) >= 2 and draw(st.booleans()):  # overlapping the one-word entities
        (s, _), (_, e) = spans[0], spans[1]
        ents.append((f"{sid}o", s, e, text[s:e]))
    rels = []
    good = list(ents)
    for k in range(min(2, len(good) // 2)):
        a, b = draw(st.sampled_from(good)), draw(st.sampled_from(good))
        if a[1:3] != b[1:3]:
            rels.append((f"{sid}r{k}", a[0], b[0]))
    if defect == "text":
        s, e = spans[0] if spans else (0, 0)
        if not spans:
            text, s, e = "KinC", 0, 4
        ents.append((f"{sid}t", s, e, text[s:e] + "Z"))
    elif defect == "blank":
        s = spans[0][1]
        ents.append((f"{sid}b", s, s + 1, " "))
    elif defect == "dup_rel":
        s, e = spans[0]
        ents += [(f"{sid}d1", s, e, text[s:e]), (f"{sid}d2", s, e, text[s:e])]
        rels.append((f"{sid}rd", f"{sid}d1", f"{sid}d2"))
    elif defect == "range":
        ents.append((f"{sid}g", len(text) + 5, len(text) + 9, "KinC"))
    return text, ents, rels


# ------------------------------------------------------------------ JSON Lines
@READERS
@given(st.lists(st.tuples(segments(), st.sampled_from(DEFECTS + ["surrogate"]),
                          st.sampled_from(["", "\u2028", "\r", "\x85", "\ufeff"])),
                min_size=1, max_size=5), st.booleans(), st.data())
def test_jsonl_strict_names_the_first_bad_line_lenient_keeps_the_good(rows, bom, data):
    lines, good, first_bad = [], [], None
    for i, (words, defect, extra) in enumerate(rows):
        sid = f"s{i}"
        text, ents, rels = _sentence(data.draw, words, defect, sid)
        text = extra + text  # other line ends and a BOM are text in a record
        ents = [(eid, s + len(extra), e + len(extra), t) for eid, s, e, t in ents]
        if defect == "surrogate":
            text += "\ud800"
        rec = {"id": sid, "document": f"d{i}", "text": text,
               "entities": [{"id": eid, "start": s, "end": e, "text": t} for eid, s, e, t in ents],
               "interactions": [{"id": rid, "e1": a, "e2": b} for rid, a, b in rels]}
        lines.append(json.dumps(rec))  # ASCII: a lone surrogate is written as its escape
        if defect is None:
            good.append(sid)
        elif first_bad is None:
            first_bad = i + 1
    with _folder() as tmp:
        f = tmp / "x.jsonl"
        f.write_bytes((b"\xef\xbb\xbf" if bom else b"") + "\n".join(lines).encode() + b"\n")
        try:
            strict = read_relations_jsonl(f, max_entities=MAX_ENTITIES)
        except RelationFormatError as exc:
            _check_error(exc, f, first_bad)
        else:
            assert first_bad is None and [s.id for s in strict] == good
        lenient = read_relations_jsonl(f, on_error="skip", max_entities=MAX_ENTITIES)
        assert [s.id for s in lenient] == good
        assert len(lenient.skipped) == len(rows) - len(good)
        for k in lenient.skipped:
            assert k.file == str(f) and "\n" not in str(k)
        _check_slices(lenient)


def _check_slices(corpus) -> None:
    for s in corpus:
        for e in s.entities:
            assert span_text(s.text, e.spans) == e.text and e.text.strip()
        assert "\ud800" not in s.text
        assert len(s.entities) <= MAX_ENTITIES


# ------------------------------------------------------------------ interaction XML
@READERS
@given(st.lists(st.tuples(segments(), st.sampled_from(DEFECTS),
                          st.sampled_from(["", "\u2028", "\r", "\n", "\x85"])),
                min_size=1, max_size=5), st.data())
def test_xml_strict_names_the_first_bad_sentence_lenient_keeps_the_good(rows, data):
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<corpus source="F">']
    good, first_bad = [], None
    for i, (words, defect, extra) in enumerate(rows):
        sid = f"F.d{i}.s0"
        text, ents, rels = _sentence(data.draw, words, defect, f"F.d{i}.")
        text = extra + text
        ents = [(eid, s + len(extra), e + len(extra), t) for eid, s, e, t in ents]
        body = "".join(f"<entity id={quoteattr(eid)} charOffset=\"{s}-{e}\" text={quoteattr(t)}/>"
                       for eid, s, e, t in ents)
        body += "".join(f'<interaction id="{rid}" e1="{a}" e2="{b}"/>' for rid, a, b in rels)
        out.append(f'<document id="F.d{i}"><sentence id="{sid}" text={quoteattr(text)}>{body}'
                   "</sentence></document>")
        if defect is None:
            good.append(sid)
        elif first_bad is None:
            first_bad = i + 3
    out.append("</corpus>")
    with _folder() as tmp:
        f = tmp / "x.xml"
        f.write_text("\n".join(out), encoding="utf-8")
        try:
            strict = read_interaction_xml(f, max_entities=MAX_ENTITIES)
        except RelationFormatError as exc:
            _check_error(exc, f, first_bad)
        else:
            assert first_bad is None and [s.id for s in strict] == good
        lenient = read_interaction_xml(f, on_error="skip", max_entities=MAX_ENTITIES)
        assert [s.id for s in lenient] == good
        assert len(lenient.skipped) == len(rows) - len(good)
        for k in lenient.skipped:
            assert k.file == str(f) and "\n" not in str(k)
        _check_slices(lenient)


# ------------------------------------------------------------------ BRAT
OTHER_ENDS = ["\r", "\u2028", "\x85", "\x0c", "\x1c"]  # brat: text inside a line


@READERS
@given(st.lists(st.tuples(segments(), st.sampled_from(DEFECTS),
                          st.sampled_from(["\n", "\n", "\r\n", *OTHER_ENDS])),
                min_size=1, max_size=5), st.booleans(), st.sampled_from(["lines", "document"]),
       st.data())
def test_brat_offsets_and_lines_follow_brat(rows, bom, how, data):
    # the document: segments joined by their line ends; a brat line ends at \n only, so a
    # segment ended by another line end belongs to the brat line of the next one
    text = "\ufeff" if bom else ""
    ents, rels, where = [], [], []  # where: (start, end, defect) of each segment
    for i, (words, defect, end) in enumerate(rows):
        seg, e_, r_ = _sentence(data.draw, words, defect, f"T{i}x")
        start = len(text)
        for eid, s, e, t in e_:
            if defect == "range" and eid.endswith("g"):
                s, e = s + 10_000, e + 10_000  # outside the document
            ents.append((eid, start + s, start + e, t))
        rels += r_
        where.append((start, start + len(seg), defect))
        text += seg + end
    ids = {eid: f"T{k + 1}" for k, (eid, *_rest) in enumerate(ents)}
    ann = "".join(f"{ids[eid]}\tProtein {s} {e}\t{t}\n" for eid, s, e, t in ents)
    ann += "".join(f"R{k + 1}\tPPI Arg1:{ids[a]} Arg2:{ids[b]}\n" for k, (_, a, b) in enumerate(rels))
    # brat's sentences and the ones a defect leaves out
    first = 1 if bom else 0
    if how == "document":
        bounds = [(first, len(text))]
    else:
        bounds, pos = [], 0
        for line in text.split("\n"):
            end = pos + len(line) - line.endswith("\r")
            bounds.append((max(pos, first), end))
            pos += len(line) + 1

    def sentence_of(pos: int) -> int:
        return next(k for k, (s, e) in enumerate(bounds) if s <= pos <= e)

    bad_lines = {sentence_of(s) for s, _, d in where if d in ("text", "blank", "dup_rel", "crowded")}
    n_ents: dict[int, int] = {}
    for _, s, _e, _ in ents:
        if s < len(text):  # not the out-of-range one, left out alone
            n_ents[sentence_of(s)] = n_ents.get(sentence_of(s), 0) + 1
    bad_lines |= {k for k, n in n_ents.items() if n > MAX_ENTITIES}  # merged lines too
    expected = [text[s:e] for k, (s, e) in enumerate(bounds)
                if (how == "document" or text[s:e].strip()) and k not in bad_lines]
    any_bad = any(d is not None for _, _, d in where) or any(n > MAX_ENTITIES for n in n_ents.values())
    other_ends = how == "lines" and any(c in text.replace("\r\n", "\n") for c in OTHER_ENDS)
    with _folder() as tmp:
        (tmp / "doc.txt").write_bytes(text.encode("utf-8"))
        (tmp / "doc.ann").write_text(ann, encoding="utf-8")
        for mode in ("raise", "skip"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    corpus = read_brat(tmp, on_error=mode, sentences=how, max_entities=MAX_ENTITIES)
                except RelationFormatError as exc:
                    assert mode == "raise" and any_bad
                    _check_error(exc, tmp / "doc.ann" if exc.file.endswith(".ann") else tmp / "doc.txt",
                                 exc.line)
                    continue
            named = [w for w in caught if "brat does not count" in str(w.message)]
            assert len(named) == int(other_ends)
            for w in named:
                assert "\n" not in str(w.message) and f"{tmp / 'doc.txt'}:" in str(w.message)
            if mode == "raise":
                assert not any_bad
            assert [s.text for s in corpus] == expected
            _check_slices(corpus)
            offsets = {eid: (s, e) for eid, s, e, _ in ents}
            by_ann = {ids[k]: v for k, v in offsets.items()}
            for s in corpus:
                for e in s.entities:
                    ds, de = by_ann[e.id]
                    assert text[ds:de] == e.text  # brat's offsets, the BOM counted
            for k in corpus.skipped:
                assert "\n" not in str(k) and str(tmp) in str(k)
