"""End-to-end tests of ``structkernels train-npk`` and ``structkernels predict``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from structkernels.cli import main

NOISE = ["location", "manner", "mod", "quant", "time"]


def planted_records(n=200, seed=0):
    """Interaction records whose label is carried by ARG0/ARG1; five noise edge labels.

    Graph ids alternate between two halves through the ``split`` field.
    """
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        label = int(rng.random() < 0.5)
        path = [[None, "bind"]]
        path.append(["ARG0", "kinase" if label else "phosphatase"])
        path.append(["ARG1", "protein" if label else "gene"])
        for edge in NOISE:
            if rng.random() < 0.9:
                path.append([edge, f"{edge}-{rng.integers(4)}"])
        gid = f"g{i // 2}"
        records.append(
            {
                "id": f"{gid}#{i % 2}",
                "graph_id": gid,
                "sentence": "synthetic",
                "interaction": {"type": "bind-01", "node": "b", "catalyst": None,
                                "participants": []},
                "path": path,
                "tree": {"label": "bind"},
                "label": label,
                "swapped": False,
                "split": "train" if (i // 2) % 2 == 0 else "test",
            }
        )
    return records


@pytest.fixture()
def data_file(tmp_path):
    path = tmp_path / "interactions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in planted_records()))
    return path


def _train(data_file, tmp_path, capsys, *extra):
    model = tmp_path / "model.json"
    argv = [
        "train-npk", str(data_file), "--out", str(model), "--alpha", "3", "--beta", "20",
        "--top-fraction", "1.0", "--hashing", "none", "--no-progress", "--json",
        # the planted class is carried by node identities: the indicator node kernel
        "--node-mismatch", "0", "--no-table", "--objective", "loss1", *extra,
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    return model, summary


def test_train_npk_learns_the_planted_sigma_and_reports_both_kernels(data_file, tmp_path, capsys):
    model, s = _train(data_file, tmp_path, capsys)
    assert sorted(s["zeroed_labels"]) == NOISE
    for name in ("PK", "NPK"):
        assert set(s[name]) >= {"f1", "precision", "recall", "n_evaluations", "seconds"}
        assert s[name]["n_evaluations"] > 0
    # with the noise labels ignored, every neighbour shares the test structure's class
    assert s["NPK"]["f1"] == pytest.approx(1.0)
    assert s["NPK"]["f1"] >= s["PK"]["f1"]
    assert s["n_train"] + s["n_test"] == 200
    assert s["learning"]["n_evaluations"] > 0
    from structkernels.npk.model import read_model

    saved = read_model(model)
    assert saved["format"] == "structkernels.npk-model"
    assert sorted(saved["learner"]["ignored_labels"]) == NOISE
    assert len(saved["train"]["paths"]) == s["n_train"]


def test_train_npk_prints_a_readable_table(data_file, tmp_path, capsys):
    model = tmp_path / "m.json"
    argv = ["train-npk", str(data_file), "--out", str(model), "--alpha", "2", "--beta", "10",
            "--hashing", "random-knn", "--no-progress", "--table-train", "60",
            "--table-test", "60", "--seeds", "2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "labels σ zeroed" in out
    assert "\nPK " in out and "\nNPK " in out
    assert "of one Gram matrix" in out
    # the baselines table: every model on the same sub-samples, mean ± sd over the seeds
    assert "baselines (Table 6 analogue)" in out
    for row in ("PK k-NN, exact", "NPK k-NN, random-knn hashing", "NPK k-NN, klsh hashing",
                "PK SVM (precomputed Gram)", "NPK SVM (precomputed Gram)",
                "logistic regression, bag of tuples", "logistic regression, tuples + edges",
                "chance (all positive)"):
        assert "\n" + row in out
    assert out.count(" ± ") >= 2 * 11  # F1 and AP of 11 rows
    # the obvious-feature baselines also run on the same full split as PK and NPK
    head = out.split("baselines (Table 6 analogue)")[0]
    assert "obvious features on the same split" in head
    assert "\nlogistic regression, tuples + edges" in head
    assert model.exists()
    # it ends with what was learned and the command to run next
    tail = out.split("model written to")[1].splitlines()[1:]
    assert tail[0].startswith("learned σ (lowest first): ")
    assert tail[1].startswith("k-NN threshold: ") and "leave-one-out" in tail[1]
    assert tail[2] == f"next: structkernels predict {model} CANDIDATES.jsonl -o labels.jsonl"


def test_predict_labels_new_candidates(data_file, tmp_path, capsys):
    model, s = _train(data_file, tmp_path, capsys)
    new = tmp_path / "new.jsonl"
    records = planted_records(n=40, seed=3)
    new.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "pred.jsonl"
    assert main(["predict", str(model), str(new), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [d["id"] for d in lines] == [r["id"] for r in records]
    assert all(d["label"] in (0, 1) and 0.0 <= d["score"] <= 1.0 for d in lines)
    # the learned σ makes the planted problem separable
    assert [d["label"] for d in lines] == [r["label"] for r in records]
    gold = sum(r["label"] for r in records)
    assert "F1 100.0" in err and f"predicted positive: {gold} of 40" in err
    assert f"gold positive: {gold} ({100 * gold / 40:.1f}%)" in err


def test_predict_reads_plain_path_records(data_file, tmp_path, capsys):
    model, _ = _train(data_file, tmp_path, capsys)
    new = tmp_path / "paths.jsonl"
    new.write_text(
        json.dumps({"id": "a", "path": [[None, "bind"], ["ARG0", "kinase"], ["ARG1", "protein"]]})
        + "\n"
        + json.dumps({"id": "b", "path": [[None, "bind"], ["ARG0", "phosphatase"], ["ARG1", "gene"]]})
        + "\n"
    )
    assert main(["predict", str(model), str(new)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(d["id"], d["label"]) for d in lines] == [("a", 1), ("b", 0)]


def test_user_errors_are_one_line(data_file, tmp_path, capsys):
    assert main(["train-npk", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and err.count("\n") == 1

    bad_model = tmp_path / "bad.json"
    bad_model.write_text(json.dumps({"format": "other"}))
    assert main(["predict", str(bad_model), str(data_file)]) == 2
    err = capsys.readouterr().err
    assert "not a train-npk model" in err and err.count("\n") == 1

    assert main(["train-npk", str(data_file), "--out", str(tmp_path / "m.json"), "--beta", "0",
                 "--no-progress"]) == 2
    assert "beta must be a positive int" in capsys.readouterr().err


def test_plot_option_writes_a_png(data_file, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="matplotlib is the optional [plot] extra")
    png, ev = tmp_path / "losses.png", tmp_path / "eval.png"
    _train(data_file, tmp_path, capsys, "--plot", str(png), "--plot-eval", str(ev))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ev.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # confusion matrix + precision-recall


def test_bad_records_are_named_or_skipped_and_reported(data_file, tmp_path, capsys):
    model, _ = _train(data_file, tmp_path, capsys)
    new = tmp_path / "mixed.jsonl"
    good = {"id": "a", "path": [[None, "bind"], ["ARG0", "kinase"], ["ARG1", "protein"]]}
    bad = {"id": "b", "path": [["ARG0"]]}
    new.write_text(json.dumps(good) + "\n{oops\n" + json.dumps(bad) + "\n")
    assert main(["predict", str(model), str(new)]) == 2
    err = capsys.readouterr().err
    assert "mixed.jsonl, line 2: not valid JSON" in err and err.count("\n") == 1

    assert main(["predict", str(model), str(new), "--skip-bad"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(x)["id"] for x in captured.out.splitlines()] == ["a"]
    assert "line 2: not valid JSON" in captured.err
    assert "line 3 (record b)" in captured.err
    assert "skipped 2 record(s)" in captured.err

    broken = tmp_path / "broken.jsonl"
    lines = data_file.read_text().splitlines()
    lines[5] = "{not json"
    broken.write_text("\n".join(lines) + "\n")
    assert main(["train-npk", str(broken), "--out", str(tmp_path / "m.json"), "--no-progress"]) == 2
    assert "line 6" in capsys.readouterr().err
    argv = ["train-npk", str(broken), "--out", str(tmp_path / "m.json"), "--no-progress",
            "--skip-bad", "--alpha", "1", "--beta", "5", "--hashing", "none"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "line 6" in err and "skipped 1 record(s)" in err


def test_plot_without_matplotlib_is_a_one_line_error_before_any_work(data_file, tmp_path, capsys,
                                                                     monkeypatch):
    import structkernels.experiments.plotting as plotting

    def missing():
        raise ImportError("plotting needs matplotlib, an optional extra: pip install "
                          "'structkernels[plot]'")

    monkeypatch.setattr(plotting, "pyplot", missing)
    model = tmp_path / "m.json"
    assert main(["train-npk", str(data_file), "--out", str(model), "--plot", "x.png"]) == 2
    err = capsys.readouterr().err
    assert "structkernels[plot]" in err and err.count("\n") == 1
    assert not model.exists()


def test_max_train_learns_sigma_on_a_sub_sample(data_file, tmp_path, capsys):
    _, s = _train(data_file, tmp_path, capsys, "--max-train", "40")
    assert s["n_learn"] == 40 and s["n_train"] == 100  # the classifier still uses the whole half
    lrn = s["learning"]
    assert lrn["gram_evaluations"] == 40 * 41 // 2
    assert lrn["fraction_of_gram"] == pytest.approx(lrn["n_evaluations"] / (40 * 41 / 2))


@pytest.mark.parametrize("objective", [
    ("--hashing", "random-knn", "--beta", "40", "--alpha", "4"),
    ("--hashing", "random-knn", "--objective", "knn-ap"),
], ids=["loss1", "knn-ap"])
def test_max_train_costs_less_than_the_full_run_and_at_most_one_gram(objective, data_file, tmp_path,
                                                                      capsys):
    """With hashing the learner stays within one Gram matrix of the structures it learns on."""
    extra = objective
    _, full = _train(data_file, tmp_path, capsys, *extra)
    _, sub = _train(data_file, tmp_path, capsys, *extra, "--max-train", "40")
    assert sub["learning"]["n_evaluations"] < full["learning"]["n_evaluations"]
    for s in (full, sub):
        n = s["n_learn"]
        assert s["learning"]["n_evaluations"] <= n * (n + 1) // 2
        assert s["learning"]["fraction_of_gram"] <= 1.0


def test_edge_features_see_roles_across_unseen_nodes():
    """The edge-sequence features generalise to nodes never seen in training."""
    from structkernels.experiments.baselines import (
        edge_tuple_features,
        linear_baselines,
        tuple_features,
    )

    p = [(None, "bind-01"), ("ARG1", "enzyme")]
    assert edge_tuple_features(p) == tuple_features(p) + ["None|", "ARG1|", "None|>ARG1|"]
    rng = np.random.default_rng(0)
    def make(n, offset):
        X, y = [], []
        for i in range(n):
            lab = int(rng.random() < 0.3)
            X.append([(None, f"v{offset + i}"), ("ARG0" if lab else "ARG1", f"n{offset + i}")])
            y.append(lab)
        return X, np.array(y)
    X_tr, y_tr = make(200, 0)
    X_te, y_te = make(100, 10_000)  # every node is new at test time
    rows = linear_baselines(X_tr, y_tr, X_te, y_te)
    assert rows["logistic regression, tuples + edges"]["f1"] == 1.0
    assert rows["logistic regression, bag of tuples"]["f1"] < 1.0


def test_no_progress_hides_every_bar_inner_ones_too(data_file, tmp_path, capsys, monkeypatch):
    """``--no-progress`` also silences the Gram and k-NN bars of the evaluation and table."""
    import structkernels.utils._progress

    monkeypatch.setenv("STRUCTKERNELS_PROGRESS", "1")  # bars on, even for short work
    monkeypatch.setattr(structkernels.utils._progress, "MIN_BAR_EVALUATIONS", 0)
    monkeypatch.setenv("STRUCTKERNELS_PROGRESS_INTERVAL", "0")
    argv = ["train-npk", str(data_file), "--out", str(tmp_path / "m.json"), "--alpha", "2",
            "--beta", "10", "--hashing", "random-knn", "--table-train", "60",
            "--table-test", "60", "--seeds", "1"]
    assert main(argv) == 0
    noisy = capsys.readouterr().err
    assert "knn predict" in noisy  # the inner bars exist
    assert main(argv + ["--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    import os

    assert os.environ["STRUCTKERNELS_PROGRESS"] == "1"  # restored after the command


def _error(capsys, argv) -> str:
    """The one error line of a command that must refuse its input with exit status 2."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.split(": error: ", 1)[1].strip()


@pytest.mark.parametrize("bad, reason", [
    ({"id": "r1", "path": "notalist", "tree": {"label": "a"}, "label": 1},
     "'path' must be a list of [edge, node] pairs, got 'notalist'"),
    ({"id": "r1", "path": [], "tree": {"label": "a"}, "label": 1}, "empty path"),
], ids=["not-a-list", "empty"])
def test_predict_refuses_a_path_as_train_npk_does(bad, reason, data_file, tmp_path, capsys):
    """One message, naming file, line and record, for the same record in both commands."""
    model, _ = _train(data_file, tmp_path, capsys)
    good = {"id": "a", "path": [[None, "bind"], ["ARG0", "kinase"]], "tree": {"label": "b"},
            "label": 1}
    f = tmp_path / "cands.jsonl"
    f.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    expected = f"{f}, line 2 (record r1): {reason}"
    assert _error(capsys, ["train-npk", str(f), "--out", str(tmp_path / "m2.json")]) == expected
    assert _error(capsys, ["predict", str(model), str(f)]) == expected
    # --skip-bad leaves it out, reporting the same words
    assert main(["predict", str(model), str(f), "--skip-bad"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(x)["id"] for x in captured.out.splitlines()] == ["a"]
    assert f"skipped {expected}" in captured.err


def test_a_record_without_a_path_names_the_path_first(tmp_path, capsys):
    f = tmp_path / "nopath.jsonl"
    f.write_text(json.dumps({"id": "r2", "tree": {"label": "a"}}) + "\n")
    assert _error(capsys, ["train-npk", str(f), "--out", str(tmp_path / "m.json")]) == (
        f"{f}, line 1 (record r2): record has no 'path' (and no 'amr'), and no 'label'"
    )
    f.write_text(json.dumps({"id": "r3"}) + "\n")
    assert _error(capsys, ["train-npk", str(f), "--out", str(tmp_path / "m.json")]) == (
        f"{f}, line 1 (record r3): record has no 'path' or 'tree' (and no 'amr'), and no 'label'"
    )
    f.write_text(json.dumps({"id": "r4", "path": "notalist"}) + "\n")
    assert _error(capsys, ["train-npk", str(f), "--out", str(tmp_path / "m.json")]) == (
        f"{f}, line 1 (record r4): 'path' must be a list of [edge, node] pairs, got 'notalist'"
    )


@pytest.mark.parametrize("edit, reason", [
    (lambda m: m["classifier"].update(bogus=1), "the model's classifier settings hold unknown keys 'bogus'"),
    (lambda m: m["kernel_params"].update(lam="x"),
     "the model's kernel_params do not suit kernel 'path': PathKernel.lam must be a number"),
    (lambda m: m["kernel_params"].update(bogus=1),
     "the model's kernel_params do not suit kernel 'path': PathKernel.__init__() got an "
     "unexpected keyword argument 'bogus'"),
], ids=["classifier-key", "param-type", "param-name"])
def test_predict_names_a_model_whose_settings_do_not_fit(edit, reason, data_file, tmp_path, capsys):
    """A model file the classifier cannot take is the file's fault: one line naming it."""
    import gzip

    model, _ = _train(data_file, tmp_path, capsys)
    doc = json.loads(gzip.decompress(model.read_bytes()))
    edit(doc)
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(doc))
    assert _error(capsys, ["predict", str(bad), str(data_file)]).startswith(f"{bad}: {reason}")
