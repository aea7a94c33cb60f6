"""The command line: listing kernels, computing Gram matrices, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import structkernels as sk
from structkernels.cli import main


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_kernels_lists_names_and_params(capsys):
    assert main(["kernels"]) == 0
    out = capsys.readouterr().out
    for name in ("linear", "rbf", "bag-of-labels"):
        assert name in out
    assert "bandwidth=1.0" in out


def test_gram_vectors(tmp_path, capsys):
    X = np.random.default_rng(0).normal(size=(6, 3))
    src = write_jsonl(tmp_path / "x.jsonl", [{"id": i, "vector": list(v)} for i, v in enumerate(X)])
    out = tmp_path / "K.npy"
    args = ["gram", str(src), "--kernel", "rbf", "--param", "bandwidth=2", "-o", str(out)]
    assert main(args) == 0
    np.testing.assert_allclose(np.load(out), sk.gram("rbf", X, bandwidth=2.0), atol=1e-12)
    assert "21 kernel evaluations" in capsys.readouterr().out


def test_gram_paths_with_plugin_kernel_parallel_memmap(tmp_path):
    paths = [
        [[None, "bind-01"], ["ARG1", "protein"]],
        [[None, "bind-01"], ["ARG0", "enzyme"], ["ARG1", "protein"]],
        [[None, "inhibit-01"]],
    ]
    src = write_jsonl(tmp_path / "p.jsonl", [{"path": p} for p in paths])
    out = tmp_path / "K.npy"
    argv = ["gram", str(src), "--kernel", "bag-of-labels", "-o", str(out), "--n-jobs", "2"]
    assert main(argv + ["--memmap", "--param", "use_edges=false"]) == 0
    expected = sk.gram("bag-of-labels", [sk.Path(p) for p in paths], use_edges=False)
    np.testing.assert_array_equal(np.load(out), expected)


@pytest.mark.parametrize(
    "content, argv_extra, message",
    [
        ("", [], "no records (empty file)"),
        ('{"vector": [1, 2]}\nnot json\n', [], "line 2: not valid JSON"),
        ('{"id": "r7", "path": [["ARG1"]]}\n', [], "line 1 (record r7): path tuple 0"),
        ('{"vector": [1, 2]}\n', ["--kernel", "nope"], "unknown kernel 'nope'"),
        ('{"vector": [1, 2]}\n', ["--param", "bandwidth=-1"],
         "bandwidth must be a positive number"),
        ('{"vector": [1, 2]}\n', ["--param", "bandwidth"], "--param expects key=value"),
        ('{"vector": [1, "a"]}\n', [], "'vector' must be a list of numbers"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(tmp_path, content, argv_extra, message):
    src = tmp_path / "bad.jsonl"
    src.write_text(content)
    argv = ["gram", str(src), "-o", str(tmp_path / "K.npy")]
    if "--kernel" not in argv_extra:
        argv += ["--kernel", "rbf"]
    result = subprocess.run(
        [sys.executable, "-m", "structkernels", *argv, *argv_extra],
        capture_output=True, text=True,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_missing_file(tmp_path, capsys):
    assert main(["gram", str(tmp_path / "none.jsonl"), "--kernel", "rbf", "-o", "x.npy"]) == 2
    err = capsys.readouterr().err
    assert "no such file: " in err and "Errno" not in err


def test_console_script_installed():
    result = subprocess.run(["structkernels", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "gram" in result.stdout


@pytest.mark.parametrize("argv, option", [
    (["train-npk", "{d}/in.jsonl", "--out", "{m}/model.json.gz"], "--out"),
    (["train-npk", "{d}/in.jsonl", "--out", "{d}/model.json.gz", "--plot", "{m}/p.png"], "--plot"),
    (["gram", "{d}/in.jsonl", "--kernel", "rbf", "-o", "{m}/K"], "--output"),
    (["gram", "{d}/in.jsonl", "--kernel", "rbf", "-o", "{m}/K", "--memmap"], "--output"),
    (["predict", "{d}/model.json.gz", "{d}/in.jsonl", "-o", "{m}/p.jsonl"], "--output"),
    (["candidates", "{d}/g.dot", "--out", "{m}/c.jsonl"], "--out"),
    (["paraphrase", "--train", "{d}/t.tsv", "--test", "{d}/t.tsv", "--predictions", "{m}/p.txt"],
     "--predictions"),
], ids=["train-npk", "train-npk-plot", "gram", "gram-memmap", "predict", "candidates",
        "paraphrase"])
def test_every_command_refuses_a_missing_output_folder(tmp_path, capsys, argv, option):
    """No command creates a folder: a mistyped one is one line, exit 2, before any work."""
    write_jsonl(tmp_path / "in.jsonl", [{"vector": [1.0, 2.0]}])
    missing = tmp_path / "missing"
    argv = [a.format(d=tmp_path, m=missing) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    target = next(a for a in argv if a.startswith(str(missing)))
    assert err == (f"structkernels {argv[0]}: error: {option} {target}: cannot write: "
                   f"folder {str(missing)!r} does not exist\n")
    assert not missing.exists()


@pytest.mark.parametrize("error", [TypeError("a bug"), KeyError("a bug")], ids=["TypeError", "KeyError"])
def test_an_unexpected_type_or_key_error_is_a_traceback_not_a_user_error(error, monkeypatch, tmp_path):
    """Only the user-error types become one line and exit 2: a bug keeps its traceback."""
    from structkernels.cli import gram_cmd

    def broken(args):
        raise error

    monkeypatch.setattr(gram_cmd, "run", broken)
    src = write_jsonl(tmp_path / "x.jsonl", [{"vector": [1.0]}])
    with pytest.raises(type(error)):
        main(["gram", str(src), "--kernel", "rbf", "-o", str(tmp_path / "K")])
    script = (
        "import sys\n"
        "from structkernels.cli import gram_cmd, main\n"
        f"def broken(args): raise {type(error).__name__}('a bug')\n"
        "gram_cmd.run = broken\n"
        f"sys.exit(main(['gram', {str(src)!r}, '--kernel', 'rbf', '-o', {str(tmp_path / 'K')!r}]))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 1
    assert "Traceback" in result.stderr and f"{type(error).__name__}: " in result.stderr


@pytest.mark.parametrize("records, argv_extra, message", [
    ([{"vector": [1.0, 2.0]}], ["--kernel", "rbf", "--param", "foo=1"],
     "--kernel rbf: bad --param: RBFKernel.__init__() got an unexpected keyword argument 'foo'"),
    ([{"path": [[None, "a"]]}], ["--kernel", "path", "--param", "lam=[1]"],
     "--kernel path: bad --param: PathKernel.lam must be a number in (0, 1], got [1]"),
    ([{"vector": [1.0, 2.0]}], ["--kernel", "path"],
     "{src}: --kernel path does not take vector records (PathKernel expects"),
], ids=["unknown-param", "param-type", "records-of-another-kind"])
def test_gram_bad_kernel_params_and_records_are_one_line(tmp_path, capsys, records, argv_extra,
                                                         message):
    """These reach the kernel as a TypeError: gram names them as the user's mistake."""
    src = write_jsonl(tmp_path / "in.jsonl", records)
    assert main(["gram", str(src), "-o", str(tmp_path / "K"), *argv_extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"structkernels gram: error: {message.format(src=src)}")
    assert err.count("\n") == 1
