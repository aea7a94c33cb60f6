"""Parsing the next batch in a child process while one is scored (issue 39, item 1): the
child process helper, the background parser, and ``predict --parse-ahead`` giving the bytes
of a run that parses each batch in turn."""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from pathlib import Path

import pytest

from structkernels.cli import main
from structkernels.engine.parallel import ChildProcess, call_in_child
from structkernels.extraction.stream import predict_stream
from structkernels.relations import iter_relations, read_relations

sys.path.insert(0, os.path.dirname(__file__))
from test_train_extractor import _fit, _records, _write  # noqa: E402


def _warn_and_square(x: int) -> int:
    warnings.warn(f"squaring {x}", UserWarning, stacklevel=1)
    return x * x


def _fail(x: int) -> int:
    raise ValueError(f"no {x}")


# ------------------------------------------------------------------ the child process
def test_child_process_runs_calls_in_order_and_gives_their_warnings():
    with ChildProcess() as child:
        calls = [child.submit(_warn_and_square, n) for n in (2, 3)]
        failing = child.submit(_fail, 7)
        last = child.submit(math.factorial, 5)
        with pytest.warns(UserWarning, match="squaring 2"):
            assert calls[0].result() == 4
        with pytest.warns(UserWarning, match="squaring 3"):
            assert calls[1].result() == 9
        with pytest.raises(ValueError, match="no 7"):
            failing.result()
        assert last.result() == 120 and last.done()  # the child goes on after an error
    assert call_in_child(math.factorial, 4) == 24


def _interrupt_ignored() -> bool:
    import signal

    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


@pytest.fixture
def sigint_handled():
    """Ctrl-C handled by Python in this process, as in a terminal.  A job started in the
    background by a shell without job control (``cmd &`` in a script) ignores SIGINT, and
    a spawned child inherits that, whatever it is asked; the test sets the terminal case."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_child_that_works_ahead_leaves_ctrl_c_to_the_caller(sigint_handled):
    with ChildProcess(interrupt=False) as child:
        assert child.submit(_interrupt_ignored).result() is True
    with ChildProcess() as child:
        assert child.submit(_interrupt_ignored).result() is False


def test_a_child_of_a_background_job_ignores_ctrl_c_as_its_caller_does():
    import signal

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with ChildProcess() as child:
            assert child.submit(_interrupt_ignored).result() is True
    finally:
        signal.signal(signal.SIGINT, before)


# ------------------------------------------------------------------ parse ahead
@pytest.fixture(scope="module")
def extractor(tmp_path_factory):
    pytest.importorskip("spacy", reason="parsing needs spaCy (the parse extra)")
    from structkernels.relations.parse import load_pipeline

    try:
        load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")
    d = tmp_path_factory.mktemp("parse-ahead")
    return _fit(_write(d / "train.jsonl", _records(0, 6, "tr")))


@pytest.fixture(scope="module")
def lll_jsonl(ppi_corpora, tmp_path_factory) -> str:
    """LLL-train as JSON Lines (read a batch at a time; the XML is read a file at a time)."""
    path = tmp_path_factory.mktemp("lll") / "lll.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for s in read_relations(ppi_corpora / "LLL-train.xml"):
            fh.write(json.dumps({
                "id": s.id, "text": s.text, "document": s.document,
                "entities": [{"id": e.id, "spans": [list(x) for x in e.spans]}
                             for e in s.entities],
                "interactions": [{"e1": i.e1, "e2": i.e2} for i in s.interactions]}) + "\n")
    return str(path)


def _batches(source: str, size: int):
    return iter_relations(source, batch_size=size)


def test_background_parser_gives_the_parses_of_the_parser(extractor, ppi_corpora):
    from structkernels.relations.parse import BackgroundParser

    sentences = [s for s in read_relations(ppi_corpora / "LLL-test.xml") if len(s.entities) > 1]
    sentences = sentences[:12]
    parser = extractor.parser()
    with BackgroundParser(parser) as background:
        call = background.submit(sentences)
        info = background.submit_pipeline_info().result()
        got = call.result()
        assert call.done()
    want = parser.parse(sentences)
    assert info == parser.pipeline_info()
    assert [p.id for p in got] == [s.id for s in sentences]
    for a, b in zip(got, want, strict=True):
        assert a.token_spans == b.token_spans and a.entities == b.entities
        ga, gb = a.graph.graph, b.graph.graph
        assert dict(ga.nodes(data=True)) == dict(gb.nodes(data=True))
        assert sorted(ga.edges(data="role")) == sorted(gb.edges(data="role"))
    with pytest.raises(TypeError, match="DependencyParser"):
        BackgroundParser("en_core_web_sm")


def test_stream_parsed_ahead_gives_the_rows_of_one_batch_at_a_time(extractor, lll_jsonl):
    source = lll_jsonl
    ahead = [(b.index, rows) for b, rows in predict_stream(
        extractor, _batches(source, 7), parse_ahead=True)]
    here = [(b.index, rows) for b, rows in predict_stream(
        extractor, _batches(source, 7), parse_ahead=False)]
    assert len(ahead) > 3 and ahead == here
    assert extractor.prepare() is extractor  # the references, prepared once, are kept
    whole = extractor.predict_pairs(read_relations(source))
    streamed = [r for _, rows in ahead for r in rows]
    # the rows of one call on the whole corpus, to the bit: a pair's score does not depend
    # on its batch
    assert streamed == whole


def test_a_batch_larger_than_a_chunk_is_parsed_and_scored_a_chunk_at_a_time(
        extractor, lll_jsonl, monkeypatch):
    from structkernels.extraction import stream
    from structkernels.relations.parse import BackgroundParser

    sizes = []
    submit = BackgroundParser.submit

    def spy(self, sentences):
        sizes.append(len(sentences))
        return submit(self, sentences)

    monkeypatch.setattr(BackgroundParser, "submit", spy)
    monkeypatch.setattr(stream, "CHUNK", 5)
    here = [(b.index, rows) for b, rows in predict_stream(
        extractor, _batches(lll_jsonl, 12), parse_ahead=False)]
    assert sizes == []
    ahead = [(b.index, rows) for b, rows in predict_stream(
        extractor, _batches(lll_jsonl, 12), parse_ahead=True)]
    # each batch of 12 went to the child as chunks of 5, 5 and 2 (its sentences with a
    # pair), and its rows come together, those of the batch scored whole
    assert len(sizes) >= 3 * (len(ahead) - 1) and max(sizes) <= 5
    assert [b for b, _ in ahead] == [b for b, _ in here] and ahead == here
    # one batch of more than a chunk is parsed ahead by default too (two cores or more),
    # an empty stream or one of a single chunk is not
    monkeypatch.setattr(stream, "parse_ahead_pays", lambda: True)
    sizes.clear()
    one = [(b.index, rows) for b, rows in predict_stream(extractor, _batches(lll_jsonl, 10 ** 6))]
    assert len(sizes) > 1 and max(sizes) <= 5
    assert [r for _, rows in one for r in rows] == [r for _, rows in here for r in rows]
    sizes.clear()
    assert list(predict_stream(extractor, [])) == []
    monkeypatch.setattr(stream, "CHUNK", 10 ** 6)
    single = [(b.index, rows) for b, rows in predict_stream(extractor, _batches(lll_jsonl, 10 ** 6))]
    assert sizes == [] and single == one


@pytest.mark.parametrize("parse_ahead", [True, False])
def test_a_read_error_comes_after_the_batches_before_it(extractor, lll_jsonl, parse_ahead):
    good = list(_batches(lll_jsonl, 5))[:3]

    def batches():
        yield from good
        raise ValueError("in.jsonl:99: record x: broken")

    seen = []
    with pytest.raises(ValueError, match="broken"):
        for batch, rows in predict_stream(extractor, batches(), parse_ahead=parse_ahead):
            seen.append((batch.index, len(rows)))
    assert [i for i, _ in seen] == [0, 1, 2]


def test_predict_parse_ahead_on_and_off_write_the_same_bytes(extractor, lll_jsonl, tmp_path,
                                                              capsys):
    model = tmp_path / "m.json"
    extractor.save(model)
    source = lll_jsonl
    out = {}
    for mode, size in (("on", "6"), ("off", "6"), ("auto", "6"), ("on", "1"), ("off", "1000")):
        path = tmp_path / f"{mode}{size}.jsonl"
        assert main(["predict", "--model", str(model), source, "-o", str(path),
                     "--batch-size", size, "--no-cache", "--quiet", "--parse-ahead", mode]) == 0
        out[mode, size] = Path(path).read_bytes()
    # the same bytes whichever way, and whatever the batches: a pair's score is its own
    assert len(set(out.values())) == 1 and out["on", "6"].count(b"\n") > 100
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["predict", "--model", str(model), source, "-o", str(tmp_path / "x.jsonl"),
              "--parse-ahead", "maybe"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--parse-ahead" in err


def test_a_background_parser_of_another_pipeline_is_refused(extractor):
    from structkernels.relations.parse import BackgroundParser, DependencyParser

    with BackgroundParser(DependencyParser("xx_other_pipeline", cache_dir=False)) as bg:
        with pytest.raises(ValueError, match="not the extractor's"):
            list(predict_stream(extractor, [], background=bg))


def test_the_command_line_batch_size_is_the_streams_default():
    from structkernels.cli import build_parser
    from structkernels.formats.batches import DEFAULT_BATCH_SIZE

    args = build_parser("predict").parse_args(["predict", "m", "d"])
    assert args.batch_size == DEFAULT_BATCH_SIZE == 250


def test_terminate_abandons_the_running_call_and_cancels_the_rest():
    import time

    child = ChildProcess(interrupt=False)
    running = child.submit(time.sleep, 600)  # close() would wait for it; terminate does not
    queued = child.submit(math.factorial, 5)
    child.terminate()
    with pytest.raises(Exception):  # noqa: B017  (the pool's BrokenProcessPool or CancelledError)
        running.result()
    with pytest.raises(Exception):  # noqa: B017
        queued.result()
    child.terminate()  # twice, or never started: nothing to do
    ChildProcess().terminate()


# ------------------------------------------------------------ the child started early
class _Child:
    """A stand-in for a BackgroundParser: its parser's settings, whether it was closed."""

    def __init__(self, pipeline, cache_dir=None):
        self.parser = type("P", (), {"pipeline": pipeline, "cache_dir": cache_dir})()
        self.closed = False

    def close(self):
        self.closed = True

    abandon = close


def test_the_early_child_is_kept_for_the_models_pipeline_and_closed_otherwise(monkeypatch):
    from structkernels.extraction import prediction as px

    started = []
    monkeypatch.setattr(px, "_started", lambda pipeline, cache, n_process: started.append(
        (pipeline, cache)) or _Child(pipeline, cache))
    doc = {"params": {"pipeline": "en_core_web_sm"}}
    early = _Child("en_core_web_sm")
    on = "parse-ahead"
    assert px._warm_parser(doc, None, early, on, None) is early and not early.closed
    assert not started
    # another pipeline or parse cache: the early child goes, one of the model's comes
    for other, cache in ((_Child("en_core_web_md"), None), (_Child("en_core_web_sm"), "/x")):
        got = px._warm_parser(doc, cache, other, on, None)
        assert other.closed and got.parser.pipeline == "en_core_web_sm"
        assert got.parser.cache_dir == cache
    # no pipeline in the model, or no parsing ahead asked: the early child closed, none kept
    for backend, d in ((on, {"params": {}}), ("in-process", doc)):
        other = _Child("en_core_web_sm")
        assert px._warm_parser(d, None, other, backend, None) is None and other.closed


def test_no_early_child_where_none_may_parse(monkeypatch, extractor, tmp_path):
    import gzip

    from structkernels.extraction import EXTRACTOR_FORMAT
    from structkernels.extraction import prediction as px

    assert px.EXTRACTOR_FORMAT_NAME == EXTRACTOR_FORMAT
    model = tmp_path / "m.json.gz"
    extractor.save(model)
    plain = tmp_path / "m.json"
    plain.write_bytes(gzip.decompress(model.read_bytes()))
    npk = tmp_path / "npk.json"
    npk.write_text(json.dumps({"format": "structkernels-npk-model", "version": 1}))
    assert px.names_an_extractor(str(model)) and px.names_an_extractor(str(plain))
    for other in (npk, tmp_path / "missing.json", tmp_path):
        assert not px.names_an_extractor(str(other))
    m = str(model)
    monkeypatch.setattr(px, "_started", lambda pipeline, cache, n_process: (pipeline, cache))
    on = "parse-ahead"
    assert px.early_parser(m, backend="in-process") is None
    assert px.early_parser(m, backend="dask") is None
    assert px.early_parser(str(npk), backend=on) is None  # a train-npk model parses nothing
    monkeypatch.setattr("structkernels.relations.parse.effective_n_jobs", lambda n=None: 1)
    assert px.early_parser(m, backend="auto") is None  # one core: no overlap
    assert px.early_parser(m, backend=on) == ("en_core_web_sm", None)  # on: asked for
    assert px.early_parser(m, backend=on, cache_dir=False) == ("en_core_web_sm", False)
    blocked = tmp_path / "file"
    blocked.write_text("x")  # a file where the cache folder would be: its warning comes later
    assert px.early_parser(m, backend=on, cache_dir=str(blocked)) is None


def test_a_failing_command_closes_the_early_child(monkeypatch, extractor, lll_jsonl, tmp_path):
    from structkernels.extraction import prediction as px

    children = []

    def fake_early(model_path, **settings):
        children.append(_Child("en_core_web_sm"))
        return children[-1]

    monkeypatch.setattr(px, "early_parser", fake_early)
    model = tmp_path / "m.json"
    extractor.save(model)
    # a bad option found once the model is read, a model that is not there: exit 2, and
    # the child started before either is closed
    assert main(["predict", "--model", str(model), lll_jsonl, "-o", "-", "--resume"]) == 2
    assert main(["predict", "--model", str(tmp_path / "none.json"), lll_jsonl, "-o",
                 str(tmp_path / "o.jsonl")]) == 2
    assert len(children) == 2 and all(c.closed for c in children)
