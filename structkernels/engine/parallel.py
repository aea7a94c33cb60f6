"""The one place where structkernels starts threads, processes or a dask cluster: deciding
how to run (:func:`plan`) apart from running (:func:`map_tasks`)."""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import os
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from structkernels.utils import bar_disabled, effective_n_jobs, optional_module, tqdm

__all__ = ["map_tasks", "map_blocks", "plan", "Plan", "releases_gil", "balanced_chunks",
           "n_workers", "dask_client", "dask_cluster",
           "connect_dask", "dask_worker_address", "in_background", "call_in_child",
           "ChildProcess", "ChildCall"]

#: ``backend=`` values of :func:`map_tasks`.
BACKENDS = ("serial", "threads", "processes", "dask")
_DASK_HINT = 'the dask backend needs dask.distributed: pip install "structkernels[distributed]"'
#: below this many seconds of estimated serial work, worker threads are not started
_MIN_THREAD_SECONDS = 0.02
#: from this many kernel evaluations on, GIL-free kernels go to threads without timing a
#: first task serially (even the fastest compiled kernel takes longer than the threshold)
_PROBE_EVALUATIONS = 1 << 21
#: below this many seconds of estimated serial work, worker processes are not started
#: (starting loky workers and sending them the data costs about a second or more)
_MIN_PROCESS_SECONDS = 2.0
#: how often a child of :class:`ChildProcess` checks that its parent is alive
_PARENT_POLL_SECONDS = 0.5


def releases_gil(kernel: Any) -> bool:
    """Whether ``kernel``'s blocks run in compiled code that releases the GIL (the class
    attribute ``nogil_blocks = True``): they then run in threads of one process."""
    return bool(getattr(kernel, "nogil_blocks", False))


def _active_backend() -> Any:
    try:
        from joblib.parallel import get_active_backend

        return get_active_backend()[0]
    except Exception:  # pragma: no cover - joblib internals moved
        return None


def _dask_context() -> bool:
    return type(_active_backend()).__name__ == "DaskDistributedBackend"


def dask_client() -> Any:
    """The dask client to run on: that of an active ``joblib.parallel_backend("dask")``,
    else the current one (``distributed.get_client()``); a ValueError when none was started."""
    client = getattr(_active_backend(), "client", None) if _dask_context() else None
    if client is not None:
        return client
    distributed = optional_module("distributed", _DASK_HINT)
    try:
        return distributed.get_client()
    except ValueError:
        raise ValueError(
            'backend="dask" needs a dask client: start one first, e.g. '
            "Client(LocalCluster(processes=False)) on one machine, or Client(address)"
        ) from None


@contextlib.contextmanager
def dask_cluster(n_workers: int) -> Iterator[Any]:
    """A client on a new local cluster of ``n_workers`` one-thread worker processes, without
    a dashboard, its log below errors silenced; both closed when the block ends."""
    distributed = optional_module("distributed", _DASK_HINT)
    with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def connect_dask(address: str, timeout: float) -> Any:
    """A client of the dask scheduler at ``address``, tried for ``timeout`` seconds."""
    return optional_module("distributed", _DASK_HINT).Client(address, timeout=timeout)


def dask_worker_address() -> str:
    """The address of the dask worker running this code; ``"local"`` outside a worker."""
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:  # pragma: no cover - run outside a worker
        return "local"


def in_background(func: Callable[..., Any], /, *args: Any) -> Future:
    """``func(*args)`` started in a thread of its own; its future."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(func, *args)
    finally:
        pool.shutdown(wait=False)


@dataclass(frozen=True)
class Plan:
    """How a run goes: :attr:`backend` (one of :data:`BACKENDS`) on :attr:`workers`.

    ``joblib_backend``: of ``"processes"`` (None: loky, or the active context).
    ``probe_seconds``: the caller times its first task serially and keeps the workers only
    when the rest would take longer (:meth:`after_probe`).  ``client``: of ``"dask"``.
    """

    backend: str = "serial"
    workers: int = 1
    joblib_backend: str | None = None
    probe_seconds: float | None = None
    client: Any = None

    def after_probe(self, seconds_left: float) -> Plan:
        """The plan for the rest of the work, ``seconds_left`` of it estimated serially."""
        if self.probe_seconds is not None and seconds_left < self.probe_seconds:
            return Plan()
        return replace(self, probe_seconds=None)


def plan(kernel: Any, n_jobs: int | None = None, backend: str | None = None, *,
         n_evaluations: int | None = None) -> Plan:
    """How to compute ``n_evaluations`` values of ``kernel`` with ``n_jobs`` workers.

    An explicit ``backend`` (a joblib backend name, ``"threading"``, ``"dask"``) or an
    active ``joblib.parallel_backend`` context is kept; otherwise kernels whose blocks
    release the GIL run in threads and the others in loky processes, each after a timed
    first task shows that the rest is worth starting workers for.

    Examples
    --------
    >>> from structkernels import kernel
    >>> plan(kernel("path"), 2).backend, plan(kernel("path"), 1).backend
    ('threads', 'serial')
    """
    active = type(_active_backend()).__name__
    explicit = backend is not None or active not in ("NoneType", "LokyBackend")
    if n_jobs == 1:
        return Plan()
    if explicit:  # a named backend (a dask cluster): joblib counts its workers
        import joblib

        workers = max(1, joblib.effective_n_jobs(-1 if n_jobs is None else n_jobs))
    else:
        workers = effective_n_jobs(n_jobs)  # None: the cores this process may use
    if workers == 1:
        return Plan()
    if backend in ("threading", "threads"):
        return Plan("threads", workers)
    if backend == "dask" or (backend is None and _dask_context()):
        return Plan("dask", workers)
    if explicit:
        return Plan("processes", workers, joblib_backend=backend)
    if releases_gil(kernel):
        small = n_evaluations is None or n_evaluations < _PROBE_EVALUATIONS
        return Plan("threads", workers, probe_seconds=_MIN_THREAD_SECONDS if small else None)
    return Plan("processes", workers, probe_seconds=_MIN_PROCESS_SECONDS)


def n_workers(n_jobs: int | None, n_tasks: int | None = None) -> int:
    """Workers for ``n_jobs`` (``None``: the cores this process may use), at most ``n_tasks``.

    Examples
    --------
    >>> n_workers(1), n_workers(4, n_tasks=2)
    (1, 2)
    """
    workers = 1 if n_jobs == 1 else effective_n_jobs(n_jobs)
    if n_tasks is not None:
        workers = min(workers, max(1, int(n_tasks)))
    return max(1, workers)


def balanced_chunks(tasks: Sequence, n_chunks: int, cost: Callable[[Any], float]) -> list[list]:
    """``tasks`` spread over ``n_chunks`` chunks of about equal cost (largest first, greedy).

    Examples
    --------
    >>> balanced_chunks([5, 1, 4, 2], 2, cost=float)
    [[5, 1], [4, 2]]
    """
    n_chunks = max(1, min(int(n_chunks), len(tasks)))
    order = sorted(range(len(tasks)), key=lambda i: -cost(tasks[i]))
    loads = [0.0] * n_chunks
    chunks: list[list] = [[] for _ in range(n_chunks)]
    for i in order:
        j = int(np.argmin(loads))
        chunks[j].append(tasks[i])
        loads[j] += cost(tasks[i])
    return [c for c in chunks if c]


class _NoBar:
    def update(self, n: float = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _run_chunk(func: Callable[..., Any], chunk: list, *shared: Any) -> list:
    return [func(*shared, t) for t in chunk]


def _tagged_chunk(func, i: int, chunk: list, *shared: Any) -> tuple[int, list]:
    return i, _run_chunk(func, chunk, *shared)


def _threads(func, chunks: list[list], shared: tuple, run: Plan, ordered: bool
             ) -> Iterator[tuple[list, list]]:
    """``(chunk, results)`` of each chunk run in threads; closing the generator (an error,
    Ctrl-C) cancels the chunks not started."""
    pool = ThreadPoolExecutor(max_workers=run.workers)
    try:
        futures = {pool.submit(_run_chunk, func, c, *shared): c for c in chunks}
        for f in futures if ordered else as_completed(futures):
            yield futures[f], f.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _processes(func, chunks: list[list], shared: tuple, run: Plan, ordered: bool
               ) -> Iterator[tuple[list, list]]:
    import joblib

    parallel = joblib.Parallel(n_jobs=run.workers, backend=run.joblib_backend,
                               return_as="generator" if ordered else "generator_unordered")
    # unordered results come back without their chunk: each is tagged with its position
    for i, res in parallel(joblib.delayed(_tagged_chunk)(func, i, c, *shared)
                           for i, c in enumerate(chunks)):
        yield chunks[i], res


def _dask(func, chunks: list[list], shared: tuple, run: Plan, ordered: bool
          ) -> Iterator[tuple[list, list]]:
    """As :func:`_threads` on a dask cluster, ``shared`` sent to every worker once."""
    from dask.utils import funcname
    from distributed import Future as Sent
    from distributed import as_completed

    client = run.client or dask_client()
    sent = list(shared)
    present = [i for i, s in enumerate(shared) if not (s is None or isinstance(s, Sent))]
    if present:
        for i, f in zip(present, client.scatter([shared[i] for i in present], broadcast=True,
                                                 hash=False), strict=True):
            sent[i] = f
    name = funcname(func)
    pending = {client.submit(_run_chunk, func, c, *sent, pure=False,
                             key=f"{name}-{uuid.uuid4().hex}"): i for i, c in enumerate(chunks)}
    try:
        if ordered:
            for future in list(pending):
                yield chunks[pending.pop(future)], future.result()
            return
        for future in as_completed(list(pending)):
            result = future.result()
            i = pending.pop(future)
            future.release()  # the worker frees the result now, not at the end of the call
            yield chunks[i], result
    finally:
        client.cancel(list(pending))


def map_tasks(
    func: Callable[..., Any],
    tasks: Iterable,
    *,
    n_jobs: int | None = None,
    backend: str | Plan = "threads",
    ordered: bool = True,
    chunks_per_worker: int | None = None,
    cost: Callable[[Any], float] | None = None,
    progress: bool | None = False,
    desc: str | None = None,
    unit: str = "task",
    shared: tuple = (),
) -> Iterator[Any]:
    """``func(*shared, task)`` for every task, serially or in workers; a generator of the results.

    Parameters
    ----------
    func : callable
        Run on each task; picklable in worker processes and on dask.
    n_jobs : int or None, default=None
        Workers: ``None`` or ``-1`` the cores this process may use, ``1`` serial.
    backend : {"serial", "threads", "processes", "dask"} or Plan, default="threads"
        A :class:`Plan` names the backend and the workers (``n_jobs`` is then not read).
    ordered : bool, default=True
        Results in task order; ``False`` yields them as chunks complete.
    chunks_per_worker : int or None, default=None
        About this many chunks per worker, balanced by ``cost`` (contiguous when
        ``ordered``); ``None``: one task per chunk.
    cost : callable or None, default=None
        A task's cost, for balancing chunks and for the progress bar (default 1).
    progress : bool or None, default=False
        A progress bar over the summed cost (``desc``, ``unit``); ``None``: for long runs.
    shared : tuple, default=()
        Objects every call takes first (sent to each dask worker once).

    Examples
    --------
    >>> list(map_tasks(lambda t: t * t, range(5), n_jobs=2))
    [0, 1, 4, 9, 16]
    """
    tasks = list(tasks)
    if isinstance(backend, Plan):
        run = replace(backend, workers=min(backend.workers, max(1, len(tasks))))
    elif backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    else:
        run = Plan(backend, 1 if n_jobs == 1 else n_workers(n_jobs, len(tasks)))
    weigh = cost if cost is not None else (lambda _t: 1)
    if progress is False:  # no bar at all: a disabled tqdm still costs time at each call
        bar: Any = _NoBar()
    else:
        total = sum(weigh(t) for t in tasks)
        bar = tqdm(total=total, unit=unit, unit_scale=True, desc=desc,
                   disable=bar_disabled(total, progress), leave=False)
    try:
        if run.backend == "serial" or (run.backend != "dask" and (
                run.workers == 1 or len(tasks) < 2)):
            for t in tasks:
                res = func(*shared, t)
                bar.update(weigh(t))
                yield res
            return
        if chunks_per_worker is None:
            chunks = [[t] for t in tasks]
        elif ordered:
            n_chunks = max(1, min(len(tasks), chunks_per_worker * run.workers))
            bounds = np.linspace(0, len(tasks), n_chunks + 1).astype(np.int64)
            chunks = [tasks[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
        else:
            chunks = balanced_chunks(tasks, chunks_per_worker * run.workers, weigh)
        execute = {"threads": _threads, "processes": _processes, "dask": _dask}[run.backend]
        with contextlib.closing(execute(func, chunks, shared, run, ordered)) as results:
            for chunk, res in results:
                bar.update(sum(weigh(t) for t in chunk))
                yield from res
    finally:
        bar.close()


def map_blocks(
    source: Any,
    tasks: Iterable[tuple[np.ndarray, np.ndarray | None]],
    reduce: Callable[[np.ndarray, tuple], Any] | None = None,
    *,
    n_jobs: int | None = None,
    ordered: bool = False,
    chunks_per_worker: int | None = None,
    progress: bool | None = None,
    desc: str = "kernel",
) -> Iterator[Any]:
    """Blocks of kernel values computed and reduced in workers: ``reduce(block, task)`` each.

    The pattern of scikit-learn's ``pairwise_distances_chunked(reduce_func=...)``: a task
    ``(rows, cols)`` (index arrays into the source's ``X`` and ``Y``; ``cols=None``:
    symmetric) is the block ``source.block(rows, cols)`` of a
    :class:`~structkernels.engine.source.KernelSource`, which ``reduce`` turns, in the
    worker, into what the caller keeps (a top ``k``, a sum), so that only that comes back
    (``reduce=None`` yields ``(task, block)``).  Chunks are balanced by kernel evaluations
    (by default 16 per worker in threads, 4 in processes); the other options are
    :func:`map_tasks`'s.

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels.engine.source import KernelSource
    >>> from structkernels import kernel
    >>> src = KernelSource(kernel("linear"), np.eye(3))
    >>> tasks = [(np.array([0, 1]), None), (np.array([0, 1]), np.array([2]))]
    >>> [float(s) for s in map_blocks(src, tasks, lambda B, t: B.sum(), n_jobs=1)]
    [2.0, 0.0]
    """
    run = plan(source.kernel, n_jobs)
    if chunks_per_worker is None:
        chunks_per_worker = 16 if run.backend == "threads" else 4
    return map_tasks(
        functools.partial(_block_job, source, reduce), tasks, backend=run, ordered=ordered,
        chunks_per_worker=chunks_per_worker, cost=source.task_cost, progress=progress,
        desc=desc, unit="eval",
    )


def _block_job(source: Any, reduce: Callable | None, task: tuple) -> Any:
    block = source.block(task[0], task[1])
    return (task, block) if reduce is None else reduce(block, task)


def call_in_child(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)`` run in a fresh :class:`ChildProcess`; its result comes back.

    What the call imports and allocates (a spaCy pipeline and the libraries it loads) stays
    in the child and is gone when it exits.

    Examples
    --------
    >>> import math
    >>> call_in_child(math.factorial, 5)  # doctest: +SKIP
    120
    """
    with ChildProcess() as child:
        return child.submit(func, *args, **kwargs).result()


class ChildCall:
    """A call running in a :class:`ChildProcess`: :meth:`result` waits for it."""

    def __init__(self, future: Any):
        self._future = future

    def done(self) -> bool:
        """Whether the call has finished (returned or raised)."""
        return bool(self._future.done())

    def result(self) -> Any:
        """The call's result, once it has finished; its exception and warnings (in order)
        are raised and given here."""
        result, caught = self._future.result()
        for message, category in caught:
            warnings.warn(message, category, stacklevel=2)
        return result


class ChildProcess:
    """One fresh process (``spawn``) kept for several calls, run one after the other while
    the calling process goes on, from the first :meth:`submit` to :meth:`close` (or the end
    of a ``with`` block).

    ``func``, the arguments and the results must pickle (between
    this package's own processes, never from a file); a script using it needs the ``if
    __name__ == "__main__":`` guard.  With ``interrupt=False`` the child ignores Ctrl-C and
    :meth:`close` lets the running call finish (a child working ahead of the caller, whose
    interruption the caller handles alone).

    Examples
    --------
    >>> import math
    >>> with ChildProcess() as child:  # doctest: +SKIP
    ...     calls = [child.submit(math.factorial, n) for n in (3, 5)]
    ...     [c.result() for c in calls]
    [6, 120]
    """

    def __init__(self, *, interrupt: bool = True) -> None:
        self.interrupt = interrupt
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> ChildCall:
        """Queue ``func(*args, **kwargs)`` in the child; returns at once."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=_child_start, initargs=(os.getpid(), self.interrupt))
        return ChildCall(self._pool.submit(_recording, func, args, kwargs))

    def close(self) -> None:
        """Stop the child (calls not yet started are cancelled)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def terminate(self) -> None:
        """Stop the child now: the call running there is abandoned, the others cancelled."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        stop = getattr(pool, "terminate_workers", None)  # Python 3.14 and later
        if stop is not None:
            stop()
        else:  # before: the executor's own processes
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ChildProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _child_start(parent: int, interrupt: bool) -> None:
    """A child's start: it exits when its parent dies (even of ``SIGKILL``); without
    ``interrupt``, Ctrl-C (SIGINT) is the caller's."""
    if not interrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="structkernels-parent-watch").start()


def _watch_parent(parent: int) -> None:
    """Exit once ``parent`` is gone (:func:`os.getppid` changes): polling works everywhere,
    and unlike ``PR_SET_PDEATHSIG`` does not fire when the starting thread ends."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_SECONDS)
    with contextlib.suppress(Exception):  # its own children (spaCy's workers) go too
        for child in multiprocessing.active_children():
            child.terminate()
    os._exit(1)


def _recording(func: Callable[..., Any], args: tuple, kwargs: dict
               ) -> tuple[Any, list[tuple[str, type[Warning]]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    return result, [(str(w.message), w.category) for w in caught]
