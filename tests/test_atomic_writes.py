"""Every file structkernels writes is complete under its name or not there (issue 23, items 3-5).

Each writer runs in a subprocess over an existing good output, in a loop, and is stopped by
``SIGINT`` and ``SIGKILL`` at seeded random points: the file under the final name is then the
old one (same bytes) or a complete new one, never a partial one.  A killed writer may leave
its temporary file (``.NAME.XXXXXX.tmp``) in the folder, never anything under the final name.

Also: two writers of one memory-mapped Gram both finish (no ``SIGBUS``); a full disk gives one
line and the old file; ``structkernels gram`` refuses to write over its input and names the
``.npy`` file it writes.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import queue
import random
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path as FilePath

import numpy as np
import pytest

import structkernels as sk
from structkernels.cli import main
from structkernels.formats.structures import read_structures
from structkernels.utils import WriteError

ROOT = FilePath(__file__).resolve().parents[1]
SEED = int(os.environ.get("STRUCTKERNELS_KILL_SEED", "23"))
#: SIGINT points per writer (one subprocess each, ended by one SIGKILL point)
ROUNDS = int(os.environ.get("STRUCTKERNELS_KILL_ROUNDS", "3"))
TEMP = re.compile(r"^\..+\.tmp$")
NODES = ["bind", "protein", "enzyme", "cell", "gene", "kinase", "activate"]
EDGES = ["ARG0", "ARG1", "mod", "location"]


def _write_paths(path: FilePath, n: int, seed: int) -> FilePath:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(n):
            p = [[None, rng.choice(NODES)]]
            p += [[rng.choice(EDGES), rng.choice(NODES)] for _ in range(rng.randint(0, 5))]
            fh.write(json.dumps({"path": p}) + "\n")
    return path


# ------------------------------------------------------------------ the kill harness
#: the child: ``SETUP`` defines ``write(dest)``; the child writes a reference copy, says
#: "ready <seconds per write>", then on each line from stdin says "running" and writes
#: ``dest`` in a loop until SIGINT ("stopped") or SIGKILL
CHILD = textwrap.dedent(
    """
    import contextlib, json, os, signal, sys, time, traceback
    # SIGINT raises KeyboardInterrupt even where the parent runs with SIGINT ignored
    # (a background job of a non-interactive shell)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    cfg = json.loads(sys.argv[1])
    proto = sys.__stdout__
    sink = open(os.devnull, "w")
    ns = {"cfg": cfg}
    exec(cfg["setup"], ns)
    write = ns["write"]
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        write(cfg["ref"])
        t0 = time.perf_counter()
        write(cfg["ref"])
        dt = time.perf_counter() - t0
    print("ready", dt, file=proto, flush=True)
    while True:
        try:
            if not sys.stdin.readline():
                break
            print("running", file=proto, flush=True)  # the parent signals only after this
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                while True:
                    write(cfg["dest"])
        except KeyboardInterrupt:
            pass
        except BaseException:
            traceback.print_exc(file=sys.__stderr__)
            os._exit(3)
        print("stopped", file=proto, flush=True)
    """
)

CLI_WRITE = textwrap.dedent(
    """
    from structkernels.cli import main

    def write(dest):
        rc = main([a.replace("{dest}", dest) for a in cfg["argv"]])
        if rc == 130:
            raise KeyboardInterrupt
        assert rc == 0, rc
    """
)


def _files(target: FilePath) -> dict[str, bytes]:
    """The files under the final name(s): ``target`` itself, or every non-temporary file of
    the folder ``target``."""
    if target.is_dir():
        return {f.name: f.read_bytes() for f in sorted(target.iterdir()) if not TEMP.match(f.name)}
    return {target.name: target.read_bytes()} if target.exists() else {}


def _check(dest: FilePath, old: dict[str, bytes], is_new, where: str) -> str:
    """The output is the old one or a complete new one; only temporary files beside it."""
    now = _files(dest)
    assert now.keys() == old.keys(), f"{where}: files {sorted(now)} (were {sorted(old)})"
    states = set()
    for name, data in now.items():
        if data == old[name]:
            states.add("old")
        else:
            assert is_new(name, data), f"{where}: {name} is neither the old file nor a new one"
            states.add("new")
    folder = dest if dest.is_dir() else dest.parent
    stray = [f.name for f in folder.iterdir()
             if f.name not in now and not TEMP.match(f.name)]
    assert not stray, f"{where}: unexpected files {stray}"
    return "/".join(sorted(states))


def _restore(dest: FilePath, old: dict[str, bytes]) -> None:
    for name, data in old.items():
        (dest / name if dest.is_dir() else dest).write_bytes(data)


#: seconds the harness waits for "stopped" before it sends SIGINT again: Python drops a
#: KeyboardInterrupt raised inside a finaliser (``__del__``, a weakref callback), reporting
#: it as unraisable, and the loop goes on, as an interactive user's would until Ctrl-C again
INT_PATIENCE = 10.0
#: SIGINTs sent at most for one stop
INT_TRIES = 5


def _lines(stream) -> queue.Queue:
    """The lines of ``stream`` as they come (None at its end), read by a thread of their
    own so that the harness can wait for one with a timeout."""
    q: queue.Queue = queue.Queue()

    def pump():
        for line in iter(stream.readline, ""):
            q.put(line)
        q.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return q


def _next_line(q: queue.Queue, timeout: float) -> str | None:
    try:
        return q.get(timeout=timeout) or ""
    except queue.Empty:
        return None


def kill_points(tmp_path: FilePath, setup: str, dest: FilePath, ref: FilePath, is_new=None,
                seed: int = SEED, **cfg) -> list[str]:
    """Run ``setup``'s ``write`` in a loop over ``dest``; SIGINT it ``ROUNDS`` times, then
    SIGKILL it, each after a seeded random delay; check ``dest`` after each stop."""
    old = _files(dest)
    assert old, "the harness needs an existing good output"
    config = {"setup": setup, "dest": os.fspath(dest), "ref": os.fspath(ref), **cfg}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(config)], cwd=tmp_path, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    lines = _lines(proc.stdout)
    try:
        ready = (_next_line(lines, 120) or "").split()
        assert ready and ready[0] == "ready", proc.stderr.read()[-3000:]
        per_write = max(float(ready[1]), 1e-3)
        reference = _files(ref)
        if is_new is None:
            def is_new(name, data):
                return data == reference[name]
        rng = random.Random(seed)
        states = []
        for i in range(ROUNDS + 1):
            _restore(dest, old)  # each round starts from the old output (the child waits)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            line = _next_line(lines, 120)
            while line and line.startswith("stopped"):  # a SIGINT sent again that came late
                line = _next_line(lines, 120)
            assert line and line.startswith("running"), (line, proc.stderr.read()[-3000:])
            # a random point within the first three writes of the loop
            time.sleep(rng.uniform(0.0, 3.0) * per_write)
            if i < ROUNDS:
                for _ in range(INT_TRIES):  # again where an interrupt was dropped
                    proc.send_signal(signal.SIGINT)
                    line = _next_line(lines, max(INT_PATIENCE, 20 * per_write))
                    if line is not None:
                        break
                assert line and line.startswith("stopped"), (line, proc.stderr.read()[-3000:])
                states.append("INT:" + _check(dest, old, is_new, f"SIGINT point {i}"))
            else:
                proc.kill()
                proc.wait(30)
                states.append("KILL:" + _check(dest, old, is_new, "SIGKILL point"))
        return states
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


DROPS_AN_INTERRUPT = textwrap.dedent(
    """
    from structkernels.utils import atomic_open
    dropped = []

    def write(dest):
        try:
            with atomic_open(dest, "w") as fh:
                fh.write("new" * 1000)
        except KeyboardInterrupt:  # as Python does in a finaliser: reported, not raised
            if not dropped:
                dropped.append(1)
                return
            raise
    """
)


def test_the_harness_interrupts_again_where_an_interrupt_was_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "INT_PATIENCE", 1.0)
    (tmp_path / "out").mkdir()
    (tmp_path / "ref").mkdir()
    dest, ref = tmp_path / "out" / "out.txt", tmp_path / "ref" / "out.txt"
    dest.write_text("old")
    states = kill_points(tmp_path, DROPS_AN_INTERRUPT, dest, ref)
    assert len(states) == ROUNDS + 1 and all(":" in x for x in states)


@pytest.fixture()
def dirs(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "ref").mkdir()
    return tmp_path / "in", tmp_path / "out", tmp_path / "ref"


@pytest.fixture(scope="module")
def npk_model(tmp_path_factory):
    """A small train-npk model and its data (path records)."""
    from test_train_npk_cli import planted_records

    tmp = tmp_path_factory.mktemp("npk")
    data = tmp / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in planted_records(n=80)))
    model = tmp / "model.npk.json.gz"
    argv = ["--quiet", "train-npk", str(data), "--out", str(model), "--alpha", "2", "--beta",
            "6", "--hashing", "none", "--no-progress", "--json"]
    assert main(argv) == 0
    return model, data


# ------------------------------------------------------------------ kill tests: the core
@pytest.mark.parametrize("memmap", [False, True], ids=["npy", "memmap"])
def test_gram_command_killed_leaves_old_or_new(dirs, tmp_path, memmap):
    src, out, ref = dirs
    paths = _write_paths(src / "paths.jsonl", 160, 1)
    dest = out / "K.npy"
    np.save(dest, np.full((3, 3), 7.0))  # an old result of another shape
    argv = ["--quiet", "gram", os.fspath(paths), "--kernel", "path", "-o", "{dest}"]
    states = kill_points(tmp_path, CLI_WRITE, dest, ref / "K.npy",
                         argv=argv + (["--memmap"] if memmap else []))
    assert len(states) == ROUNDS + 1


def test_candidates_killed_leaves_old_or_new(dirs, tmp_path, repo_root):
    pytest.importorskip("pydot", reason="pydot (extra 'graphs') is not installed")
    _, out, ref = dirs
    dest = out / "c.jsonl"
    dest.write_text('{"old": true}\n')
    argv = ["candidates", os.fspath(repo_root / "tests" / "data" / "graphs" / "amr"),
            "-o", "{dest}"]
    kill_points(tmp_path, CLI_WRITE, dest, ref / "c.jsonl", argv=argv)


def test_predict_killed_leaves_old_or_new(dirs, tmp_path, npk_model):
    _, out, ref = dirs
    model, data = npk_model
    dest = out / "pred.jsonl"
    dest.write_text('{"id": "old", "label": 0, "score": 0.0}\n')
    argv = ["predict", os.fspath(model), os.fspath(data), "-o", "{dest}"]
    kill_points(tmp_path, CLI_WRITE, dest, ref / "pred.jsonl", argv=argv)


def test_paraphrase_predictions_killed_leave_old_or_new(dirs, tmp_path):
    from test_srk_cli import corpus

    src, out, ref = dirs
    tr = corpus(src / "tr.txt", 16)
    te = corpus(src / "te.txt", 40, shift=3)
    dest = out / "pred.txt"
    dest.write_text("1\n" * 40)
    argv = ["paraphrase", "--train", os.fspath(tr), "--test", os.fspath(te), "--kernel",
            "kb-srk", "--kmax", "2", "--json", "--predictions", "{dest}"]
    kill_points(tmp_path, CLI_WRITE, dest, ref / "pred.txt", argv=argv)


WRITE_DOT = textwrap.dedent(
    """
    from structkernels.graphs import read_graphs, write_dot
    graphs = list(read_graphs(cfg["graphs"]))

    def write(dest):
        write_dot(graphs, dest)
    """
)


def test_write_dot_killed_leaves_each_file_old_or_new(dirs, tmp_path, repo_root):
    pytest.importorskip("pydot", reason="pydot (extra 'graphs') is not installed")
    from structkernels.graphs import read_graphs, write_dot

    _, out, ref = dirs
    graphs = os.fspath(repo_root / "tests" / "data" / "graphs" / "amr")
    dest = out / "dot"
    for f in write_dot(read_graphs(graphs), dest):
        FilePath(f).write_text("digraph old { a -> b [label=ARG0]; }\n")
    kill_points(tmp_path, WRITE_DOT, dest, ref / "dot", graphs=graphs)


SAVE_MODEL = textwrap.dedent(
    """
    from structkernels.npk.files import read_model, save_model
    doc = read_model(cfg["model"])

    def write(dest):
        save_model(dest, doc)
    """
)


def test_save_model_killed_leaves_old_or_new(dirs, tmp_path, npk_model):
    import gzip

    from structkernels.npk.model import read_model

    _, out, ref = dirs
    model, _ = npk_model
    dest = out / "model.npk.json.gz"
    # the same model with other bytes: a good old file
    dest.write_bytes(gzip.compress(json.dumps(read_model(model), indent=1).encode(), mtime=0))
    kill_points(tmp_path, SAVE_MODEL, dest, ref / "model.npk.json.gz", model=os.fspath(model))
    assert sk.load_model(dest).kernel == "path"


SAVE_LEARNER = textwrap.dedent(
    """
    import structkernels as sk
    learner = sk.NonstationaryLearner.load(cfg["model"])

    def write(dest):
        learner.save(dest)
    """
)


def test_learner_save_killed_leaves_old_or_new(dirs, tmp_path, npk_model):
    _, out, ref = dirs
    model, _ = npk_model
    learner = sk.NonstationaryLearner.load(model)
    dest = out / "sigma.json"
    learner.save(dest)
    dest.write_text(json.dumps(json.loads(dest.read_text()), indent=4))  # other bytes
    kill_points(tmp_path, SAVE_LEARNER, dest, ref / "sigma.json", model=os.fspath(model))
    assert sk.NonstationaryLearner.load(dest).sigma_ == learner.sigma_


# ------------------------------------------------------------------ kill tests: hsic plugin
@pytest.fixture()
def xy(dirs):
    pytest.importorskip("structkernels_hsic", reason="the structkernels-hsic plugin is not installed")
    src, _, _ = dirs
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    Y = X[:, :2] + 0.3 * rng.normal(size=(60, 2))
    np.save(src / "x.npy", X)
    np.save(src / "y.npy", Y)
    np.save(src / "x2.npy", rng.normal(size=(60, 3)))
    return src / "x.npy", src / "y.npy", src / "x2.npy"


def _phsic_scores(model: FilePath, x: FilePath, y: FilePath, folder: FilePath) -> np.ndarray | None:
    out = folder / "check-scores.npy"
    if main(["phsic", "score", os.fspath(model), os.fspath(x), os.fspath(y), "-o",
             os.fspath(out)]) != 0:
        return None
    scores = np.load(out)
    out.unlink()
    return scores


def test_phsic_fit_killed_leaves_old_or_new(dirs, tmp_path, xy, capsys):
    x, y, x2 = xy
    _, out, ref = dirs
    fit = ["phsic", "fit", "{x}", os.fspath(y), "--kernel-x", "linear", "--kernel-y", "linear",
           "-o", "{dest}"]
    dest = out / "m.phsic"
    assert main([a.replace("{x}", os.fspath(x2)).replace("{dest}", os.fspath(dest))
                 for a in fit]) == 0  # an old model, of other data
    capsys.readouterr()
    check = tmp_path / "check"
    check.mkdir()

    def is_new(name, data):
        f = check / name
        f.write_bytes(data)
        s = _phsic_scores(f, x, y, check)
        expected = _phsic_scores(ref / name, x, y, check)
        return s is not None and expected is not None and np.allclose(s, expected)

    kill_points(tmp_path, CLI_WRITE, dest, ref / "m.phsic", is_new=is_new,
                argv=[a.replace("{x}", os.fspath(x)) for a in fit])


def test_phsic_score_killed_leaves_old_or_new(dirs, tmp_path, xy, capsys):
    x, y, _ = xy
    src, out, ref = dirs
    model = src / "m.phsic"
    assert main(["phsic", "fit", os.fspath(x), os.fspath(y), "--kernel-x", "linear",
                 "--kernel-y", "linear", "-o", os.fspath(model)]) == 0
    capsys.readouterr()
    dest = out / "s.npy"
    np.save(dest, np.zeros(5))
    argv = ["phsic", "score", os.fspath(model), os.fspath(x), os.fspath(y), "-o", "{dest}"]
    kill_points(tmp_path, CLI_WRITE, dest, ref / "s.npy", argv=argv)


# ------------------------------------------------------------------ two writers, one output
CONCURRENT = textwrap.dedent(
    """
    import sys, time
    from structkernels.cli import main
    deadline = time.time() + float(sys.argv[3])
    n = 0
    while time.time() < deadline or n < 3:
        rc = main(["--quiet", "gram", sys.argv[1], "--kernel", "path", "--memmap",
                   "-o", sys.argv[2]])
        assert rc == 0, rc
        n += 1
    print(n)
    """
)


def test_two_memmap_writers_on_one_output_both_finish(dirs):
    src, out, _ = dirs
    a = _write_paths(src / "a.jsonl", 300, 1)
    b = _write_paths(src / "b.jsonl", 90, 2)
    dest = out / "K.npy"
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, os.fspath(p), os.fspath(dest),
                               "2.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in (a, b)]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (so, se) in zip(procs, results, strict=True):
        # the old code: the other writer truncated the mapped file under us (SIGBUS, -7)
        assert p.returncode == 0, (p.returncode, se[-2000:])
        assert int(so.split()[-1]) >= 3
    K = np.load(dest)
    want = [sk.gram("path", read_structures(p).structures) for p in (a, b)]
    assert any(K.shape == w.shape and np.array_equal(K, w) for w in want)
    assert [f.name for f in out.iterdir()] == ["K.npy"]  # no temporary file left


# ------------------------------------------------------------------ a full disk
FULL_DISK = textwrap.dedent(
    """
    import contextlib, io, json, resource, signal, sys
    cfg = json.loads(sys.argv[1])
    from structkernels.cli import main
    import structkernels as sk
    from structkernels.npk.files import read_model, save_model
    doc = read_model(cfg["model"])
    learner = sk.NonstationaryLearner.load(cfg["model"])

    def cli(argv):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = main(argv)
        return rc, err.getvalue()

    def api(fn, *args):
        try:
            fn(*args)
        except OSError as exc:
            return 2, f"{type(exc).__name__}: {exc}\\n"
        return 0, ""

    jobs = {name: (lambda dest, a=argv: cli([x.replace("{dest}", dest) for x in a]))
            for name, argv in cfg["cli"].items()}
    jobs["save_model"] = lambda dest: api(save_model, dest, doc)
    jobs["learner.save"] = lambda dest: api(learner.save, dest)
    for name, job in jobs.items():  # once with room: imports, compiled code, caches
        assert job(cfg["warm"][name])[0] == 0, name
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
    limit = int(cfg["limit"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    print(json.dumps({name: job(cfg["dest"][name]) for name, job in jobs.items()}))
    """
)


def test_full_disk_is_one_line_and_the_old_file(dirs, tmp_path, npk_model):
    src, out, ref = dirs
    model, data = npk_model
    paths = _write_paths(src / "paths.jsonl", 40, 3)
    cli = {
        "gram": ["--quiet", "gram", os.fspath(paths), "--kernel", "path", "-o", "{dest}"],
        "gram --memmap": ["--quiet", "gram", os.fspath(paths), "--kernel", "path", "--memmap",
                          "-o", "{dest}"],
        "predict": ["predict", os.fspath(model), os.fspath(data), "-o", "{dest}"],
    }
    names = [*cli, "save_model", "learner.save"]
    dest = {name: os.fspath(out / f"{i}.out{'.npy' if 'gram' in name else ''}")
            for i, name in enumerate(names)}
    warm = {name: os.fspath(ref / FilePath(d).name) for name, d in dest.items()}
    old = {}
    for name, d in dest.items():
        old[name] = f"old content of {name}\n".encode() * 4
        FilePath(d).write_bytes(old[name])
    cfg = {"cli": cli, "model": os.fspath(model), "dest": dest, "warm": warm, "limit": 48}
    r = subprocess.run([sys.executable, "-c", FULL_DISK, json.dumps(cfg)], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    results = json.loads(r.stdout.splitlines()[-1])
    for name, (rc, err) in results.items():
        assert rc == 2, (name, rc, err)
        assert err.count("\n") == 1 and "no space left" in err, (name, err)
        assert FilePath(dest[name]).read_bytes() == old[name], name
    assert sorted(f.name for f in out.iterdir()) == sorted(FilePath(d).name for d in dest.values())


def test_full_disk_memmap_fallocate_is_one_error(tmp_path, monkeypatch):
    out = tmp_path / "K.npy"
    np.save(out, np.ones(4))
    old = out.read_bytes()

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full, raising=False)
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(WriteError, match="no space left") as exc:
        sk.gram("linear", X, out=out)
    assert str(out) in str(exc.value) and "\n" not in str(exc.value)
    assert out.read_bytes() == old and [f.name for f in tmp_path.iterdir()] == ["K.npy"]


# ------------------------------------------------------------------ deterministic cases
class _StopAt:
    """Raises KeyboardInterrupt at the ``n``-th block (Ctrl-C in the middle of a Gram)."""

    def __init__(self, n):
        self.n = n
        self.calls = 0

    def __call__(self, real):
        def one_block(*args, **kwargs):
            self.calls += 1
            if self.calls == self.n:
                raise KeyboardInterrupt
            return real(*args, **kwargs)

        return one_block


def test_interrupted_memmap_gram_keeps_the_old_file(tmp_path, monkeypatch):
    engine = importlib.import_module("structkernels.engine.gram")

    out = tmp_path / "K.npy"
    np.save(out, np.full((3, 3), 7.0))
    old = out.read_bytes()
    X = np.random.default_rng(0).normal(size=(100, 3))
    monkeypatch.setattr(engine, "one_block", _StopAt(4)(engine.one_block))
    with pytest.raises(KeyboardInterrupt):
        # one job: every block in this process (the engine's timing probe may otherwise
        # send the blocks after the first to workers, where the patch is not)
        sk.gram("rbf", X, out=out, block_size=20, n_jobs=1)
    # the old code left a (100, 100) matrix, partly zeros, that loads as a valid array
    assert out.read_bytes() == old
    assert [f.name for f in tmp_path.iterdir()] == ["K.npy"]
    monkeypatch.undo()
    K = sk.gram("rbf", X, out=out, block_size=20)
    assert isinstance(K, np.memmap) and FilePath(K.filename) == out.resolve()
    # the same blocks in memory: a BLAS may sum a 20-row block's products in another order
    # than the whole matrix's (OpenBLAS 0.3.31 does, in the last bit)
    np.testing.assert_array_equal(np.load(out), sk.gram("rbf", X, block_size=20))
    np.testing.assert_allclose(np.load(out), sk.gram("rbf", X), rtol=1e-12, atol=1e-15)


def test_gram_command_ctrl_c_keeps_the_old_file(tmp_path, monkeypatch, capsys):
    engine = importlib.import_module("structkernels.engine.gram")

    paths = _write_paths(tmp_path / "p.jsonl", 120, 4)
    out = tmp_path / "K.npy"
    np.save(out, np.full((2, 2), 1.5))
    old = out.read_bytes()
    for memmap in ([], ["--memmap"]):
        monkeypatch.setattr(engine, "one_block", _StopAt(3)(engine.one_block))
        argv = ["gram", str(paths), "--kernel", "path", "-o", str(out), *memmap]
        assert main(argv) == 130
        monkeypatch.undo()
        assert out.read_bytes() == old
        assert sorted(f.name for f in tmp_path.iterdir()) == ["K.npy", "p.jsonl"]
    capsys.readouterr()


@pytest.mark.parametrize("memmap", [[], ["--memmap"]], ids=["npy", "memmap"])
def test_gram_command_refuses_to_write_over_an_input(tmp_path, capsys, memmap):
    p = _write_paths(tmp_path / "p.jsonl", 10, 5)
    q = _write_paths(tmp_path / "q.jsonl", 10, 6)
    before = p.read_bytes()
    base = ["gram", str(p), "--kernel", "path", *memmap]
    link = tmp_path / "link.jsonl"
    link.symlink_to(p)
    hard = tmp_path / "hard.npy"
    os.link(q, hard)
    for output, extra in [(str(p), []), (str(tmp_path / "." / "p.jsonl"), []), (str(link), []),
                          (str(q), ["--against", str(q)]), (str(hard), ["--against", str(q)])]:
        assert main([*base, *extra, "-o", output]) == 2, output
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is the input file" in err, err
    assert p.read_bytes() == before and q.read_bytes() != b""
    assert not (tmp_path / "p.jsonl.npy").exists()


@pytest.mark.parametrize("memmap", [[], ["--memmap"]], ids=["npy", "memmap"])
def test_gram_command_names_the_npy_file_it_writes(tmp_path, capsys, memmap):
    p = _write_paths(tmp_path / "p.jsonl", 10, 7)
    out = tmp_path / "K"
    assert main(["gram", str(p), "--kernel", "path", "-o", str(out), *memmap]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"wrote {out}.npy: shape 10x10"), said
    assert not out.exists()
    np.testing.assert_array_equal(np.load(f"{out}.npy"),
                                  sk.gram("path", read_structures(p).structures))


def test_gram_command_missing_folder_is_one_line(tmp_path, capsys):
    p = _write_paths(tmp_path / "p.jsonl", 5, 8)
    assert main(["gram", str(p), "--kernel", "path", "-o", str(tmp_path / "no" / "K.npy")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err


# ------------------------------------------------------------------ no writer left behind
#: a call that writes a file by name (a call writing to an open handle ``fh`` is fine)
WRITE_CALLS = re.compile(
    r"\b(np\.save|np\.savez|np\.savez_compressed|np\.savetxt|savetxt|joblib\.dump|dump"
    r"|\.savefig|\.tofile)\((?!fh\b)"
    r"|\.write_text\(|\.write_bytes\(|open_memmap\(|\bopen\([^)]*[\"'][wax]b?\+?[\"']"
)


def test_every_writer_goes_through_the_atomic_writer():
    """No module of the package or its plugins writes a file but through structkernels.utils."""
    roots = [ROOT / "structkernels", *sorted((ROOT / "plugins").glob("*/structkernels_*"))]
    found = []
    for root in roots:
        for f in sorted(root.rglob("*.py")):
            if f.parts[-2:] == ("utils", "_atomic.py"):
                continue
            for lineno, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if WRITE_CALLS.search(code) and not code.lstrip().startswith((">>>", "...")):
                    found.append(f"{f.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("command", ["candidates", "predict"])
def test_other_commands_refuse_to_write_over_an_input(tmp_path, capsys, command):
    """An output that is one of the command's inputs is refused before anything is read."""
    from structkernels.cli import main

    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "path": [[null, "x"]]}\n')
    before = src.read_bytes()
    if command == "candidates":
        argv = ["candidates", str(src), "-o", str(src)]
    else:
        argv = ["predict", str(tmp_path / "model.json.gz"), str(src), "-o", str(src)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is the input file" in err
    assert src.read_bytes() == before


def test_word_list_keeps_u2028_inside_a_word(tmp_path):
    from structkernels.cli.candidates_cmd import _words

    words = tmp_path / "w.txt"
    words.write_bytes("\ufeffRas\u2028Raf\n# note\nMEK\r\n".encode())
    assert _words(str(words)) == frozenset({"Ras\u2028Raf", "MEK"})
