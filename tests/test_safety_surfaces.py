"""The safety promises of the surfaces added after the last safety pass (issue 52).

Case 2: side files (``OUT.partial``, its progress file, a cache entry's ``NAME.sum``) are
never written through a stale symbolic link.  Case 8: cache entries are keyed (an HMAC
under a per-cache secret), so an entry edited with a recomputed SHA-256 is refused.
Case 9: a JSON document with a duplicated key is refused naming the key.  Case 11: a
child process exits when its parent is killed.  Case 14: a gzip bomb is refused before
memory grows past a small multiple of the limit.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

import structkernels
from structkernels.utils import CacheFolder, RecordError, WriteError, atomic_open, loads_record

ROOT = Path(structkernels.__file__).resolve().parents[1]


def _python(code: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120, **kw)


# ------------------------------------------------------------------ case 2: side files
def test_case2_a_stale_link_as_side_file_is_replaced_never_written_through(tmp_path):
    from structkernels.utils import open_side_file

    victim = tmp_path / "in.xml"
    victim.write_text("<collection/>\n")
    side = tmp_path / "o.jsonl.partial"
    side.symlink_to(victim)
    fd = open_side_file(side)
    try:
        os.write(fd, b'{"row": 1}\n')
    finally:
        os.close(fd)
    assert victim.read_text() == "<collection/>\n"
    assert not side.is_symlink() and side.read_bytes() == b'{"row": 1}\n'


def test_case2_resuming_through_a_linked_side_file_is_refused_naming_it(tmp_path):
    from structkernels.utils import open_side_file

    victim = tmp_path / "unrelated.txt"
    victim.write_text("keep me\n")
    side = tmp_path / "o.jsonl.partial"
    side.symlink_to(victim)
    with pytest.raises(WriteError, match="o.jsonl.partial") as err:
        open_side_file(side, append=True)
    assert "\n" not in str(err.value) and "link" in str(err.value)
    assert victim.read_text() == "keep me\n"
    (tmp_path / "dir.partial").mkdir()
    with pytest.raises(WriteError, match="dir.partial"):
        open_side_file(tmp_path / "dir.partial")


def test_case2_a_side_file_written_atomically_replaces_a_link_not_its_target(tmp_path):
    victim = tmp_path / "in.xml"
    victim.write_text("input\n")
    progress = tmp_path / "o.jsonl.partial.progress"
    progress.symlink_to(victim)
    with atomic_open(progress, follow_links=False) as fh:
        fh.write("{}\n")
    assert victim.read_text() == "input\n"
    assert not progress.is_symlink() and progress.read_text() == "{}\n"


def test_case2_cache_side_files_are_not_written_through_links(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "g.npy.sum").symlink_to(victim)
    (folder / "a.json").symlink_to(victim)
    cache = CacheFolder(folder, "test cache")
    assert cache.write("a.json", "k", b"payload")
    assert cache.write_file("g.npy", "k", lambda f: Path(f).write_bytes(b"npy bytes"))
    assert victim.read_text() == "precious\n"
    assert not (folder / "g.npy.sum").is_symlink() and not (folder / "a.json").is_symlink()
    assert cache.read("a.json", "k") == b"payload" and cache.check_file("g.npy", "k", 1 << 20)


# ------------------------------------------------------------------ case 8: keyed cache
def _forge(file: Path, payload: bytes) -> None:
    """Replace an entry's content, its header's SHA-256 and size recomputed."""
    head = json.loads(file.read_bytes().split(b"\n", 1)[0])
    head["sha256"] = hashlib.sha256(payload).hexdigest()
    head["bytes"] = len(payload)
    file.write_bytes(json.dumps(head, sort_keys=True).encode() + b"\n" + payload)


def test_case8_an_entry_edited_with_a_recomputed_sha256_is_refused(tmp_path):
    cache = CacheFolder(tmp_path / "c", "test cache")
    assert cache.write("a.json", "key", b'{"label": "nsubj"}')
    _forge(tmp_path / "c" / "a.json", b'{"label": "dobj"}')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.read("a.json", "key") is None
    assert len(caught) == 1 and "a.json" in str(caught[0].message)


def test_case8_a_gram_edited_with_a_recomputed_sum_is_refused(tmp_path):
    cache = CacheFolder(tmp_path / "c", "test cache")
    assert cache.write_file("g.npy", "key", lambda f: Path(f).write_bytes(b"K = 1"))
    (tmp_path / "c" / "g.npy").write_bytes(b"K = 999")
    sidecar = tmp_path / "c" / "g.npy.sum"
    head = json.loads(sidecar.read_bytes())
    head["sha256"] = hashlib.sha256(b"K = 999").hexdigest()
    head["bytes"] = 7
    sidecar.write_text(json.dumps(head) + "\n")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert not cache.check_file("g.npy", "key", 1 << 20)


def test_case8_the_cache_secret_is_private_and_made_once(tmp_path):
    cache = CacheFolder(tmp_path / "c", "test cache")
    assert cache.write("a.json", "key", b"x")
    keys = [p for p in (tmp_path / "c").iterdir() if p.name.startswith(".") and "key" in p.name]
    assert len(keys) == 1
    mode = keys[0].lstat().st_mode
    assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600
    secret = keys[0].read_bytes()
    assert CacheFolder(tmp_path / "c", "again").read("a.json", "key") == b"x"
    assert keys[0].read_bytes() == secret


def test_case8_an_old_unkeyed_entry_is_a_miss_and_is_rewritten(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    payload = b'{"x": 1}'
    old = {"format": "structkernels.cache-entry", "version": 1,
           "key": hashlib.sha256(b"key").hexdigest(),
           "sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload)}
    (folder / "a.json").write_bytes(json.dumps(old, sort_keys=True).encode() + b"\n" + payload)
    cache = CacheFolder(folder, "test cache")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.read("a.json", "key") is None
    assert cache.write("a.json", "key", payload)
    assert cache.read("a.json", "key") == payload


# ------------------------------------------------------------------ case 9: duplicate keys
def test_case9_a_record_with_a_duplicated_key_is_refused_naming_it():
    with pytest.raises(RecordError) as err:
        loads_record('{"svm": {"intercept": 1.0, "intercept": 2.0}}', where="m.json")
    msg = str(err.value)
    assert msg.startswith("m.json: ") and "intercept" in msg and "\n" not in msg
    assert loads_record('{"a": {"b": 1}, "b": [{"a": 2}]}') == {"a": {"b": 1}, "b": [{"a": 2}]}


def test_case9_the_hook_for_model_readers_names_the_key():
    from structkernels.utils import unique_keys

    with pytest.raises(RecordError, match="'intercept'"):
        json.loads('{"intercept": 1, "intercept": 2}', object_pairs_hook=unique_keys)
    assert json.loads('{"b": 1, "a": 2}', object_pairs_hook=unique_keys) == {"b": 1, "a": 2}
    assert list(json.loads('{"b": 1, "a": 2}', object_pairs_hook=unique_keys)) == ["b", "a"]


# ------------------------------------------------------------------ case 11: orphaned child
_PARENT = """
    import os, sys, time
    from structkernels.engine.parallel import ChildProcess

    if __name__ == "__main__":
        child = ChildProcess()
        pid = child.submit(os.getpid).result()
        child.submit(time.sleep, 600)
        from multiprocessing import resource_tracker
        tracker = getattr(resource_tracker._resource_tracker, "_pid", None) or 0
        print(pid, tracker, flush=True)
        time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_case11_a_child_exits_when_its_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(_PARENT))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        child, tracker = map(int, parent.stdout.readline().split())
        assert _alive(child)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        pids = [p for p in (child, tracker) if p]
        while any(map(_alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p for p in pids if _alive(p)]
    finally:
        if parent.poll() is None:
            parent.kill()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{left} (child {child}, resource tracker {tracker}) outlived the parent"


# ------------------------------------------------------------------ case 14: gzip bomb
@pytest.mark.skipif(sys.platform == "win32", reason="resource.getrusage")
def test_case14_a_gzip_bomb_model_is_refused_within_a_small_multiple_of_the_limit(tmp_path):
    limit = 64 << 20
    bomb = tmp_path / "m.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        chunk = b"0" * (1 << 20)
        for _ in range(400):
            fh.write(chunk)
    assert bomb.stat().st_size < 2 << 20
    run = _python(f"""
        import resource, sys
        import structkernels.npk.files as files
        from structkernels.extraction.files import read_model_document
        files.MAX_MODEL_BYTES = {limit}
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            read_model_document({str(bomb)!r})
        except Exception as exc:
            print(type(exc).__name__, str(exc).splitlines()[0])
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) * 1024)
    """)
    assert run.returncode == 0, run.stderr
    said, grew = run.stdout.strip().splitlines()
    assert "m.json.gz" in said and str(limit) in said, said
    assert int(grew) < 1.5 * limit, f"grew {int(grew) >> 20} MiB for a {limit >> 20} MiB limit"


def test_case2_a_memmap_side_file_replaces_a_link_not_its_target(tmp_path):
    from structkernels.utils import atomic_memmap, save_npy

    victim = tmp_path / "victim.npy"
    victim.write_bytes(b"not yours")
    partial = tmp_path / "partial.npy"
    partial.symlink_to(victim)
    with atomic_memmap(partial, (2, 2), follow_links=False) as mm:
        mm[:] = 1.0
    assert victim.read_bytes() == b"not yours" and not partial.is_symlink()
    diag = tmp_path / "diag.npy"
    diag.symlink_to(victim)
    save_npy(diag, [1.0, 2.0], follow_links=False)
    assert victim.read_bytes() == b"not yours" and not diag.is_symlink()


def test_case9_a_model_file_with_a_duplicated_key_is_refused(tmp_path):
    from structkernels.extraction.files import read_model_document

    model = tmp_path / "m.json"
    model.write_text('{"svm": {"intercept": 1.0, "intercept": 2.0}}')
    with pytest.raises(ValueError) as err:
        read_model_document(model)
    msg = str(err.value)
    assert "m.json" in msg and "intercept" in msg and "\n" not in msg


def test_case2_predict_never_writes_through_a_stale_partial_link(tmp_path, monkeypatch,
                                                                 capsys):
    sys.path.insert(0, str(Path(__file__).parent))
    import test_predict_streaming as streaming
    from test_relations_pubtator import _hand_model

    from structkernels.cli import main

    monkeypatch.setattr(streaming.TrainedExtractor, "decision_function",
                        streaming._fake_scores)
    monkeypatch.setattr("structkernels.relations.parse.effective_n_jobs", lambda n=None: 1)
    fake = _hand_model(tmp_path / "m.json")
    src = streaming._jsonl(tmp_path / "a.jsonl", 8)
    before = Path(src).read_bytes()
    out = tmp_path / "o.jsonl"
    Path(f"{out}.partial").symlink_to(src)
    Path(f"{out}.partial.progress").symlink_to(src)
    argv = ["predict", "--model", str(fake), src, "-o", str(out), "--no-cache", "-q"]
    assert main(argv) == 0, capsys.readouterr().err
    assert Path(src).read_bytes() == before and not out.is_symlink() and out.read_bytes()
    assert main([*argv, "--resume"]) == 0 and Path(src).read_bytes() == before


_GRANDPARENT = """
    import multiprocessing, os, time
    from structkernels.engine.parallel import ChildProcess

    def start_worker():
        worker = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(600,),
                                                             daemon=True)
        worker.start()
        return os.getpid(), worker.pid

    if __name__ == "__main__":
        child = ChildProcess()
        pid, worker = child.submit(start_worker).result()
        print(pid, worker, flush=True)
        time.sleep(600)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_case11_the_childs_own_workers_go_with_it(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(_GRANDPARENT))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        pids = list(map(int, parent.stdout.readline().split()))
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(map(_alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p for p in pids if _alive(p)]
    finally:
        if parent.poll() is None:
            parent.kill()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{left} of child and worker {pids} outlived the parent"
