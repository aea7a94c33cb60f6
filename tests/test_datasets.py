"""load_interactions: the shipped Bio AMR dataset, user files, PubMed45 records, bad input."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest

from structkernels import Path, Tree
from structkernels.datasets import (
    InteractionFormatError,
    load_interactions,
    split_of,
)

FIG1_AMR = """(h / have-03
   :ARG0 (p / protein :name (n / name :op1 "GEF") :example (p2 / protein :name (n2 / name :op1 "Sos")))
   :ARG1 (s / site :purpose (b / bind-01 :ARG1 (e / enzyme :name (n3 / name :op1 "Ras"))
                                          :ARG2 (s3 / small-molecule :name (n4 / name :op1 "GTP")))))"""


@pytest.fixture(scope="module")
def shipped():
    return load_interactions()


@pytest.mark.slow
def test_shipped_dataset(shipped, repo_root):
    folder = repo_root / "structkernels" / "data"
    counts = json.loads((folder / "counts.json").read_text())
    n = len(shipped)
    assert n == counts["records"] == len(shipped.paths) == len(shipped.trees) == len(shipped.labels)
    assert shipped.labels.dtype.kind == "i" and set(np.unique(shipped.labels)) == {0, 1}
    assert len(set(shipped.paths)) == n >= 16_000  # de-duplicated by path
    assert all(isinstance(p, Path) for p in shipped.paths[:100])
    assert all(isinstance(t, Tree) for t in shipped.trees[:100])
    for name in ("train", "test"):
        half = shipped.split(name)
        c = counts["splits"][name]
        assert len(half) == c["records"] and int(half.labels.sum()) == c["positive"]
        assert int(half.swapped.sum()) == c["negative_swapped"]
        assert not half.labels[half.swapped].any()
        assert all(r["split"] == name for r in half.records)
    train, test = shipped.split("train"), shipped.split("test")
    assert set(train.graph_ids).isdisjoint(test.graph_ids)
    assert len(train) + len(test) == n
    assert all(split_of(r["graph_id"]) == r["split"] for r in shipped.records[::97])
    # structures agree with the JSON they came from
    for k in range(0, n, 4999):
        r = shipped.records[k]
        assert shipped.paths[k] == Path.from_json(r["path"])
        assert shipped.trees[k] == Tree.from_json(r["tree"])
    # the README quotes the counts
    readme = (repo_root / "datasets" / "bio-amr-interactions" / "README.md").read_text()
    for name in ("train", "test"):
        c = counts["splits"][name]
        for key in ("records", "positive", "negative", "negative_swapped"):
            assert f"{c[key]:,}" in readme, (name, key)
    assert f"{counts['records']:,}" in readme


@pytest.mark.slow
def test_subset(shipped):
    train = shipped.split("train")
    sub = train.subset([3, 1, 2])
    assert [r["id"] for r in sub.records] == [train.records[i]["id"] for i in (3, 1, 2)]
    assert list(sub.paths) == [train.paths[i] for i in (3, 1, 2)]
    assert sub.trees == [train.trees[i] for i in (3, 1, 2)]
    assert sub.labels.tolist() == [int(train.labels[i]) for i in (3, 1, 2)]
    mask = np.zeros(len(train), bool)
    mask[:5] = True
    assert len(train.subset(mask)) == 5
    with pytest.raises(IndexError):
        train.subset([len(train)])
    with pytest.raises(ValueError, match="split must be one of"):
        train.split("dev")


def test_split_argument(tmp_path, shipped_sample):
    """split= gives the same half as .split(), with compact and spaced JSON alike."""
    for compact in (True, False):
        sep = (",", ":") if compact else (", ", ": ")
        f = tmp_path / f"s{compact}.jsonl"
        f.write_text("".join(json.dumps(r, separators=sep) + "\n" for r in shipped_sample))
        whole = load_interactions(f)
        for name in ("train", "test"):
            half = load_interactions(f, split=name)
            assert [r["id"] for r in half.records] == [r["id"] for r in whole.split(name).records]
            assert half.paths == whole.split(name).paths and len(half) > 0


@pytest.fixture(scope="module")
def shipped_sample(repo_root):
    """The first 300 records of the shipped file, as written by the build."""
    f = repo_root / "structkernels" / "data" / "interactions.jsonl.gz"
    out = []
    with gzip.open(f, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if len(out) == 300:
                break
    return out


def _write(tmp_path, records, name="x.jsonl", gz=False):
    f = tmp_path / name
    text = "".join(json.dumps(r) + "\n" for r in records)
    if gz:
        f.write_bytes(gzip.compress(text.encode()))
    else:
        f.write_text(text)
    return f


def test_user_jsonl_and_gzip(tmp_path):
    recs = [
        {
            "id": "r1",
            "graph_id": "g1",
            "path": [[None, "bind"], ["ARG1", "enzyme"]],
            "tree": {"label": "bind", "children": [["ARG1", {"label": "enzyme"}]]},
            "label": 1,
        },
        {
            "id": "r2",
            "graph_id": "g2",
            "path": [[None, "bind"], ["ARG2", "protein"]],
            "tree": {"label": "bind"},
            "label": 0,
            "split": "test",
        },
    ]
    for gz in (False, True):
        d = load_interactions(_write(tmp_path, recs, "u.jsonl" + (".gz" if gz else ""), gz))
        assert d.labels.tolist() == [1, 0]
        assert d.paths[0] == Path([(None, "bind"), ("ARG1", "enzyme")])
        assert d.records[0]["split"] == split_of("g1") and d.records[1]["split"] == "test"
        assert d.swapped.tolist() == [False, False]


def test_pubmed45_records_from_amr(tmp_path):
    recs = [
        {
            "id": "pm1",
            "interaction_tuple": ["bind-01", "Sos", "Ras", "GTP"],
            "label": 2,
            "amr": FIG1_AMR,
        },
        {"id": "pm2", "interaction_tuple": ["bind", None, "e", "s3"], "label": 1, "amr": FIG1_AMR},
        {"id": "pm3", "interaction_tuple": ["b", "p2", "ras"], "label": 0, "amr": FIG1_AMR},
    ]
    d = load_interactions(_write(tmp_path, recs))
    assert d.labels.tolist() == [0, 1, 0] and d.swapped.tolist() == [True, False, False]
    assert str(d.paths[1]) == "(bind) (ARG1, enzyme) (bind) (ARG2, small-molecule)"
    assert d.paths[0][:7] == Path(
        [
            ("example", "protein"),
            ("ARG0", "protein"),
            ("ARG1-of", "have"),
            ("purpose-of", "site"),
            (None, "bind"),
            (None, "bind"),
            ("ARG1", "enzyme"),
        ]
    )
    assert d.records[0]["path"] == d.paths[0].to_json()
    assert d.trees[2].label == "bind"


BAD = [
    (
        {"interaction_tuple": ["bind-01", "Sos", "Raf"], "label": 1, "amr": FIG1_AMR},
        "unknown node 'Raf' \\(participant\\)",
    ),
    (
        {"interaction_tuple": [None, "Sos", "Ras"], "label": 1, "amr": FIG1_AMR},
        "interaction node missing",
    ),
    (
        {"interaction": {"catalyst": None, "participants": ["e"]}, "label": 1, "amr": FIG1_AMR},
        "interaction node missing",
    ),
    ({"interaction_tuple": ["bind-01", None, "protein"], "label": 1, "amr": FIG1_AMR}, "ambiguous"),
    ({"interaction_tuple": ["bind-01", None, "Ras"], "label": 3, "amr": FIG1_AMR}, "0, 1 or 2"),
    ({"path": [[None, "a"]], "tree": {"label": "a"}, "label": 2}, "label must be 0 or 1"),
    ({"path": [[None, "a"]], "label": 1}, "no 'tree'"),
    ({"path": "bind", "tree": {"label": "a"}, "label": 1}, "list of \\[edge, node\\] pairs"),
    ({"path": [[None, "a"]], "tree": {"label": "a"}, "label": 1, "split": "dev"}, "split"),
    ({"path": [[None, "a"]], "tree": {"label": "a"}}, "no 'label'"),
    (
        {"interaction_tuple": ["bind-01", None, "Ras"], "label": 1, "amr": "not amr"},
        "not a PENMAN graph",
    ),
]


@pytest.mark.parametrize("bad,msg", BAD)
def test_bad_records_name_file_line_and_id(tmp_path, bad, msg):
    good = {"id": "ok", "path": [[None, "a"]], "tree": {"label": "a"}, "label": 0}
    f = _write(tmp_path, [good, {"id": "bad1", **bad}, good])
    with pytest.raises(InteractionFormatError, match=rf"x\.jsonl, line 2 \(record bad1\): .*{msg}"):
        load_interactions(f)
    d = load_interactions(f, on_error="skip")
    assert len(d) == 2 and [(s.line, s.record_id) for s in d.skipped] == [(2, "bad1")]
    assert re.search(msg, d.skipped[0].reason)


def test_not_json_and_empty(tmp_path):
    f = tmp_path / "e.jsonl"
    f.write_text("")
    with pytest.raises(InteractionFormatError, match="no records"):
        load_interactions(f)
    f.write_text("{not json\n")
    with pytest.raises(InteractionFormatError, match="line 1: not valid JSON"):
        load_interactions(f)
    with pytest.raises(FileNotFoundError, match="no interaction file"):
        load_interactions(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="on_error"):
        load_interactions(f, on_error="maybe")


def test_missing_shipped_dataset_is_a_clear_error(tmp_path, monkeypatch):
    import structkernels.datasets.interactions as ds

    monkeypatch.setattr(ds, "SHIPPED_DATASET", tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="build_bio_amr_interactions.py"):
        ds.load_interactions()


def test_split_of_is_deterministic():
    ids = [f"g{i}" for i in range(400)]
    a = [split_of(i) for i in ids]
    assert a == [split_of(i) for i in ids]
    assert 150 < a.count("train") < 250
