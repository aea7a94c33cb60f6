"""The resumable route of :func:`structkernels.engine.gram.gram` (``out=`` on dask).

Beside ``out``, ``<out>.parts/`` holds a marker per finished block, the run key
(``meta.json``) and the matrix being built (``partial.npy``).  A thread in each worker
process (:class:`_Committer`) flushes the file and only then writes the markers of the
blocks flushed, so a marker never names a block a crash could lose.  A differing key reuses
nothing and says so on stderr.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from structkernels.engine._blocks import (
    BlockKernel,
    FileMatrix,
    block_ranges,
    block_tasks,
    guided_chunks,
    largest_first,
    one_block,
    task_evals,
    write_block_file,
)
from structkernels.engine._keys import run_key
from structkernels.engine.checks import normalization_scales, normalize_block
from structkernels.engine.parallel import (
    Plan,
    dask_client,
    dask_worker_address,
    in_background,
    map_tasks,
)
from structkernels.utils import (
    atomic_memmap,
    atomic_open,
    atomic_path,
    move_into_place,
    save_npy,
    sync_folder,
    tqdm,
)

__all__ = ["resumable_gram"]

#: the format of ``meta.json``; a run keyed by another format is not resumed
_META_FORMAT = "structkernels.dask-gram"
_META_VERSION = 3
#: a committer stops after this many idle seconds; while its process computes blocks, the
#: gap between its flushes grows from FIRST to INTERVAL (the work a machine crash can cost;
#: flushing takes CPU and disk from the computation); with no block in hand, GRACE
_COMMIT_IDLE_SECONDS = 5.0
_COMMIT_FIRST_SECONDS = 0.25
_COMMIT_INTERVAL_SECONDS = 10.0
_COMMIT_GRACE_SECONDS = 0.01
#: seconds without a new marker after which the blocks still unmarked are computed again
_MARK_PATIENCE_SECONDS = 60.0
#: rounds of computing again blocks that stayed unmarked, before giving up
_MAX_ROUNDS = 3
#: the times of a block in ``info["workers"]``, in the order a job reports them
_TIMES = ("compute_seconds", "write_seconds", "compute_cpu_seconds", "write_cpu_seconds")


def _marker(parts: Path, task) -> Path:
    r0, _, c0, _ = task
    return parts / f"r{r0}_c{c0}.done"


def _read_key(path: Path) -> dict | None:
    try:
        key = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return key if isinstance(key, dict) else None


def _differences(old: dict, new: dict) -> list[str]:
    names = {"data": "data (content or order)", "params": "kernel parameters",
             "kernel": "kernel", "code_version": "kernel code version"}
    keys = [k for k in new if old.get(k) != new[k]] + [k for k in old if k not in new]
    return [names.get(k, k) for k in keys]


def _start_afresh(parts: Path, partial: Path, shape: tuple[int, int], key: dict) -> None:
    """Forget every block found in ``parts`` and build an empty matrix under ``partial``."""
    parts.mkdir(parents=True, exist_ok=True)
    # the key first: a run stopped while the folder is cleaned is never resumed
    for name in ("meta.json", "result.json", "diag.npy", partial.name):
        (parts / name).unlink(missing_ok=True)
    for f in parts.glob("*.done"):
        f.unlink()
    with atomic_memmap(partial, shape, np.float64, follow_links=False):
        pass  # zeros, with the file's blocks reserved: a full disk is a WriteError here
    with atomic_open(parts / "meta.json", follow_links=False) as fh:
        fh.write(json.dumps(key))


# ------------------------------------------------------------ in the worker processes
def _mark(parts: Path, task) -> None:
    """The marker of a block whose data are on disk (flushed with the folder by the caller:
    a marker lost in a crash costs its block again, nothing more)."""
    with atomic_path(_marker(parts, task), sync=False, follow_links=False):
        pass


_datasync = getattr(os, "fdatasync", os.fsync)
_commit_lock = threading.Condition()
_committers: dict[str, _Committer] = {}
_commit_errors: dict[str, BaseException] = {}
#: jobs computing blocks in this process, per run (a committer waits for them, briefly)
_in_hand: dict[str, int] = {}
#: runs whose jobs stop before their next block (the client met an error)
_stopped: set[str] = set()


class _Committer(threading.Thread):
    """A worker process's thread (one per run) flushing the file once for the blocks written
    since its last pass, then marking them; its error is raised by the run's next job here."""

    def __init__(self, run_id: str, partial: str, parts: str):
        super().__init__(name=f"structkernels-gram-{run_id[:8]}", daemon=True)
        self.run_id = run_id
        self.partial = partial
        self.parts = Path(parts)
        self.pending: list[tuple[int, int, int, int]] = []
        #: blocks taken by the pass in progress (flushed, not yet all marked)
        self.busy = 0

    def _gather(self, last: float, started: float) -> list:
        """Under the lock: wait for blocks, then for the interval or an idle process."""
        deadline = time.monotonic() + _COMMIT_IDLE_SECONDS
        while not self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                del _committers[self.run_id]
                return []
            _commit_lock.wait(left)
        idle_since = None
        while True:
            now = time.monotonic()
            due = last + min(_COMMIT_INTERVAL_SECONDS,
                             max(_COMMIT_FIRST_SECONDS, last - started))
            if now >= due:
                break
            if _in_hand.get(self.run_id, 0) > 0:
                idle_since = None
                _commit_lock.wait(due - now)
                continue
            idle_since = now if idle_since is None else idle_since
            if now - idle_since >= _COMMIT_GRACE_SECONDS:
                break
            _commit_lock.wait(min(due, idle_since + _COMMIT_GRACE_SECONDS) - now)
        batch, self.pending = self.pending, []
        self.busy = len(batch)
        return batch

    def run(self) -> None:
        fd = -1
        try:
            fd = os.open(self.partial, os.O_RDWR)
            started = time.monotonic()
            last = -float("inf")
            while True:
                with _commit_lock:
                    batch = self._gather(last, started)
                if not batch:
                    return
                last = time.monotonic()
                _datasync(fd)
                for task in batch:
                    _mark(self.parts, task)
                sync_folder(self.parts)
                with _commit_lock:
                    self.busy = 0
                    _commit_lock.notify_all()
        except BaseException as exc:  # kept for the next block of the run in this process
            with _commit_lock:
                _commit_errors[self.run_id] = exc
                _committers.pop(self.run_id, None)
        finally:
            if fd >= 0:
                os.close(fd)


@contextlib.contextmanager
def _job(run_id: str):
    """A job of the run computes blocks in this process (the committer waits for it)."""
    with _commit_lock:
        exc = _commit_errors.get(run_id)
        if exc is not None:
            raise RuntimeError(
                f"gram: this worker could not flush the matrix or mark its blocks: {exc!r}"
            ) from exc
        _in_hand[run_id] = _in_hand.get(run_id, 0) + 1
    try:
        yield
    finally:
        with _commit_lock:
            _in_hand[run_id] -= 1
            if not _in_hand[run_id]:
                del _in_hand[run_id]
            _commit_lock.notify_all()


def _hand_over(run_id: str, task: tuple, partial: str, parts: str) -> None:
    """A written block goes to the committer of the run (started when needed)."""
    with _commit_lock:
        committer = _committers.get(run_id)
        if committer is None:
            committer = _committers[run_id] = _Committer(run_id, partial, parts)
            committer.start()
        committer.pending.append(task)
        _commit_lock.notify_all()


def _stop_run(run_id: str) -> tuple[int, int]:
    """``Client.run`` target: the run's jobs here stop before their next block; ``(jobs
    still computing, blocks written but not yet marked)``."""
    with _commit_lock:
        _stopped.add(run_id)
        committer = _committers.get(run_id)
        left = 0 if committer is None else len(committer.pending) + committer.busy
        return _in_hand.get(run_id, 0), left


def _blocks_job(kernel: BlockKernel, X, tasks: list, plan: tuple, scale) -> tuple[str, list]:
    """Worker: blocks not yet marked, normalised if asked, written and handed to the committer;
    the worker's address and per block ``(task, times in the order of _TIMES, evaluations)``."""
    partial, offset, n, parts, run_id = plan
    done: list = []
    with _job(run_id), FileMatrix(partial, offset, (n, n)) as fm:
        for task in map(tuple, tasks):
            if run_id in _stopped:
                break
            if _marker(Path(parts), task).exists():
                continue
            t0, u0 = time.perf_counter(), time.thread_time()
            # normalised as normalize_gram does (s_i * s_j formed first): the same bits
            block, _ = normalize_block(one_block(kernel, task, X, None, True), task[::2],
                                       None if scale is None else (scale, scale))
            t1, u1 = time.perf_counter(), time.thread_time()
            write_block_file(fm, task, block, True)
            _hand_over(run_id, task, partial, parts)
            t2, u2 = time.perf_counter(), time.thread_time()
            done.append((task, (t1 - t0, t2 - t1, u1 - u0, u2 - u1), task_evals(task, True)))
    return dask_worker_address(), done


def _diag_job(kernel: BlockKernel, X, rows: tuple[int, int]) -> tuple[int, np.ndarray]:
    return rows[0], np.asarray(kernel.diag_block(X[rows[0]:rows[1]]), dtype=np.float64)


# ------------------------------------------------------------ in the client
def _await_marks(client: Any, parts: Path, written: dict, patience: float) -> None:
    """Wait for the markers of ``written`` (block -> its worker's address): not for a departed
    worker's blocks, nor for any ``patience`` seconds after the last marker appeared."""
    waiting = dict(written)
    last = checked = time.monotonic()
    delay = 0.0005
    while waiting:
        left = {t: w for t, w in waiting.items() if not _marker(parts, t).exists()}
        now = time.monotonic()
        if len(left) < len(waiting):
            last, delay = now, 0.0005
        if left and now - checked > 0.5:
            checked = now
            alive = set(client.scheduler_info().get("workers", {}))
            left = {t: w for t, w in left.items() if w in alive}
        waiting = left
        if not waiting or now - last > patience:
            return
        time.sleep(delay)
        delay = min(0.02, 2 * delay)


def _stop_and_drain(client: Any, run_id: str, timeout: float) -> None:
    """Stop the run's jobs after their current block and wait (at most ``timeout`` seconds)
    until every block they finished is marked: the markers found are the run's last word."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            states = client.run(_stop_run, run_id, on_error="return")
        except Exception:  # the cluster is gone: nothing left to wait for
            return
        busy = [v for v in states.values() if not (isinstance(v, tuple) and v == (0, 0))]
        if not busy or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def resumable_gram(kernel: BlockKernel, X: Any, out: Path, client: Any, block_size: int,
                   normalize: bool, progress: bool | None) -> tuple[np.memmap, dict]:
    """The symmetric Gram of checked ``kernel`` and ``X`` built by dask into ``out``: its
    map and the run's record (``GramInfo.run``)."""
    t_start = time.perf_counter()
    client = client or dask_client()
    n = len(X)
    parts = Path(f"{out}.parts")
    partial = parts / "partial.npy"
    # the data and the kernel go to every worker once (tasks hold references to them),
    # sent while this thread hashes the data for the run key and prepares the file
    scattered = in_background(functools.partial(client.scatter, broadcast=True, hash=False),
                              [X, kernel])
    key = run_key(kernel, X, format=_META_FORMAT, version=_META_VERSION, n=n,
                  block_size=int(block_size), normalize=bool(normalize))
    tasks = list(block_tasks(n, n, block_size, True))
    old = _read_key(parts / "meta.json")
    restarted = None
    if old == key and partial.is_file():
        pass  # resume the matrix being built
    elif old == key and out.is_file() and _read_key(parts / "result.json") == key:
        # ``out`` is the result of this key: nothing to do when every block is marked,
        # otherwise the missing blocks are computed into a copy, renamed over ``out``
        if any(not _marker(parts, t).exists() for t in tasks):
            with atomic_path(partial, follow_links=False) as tmp:
                shutil.copyfile(out, tmp)
    else:
        if old is not None:
            restarted = (f"the blocks in {parts} were computed for another "
                         + ", ".join(_differences(old, key)) if old != key
                         else f"the matrix being built ({partial}) is missing")
            print(f"gram: {out}: {restarted}; none is reused: computing all {len(tasks)} "
                  f"blocks again ({out} is replaced when the new matrix is complete)",
                  file=sys.stderr)
        _start_afresh(parts, partial, (n, n), key)
    todo = [t for t in tasks if not _marker(parts, t).exists()]
    info: dict = {"n": n, "blocks": len(tasks), "blocks_skipped": len(tasks) - len(todo),
                  "blocks_computed": 0, "n_evaluations": 0, "restarted": restarted,
                  "rounds": 0, "workers": {},
                  "phases": {"setup": 0.0, "blocks": 0.0, "marks": 0.0, "finish": 0.0}}
    if todo:
        Xf, kf = scattered.result()
        sf = _scattered_scales(client, kf, Xf, parts, n, block_size, info) if normalize else None
        info["phases"]["setup"] = time.perf_counter() - t_start
        _run_blocks(client, (kf, Xf, sf), todo, out, info, progress)
    t0 = time.perf_counter()
    if partial.is_file():
        move_into_place(partial, out)  # complete: flushed, then renamed over ``out``
        with atomic_open(parts / "result.json", follow_links=False) as fh:
            fh.write(json.dumps(key))
    info["phases"]["finish"] = time.perf_counter() - t0
    info["phases"] = {k: round(v, 4) for k, v in info["phases"].items()}
    info["seconds"] = time.perf_counter() - t_start
    return np.load(out, mmap_mode="r+"), info


def _scattered_scales(client: Any, kf: Any, Xf: Any, parts: Path, n: int, block_size: int,
                      info: dict) -> Any:
    """The normalisation scales from the raw diagonal (``diag.npy``), sent to every worker."""
    dfile = parts / "diag.npy"
    if dfile.is_file():
        d = np.load(dfile)
    else:
        d = np.empty(n, dtype=np.float64)
        for r0, v in map_tasks(_diag_job, block_ranges(n, block_size), ordered=False,
                               backend=Plan("dask", client=client), shared=(kf, Xf)):
            d[r0:r0 + len(v)] = v
        save_npy(dfile, d, follow_links=False)
        info["n_evaluations"] += n
    scale, _ = normalization_scales(d, d, warn=True, stacklevel=4)
    [sf] = client.scatter([scale], broadcast=True, hash=False)
    return sf


def _run_blocks(client: Any, shared: tuple, todo: list, out: Path, info: dict,
                progress: bool | None) -> None:
    """Rounds of jobs over the blocks ``todo`` until every block is marked."""
    from distributed import as_completed

    kf, Xf, sf = shared
    parts = Path(f"{out}.parts")
    run_id = uuid.uuid4().hex
    layout = FileMatrix.layout_of(np.load(parts / "partial.npy", mmap_mode="r+"))
    plan = (*layout[:2], info["n"], os.fspath(parts), run_id)
    todo = largest_first(todo, True)  # the largest blocks first: the workers finish together
    computed: set = set()
    disable = (len(todo) < 8) if progress is None else not progress
    with tqdm(total=len(todo), unit="block", desc="dask gram", disable=disable) as bar:
        while todo:
            if info["rounds"] == _MAX_ROUNDS:
                raise RuntimeError(
                    f"gram: {len(todo)} block(s) of {out} were never marked done after "
                    f"{_MAX_ROUNDS} rounds; a later call resumes the run")
            info["rounds"] += 1
            t0 = time.perf_counter()
            # the jobs in one graph (a submit per job costs the scheduler a graph update)
            jobs = guided_chunks(todo, sum(client.nthreads().values()), True)
            k = len(jobs)
            futs = client.map(
                _blocks_job, [kf] * k, [Xf] * k, jobs, [plan] * k, [sf] * k, pure=False,
                key=[f"sk-gram-blocks-{j[0][0]}-{j[0][2]}-{run_id}-{info['rounds']}"
                     for j in jobs])
            written: dict = {}
            try:
                for fut in as_completed(futs):
                    who, done = fut.result()
                    w = info["workers"].setdefault(who, {
                        "blocks": 0, "evaluations": 0, "busy_seconds": 0.0,
                        **dict.fromkeys(_TIMES, 0.0)})
                    for task, times, ev in done:
                        written[task] = who
                        w["blocks"] += 1
                        w["evaluations"] += ev
                        w["busy_seconds"] += times[0] + times[1]
                        for name, t in zip(_TIMES, times, strict=True):
                            w[name] += t
                        if task not in computed:
                            computed.add(task)
                            info["n_evaluations"] += ev
                            bar.update(1)
            except Exception:
                # a failed block: the jobs not started are dropped, those running stop
                # after their current block, and every finished block is marked before
                # the error is raised; ``out`` is untouched (a later call resumes)
                with contextlib.suppress(Exception):
                    client.cancel(futs)
                _stop_and_drain(client, run_id, _MARK_PATIENCE_SECONDS)
                raise
            except BaseException:
                # Ctrl-C: the same without waiting (finished blocks keep their markers)
                with contextlib.suppress(Exception):
                    client.cancel(futs)
                    client.run(_stop_run, run_id, on_error="ignore")
                raise
            t1 = time.perf_counter()
            _await_marks(client, parts, written, _MARK_PATIENCE_SECONDS)
            # what is still unmarked (a lost worker's blocks) runs again
            todo = [t for t in todo if not _marker(parts, t).exists()]
            info["phases"]["blocks"] += t1 - t0
            info["phases"]["marks"] += time.perf_counter() - t1
    info["blocks_computed"] = len(computed)
    for w in info["workers"].values():
        w["evaluations_per_second"] = w["evaluations"] / max(w["busy_seconds"], 1e-12)
