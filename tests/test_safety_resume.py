"""Issue 52, cases 3, 4 and 13: ``predict --resume`` checks what it takes up (content hashes
of the inputs, the model and the committed output bytes), every write error of ``predict``
names the output asked for, and ``evaluate --plot DIR`` goes through the output rule before
any work.  A fuzz test damages the resume files at random."""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path

import pytest

from structkernels.cli import main
from structkernels.extraction._trained import TrainedExtractor

sys.path.insert(0, os.path.dirname(__file__))
from test_predict_streaming import SCORED, _fake_scores, _jsonl, _one_shot, _Stop  # noqa: E402
from test_relations_pubtator import _hand_model  # noqa: E402


@pytest.fixture
def model(monkeypatch, tmp_path):
    """A hand-written extractor whose scores are ``_fake_scores`` (no spaCy)."""
    SCORED.clear()
    monkeypatch.setattr(TrainedExtractor, "decision_function", _fake_scores)
    monkeypatch.setattr("structkernels.relations.parse.effective_n_jobs", lambda n=None: 1)
    return _hand_model(tmp_path / "m.json")


def _stopped(model, tmp_path, monkeypatch, capsys, n=20, at=3):
    """A run with ``--resume`` stopped at batch ``at``: (argv, src, out, partial, progress,
    the bytes of an uninterrupted run)."""
    src = _jsonl(tmp_path / "a.jsonl", n)
    want = _one_shot(model, [src], "jsonl", tmp_path / "want")
    out = tmp_path / "out.jsonl"
    argv = ["predict", "--model", str(model), src, "-o", str(out), "--batch-size", "4",
            "--no-cache", "--quiet", "--resume"]
    monkeypatch.setattr(TrainedExtractor, "decision_function", _Stop(at))
    assert main(argv) == 130
    monkeypatch.setattr(TrainedExtractor, "decision_function", _fake_scores)
    capsys.readouterr()
    return argv, src, out, Path(f"{out}.partial"), Path(f"{out}.partial.progress"), want


def _refused(capsys, *names: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for name in names:
        assert name in err, err
    return err


# ------------------------------------------------------------------ case 3
def test_case3_damaged_partial_output_is_refused(model, tmp_path, monkeypatch, capsys):
    argv, _, out, partial, _, want = _stopped(model, tmp_path, monkeypatch, capsys)
    data = bytearray(partial.read_bytes())
    data[0:5] = b"#@!%&"  # same length, garbage in line 1
    partial.write_bytes(bytes(data))
    assert main(argv) == 2
    _refused(capsys, str(partial), "without --resume")
    assert not out.exists() and partial.read_bytes() == bytes(data)
    assert main(argv[:-1]) == 0 and out.read_bytes() == want  # starting again works


def test_case3_input_edited_in_place_is_refused(model, tmp_path, monkeypatch, capsys):
    argv, src, out, partial, _, _ = _stopped(model, tmp_path, monkeypatch, capsys)
    st = os.stat(src)
    text = Path(src).read_text()
    Path(src).write_text(text.replace("activates", "inhibits!", 1))  # same size
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(src).st_size == st.st_size
    assert main(argv) == 2
    _refused(capsys, src, "changed")
    assert not out.exists()


def test_case3_model_edited_is_refused(model, tmp_path, monkeypatch, capsys):
    argv, _, out, _, _, _ = _stopped(model, tmp_path, monkeypatch, capsys)
    doc = json.loads(model.read_text())
    doc["svm"]["intercept"] = -0.2
    model.write_text(json.dumps(doc))
    assert main(argv) == 2
    _refused(capsys, str(model), "changed")
    assert not out.exists()


def test_case3_old_progress_version_is_refused(model, tmp_path, monkeypatch, capsys):
    argv, _, out, _, progress, _ = _stopped(model, tmp_path, monkeypatch, capsys)
    doc = json.loads(progress.read_text())
    progress.write_text(json.dumps({"format": doc["format"], "version": 1,
                                    "identity": "0" * 64, "labelled": True,
                                    "state": doc["state"]}))
    assert main(argv) == 2
    _refused(capsys, str(progress), "start again")
    assert not out.exists()


def test_case3_undamaged_resume_gives_the_same_bytes(model, tmp_path, monkeypatch, capsys):
    argv, _, out, partial, progress, want = _stopped(model, tmp_path, monkeypatch, capsys)
    partial.write_bytes(partial.read_bytes() + b'{"half a batch')
    assert main(argv) == 0, capsys.readouterr().err
    assert out.read_bytes() == want and not partial.exists() and not progress.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_case3_resume_from_a_pipe_is_refused_before_reading(model, tmp_path, capsys):
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)  # nobody writes it: a read would hang
    assert main(["predict", "--model", str(model), str(fifo), "-o", str(tmp_path / "o.jsonl"),
                 "--no-cache", "--quiet", "--resume"]) == 2
    _refused(capsys, str(fifo), "--resume", "pipe")


# ------------------------------------------------------------------ case 13
def _no_space_on(suffix: str, monkeypatch):
    """``os.write`` and ``os.fsync`` fail with ENOSPC on files whose name ends in ``suffix``."""
    real_write, real_fsync = os.write, os.fsync

    def target(fd):
        try:
            return os.readlink(f"/proc/self/fd/{fd}").endswith(suffix)
        except OSError:
            return False

    def write(fd, data):
        if target(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    def fsync(fd):
        if target(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("resume", [False, True])
def test_case13_no_space_names_the_output(model, tmp_path, monkeypatch, capsys, resume):
    src = _jsonl(tmp_path / "a.jsonl", 12)
    out = tmp_path / "o.jsonl"
    argv = ["predict", "--model", str(model), src, "-o", str(out), "--batch-size", "4",
            "--no-cache", "--quiet", *(["--resume"] if resume else [])]
    _no_space_on(".partial", monkeypatch)
    assert main(argv) == 2
    err = _refused(capsys, str(out), "No space left on device")
    assert "Errno" not in err
    assert ("progress" in err) is False and not out.exists()
    assert not Path(f"{out}.partial.progress").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_case13_no_space_for_the_progress_file_names_both(model, tmp_path, monkeypatch, capsys):
    src = _jsonl(tmp_path / "a.jsonl", 12)
    out = tmp_path / "o.jsonl"
    argv = ["predict", "--model", str(model), src, "-o", str(out), "--batch-size", "4",
            "--no-cache", "--quiet", "--resume"]
    import contextlib

    @contextlib.contextmanager
    def full(path, *a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        yield

    monkeypatch.setattr("structkernels.extraction.resume.atomic_open", full)
    assert main(argv) == 2
    err = _refused(capsys, str(out), "progress", "No space left on device")
    assert "Errno" not in err and not out.exists()


def test_case13_no_space_on_standard_output_names_it(model, tmp_path, monkeypatch, capsys):
    import io

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    src = _jsonl(tmp_path / "a.jsonl", 12)
    monkeypatch.setattr(sys, "stdout", Full())
    assert main(["predict", "--model", str(model), src, "--batch-size", "4", "--no-cache",
                 "--quiet"]) == 2
    err = _refused(capsys, "standard output", "No space left on device")
    assert "Errno" not in err


# ------------------------------------------------------------------ case 4
def _corpus(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    return _jsonl(folder / "c.jsonl", 12)


def _evaluate(corpus: str, plot: str) -> list[str]:
    return ["evaluate", corpus, "--cv", "2", "--models", "n-gram SVM", "--no-cache", "-q",
            "--plot", plot]


def _no_work(monkeypatch):
    import structkernels.experiments.relations as rel

    def boom(*a, **k):
        raise AssertionError("the evaluation ran")

    monkeypatch.setattr(rel, "evaluate_corpora", boom)


def test_case4_plot_inside_the_input_folder_is_refused(tmp_path, monkeypatch, capsys):
    corpus = _corpus(tmp_path / "corpus")
    _no_work(monkeypatch)
    for plot in (tmp_path / "corpus" / "plots", tmp_path / "corpus"):
        assert main(_evaluate(str(tmp_path / "corpus"), str(plot))) == 2
        _refused(capsys, "--plot", "input folder")
    assert main(_evaluate(corpus, str(tmp_path / "corpus" / "c.jsonl"))) == 2
    _refused(capsys, "--plot")
    assert sorted(os.listdir(tmp_path / "corpus")) == ["c.jsonl"]


def test_case4_plot_over_a_file_is_refused_before_work(tmp_path, monkeypatch, capsys):
    corpus = _corpus(tmp_path / "corpus")
    (tmp_path / "taken").write_text("keep\n")
    _no_work(monkeypatch)
    assert main(_evaluate(corpus, str(tmp_path / "taken"))) == 2
    err = _refused(capsys, "--plot", str(tmp_path / "taken"))
    assert "Errno" not in err and (tmp_path / "taken").read_text() == "keep\n"
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "pr.png").mkdir()  # a folder where a figure goes
    assert main(_evaluate(corpus, str(tmp_path / "d"))) == 2
    _refused(capsys, "--plot", "pr.png")


def test_case4_missing_matplotlib_is_said_before_work(tmp_path, monkeypatch, capsys):
    corpus = _corpus(tmp_path / "corpus")
    _no_work(monkeypatch)
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(_evaluate(corpus, str(tmp_path / "plots"))) == 2
    _refused(capsys, "matplotlib")
    assert not (tmp_path / "plots").exists()


# ------------------------------------------------------------------ fuzz: resume files
def test_fuzz_damaged_resume_files_continue_or_refuse(model, tmp_path, monkeypatch, capsys):
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")

    argv, _, out, partial, progress, want = _stopped(model, tmp_path, monkeypatch, capsys)
    files = {partial: partial.read_bytes(), progress: progress.read_bytes()}

    damage = st.one_of(
        st.tuples(st.just("flip"), st.sampled_from([partial, progress]),
                  st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                           min_size=1, max_size=4)),
        st.tuples(st.just("cut"), st.sampled_from([partial, progress]), st.integers(0, 10**6)),
        st.tuples(st.just("append"), st.sampled_from([partial, progress]), st.binary(max_size=40)),
        st.tuples(st.just("field"), st.sampled_from(["batches", "bytes", "sentences", "pairs"]),
                  st.integers(0, 10**4)),
    )

    @hypothesis.settings(max_examples=25, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(damage)
    def check(how):
        for path, data in files.items():
            path.write_bytes(data)
        if out.exists():
            out.unlink()
        kind, *rest = how
        if kind == "flip":
            path, edits = rest
            data = bytearray(files[path])
            for at, value in edits:
                data[at % len(data)] = value
            path.write_bytes(bytes(data))
        elif kind == "cut":
            path, at = rest
            path.write_bytes(files[path][: at % (len(files[path]) + 1)])
        elif kind == "append":
            path, extra = rest
            path.write_bytes(files[path] + extra)
        else:
            key, value = rest
            doc = json.loads(files[progress])
            doc["state"][key] = value
            progress.write_text(json.dumps(doc))
        rc = main(argv)
        err = capsys.readouterr().err.strip()
        if rc == 0:
            assert out.read_bytes() == want
            for line in out.read_bytes().decode().splitlines():
                json.loads(line)
        else:
            assert rc == 2 and len(err.splitlines()) == 1, (rc, err)
            assert not out.exists()

    check()
