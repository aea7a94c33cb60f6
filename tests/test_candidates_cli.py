"""``structkernels candidates`` and ``structkernels train-npk --graphs DIR --graph-labels FILE``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from structkernels.amr import parse_amr
from structkernels.cli import main
from structkernels.graphs import write_dot

pytest.importorskip("pydot", reason="pydot (extra 'graphs') is not installed")
pytest.importorskip("conllu", reason="conllu (extra 'graphs') is not installed")


@pytest.fixture()
def gdata(repo_root):
    return repo_root / "tests" / "data" / "graphs"


def test_candidates_command_writes_json_lines(gdata, tmp_path, capsys):
    out = tmp_path / "c.jsonl"
    assert main(["candidates", str(gdata / "amr"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["graph_id"] for r in recs} == {"s1", "s2"}
    assert "2 graphs (0 skipped)" in err and f"{len(recs)} candidates" in err
    assert all(r["path"] and r["tree"] and "label" not in r for r in recs)


def test_candidates_command_conllu_with_lexicon(gdata, capsys):
    assert main(["candidates", str(gdata / "parsed.conllu"), "--entities", "HER3,PI3K,Akt,Sos,Ras,GTP",
                 "--no-trees", "--max-participants", "1", "--no-catalysts"]) == 0
    recs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    paths = {(r["graph_id"], tuple(map(tuple, r["path"]))) for r in recs}
    assert ("c1", ((None, "binds"), ("nsubj", "HER3"))) in paths
    assert ("c2", ((None, "exchange"), ("compound", "GTP"))) in paths
    assert all("tree" not in r and len(r["interaction"]["participants"]) == 1 for r in recs)


def test_candidates_command_malformed(gdata, capsys):
    assert main(["candidates", str(gdata / "malformed" / "no_role.dot")]) == 2
    assert "no_role.dot, line 5: graph 'no_role': edge 'a -> p Ras'" in capsys.readouterr().err
    assert main(["candidates", "--skip-bad", str(gdata / "malformed"), str(gdata / "amr")]) == 0
    err = capsys.readouterr().err
    assert err.count("skipped ") == 4 and "2 graphs (4 skipped)" in err
    assert main(["candidates", str(gdata / "nope.dot")]) == 2
    assert "no such file" in capsys.readouterr().err


def planted_graphs(folder, n=90, seed=0):
    """DOT graphs of ``catalyst binds participant``; valid when the catalyst is an enzyme."""
    rng = np.random.default_rng(seed)
    graphs, labels = [], []
    for i in range(n):
        valid = bool(rng.random() < 0.5)
        cat = "enzyme" if valid else "protein"
        noise = " ".join(
            f":{r} ({r[0]}{j} / {r}-{rng.integers(3)})"
            for j, r in enumerate(["location", "manner", "time"]) if rng.random() < 0.8
        )
        g = parse_amr(
            f'# ::id g{i}\n(b / bind-01 :ARG0 (k / {cat} :name (n / name :op1 "K{i}")) '
            f':ARG1 (p / protein :name (m / name :op1 "P{i}")) {noise})'
        )
        graphs.append(g)
        labels.append({"id": f"r{i}", "path": f"g{i}.dot", "interaction_tuple": ["bind", f"K{i}", f"P{i}"],
                       "label": int(valid)})
        if i % 3 == 0:  # the role-swapped twin
            labels.append({"id": f"s{i}", "path": f"g{i}.dot",
                           "interaction_tuple": ["bind", f"P{i}", f"K{i}"], "label": 2})
    write_dot(graphs, folder)
    labels.append({"id": "lost", "path": "g0.dot", "interaction_tuple": ["inhibit", "K0", "P0"],
                   "label": 1})
    return labels


def test_train_npk_on_user_graphs(tmp_path, capsys):
    graphs = tmp_path / "graphs"
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps(planted_graphs(graphs)))
    model = tmp_path / "m.json"
    argv = ["train-npk", "--graphs", str(graphs), "--graph-labels", str(labels), "--out", str(model),
            "--alpha", "3", "--beta", "20", "--top-fraction", "1.0", "--hashing", "none",
            "--no-progress", "--json"]
    assert main(argv) == 2  # strict: the unresolvable tuple stops the run, named
    assert "(record lost): interaction type 'inhibit' matches no node" in capsys.readouterr().err
    assert main([*argv, "--skip-bad"]) == 0
    cap = capsys.readouterr()
    s = json.loads(cap.out)
    assert "unresolved" in cap.err and "record lost" in cap.err
    assert s["n_train"] + s["n_test"] == 90 + 30
    assert "labels.json over" in s["data"]
    # the catalyst's concept decides the label: NPK separates the halves
    assert s["NPK"]["f1"] >= 0.9
    from structkernels.npk.model import read_model

    saved = read_model(model)  # gzip'd, versioned model file
    assert saved["train"]["paths"][0][0][0] in ("ARG0", "ARG1")
    # label 2 (roles swapped) is a negative for the binary task
    assert set(saved["train"]["labels"]) == {0, 1}
    # the candidates of new graphs, written by `candidates`, are labelled by `predict`
    cands = tmp_path / "cands.jsonl"
    assert main(["candidates", str(graphs / "g1.dot"), str(graphs / "g2.dot"), "-o", str(cands),
                 "--max-participants", "1"]) == 0
    pred = tmp_path / "pred.jsonl"
    assert main(["predict", str(model), str(cands), "-o", str(pred)]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in pred.read_text().splitlines()]
    assert len(lines) == len(cands.read_text().splitlines()) > 0
    assert all(d["label"] in (0, 1) for d in lines)


def test_train_npk_graph_options_are_checked(tmp_path, capsys):
    assert main(["train-npk", "--graphs", str(tmp_path), "--out", str(tmp_path / "m.json")]) == 2
    assert "--graphs needs --graph-labels" in capsys.readouterr().err


def test_output_into_a_closed_pipe_stops_quietly(gdata, tmp_path):
    """``structkernels candidates FILE | head``: once the reader is gone the command stops
    as a process killed by SIGPIPE does (status 141) and prints no error."""
    import subprocess
    import sys

    text = (gdata / "s2.amr").read_text()
    big = tmp_path / "many.amr"  # about 1.4 MB of candidates: more than a pipe holds
    big.write_text("\n\n".join(text.strip().replace("::id s2", f"::id s{i}") for i in range(64)))
    proc = subprocess.Popen([sys.executable, "-m", "structkernels", "--quiet", "candidates",
                             str(big)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(100).startswith(b"{")
    proc.stdout.close()  # the reader goes away, as head does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Broken pipe" not in err and "Traceback" not in err and "error" not in err
