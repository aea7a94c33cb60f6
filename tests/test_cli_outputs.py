"""What the commands say: the formats their --help names, gram on the shipped records, one
line per plugin warning, the predicted-positive share beside the gold share."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from structkernels.cli import build_parser, main
from structkernels.experiments.relations import format_table
from structkernels.formats.relations import RELATION_FORMATS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", ["evaluate", "train-extractor", "predict"])
def test_help_names_every_corpus_format(command):
    parser = build_parser(only=command)._subparsers._group_actions[0].choices[command]
    text = re.sub(r"-\s+", "-", " ".join(parser.format_help().split()))  # wrapped at hyphens
    for fmt in RELATION_FORMATS:
        assert fmt in text, (command, fmt)


@pytest.fixture
def shipped(tmp_path):
    """The first 30 shipped interaction records (each has a path and a tree)."""
    shipped = ROOT / "structkernels" / "data" / "interactions.jsonl.gz"
    with gzip.open(shipped, "rt", encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(30)]
    f = tmp_path / "records.jsonl"
    f.write_text("".join(lines), encoding="utf-8")
    return f


def test_gram_reads_the_field_asked_for(shipped, tmp_path, capsys):
    assert main(["gram", str(shipped), "--kernel", "path", "-o", str(tmp_path / "K")]) == 2
    err = capsys.readouterr().err
    assert "found ['path', 'tree']; choose one with --field" in err
    for field, kernel in (("path", "path"), ("tree", "tree")):
        out = tmp_path / f"K_{field}.npy"
        assert main(["gram", str(shipped), "--field", field, "--kernel", kernel,
                     "-o", str(out)]) == 0
        K = np.load(out)
        assert K.shape == (30, 30) and np.allclose(K, K.T)
    assert main(["gram", str(shipped), "--field", "graph", "--kernel", "path",
                 "-o", str(tmp_path / "K")]) == 2
    assert "line 1: the record has no 'graph'" in capsys.readouterr().err


def _fake_plugin(root: Path) -> None:
    """An installed-looking distribution whose kernel takes the built-in name 'rbf'."""
    info = root / "aaa_dup_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: aaa-dup-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[structkernels.kernels]\nrbf = aaa_dup_plugin:Other\n")
    (root / "aaa_dup_plugin.py").write_text(
        "from structkernels.kernels.vector import LinearKernel as Other\n")


@pytest.mark.parametrize("argv", [["kernels"], ["gram", "--kernel", "rbf", "v.jsonl", "-o", "K"]])
def test_a_plugin_named_like_a_built_in_is_one_warning_line(argv, tmp_path):
    _fake_plugin(tmp_path)
    (tmp_path / "v.jsonl").write_text("[1, 2]\n[3, 4]\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run([sys.executable, "-m", "structkernels", *argv], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # once, no source line, no Python warning format
    assert lines[0].startswith(f"structkernels {argv[0]}: warning: kernel name 'rbf' is "
                               "registered twice")
    assert "aaa-dup-plugin:rbf" in lines[0] and "registry.py" not in lines[0]


def test_evaluate_table_shows_the_predicted_positive_share_beside_the_gold_one():
    row = {"precision": 50.0, "recall": 75.0, "f1": 60.0, "f1_sd": 1.0, "roc_auc": 80.0,
           "f1_folds": [60.0], "predicted_rate": 36.2, "gold_rate": 26.2}
    text = format_table({"pairs": 1623, "positives": 425, "folds": 1, "seconds": 1.0,
                         "models": {"NPK SVM": row}})
    header, line, note = text.splitlines()[1:4]
    assert header.split()[-1] == "pos%" and line.split()[-1] == "36.2"
    assert note == "pos%: tested pairs predicted positive (gold: 26.2%)"
    assert json.loads(json.dumps(row))["predicted_rate"] == 36.2
