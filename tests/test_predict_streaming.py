"""``structkernels predict`` with a relation extractor in batches: the same bytes as one
corpus read and scored at once, memory held to a batch, a stopped run taken up again
(``--resume``), parsing in several processes only where it pays (issue 39, items 2-3)."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from structkernels.cli import main
from structkernels.extraction import RelationExtractor
from structkernels.extraction._trained import TrainedExtractor
from structkernels.relations import (
    RelationBatch,
    Sentence,
    iter_relations,
    read_relations,
    write_pairs,
)
from structkernels.relations.parse import MIN_PARALLEL_PARSE, DependencyParser

sys.path.insert(0, os.path.dirname(__file__))
from test_relations_pubtator import _doc, _hand_model  # noqa: E402


# ------------------------------------------------------------------ inputs
def _jsonl(path: Path, n: int, *, bad_every: int = 0, labelled: bool = True) -> str:
    """``n`` sentences with 2 or 3 entities; every ``bad_every``-th line is not JSON."""
    names = ["KinC", "SigE", "GerE", "SpoIIID", "CotD"]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            if bad_every and i % bad_every == bad_every - 1:
                fh.write("{not json\n")
                continue
            a, b, c = names[i % 5], names[(i + 1) % 5], names[(i + 2) % 5]
            text = f"{a} activates {b} and {c} in cell {i}."
            ents = [{"id": f"e{k}", "start": text.index(w), "end": text.index(w) + len(w)}
                    for k, w in enumerate((a, b, c)[: 2 + i % 2])]
            rec = {"id": f"s{i}", "text": text, "entities": ents}
            if labelled:
                rec["interactions"] = [{"e1": "e0", "e2": "e1"}] if i % 3 == 0 else []
            fh.write(json.dumps(rec) + "\n")
    return str(path)


def _pubtator(path: Path, n: int) -> str:
    text = "\n".join(_doc(str(100 + i), ("CID\tD2\tD3",) if i % 2 else ()) for i in range(n))
    path.write_text(text, encoding="utf-8")
    return str(path)


def _key(s: Sentence) -> tuple:
    return (s.id, s.text, s.document, s.entities, s.interactions, s.labelled, s.file, s.line)


# ------------------------------------------------------------------ iter_relations
@pytest.mark.parametrize("batch_size", [1, 3, 7, 1000])
@pytest.mark.parametrize("kind", ["jsonl", "pubtator", "mixed"])
def test_batches_hold_the_sentences_of_one_read(tmp_path, batch_size, kind):
    paths = {"jsonl": [_jsonl(tmp_path / "a.jsonl", 40, bad_every=9)],
             "pubtator": [_pubtator(tmp_path / "a.pubtator", 9)],
             "mixed": [_pubtator(tmp_path / "a.pubtator", 4), _jsonl(tmp_path / "b.jsonl", 11),
                       "/nonexistent"]}[kind]
    if kind == "mixed":
        paths[-1] = _jsonl(tmp_path / "c.jsonl", 3)
        (tmp_path / "c.jsonl").write_text((tmp_path / "c.jsonl").read_text().replace('"s', '"c'))
    one = read_relations(paths, on_error="skip")
    batches = list(iter_relations(paths, batch_size=batch_size, on_error="skip"))
    assert [_key(s) for b in batches for s in b] == [_key(s) for s in one]
    assert sorted(map(str, (r for b in batches for r in b.skipped))) == sorted(map(str, one.skipped))
    assert all(isinstance(b, RelationBatch) for b in batches)
    assert [b.index for b in batches] == list(range(len(batches)))
    assert [b.start for b in batches] == list(np.cumsum([0] + [len(b) for b in batches[:-1]]))
    if kind == "jsonl" or batch_size >= 4:  # a PubTator document (4 sentences) is never split
        assert all(len(b) <= batch_size for b in batches)
    docs = [b.documents() for b in batches]
    assert sum(len(d) for d in docs) == len(one.documents())  # no document in two batches


def test_a_bad_record_raises_after_the_batches_before_it(tmp_path):
    path = _jsonl(tmp_path / "a.jsonl", 10, bad_every=7)
    got = []
    with pytest.raises(ValueError, match=r"a.jsonl:7: not valid JSON"):
        for batch in iter_relations(path, batch_size=2):
            got.append(len(batch))
    assert got == [2, 2, 2]
    with pytest.raises(ValueError, match="batch_size"):
        next(iter_relations(path, batch_size=0))


def test_memory_holds_one_batch(tmp_path):
    """20,000 records: the stream keeps at most one batch of sentences alive."""
    path = _jsonl(tmp_path / "big.jsonl", 20_000, labelled=False)
    most = 0
    for k, batch in enumerate(iter_relations(path, batch_size=500)):
        if k % 10 == 9:
            del batch
            gc.collect()
            # type() (not isinstance) never dereferences a dead weak proxy of another test;
            # only this stream's sentences count (an earlier test may keep its own alive: a
            # dask worker of the same process releases its last batch when it gets to it)
            most = max(most, sum(type(o) is Sentence and o.file == path
                                 and o.text.endswith(" in cell " + o.id[1:] + ".")
                                 for o in gc.get_objects()))
    assert k == 39 and most <= 500


# ------------------------------------------------------------------ predict, batch by batch
SCORED: list[str] = []


def _fake_scores(self, corpus):
    """A stand-in for the kernel side (no spaCy): a fixed score per pair id, recorded."""
    ids = [p.id for p in corpus.pairs()]
    SCORED.extend(ids)
    return np.asarray([int(hashlib.sha256(i.encode()).hexdigest()[:8], 16) / 2**31 - 1
                       for i in ids], dtype=np.float64)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    SCORED.clear()
    monkeypatch.setattr(TrainedExtractor, "decision_function", _fake_scores)
    # nothing to parse for the stand-in: --parse-ahead auto stays off (one core seen)
    monkeypatch.setattr("structkernels.relations.parse.effective_n_jobs", lambda n=None: 1)
    return _hand_model(tmp_path / "m.json")


def _one_shot(model: Path, inputs: list[str], fmt: str, out: Path) -> bytes:
    """What predict wrote before batches: one corpus read, scored and written at once."""
    ex = RelationExtractor.load(model, cache_dir=False, progress=False)
    corpus = read_relations(inputs, on_error="skip")
    write_pairs(corpus, ex.predict_pairs(corpus), out, fmt)
    return out.read_bytes()


@pytest.mark.parametrize("fmt", ["jsonl", "pubtator", "bioc-json"])
def test_batches_write_the_bytes_of_one_run(fake, tmp_path, capsys, fmt):
    src = [_pubtator(tmp_path / "in.pubtator", 7)] if fmt != "jsonl" else [
        _jsonl(tmp_path / "a.jsonl", 30, bad_every=11), _jsonl(tmp_path / "b.jsonl", 0)]
    if fmt == "jsonl":
        (tmp_path / "b.jsonl").write_text(
            (tmp_path / "a.jsonl").read_text().replace('"s', '"t'))
    want = _one_shot(fake, src, fmt, tmp_path / "want")
    for batch_size in (1, 4, 9, 1000):
        out = tmp_path / f"out{batch_size}"
        argv = ["predict", "--model", str(fake), *src, "-o", str(out), "--output-format", fmt,
                "--batch-size", str(batch_size), "--skip-bad", "--no-cache", "--quiet"]
        assert main(argv) == 0, capsys.readouterr().err
        assert out.read_bytes() == want, batch_size
        assert not (tmp_path / f"out{batch_size}.partial").exists()
    err = capsys.readouterr().err
    assert err.count("scored") == 4 and "batch 1:" not in err
    if fmt == "jsonl":
        assert "F1" in err and len(set(SCORED)) == len(SCORED) // 5  # every pair, once a run


def test_stdout_is_written_batch_by_batch_with_progress(fake, tmp_path, capsys):
    src = _jsonl(tmp_path / "a.jsonl", 25)
    want = _one_shot(fake, [src], "jsonl", tmp_path / "want")
    assert main(["predict", "--model", str(fake), src, "--batch-size", "10", "--no-cache"]) == 0
    got = capsys.readouterr()
    assert got.out.encode() == want
    lines = [ln for ln in got.err.splitlines() if "structkernels predict: batch" in ln]
    assert [ln.split(":")[1].strip() for ln in lines] == ["batch 1", "batch 2", "batch 3"]
    assert "10 sentences" in lines[0] and "25 sentences" in lines[2] and "sentences/s" in lines[2]


def _Stop(at: int):
    """A scorer that stops the run (Ctrl-C) when asked for its ``at``-th batch."""
    calls = []

    def scores(extractor, corpus):
        calls.append(1)
        if len(calls) == at:
            raise KeyboardInterrupt
        return _fake_scores(extractor, corpus)

    return scores


@pytest.mark.parametrize("fmt", ["jsonl", "pubtator"])
def test_resume_after_an_interruption(fake, tmp_path, capsys, monkeypatch, fmt):
    src = (_jsonl(tmp_path / "a.jsonl", 20) if fmt == "jsonl"
           else _pubtator(tmp_path / "a.pubtator", 6))
    want = _one_shot(fake, [src], fmt, tmp_path / "want")
    out = tmp_path / "out"
    argv = ["predict", "--model", str(fake), src, "-o", str(out), "--output-format", fmt,
            "--batch-size", "4", "--no-cache", "--quiet", "--resume"]
    monkeypatch.setattr(TrainedExtractor, "decision_function", _Stop(3))
    assert main(argv) == 130
    partial, progress = Path(f"{out}.partial"), Path(f"{out}.partial.progress")
    assert not out.exists() and partial.exists()
    assert json.loads(progress.read_text())["state"]["batches"] == 2
    assert want.startswith(partial.read_bytes()) and partial.stat().st_size > 0
    partial.write_bytes(partial.read_bytes() + b"half a batch")  # a batch cut short
    monkeypatch.setattr(TrainedExtractor, "decision_function", _fake_scores)
    SCORED.clear()
    assert main(argv) == 0, capsys.readouterr().err
    assert out.read_bytes() == want
    assert not partial.exists() and not progress.exists()
    first = [s.id for s in read_relations(src)][:8]  # the two batches written before
    assert SCORED and not any(p.rsplit(".p", 1)[0] in first for p in SCORED)
    err = capsys.readouterr().err
    assert "scored" in err and "resuming" not in err  # --quiet


def test_resume_refused_on_changed_input_or_stdout(fake, tmp_path, capsys, monkeypatch):
    src = _jsonl(tmp_path / "a.jsonl", 20)
    out = tmp_path / "out.jsonl"
    argv = ["predict", "--model", str(fake), src, "-o", str(out), "--batch-size", "4",
            "--no-cache", "--quiet", "--resume"]
    monkeypatch.setattr(TrainedExtractor, "decision_function", _Stop(2))
    assert main(argv) == 130
    capsys.readouterr()
    _jsonl(tmp_path / "a.jsonl", 21)
    monkeypatch.setattr(TrainedExtractor, "decision_function", _fake_scores)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot resume" in err and not out.exists()
    for bad in (["-o", "-"], ["--batch-size", "5", "-o", str(out)]):
        assert main([*argv[:-1], "--resume", *bad]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1
        assert ("standard output" in err) if bad[1] == "-" else ("cannot resume" in err)
    # without --resume the old partial is replaced, and removed on an interruption
    monkeypatch.setattr(TrainedExtractor, "decision_function", _Stop(2))
    assert main(argv[:-1]) == 130
    assert not Path(f"{out}.partial").exists() and not Path(f"{out}.partial.progress").exists()


def test_bioc_output_cannot_resume(fake, tmp_path, capsys):
    src = _pubtator(tmp_path / "a.pubtator", 2)
    assert main(["predict", "--model", str(fake), src, "-o", str(tmp_path / "o.xml"),
                 "--output-format", "bioc-xml", "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "written whole at the end" in err


# ------------------------------------------------------------------ parsing in processes
def test_several_processes_only_for_enough_sentences():
    p = DependencyParser(cache_dir=False, n_process=2)
    assert p.processes(MIN_PARALLEL_PARSE - 1) == 1 and p.processes(MIN_PARALLEL_PARSE) == 2
    auto = DependencyParser(cache_dir=False, n_process=None, min_parallel=10)
    from structkernels.utils import effective_n_jobs

    assert auto.processes(10) == min(effective_n_jobs(None), 10) and auto.processes(9) == 1
    with pytest.raises(ValueError, match="n_process"):
        DependencyParser(cache_dir=False, n_process=0)
    ex = RelationExtractor(cache_dir=False, n_process=3)
    assert ex._parser().n_process == 3


@pytest.fixture(scope="module")
def spacy_pipeline():
    pytest.importorskip("spacy", reason="predicting needs spaCy (the parse extra)")
    from structkernels.relations.parse import load_pipeline

    try:
        load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")


def test_parsed_batches_match_one_run(spacy_pipeline, tmp_path, capsys):
    """With the real parser and kernels: batches of 1 sentence, and of all, agree."""
    model = _hand_model(tmp_path / "m.json")
    src = _pubtator(tmp_path / "in.pubtator", 2)
    outs = []
    for batch_size in ("1", "1000"):
        out = tmp_path / f"o{batch_size}.jsonl"
        assert main(["predict", "--model", str(model), src, "-o", str(out), "--batch-size",
                     batch_size, "--cache-dir", str(tmp_path / "cache"), "-q"]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n") == len(read_relations(src).pairs())
