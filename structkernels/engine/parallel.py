"""The one place where structkernels starts threads or processes.

:func:`map_tasks` runs a function over tasks, serially, in threads of this process
(compiled work that releases the GIL: no start-up, no copies of the data) or in worker
processes (joblib's loky, or the backend of an active ``joblib.parallel_backend``
context); it owns the worker count (``n_jobs`` as everywhere in structkernels), the
grouping of tasks into chunks balanced by cost, the order of results, progress and
interruption.  :func:`map_blocks` is the kernel-value form on top of it, in the pattern
of scikit-learn's ``pairwise_distances_chunked(reduce_func=...)``: each task is a block
of a :class:`~structkernels.engine.source.KernelSource`, computed and reduced in the
worker, so that only the reduced result comes back.

Every other package calls these two functions instead of starting a pool of its own.
"""

from __future__ import annotations

import multiprocessing
import signal
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from structkernels.utils import bar_disabled, effective_n_jobs, tqdm

__all__ = ["map_tasks", "map_blocks", "balanced_chunks", "n_workers", "active_backend_is_default",
           "call_in_child", "ChildProcess", "ChildCall"]

#: ``backend=`` values of :func:`map_tasks`.
BACKENDS = ("threads", "processes")


def active_backend_is_default() -> bool:
    """True when no ``joblib.parallel_backend`` context names a backend."""
    try:
        from joblib.parallel import get_active_backend

        backend, _ = get_active_backend()
    except Exception:  # pragma: no cover - joblib internals moved
        return True
    return type(backend).__name__ == "LokyBackend"


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
    """The progress bar of a run that shows none."""

    def update(self, n: float = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _run_chunk(func: Callable[[Any], Any], chunk: list) -> list:
    return [func(t) for t in chunk]


def _threads(func, chunks: list[list], workers: int, ordered: bool) -> Iterator[tuple[list, list]]:
    """``(chunk, results)`` of each chunk run in ``workers`` threads; closing the generator
    (an error, Ctrl-C) cancels the chunks not started."""
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(_run_chunk, func, c) for c in chunks]
        if ordered:
            for chunk, f in zip(chunks, futures, strict=True):
                yield chunk, f.result()
        else:
            index = {f: i for i, f in enumerate(futures)}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    yield chunks[index[f]], f.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _processes(func, chunks: list[list], workers: int, ordered: bool) -> Iterator[tuple[list, list]]:
    """``(chunk, results)`` of each chunk run in worker processes (joblib: loky, or the
    backend of an active ``joblib.parallel_backend`` context)."""
    import joblib

    parallel = joblib.Parallel(n_jobs=workers,
                               return_as="generator" if ordered else "generator_unordered")
    if ordered:
        results = parallel(joblib.delayed(_run_chunk)(func, c) for c in chunks)
        yield from zip(chunks, results, strict=True)
        return
    # unordered results come back without their chunk: tag each with its position
    tagged = parallel(joblib.delayed(_tagged_chunk)(func, i, c) for i, c in enumerate(chunks))
    for i, res in tagged:
        yield chunks[i], res


def _tagged_chunk(func, i: int, chunk: list) -> tuple[int, list]:
    return i, _run_chunk(func, chunk)


def map_tasks(
    func: Callable[[Any], Any],
    tasks: Iterable,
    *,
    n_jobs: int | None = None,
    backend: str = "threads",
    ordered: bool = True,
    chunks_per_worker: int | None = None,
    cost: Callable[[Any], float] | None = None,
    progress: bool | None = False,
    desc: str | None = None,
    unit: str = "task",
) -> Iterator[Any]:
    """``func(task)`` for every task, serially or in workers; a generator of the results.

    Parameters
    ----------
    func : callable
        Run on each task; in worker processes it must be picklable (a module-level
        function or a ``functools.partial`` of one).
    tasks : iterable
        The tasks (turned into a list).
    n_jobs : int or None, default=None
        Workers: ``None`` or ``-1`` the cores this process may use, ``1`` serial.
    backend : {"threads", "processes"}, default="threads"
        Threads for work that releases the GIL (compiled kernels, BLAS); processes
        for Python-level work.
    ordered : bool, default=True
        Results in task order; ``False`` yields them as chunks complete.
    chunks_per_worker : int or None, default=None
        Group the tasks into about this many chunks per worker, balanced by ``cost``
        (fewer dispatches; a chunk's results come back together).  ``None``: one task
        per chunk.  Chunks are contiguous runs of tasks when ``ordered``.
    cost : callable or None, default=None
        A task's cost, for balancing chunks and for the progress bar (default 1).
    progress : bool or None, default=False
        A progress bar (tqdm) over the summed cost; ``None``: only for long runs.
    desc, unit : str
        The bar's label and unit.

    Yields
    ------
    The results of ``func``: in task order when ``ordered``.

    Examples
    --------
    >>> list(map_tasks(lambda t: t * t, range(5), n_jobs=2))
    [0, 1, 4, 9, 16]
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    tasks = list(tasks)
    weigh = cost if cost is not None else (lambda _t: 1)
    if progress is False:  # no bar at all: a disabled tqdm still costs ~0.1 ms a call
        bar: Any = _NoBar()
    else:
        total = sum(weigh(t) for t in tasks)
        bar = tqdm(total=total, unit=unit, unit_scale=True, desc=desc,
                   disable=bar_disabled(total, progress), leave=False)
    workers = 1 if n_jobs == 1 else n_workers(n_jobs, len(tasks))
    try:
        if workers == 1 or len(tasks) < 2:
            for t in tasks:
                res = func(t)
                bar.update(weigh(t))
                yield res
            return
        if chunks_per_worker is None:
            chunks = [[t] for t in tasks]
        elif ordered:
            n_chunks = max(1, min(len(tasks), chunks_per_worker * workers))
            bounds = np.linspace(0, len(tasks), n_chunks + 1).astype(np.int64)
            chunks = [tasks[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
        else:
            chunks = balanced_chunks(tasks, chunks_per_worker * workers, weigh)
        run = _threads if backend == "threads" else _processes
        for chunk, results in run(func, chunks, workers, ordered):
            bar.update(sum(weigh(t) for t in chunk))
            yield from results
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

    The pattern of scikit-learn's ``pairwise_distances_chunked(reduce_func=...)``: a
    task ``(rows, cols)`` is the block ``source.block(rows, cols)`` (``cols=None``: the
    symmetric block of ``rows``), checked and counted by the source; ``reduce`` turns it
    into what the caller keeps (a top ``k``, a sum), in the worker, so that only that
    comes back.  Threads for kernels whose blocks release the GIL, processes otherwise;
    chunks balanced by kernel evaluations (by default 16 per worker in threads, 4 in
    processes); progress over evaluations.

    Parameters
    ----------
    source : KernelSource
        The kernel values (:class:`~structkernels.engine.source.KernelSource`).
    tasks : iterable of (rows, cols)
        Index arrays into the source's ``X`` and ``Y`` (``cols=None``: symmetric).
    reduce : callable or None
        ``reduce(block, task)``; ``None`` yields ``(task, block)``.
    n_jobs, ordered, chunks_per_worker, progress, desc
        As :func:`map_tasks`.

    Yields
    ------
    The reduced blocks.

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
    tasks = list(tasks)
    # threads for GIL-free kernels, unless a joblib backend context (dask) is active
    threads = source.releases_gil and active_backend_is_default()
    if chunks_per_worker is None:
        chunks_per_worker = 16 if threads else 4
    return map_tasks(
        _BlockJob(source, reduce), tasks, n_jobs=n_jobs,
        backend="threads" if threads else "processes", ordered=ordered,
        chunks_per_worker=chunks_per_worker, cost=source.task_cost, progress=progress,
        desc=desc, unit="eval",
    )


class _BlockJob:
    """A picklable ``task -> reduce(source.block(*task), task)``."""

    def __init__(self, source: Any, reduce: Callable | None):
        self.source = source
        self.reduce = reduce

    def __call__(self, task: tuple) -> Any:
        rows, cols = task[0], task[1]
        block = self.source.block(rows, cols)
        if self.reduce is None:
            return task, block
        return self.reduce(block, task)


def call_in_child(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)`` run in a fresh process (``spawn``); its result comes back.

    What the call imports and allocates stays in the child and is gone when it exits: a
    spaCy pipeline and the libraries it loads (with PyTorch installed, spaCy imports it:
    about 0.5 GB) never enter the calling process.  ``func``, the arguments and the result
    must pickle (they travel between this package's own processes, never from a file).
    An exception in the child is raised here, and its warnings are given here (as
    warnings of the caller, in order); Ctrl-C reaches both processes.  As with any
    ``spawn`` start, a script calling it needs the ``if __name__ == "__main__":`` guard
    (the child imports the script's module).

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
        """The call's result, once it has finished; its exception is raised here and its
        warnings are given here (as warnings of the caller, in order)."""
        result, caught = self._future.result()
        for message, category in caught:
            warnings.warn(message, category, stacklevel=2)
        return result


class ChildProcess:
    """One fresh process (``spawn``) kept for several calls, run one after the other while
    the calling process goes on: :func:`call_in_child` for a stream of calls.

    The child is started at the first :meth:`submit` and stopped by :meth:`close` (or at
    the end of a ``with`` block); what the calls import and allocate (a spaCy pipeline,
    say) stays in the child.  ``func``, the arguments and the results must pickle (they
    travel between this package's own processes, never from a file).  As with any
    ``spawn`` start, a script using it needs the ``if __name__ == "__main__":`` guard.

    Parameters
    ----------
    interrupt : bool, default True
        Whether Ctrl-C reaches the child too (it stops the call running there); False: the
        child ignores it, and :meth:`close` lets the running call finish (a child that
        works ahead of the caller, whose interruption the caller handles alone).

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
                initializer=None if self.interrupt else _ignore_interrupt)
        return ChildCall(self._pool.submit(_recording, func, args, kwargs))

    def close(self) -> None:
        """Stop the child (calls not yet started are cancelled)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def terminate(self) -> None:
        """Stop the child now: the call running there is abandoned (the process is
        terminated, its result never read), the calls not yet started are cancelled."""
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


def _ignore_interrupt() -> None:
    """A child's start: Ctrl-C (SIGINT) is the caller's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _recording(func: Callable[..., Any], args: tuple, kwargs: dict
               ) -> tuple[Any, list[tuple[str, type[Warning]]]]:
    """``func(*args, **kwargs)`` and the warnings it gave (message, category), in order."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    return result, [(str(w.message), w.category) for w in caught]
