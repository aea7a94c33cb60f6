"""``structkernels paraphrase`` end to end on small corpora."""

from __future__ import annotations

import json

import pytest

from structkernels.cli import main
from structkernels.experiments.paraphrase import C_GRID, PR_WEIGHTS

HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
POS = ["The cat sat on the mat.", "The cat was sitting on the mat."]
NEG = ["Stocks fell sharply on Monday.", "He plays the violin in an orchestra."]


def corpus(path, n, shift=0):
    rows = []
    for i in range(n):
        words = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
        w = words[(i + shift) % 6]
        if i % 2:
            rows.append(f"1\t{i}\t{i}\t{w} {POS[0]}\t{w} {POS[1]}\r\n")
        else:
            rows.append(f"0\t{i}\t{i}\t{w} {NEG[0]}\t{NEG[1]} {w}\r\n")
    path.write_bytes((HEADER + "".join(rows)).encode("utf-8"))
    return path


def test_paraphrase_cli_json_and_cache(tmp_path, capsys):
    tr = corpus(tmp_path / "tr.txt", 20)
    te = corpus(tmp_path / "te.txt", 10, shift=3)
    cache = tmp_path / "cache"
    argv = ["paraphrase", "--train", str(tr), "--test", str(te), "--kernel", "kb-srk",
            "--kmax", "2", "--pr", "--cache", str(cache), "--json",
            "--predictions", str(tmp_path / "pred.txt")]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accuracy"] == 100.0 and out["f1"] == 100.0
    assert out["n_train"] == 20 and out["n_test"] == 10
    # checked .npy entries with their sidecars, no pickles: two stacks and their diagonals
    assert sorted(p.suffix for p in cache.glob("srk-*")) == [".npy"] * 6 + [".sum"] * 6
    assert not list(cache.rglob("*.pkl"))
    assert (tmp_path / "pred.txt").read_text().split() == ["0", "1"] * 5
    assert main(argv) == 0  # second run from the cache
    assert json.loads(capsys.readouterr().out)["accuracy"] == 100.0


@pytest.mark.parametrize("kern", ["ps-srk", "pw-srk"])
def test_paraphrase_cli_other_kernels(tmp_path, capsys, kern):
    tr = corpus(tmp_path / "tr.txt", 12)
    te = corpus(tmp_path / "te.txt", 6)
    assert main(["paraphrase", "--train", str(tr), "--test", str(te), "--kernel", kern,
                 "--kmax", "2"]) == 0
    assert "accuracy" in capsys.readouterr().out


def test_paraphrase_cli_user_errors(tmp_path, capsys):
    tr = corpus(tmp_path / "tr.txt", 6)
    assert main(["paraphrase", "--train", str(tr), "--test", str(tmp_path / "no.txt")]) == 2
    assert "no such corpus file" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes((HEADER + "1\t1\t2\tA.\tB.\r\nzz\t1\t2\tA.\tB.\r\n").encode())
    assert main(["paraphrase", "--train", str(tr), "--test", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.txt:3" in err and len(err.strip().splitlines()) == 1
    assert main(["paraphrase", "--train", str(tr), "--test", str(tr), "--kmax", "0"]) == 2
    one = tmp_path / "one.txt"
    one.write_bytes((HEADER + "1\t1\t2\tA b.\tB a.\r\n").encode())
    assert main(["paraphrase", "--train", str(one), "--test", str(tr)]) == 2
    assert "single class" in capsys.readouterr().err


def test_gram_command_reads_pairs(tmp_path, capsys):
    import numpy as np

    from structkernels.kernels.srk.kb import KbSRK

    src = tmp_path / "pairs.jsonl"
    X = [(("a", "b", "c"), ("c", "b", "a")), (("a", "b"), ("a", "b", "b"))]
    src.write_text("\n".join(json.dumps({"pair": [list(s), list(t)]}) for s, t in X) + "\n")
    out = tmp_path / "K.npy"
    assert main(["gram", str(src), "--kernel", "kb-srk", "--param", "k=2", "-o", str(out)]) == 0
    np.testing.assert_allclose(np.load(out), KbSRK(k=2).gram(X))


def test_paraphrase_cv_chooses_on_training_data_and_limit_subsets(tmp_path, capsys):
    tr = corpus(tmp_path / "tr.txt", 24)
    te = corpus(tmp_path / "te.txt", 10, shift=3)
    argv = ["--quiet", "paraphrase", "--train", str(tr), "--test", str(te), "--kmax", "2",
            "--cv", "3", "--limit", "18", "--no-trees", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "\r" not in captured.err
    assert out["n_train"] == 18 and out["n_test"] == 10  # --limit: 18 of 24, all 10
    assert out["units"] == {"accuracy": "%", "f1": "%", "seconds": "s"}
    settings = out["cv"]["settings"]
    grid = [(k, w, False, c) for k in (1, 2) for w in PR_WEIGHTS for c in C_GRID]
    assert [(r["kmax"], r["pr"], r["tfkld"], r["C"]) for r in settings] == grid
    best = max(r["cv_accuracy_pct"] for r in settings)
    chosen = out["cv"]["chosen"]
    (row,) = [r for r in settings if all(r[k] == v for k, v in chosen.items())]
    assert row["cv_accuracy_pct"] == best
    for r in settings:  # each fold's accuracy, the same folds for every setting
        assert len(r["cv_folds_pct"]) == 3
        assert sum(r["cv_folds_pct"]) / 3 == pytest.approx(r["cv_accuracy_pct"], abs=0.01)
    assert {k: out[k] for k in chosen} == chosen
    # the text form names its units
    assert main(argv[:-1]) == 0
    text = capsys.readouterr().out
    assert "CV accuracy (%)" in text and "<- chosen" in text and "accuracy" in text and " %" in text


def test_paraphrase_reads_several_training_files(tmp_path, capsys):
    a = corpus(tmp_path / "a.txt", 10)
    b = corpus(tmp_path / "b.txt", 12, shift=1)
    both = tmp_path / "ab.txt"
    both.write_bytes(a.read_bytes() + b.read_bytes()[len(HEADER.encode("utf-8")):])
    te = corpus(tmp_path / "te.txt", 8, shift=3)
    common = ["--quiet", "paraphrase", "--test", str(te), "--kmax", "2", "--pr", "--json"]
    assert main([*common, "--train", str(a), "--train", str(b)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert main([*common, "--train", str(both)]) == 0
    ref = json.loads(capsys.readouterr().out)
    assert out["n_train"] == 22 and (out["accuracy"], out["f1"]) == (ref["accuracy"], ref["f1"])
    one = corpus(tmp_path / "one.txt", 1)
    assert main(["paraphrase", "--train", str(a), "--train", str(tmp_path / "no.txt"),
                 "--test", str(te)]) == 2
    assert main(["paraphrase", "--train", str(one), "--test", str(te)]) == 2


def with_labels_flipped(path, out):
    """A copy of the MSRP file ``path`` at ``out`` with every label flipped."""
    lines = path.read_bytes().decode("utf-8").split("\r\n")
    lines[1:-1] = [("0" if ln[0] == "1" else "1") + ln[1:] for ln in lines[1:-1]]
    out.write_bytes("\r\n".join(lines).encode("utf-8"))
    return out


def test_paraphrase_tfkld_cv_choice_never_reads_test_labels(tmp_path, capsys):
    tr = corpus(tmp_path / "tr.txt", 30)
    te = corpus(tmp_path / "te.txt", 10, shift=3)
    flipped = with_labels_flipped(te, tmp_path / "flipped.txt")
    outs = []
    for test in (te, flipped):
        assert main(["--quiet", "paraphrase", "--train", str(tr), "--test", str(test),
                     "--kmax", "2", "--tfkld", "--cv", "3", "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    a, b = outs
    assert a["cv"] == b["cv"] and a["cv"]["chosen"]["tfkld"] == a["tfkld"]
    assert {r["tfkld"] for r in a["cv"]["settings"]} == {False, True}
    assert a["accuracy"] + b["accuracy"] == pytest.approx(100.0)


def test_paraphrase_default_chooses_by_cv_without_reading_test_labels(tmp_path, capsys):
    """The default run cross-validates on the training file; flipping every test label
    changes neither the CV table nor the predictions, only the score."""
    tr = corpus(tmp_path / "tr.txt", 30)
    te = corpus(tmp_path / "te.txt", 10, shift=3)
    flipped = with_labels_flipped(te, tmp_path / "flipped.txt")
    outs, preds = [], []
    for test in (te, flipped):
        pred = tmp_path / f"pred_{test.stem}.txt"
        assert main(["--quiet", "paraphrase", "--train", str(tr), "--test", str(test),
                     "--kmax", "2", "--json", "--predictions", str(pred)]) == 0
        outs.append(json.loads(capsys.readouterr().out))
        preds.append(pred.read_text())
    a, b = outs
    assert a["cv"]["folds"] == 5 and a["cv"] == b["cv"] and preds[0] == preds[1]
    assert a["accuracy"] + b["accuracy"] == pytest.approx(100.0)


def test_paraphrase_cv_0_takes_the_settings_given_and_tiny_data_skips_cv(tmp_path, capsys):
    tr = corpus(tmp_path / "tr.txt", 12)
    te = corpus(tmp_path / "te.txt", 6)
    assert main(["--quiet", "paraphrase", "--train", str(tr), "--test", str(te), "--kmax", "3",
                 "--pr", "--C", "3", "--cv", "0", "--no-trees", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["kmax"], out["pr"], out["trees"], out["C"]) == (3, 1.0, 0.0, 3.0)
    assert "cv" not in out
    three = corpus(tmp_path / "three.txt", 3)  # one pair of one class: no fold can hold it
    assert main(["--quiet", "paraphrase", "--train", str(three), "--test", str(te)]) == 0
    assert "no cross-validation: a class has fewer than 2" in capsys.readouterr().out
    for bad in (["--cv", "1"], ["--cv", "-2"], ["--C", "0"]):
        assert main(["paraphrase", "--train", str(tr), "--test", str(te), *bad]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_paraphrase_trees_join_the_cv_choice_unless_no_trees(tmp_path, capsys):
    """By default the pair tree kernel's weight is one more CV choice; --no-trees leaves it
    out."""
    pytest.importorskip("spacy", reason="the pair trees parse with spaCy")
    from structkernels.relations.pipelines import installed_pipelines

    if not installed_pipelines():
        pytest.skip("the pair trees parse with spaCy's English pipeline, not installed here")
    tr = corpus(tmp_path / "tr.txt", 20)
    te = corpus(tmp_path / "te.txt", 6, shift=3)
    common = ["--quiet", "paraphrase", "--train", str(tr), "--test", str(te), "--kmax", "1",
              "--json"]
    assert main(common) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["trees"] for r in out["cv"]["settings"]} == {0.0, 0.5, 1.0}
    assert out["trees"] == out["cv"]["chosen"]["trees"]
    assert main([*common, "--no-trees"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["trees"] for r in out["cv"]["settings"]} == {0.0} and out["trees"] == 0.0


def test_paraphrase_trees_without_spacy_is_one_line(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy raises ImportError
    tr = corpus(tmp_path / "tr.txt", 6)
    assert main(["paraphrase", "--train", str(tr), "--test", str(tr)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--no-trees" in err[0] and "structkernels[parse]" in err[0]
    assert main(["--quiet", "paraphrase", "--train", str(tr), "--test", str(tr),
                 "--no-trees"]) == 0
