"""Issue 37, item 1: an output never destroys an input or a special file.

Each case was reproduced on the old code (exit 0, the input replaced); here every command
and option that writes goes through one rule (:func:`structkernels.utils.check_output`),
and the atomic writer writes through a symbolic link and refuses special files.  The
heavy parts of ``evaluate`` and ``predict`` (spaCy, the SVM) are replaced by fakes: the
rule runs before them, and on the old code the fakes let the run reach its write.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import threading

import numpy as np
import pytest

from structkernels.cli import main
from structkernels.utils import atomic_open, save_npy

CORPUS = {"id": "s1", "document": "d1", "text": "KinC activates SigE",
          "entities": [{"id": "e0", "start": 0, "end": 4}, {"id": "e1", "start": 15, "end": 19}],
          "interactions": [{"e1": "e0", "e2": "e1", "type": "PPI"}]}
BRAT_TEXT = "KinC binds SigE.\n"
BRAT_ANN = "T1\tP 0 4\tKinC\nT2\tP 11 15\tSigE\nR1\tB Arg1:T1 Arg2:T2\n"


def _corpus(path, n=2):
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({**CORPUS, "id": f"s{i}", "document": f"d{i}"}) + "\n")
    return path


def _brat(folder, docs=("doc0", "doc1")):
    folder.mkdir(exist_ok=True)
    for d in docs:
        (folder / f"{d}.txt").write_text(BRAT_TEXT)
        (folder / f"{d}.ann").write_text(BRAT_ANN)
    return folder


def _snapshot(*roots):
    """Every file's bytes (and whether it is a link) under ``roots``."""
    out = {}
    for root in roots:
        paths = [root] if not root.is_dir() else sorted(root.rglob("*"))
        for p in paths:
            if p.is_symlink():
                out[str(p)] = ("link", os.readlink(p))
            elif p.is_file():
                out[str(p)] = ("file", p.read_bytes())
    return out


class _FakeExtractor:
    """Stands for RelationExtractor: fits instantly, saves one line (atomically)."""

    def __init__(self, *args, **kwargs):
        pass

    def fit(self, corpus):
        return self

    def save(self, path):
        with atomic_open(path) as fh:
            fh.write('{"format": "fake extractor"}\n')

    @classmethod
    def from_json(cls, doc, **kwargs):
        return cls()

    def predict_pairs(self, corpus):
        return [{"sentence": p.sentence_id if hasattr(p, "sentence_id") else "s", "pair": p.id,
                 "score": 0.5, "label": 1} for p in corpus.pairs()]


@pytest.fixture()
def fast_evaluate(monkeypatch):
    """``evaluate`` without spaCy or SVMs: the run reaches --save-model at once."""
    import structkernels.experiments.relations as er
    import structkernels.extraction as ex
    import structkernels.relations.parse as rp

    monkeypatch.setattr(er, "evaluate_corpora", lambda *a, **k: {"fake": True})
    monkeypatch.setattr(rp, "DependencyParser", lambda *a, **k: None)
    monkeypatch.setattr(ex, "RelationExtractor", _FakeExtractor)


@pytest.fixture()
def fast_predict(monkeypatch, tmp_path):
    """``predict --model M``: M reads as a relation extractor, scoring without spaCy."""
    import structkernels.extraction as ex
    import structkernels.extraction._trained as et
    import structkernels.extraction.files as ef
    import structkernels.npk.files as nf

    fmt = ex.EXTRACTOR_FORMAT
    monkeypatch.setattr(nf, "read_document", lambda path, *a, **k: {"format": fmt})
    monkeypatch.setattr(ef, "read_model_document", lambda path, *a, **k: {"format": fmt})
    monkeypatch.setattr(et, "TrainedExtractor", _FakeExtractor)
    model = tmp_path / "model.json"
    model.write_text('{"format": "stand-in"}\n')
    return model


def _refused(capsys, argv, *needles):
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err
    return err


# ------------------------------------------------------------------ the nine cases of issue 37
def test_evaluate_save_model_over_its_corpus_is_refused(tmp_path, capsys, fast_evaluate):
    c = _corpus(tmp_path / "C.jsonl")
    before = _snapshot(tmp_path)
    _refused(capsys, ["evaluate", c, "--cv", "2", "--save-model", c, "--json", "-q"],
             "--save-model", "is the input file")
    assert _snapshot(tmp_path) == before


def test_evaluate_save_model_over_the_test_corpus_is_refused(tmp_path, capsys, fast_evaluate):
    a, b = _corpus(tmp_path / "A.jsonl"), _corpus(tmp_path / "B.jsonl")
    before = _snapshot(tmp_path)
    _refused(capsys, ["evaluate", "--train", a, "--test", b, "--save-model", b, "--json", "-q"],
             f"--save-model {b}: is the input file")
    assert _snapshot(tmp_path) == before


def test_evaluate_save_model_inside_a_brat_folder_is_refused(tmp_path, capsys, fast_evaluate):
    brat = _brat(tmp_path / "brat")
    before = _snapshot(tmp_path)
    _refused(capsys, ["evaluate", brat, "--cv", "2", "--save-model", brat / "doc0.ann",
                      "--json", "-q"], "is inside the input folder")
    assert _snapshot(tmp_path) == before


def test_predict_output_beside_a_brat_input_is_refused(tmp_path, capsys, fast_predict):
    brat = _brat(tmp_path / "brat")
    before = _snapshot(brat)
    _refused(capsys, ["predict", "--model", fast_predict, brat / "doc1.ann", "-o",
                      brat / "doc1.txt"], "--output", "reads beside it")
    _refused(capsys, ["predict", "--model", fast_predict, brat / "doc1.txt", "-o",
                      brat / "doc1.ann"], "reads beside it")
    assert _snapshot(brat) == before


def test_predict_output_inside_an_input_folder_is_refused(tmp_path, capsys, fast_predict):
    brat = _brat(tmp_path / "brat")
    before = _snapshot(brat)
    for target in (brat / "doc0.txt", brat / "new.jsonl"):
        _refused(capsys, ["predict", "--model", fast_predict, brat, "-o", target],
                 "is inside the input folder")
    assert _snapshot(brat) == before and not (brat / "new.jsonl").exists()


def test_predict_still_writes_beside_an_unrelated_brat_document(tmp_path, capsys, fast_predict):
    brat = _brat(tmp_path / "brat")
    out = tmp_path / "scores.jsonl"
    assert main(["predict", "--model", str(fast_predict), str(brat / "doc1.ann"), "-o",
                 str(out)]) == 0
    assert json.loads(out.read_text().splitlines()[0])["score"] == 0.5
    capsys.readouterr()


def test_a_symlinked_output_is_written_through_and_stays_a_link(tmp_path, capsys, repo_root):
    """Library: the link stays, its target gets the content; the command line: the same."""
    real = tmp_path / "real.txt"
    real.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with atomic_open(link) as fh:
        fh.write("new\n")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new\n"
    # a relative link, through save_npy and through a command's stream output
    npy = tmp_path / "K.npy"
    (tmp_path / "K-link.npy").symlink_to("K.npy")
    save_npy(tmp_path / "K-link.npy", np.eye(2))
    assert (tmp_path / "K-link.npy").is_symlink()
    np.testing.assert_array_equal(np.load(npy), np.eye(2))
    graphs = repo_root / "tests" / "data" / "graphs" / "amr"
    cands = tmp_path / "cands.jsonl"
    cands.write_text("")
    out = tmp_path / "out.jsonl"
    out.symlink_to(cands)
    assert main(["candidates", str(graphs), "-o", str(out)]) == 0
    capsys.readouterr()
    assert out.is_symlink() and cands.read_text().count("\n") >= 1


def test_a_symlink_to_an_input_is_refused(tmp_path, capsys, fast_evaluate):
    c = _corpus(tmp_path / "C.jsonl")
    link = tmp_path / "model.json"
    link.symlink_to(c)
    before = _snapshot(tmp_path)
    _refused(capsys, ["evaluate", c, "--cv", "2", "--save-model", link, "--json", "-q"],
             "is the input file")
    assert _snapshot(tmp_path) == before


def _fifo(path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(path)
    return path


def _run_with_timeout(target, seconds=60):
    """Run ``target`` in a thread; fail (not hang) when it blocks."""
    box = {}

    def go():
        try:
            box["value"] = target()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked on the FIFO"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_a_fifo_is_refused_as_a_model_without_blocking(tmp_path, capsys, fast_evaluate):
    c = _corpus(tmp_path / "C.jsonl")
    fifo = _fifo(tmp_path / "pipe")
    rc = _run_with_timeout(lambda: main(["evaluate", str(c), "--cv", "2", "--save-model",
                                         str(fifo), "--json", "-q"]))
    assert rc == 2
    err = capsys.readouterr().err
    assert "--save-model" in err and "FIFO" in err and err.count("\n") == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # the library too: the atomic writer never renames over it
    def write():
        with atomic_open(fifo, "wb") as fh:
            fh.write(b"model")

    with pytest.raises(OSError, match="FIFO"):
        _run_with_timeout(write)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_is_written_as_a_stream_by_a_json_lines_output(tmp_path, capsys, repo_root):
    fifo = _fifo(tmp_path / "pipe")
    graphs = repo_root / "tests" / "data" / "graphs" / "amr"
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the writer does not block
    chunks = []
    try:
        result = {}
        t = threading.Thread(target=lambda: result.setdefault(
            "rc", main(["candidates", str(graphs), "-o", str(fifo)])), daemon=True)
        t.start()
        while t.is_alive() or True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                chunk = None
            if chunk:
                chunks.append(chunk)
            elif not t.is_alive():
                break
            t.join(0.01)
        t.join(60)
        assert not t.is_alive() and result["rc"] == 0
    finally:
        os.close(fd)
    capsys.readouterr()
    lines = b"".join(chunks).decode().splitlines()
    assert lines and all(json.loads(line)["path"] for line in lines)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def _device(tmp_path):
    """A character device like /dev/full (1, 7) in a temporary folder, or skip."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("making a device node needs root (os.mknod); the FIFO tests cover "
                    "special files without it")
    dev = tmp_path / "full.npy"
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EACCES, errno.EROFS):
            pytest.skip(f"this container may not make device nodes: {exc}")
        raise
    return dev


def test_a_device_is_never_replaced(tmp_path, capsys, repo_root):
    dev = _device(tmp_path)
    src = tmp_path / "x.jsonl"
    src.write_text('{"vector": [1.0, 2.0]}\n{"vector": [0.0, 1.0]}\n')
    _refused(capsys, ["gram", src, "--kernel", "rbf", "-o", dev], "character device")
    with pytest.raises(OSError, match="character device"):
        save_npy(dev, np.eye(2))
    assert stat.S_ISCHR(os.lstat(dev).st_mode)
    # a stream output writes to it in place: /dev/full is one line, exit 2, still a device
    graphs = repo_root / "tests" / "data" / "graphs" / "amr"
    _refused(capsys, ["candidates", graphs, "-o", dev], "no space left")
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_dev_null_takes_a_stream_and_is_refused_as_a_model(tmp_path, capsys, repo_root,
                                                         fast_evaluate):
    """The real null device: a JSON Lines output streams into it; a model may not replace it.

    Only the new code runs this (on the old code, as root, the rename would replace the
    machine's /dev/null), so it checks the rule before any write."""
    import structkernels.utils as su

    if not hasattr(su, "check_output"):
        pytest.skip("the old code would rename over /dev/null")
    graphs = repo_root / "tests" / "data" / "graphs" / "amr"
    assert main(["candidates", str(graphs), "-o", os.devnull]) == 0
    capsys.readouterr()
    c = _corpus(tmp_path / "C.jsonl")
    _refused(capsys, ["evaluate", c, "--save-model", os.devnull, "--json", "-q"],
             "character device")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_save_model_dash_is_refused_and_writes_no_file_named_dash(tmp_path, capsys, monkeypatch,
                                                                   fast_evaluate):
    monkeypatch.chdir(tmp_path)
    c = _corpus(tmp_path / "C.jsonl")
    _refused(capsys, ["evaluate", c, "--cv", "2", "--save-model", "-", "--json", "-q"],
             "--save-model -: standard output cannot hold")
    assert not (tmp_path / "-").exists()


# ------------------------------------------------------------------ every other writer
def test_train_npk_outputs_follow_the_rule(tmp_path, capsys):
    graphs = _brat(tmp_path / "graphs", docs=("g1",))
    labels = tmp_path / "labels.json"
    labels.write_text("[]")
    data = tmp_path / "d.jsonl"
    data.write_text("{}\n")
    before = _snapshot(tmp_path)
    base = ["train-npk", "--no-progress"]
    _refused(capsys, [*base, data, "--out", data], "--out", "is the input file")
    _refused(capsys, [*base, "--graphs", graphs, "--graph-labels", labels, "--out",
                      graphs / "m.json"], "is inside the input folder")
    _refused(capsys, [*base, "--graphs", graphs, "--graph-labels", labels, "--out",
                      tmp_path / "m.json", "--plot", labels], "--plot", "is the input file")
    _refused(capsys, [*base, data, "--out", tmp_path / "m.json", "--plot-eval",
                      tmp_path / "m.json"], "--plot-eval", "is also the --out output")
    _refused(capsys, [*base, data, "--out", "-"], "--out -: standard output cannot hold")
    assert _snapshot(tmp_path) == before


def test_train_npk_never_writes_into_the_shipped_dataset(tmp_path, capsys, monkeypatch):
    """Without DATA the shipped dataset's folder is the input (a stand-in folder here, so
    that the old code, which trains on it, writes nothing into the package)."""
    import structkernels.datasets.interactions as di

    shipped = tmp_path / "data"
    shipped.mkdir()
    (shipped / "interactions.jsonl.gz").write_bytes(b"not a dataset\n")
    monkeypatch.setattr(di, "SHIPPED_DATASET", shipped)
    target = shipped / "model-over-the-data.json"
    _refused(capsys, ["train-npk", "--no-progress", "--out", target], "inside the input folder")
    assert not target.exists()


def test_gram_and_candidates_follow_the_rule(tmp_path, capsys, repo_root):
    src = tmp_path / "x.jsonl"
    src.write_text('{"vector": [1.0, 2.0]}\n')
    graphs = tmp_path / "amr"
    shutil.copytree(repo_root / "tests" / "data" / "graphs" / "amr", graphs)
    before = _snapshot(tmp_path)
    _refused(capsys, ["gram", src, "--kernel", "rbf", "-o", "-"], "--output -")
    _refused(capsys, ["candidates", graphs, "-o", graphs / "s1.dot"], "is inside the input folder")
    _refused(capsys, ["candidates", graphs / "s1.dot", "-o", graphs / "s2.dot", "--entities",
                      graphs / "s2.dot"], "is the input file")
    assert _snapshot(tmp_path) == before


def test_phsic_outputs_follow_the_rule(tmp_path, capsys):
    hsic = pytest.importorskip("structkernels_hsic")
    from structkernels.cli import commands

    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins")
    if not os.path.abspath(hsic.__file__).startswith(here + os.sep):
        pytest.skip(f"structkernels_hsic is imported from {hsic.__file__}, not from this "
                    "checkout (PYTHONPATH=plugins/structkernels-hsic)")

    if "phsic" not in commands.names():
        pytest.skip("the structkernels-hsic plugin's commands are not installed")
    rng = np.random.default_rng(0)
    x, y = tmp_path / "x.npy", tmp_path / "y.npy"
    np.save(x, rng.normal(size=(12, 2)))
    np.save(y, rng.normal(size=(12, 2)))
    before = _snapshot(tmp_path)
    lin = ["--kernel-x", "linear", "--kernel-y", "linear"]
    _refused(capsys, ["phsic", "fit", x, y, *lin, "-o", y], "-o", "is the input file")
    _refused(capsys, ["phsic", "fit", x, y, *lin, "-o", "-"], "standard output cannot hold")
    _refused(capsys, ["phsic", "select", x, y, *lin, "--top", "3", "-o", tmp_path / "k.txt",
                      "--scores", x], "--scores", "is the input file")
    _refused(capsys, ["phsic", "select", x, y, *lin, "--top", "3", "-o", tmp_path / "s.npy",
                      "--scores", tmp_path / "s"], "is also the -o output")
    assert _snapshot(tmp_path) == before


# ------------------------------------------------------------------ the rule itself
def test_check_output_names_the_option_and_the_path(tmp_path):
    from structkernels.utils import OutputError, StructkernelsError, check_output

    assert issubclass(OutputError, StructkernelsError) and issubclass(OutputError, ValueError)
    (tmp_path / "a.ann").write_text("")
    with pytest.raises(OutputError, match=r"^--scores .*a\.txt: is the text the input"):
        check_output(tmp_path / "a.txt", [tmp_path / "a.ann"], what="--scores")
    assert check_output(tmp_path / "a.txt", [tmp_path / "a.ann"], what="--x", siblings=()) == \
        tmp_path / "a.txt"
    assert check_output("-", [], what="-o", stream_ok=True) is None
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(OutputError, match="loop"):
        check_output(loop, [], what="-o")
    # a link inside an input folder that leads to the output
    folder = tmp_path / "in"
    folder.mkdir()
    outside = tmp_path / "outside.txt"
    (folder / "doc.txt").symlink_to(outside)
    with pytest.raises(OutputError, match="through the link"):
        check_output(outside, [folder], what="-o")
