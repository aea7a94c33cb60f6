"""``structkernels predict --dask`` and :func:`predict` with ``backend="dask"``: relation
extraction on a dask cluster, the model sent to each worker once, the output the bytes of a
local run, merged or one file per partition (issue 39, item 4).

The cluster is a :class:`~distributed.LocalCluster` of two in-process workers of one
thread each (``processes=False``): the workers share this process's compiled kernels and
spaCy pipeline, so the tests stay fast; the command line reaches it by its address."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

distributed = pytest.importorskip(
    "distributed", reason="the dask route needs dask.distributed (the distributed extra)")

from structkernels.cli import main  # noqa: E402
from structkernels.extraction import RelationExtractor, predict  # noqa: E402
from structkernels.extraction._trained import TrainedExtractor  # noqa: E402
from structkernels.extraction.distributed import (  # noqa: E402
    SchedulerError,
    parse_scheduler,
    scored_partitions,
)
from structkernels.relations import iter_relations, read_relations  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from test_predict_streaming import _fake_scores, _jsonl, _pubtator, _Stop  # noqa: E402
from test_relations_pubtator import _hand_model  # noqa: E402


@pytest.fixture(scope="module")
def spacy_pipeline():
    pytest.importorskip("spacy", reason="predicting needs spaCy (the parse extra)")
    from structkernels.relations.parse import load_pipeline

    try:
        load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def lll(spacy_pipeline, ppi_corpora, tmp_path_factory):
    """A model trained on LLL-train (about 150 references), its parse cache and LLL-test."""
    folder = tmp_path_factory.mktemp("lll")
    cache = folder / "cache"
    ex = RelationExtractor(cache_dir=cache, progress=False, n_jobs=1)
    ex.fit(read_relations(ppi_corpora / "LLL-train.xml"))
    model = folder / "lll.json.gz"
    ex.save(model)
    return model, cache, str(ppi_corpora / "LLL-test.xml")


def _local(model: Path, inputs: list[str], out: Path, *extra: str) -> bytes:
    """What ``predict`` writes without a cluster."""
    assert main(["predict", "--model", str(model), *inputs, "-o", str(out), "-q", *extra]) == 0
    return out.read_bytes()


# ------------------------------------------------------------------ the bytes of a local run
def test_lll_on_the_cluster_writes_the_local_bytes(lll, client, tmp_path, capsys):
    model, cache, test = lll
    cache_args = ["--cache-dir", str(cache)]
    for extra in ([], ["--threshold", "0.25"]):
        want = _local(model, [test], tmp_path / "want.jsonl", "--batch-size", "5",
                      *cache_args, *extra)
        assert want.count(b"\n") == len(read_relations(test).pairs()) == 61
        out = tmp_path / "dask.jsonl"
        argv = ["predict", "--model", str(model), test, "-o", str(out), "--batch-size", "5",
                "--dask", client.scheduler.address, *cache_args, *extra]
        assert main(argv) == 0, capsys.readouterr().err
        assert out.read_bytes() == want, extra
        err = capsys.readouterr().err
        assert "scored 61 entity pairs of 12 sentences" in err and "batch 3:" in err
    # the Python API, another partition size: the same bytes (a pair's score is its own)
    want = _local(model, [test], tmp_path / "want0.jsonl", *cache_args)
    info = predict([test], tmp_path / "api.jsonl", model, backend="dask", client=client,
                   batch_size=4, cache_dir=cache, progress=False)
    assert (tmp_path / "api.jsonl").read_bytes() == want
    assert (info["sentences"], info["pairs"], info["partitions"]) == (12, 61, 3)
    assert info["f1"] is not None and 0.5 < info["f1"] <= 1
    assert sum(w["partitions"] for w in info["workers"].values()) == 3


def test_one_file_per_partition(lll, client, tmp_path):
    model, cache, test = lll
    want = _local(model, [test], tmp_path / "want.jsonl", "--cache-dir", str(cache))
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-00009.jsonl").write_text("left by an earlier run\n")
    (parts / "notes.txt").write_text("the user's\n")
    info = predict([test], parts, model, backend="dask", client=client, batch_size=5,
                   parts=True, cache_dir=cache, progress=False)
    files = [Path(f) for f in info["files"]]
    assert [f.name for f in files] == ["part-00000.jsonl", "part-00001.jsonl",
                                       "part-00002.jsonl"]
    assert sorted(p.name for p in parts.iterdir()) == ["notes.txt"] + [f.name for f in files]
    assert b"".join(f.read_bytes() for f in files) == want  # in order: the merged file
    assert [f.read_bytes().count(b"\n") for f in files] == [
        len(b.pairs()) for b in iter_relations(test, batch_size=5)]
    assert info["pairs"] == 61 and not list(parts.glob("*.tmp*"))


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """The kernel side replaced by a fixed score per pair (no spaCy): the in-process
    workers use the same class."""
    monkeypatch.setattr(TrainedExtractor, "decision_function", _fake_scores)
    # nothing to parse for the stand-in: --parse-ahead auto stays off (one core seen)
    monkeypatch.setattr("structkernels.relations.parse.effective_n_jobs", lambda n=None: 1)
    return _hand_model(tmp_path / "m.json")


@pytest.mark.parametrize("fmt", ["jsonl", "pubtator"])
def test_partitions_of_pubtator_and_json_lines(fake, client, tmp_path, fmt):
    """Merged or in part files, with records skipped, in both streaming formats."""
    src = (_jsonl(tmp_path / "a.jsonl", 23, bad_every=7) if fmt == "jsonl"
           else _pubtator(tmp_path / "a.pubtator", 5))
    want = _local(fake, [src], tmp_path / "want", "--output-format", fmt, "--batch-size",
                  "4", "--skip-bad", "--no-cache")
    info = predict([src], tmp_path / "merged", fake, backend="dask", client=client,
                   batch_size=6, output_format=fmt, on_error="skip", cache_dir=False,
                   progress=False)
    assert (tmp_path / "merged").read_bytes() == want
    assert info["skipped"] == (3 if fmt == "jsonl" else 0)
    info = predict([src], tmp_path / "parts", fake, backend="dask", client=client,
                   batch_size=4, parts=True, output_format=fmt, on_error="skip",
                   cache_dir=False, progress=False)
    assert len(info["files"]) > 1
    assert b"".join(Path(f).read_bytes() for f in info["files"]) == want
    if fmt == "pubtator":  # BioC is one document: merged only
        with pytest.raises(ValueError, match="merged"):
            predict([src], tmp_path / "x", fake, backend="dask", client=client, parts=True,
                    output_format="bioc-json")


def test_the_model_goes_to_each_worker_once(fake, client, tmp_path, monkeypatch):
    built = []
    real = TrainedExtractor.from_json.__func__

    def counting(cls, doc, **kw):
        built.append(kw.get("source"))
        return real(cls, doc, **kw)

    monkeypatch.setattr(TrainedExtractor, "from_json", classmethod(counting))
    scattered = []
    scatter = client.scatter

    def counting_scatter(data, **kw):
        scattered.append(kw)
        return scatter(data, **kw)

    monkeypatch.setattr(client, "scatter", counting_scatter)
    src = _jsonl(tmp_path / "a.jsonl", 20)
    parts = list(scored_partitions(fake, iter_relations(src, batch_size=2), client=client,
                                   cache_dir=False))
    assert [p.batch.index for p in parts] == list(range(10))  # in input order
    assert all(p.rows for p in parts) and len({p.worker for p in parts}) <= 2
    # one check on the client, then one extractor per worker for the ten partitions
    assert 2 <= len(built) <= 3 and set(built) == {str(fake)}
    assert len(scattered) == 1 and scattered[0]["broadcast"] is True


def test_resume_on_the_cluster(fake, client, tmp_path, monkeypatch, capsys):
    """A local run stopped after two batches is taken up by the cluster: the same bytes."""
    src = _jsonl(tmp_path / "a.jsonl", 20)
    want = _local(fake, [src], tmp_path / "want", "--no-cache")
    out = tmp_path / "out.jsonl"
    argv = ["predict", "--model", str(fake), src, "-o", str(out), "--batch-size", "4",
            "--no-cache", "-q", "--resume"]
    monkeypatch.setattr(TrainedExtractor, "decision_function", _Stop(3))
    assert main(argv) == 130
    assert json.loads(Path(f"{out}.partial.progress").read_text())["state"]["batches"] == 2
    monkeypatch.setattr(TrainedExtractor, "decision_function", _fake_scores)
    assert main([*argv, "--dask", client.scheduler.address]) == 0, capsys.readouterr().err
    assert out.read_bytes() == want and not Path(f"{out}.partial").exists()


# ------------------------------------------------------------------ the scheduler
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("spec,words", [
    ("tcp://127.0.0.1:{port}", "no dask scheduler answers there"),
    ("127.0.0.1:{port}", "no dask scheduler answers there"),
    ("nonsense", "not a scheduler address"),
    ("local:0", "local:N needs a number of workers"),
])
def test_a_bad_scheduler_is_one_line_and_exit_2(fake, tmp_path, capsys, spec, words):
    spec = spec.format(port=_free_port())
    out = tmp_path / "out.jsonl"
    src = _jsonl(tmp_path / "a.jsonl", 3)
    assert main(["predict", "--model", str(fake), src, "-o", str(out), "--no-cache",
                 "--dask", spec, "--dask-timeout", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err and "--dask" in err, err
    assert not out.exists() and not Path(f"{out}.partial").exists()


def test_parse_scheduler():
    assert parse_scheduler("local:3") == ("local", 3)
    assert parse_scheduler("local")[0] == "local" and parse_scheduler("local")[1] >= 1
    assert parse_scheduler("10.0.0.5:8786") == ("address", "tcp://10.0.0.5:8786")
    assert parse_scheduler("tls://h:1") == ("address", "tls://h:1")
    assert parse_scheduler("inproc://x/1/2") == ("address", "inproc://x/1/2")
    for bad in ("local:x", "local:-1", "tcp://h", "tcp://h:0", "h:99999"):
        with pytest.raises(SchedulerError, match="--dask"):
            parse_scheduler(bad)
    assert issubclass(SchedulerError, OSError)
