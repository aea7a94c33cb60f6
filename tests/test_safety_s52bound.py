"""Issue 52: the work of one sentence is bounded by the documented limits.

A candidate pair's all-paths graph spans its whole sentence, so a sentence's work grows as
its pairs times the square of its length: the readers refuse (strict) or skip and list
(lenient) a sentence longer than ``MAX_SENTENCE_CHARS``, naming file, line and sentence,
before anything is parsed.  ``benchmarks/bench_sentence_bound.py`` measures the bound.
"""

from __future__ import annotations

import json

import pytest
from test_relations_pubtator import _hand_model

from structkernels.cli import main
from structkernels.relations import corpus as corpus_mod
from structkernels.relations import read_relations
from structkernels.relations.corpus import MAX_SENTENCE_CHARS, RelationFormatError


def _record(sid: str, chars: int) -> dict:
    text = ("KinC activates SigE " + "x" * chars)[:chars]
    return {"id": sid, "document": sid, "text": text,
            "entities": [{"id": "e0", "start": 0, "end": 4},
                         {"id": "e1", "start": 15, "end": 19}],
            "interactions": [{"e1": "e0", "e2": "e1"}]}


def _jsonl(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_limit_is_the_parsers_and_bounds_the_pairs():
    from structkernels.relations import parse

    assert parse.MAX_SENTENCE_CHARS == MAX_SENTENCE_CHARS == 1_000
    assert corpus_mod.MAX_ENTITIES_PER_SENTENCE == 100


def test_a_sentence_beyond_the_character_limit_is_refused_or_skipped(tmp_path):
    f = _jsonl(tmp_path / "x.jsonl", _record("ok", MAX_SENTENCE_CHARS),
               _record("long", MAX_SENTENCE_CHARS + 1))
    with pytest.raises(RelationFormatError) as exc:
        read_relations(f)
    msg = str(exc.value)
    assert "\n" not in msg
    for part in (f"{f}:2", "long", f"{MAX_SENTENCE_CHARS + 1:,} characters",
                 f"at most {MAX_SENTENCE_CHARS:,}", "MAX_SENTENCE_CHARS"):
        assert part in msg, msg
    corpus = read_relations(f, on_error="skip")
    assert [s.id for s in corpus] == ["ok"]
    assert [(k.line, k.record) for k in corpus.skipped] == [(2, "long")]


def test_the_character_limit_is_read_at_each_call(tmp_path, monkeypatch):
    f = _jsonl(tmp_path / "x.jsonl", _record("s", 40))
    assert len(read_relations(f)) == 1
    monkeypatch.setattr(corpus_mod, "MAX_SENTENCE_CHARS", 30)
    with pytest.raises(RelationFormatError, match="at most 30 "):
        read_relations(f)


def test_cli_predict_refuses_a_too_long_sentence_in_one_line_before_parsing(tmp_path, capsys):
    f = _jsonl(tmp_path / "x.jsonl", _record("long", MAX_SENTENCE_CHARS + 20))
    model = _hand_model(tmp_path / "m.json")
    rc = main(["predict", str(model), str(f), "-o", str(tmp_path / "o.jsonl"), "--no-cache",
               "-q"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert not (tmp_path / "o.jsonl").exists()
    assert len(err.splitlines()) == 1, err
    for part in (f"{f}:1", "record long", f"at most {MAX_SENTENCE_CHARS:,}"):
        assert part in err, err
