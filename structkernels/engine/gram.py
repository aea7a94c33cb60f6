"""The Gram engine: blocked, parallel, cached, memory-mappable Gram matrices.

:func:`gram` splits the matrix into square blocks, computes only the upper
triangle of blocks when the matrix is symmetric (the lower triangle is an
exact mirror), and runs the blocks in parallel.  The engine picks how:

* kernels whose blocks are compiled code that releases the GIL (``path``,
  ``tree``, ``nonstationary`` over them, ``kb-srk``: :func:`releases_gil`)
  run in threads of the calling process: no worker start-up, no copies of
  the data, so sub-second Grams speed up too;
* Python-level kernels run in joblib worker processes (``loky``), and only
  when the first block shows that the rest is worth the start-up;
* results are bit-identical to ``n_jobs=1``: the blocks, their arithmetic
  and their placement do not depend on the worker that ran them.

With ``out=`` (a ``.npy`` file) every block is written into the file with
``pwrite``, without mapping it (worker processes write theirs themselves),
and with ``normalize=True`` it is normalised before it is written: the
diagonal blocks come first, then every other block is scaled by the diagonal
they gave.  Nothing keeps the matrix mapped, so memory stays about one block
per worker whatever the size of the matrix.  The same call runs on a
dask.distributed cluster inside ``joblib.parallel_backend("dask")`` (or with
``backend="dask"``): the engine then sends the kernel and the data to every
worker once and the blocks in a few chunks that shrink towards the end, straight
to the dask client.  On one machine, a cluster of threads in this process
(``LocalCluster(processes=False)``) keeps every block in memory; worker
processes receive the data and send every block back::

    from dask.distributed import Client, LocalCluster
    import joblib
    client = Client(LocalCluster(processes=False))  # or a cluster's address
    with joblib.parallel_backend("dask"):
        K = gram(kernel, X, n_jobs=-1)

For a matrix larger than one machine's disk or memory budget, with restart
after a lost worker, see :func:`structkernels.engine.distributed.dask_gram`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import joblib
import numpy as np

from structkernels.engine._blocks import (
    OWN_DIAGONAL,
    BlockKernel,
    FileMatrix,
    block_ranges,
    block_tasks,
    compute_blocks,
    count_evals,
    default_block_size,
    finish_block,
    guided_chunks,
    largest_first,
    one_block,
    task_evals,
    write_block,
    write_block_file,
)
from structkernels.engine._keys import kernel_code_version, kernel_key  # kernel_key: public here
from structkernels.engine.checks import (
    check_kernel_values,
    check_normalized,
    normalization_scales,
    probe_when_asked,
    validation_level,
)
from structkernels.engine.parallel import active_backend_is_default
from structkernels.utils import (
    atomic_memmap,
    bar_disabled,
    effective_n_jobs,
    n_jobs_value,
    optional_module,
    tqdm,
)

__all__ = ["gram", "GramInfo", "block_ranges", "kernel_key", "normalize_inplace", "plan_backend",
           "releases_gil"]


@dataclass
class GramInfo:
    """What a :func:`gram` call did.

    Attributes
    ----------
    shape : tuple of int
    n_evaluations : int
        Kernel evaluations made (0 on a cache hit); a symmetric Gram of n
        structures costs n (n + 1) / 2, plus n for normalisation.
    seconds : float
    cache_hit : bool
    n_blocks : int
    """

    shape: tuple[int, int]
    n_evaluations: int
    seconds: float
    cache_hit: bool
    n_blocks: int


#: below this many seconds of estimated serial work, worker threads are not started
_MIN_THREAD_SECONDS = 0.02
#: from this many kernel evaluations on, GIL-free kernels go to threads without timing a
#: first block serially (the fastest compiled kernel needs well over 20 ms for them)
_PROBE_EVALUATIONS = 1 << 21
#: below this many seconds of estimated serial work, worker processes are not started
#: (starting loky workers and sending them the data costs about a second or more)
_MIN_PROCESS_SECONDS = 2.0


def releases_gil(kernel: BlockKernel) -> bool:
    """Whether ``kernel``'s blocks run in compiled code that releases the GIL.

    Such kernels (``path``, ``tree``, ``nonstationary`` over them, ``kb-srk``)
    set the class attribute ``nogil_blocks = True``; the engine then runs
    their blocks in threads of one process (no start-up, no copies of the
    data), and processes only for Python-level kernels.
    """
    return bool(getattr(kernel, "nogil_blocks", False))


def _dask_client(backend: str | None) -> Any:
    """The dask client that joblib's dask backend would run on (``backend="dask"`` or an
    active ``joblib.parallel_backend("dask")``), else None."""
    if backend is not None and backend != "dask":
        return None
    try:
        from joblib.parallel import get_active_backend

        active, _ = get_active_backend()
    except Exception:  # pragma: no cover - joblib internals moved
        return None
    if type(active).__name__ == "DaskDistributedBackend":
        return getattr(active, "client", None)
    if backend == "dask":
        distributed = optional_module(
            "distributed", 'backend="dask" needs dask.distributed: pip install "structkernels[distributed]"')
        try:
            return distributed.get_client()
        except ValueError:
            raise ValueError(
                'backend="dask" needs a dask client: start one first, e.g. '
                "Client(LocalCluster(processes=False)) on one machine, or Client(address)"
            ) from None
    return None


def _scatter(client: Any, kernel: BlockKernel, X, Y) -> tuple:
    """``(kernel, X, Y)`` sent to every worker of a dask cluster once, as futures (Y None
    stays None).  Joblib's dask backend scatters only the arguments dask sizes above 1 kB
    and sends the others inside every task."""
    sent = client.scatter([kernel, X] if Y is None else [kernel, X, Y], broadcast=True,
                          hash=False)
    return sent[0], sent[1], (sent[2] if Y is not None else None)


def _on_dask(client: Any, sent: tuple, chunks: list, symmetric: bool, out_path: str | None,
             extra: tuple) -> Iterator[list]:
    """:func:`compute_blocks` of each chunk on a dask cluster, results as they complete.

    ``sent`` is the scattered ``(kernel, X, Y)`` (:func:`_scatter`).  The chunks are
    submitted together and each result is taken the moment it completes (joblib's dask
    backend polls its results every 10 ms and sleeps 10 ms at the end of a call: 13 ms of
    a 0.35 s Gram of 4,000 paths on 2 cores).  Closing the generator (an error, Ctrl-C)
    cancels the chunks not finished; a chunk's result is released on the cluster as soon
    as it is taken, so the workers hold only the blocks not yet taken.
    """
    from distributed import as_completed

    kf, Xf, Yf = sent
    pending = {client.submit(compute_blocks, kf, chunk, Xf, Yf, symmetric, out_path, *extra,
                             pure=False) for chunk in chunks}
    try:
        for future in as_completed(pending):
            result = future.result()
            # the worker frees the chunk's blocks now, not at the end of the call
            pending.discard(future)
            future.release()
            yield result
    finally:
        client.cancel(list(pending))


def plan_backend(kernel: BlockKernel, n_jobs: int | None, backend: str | None) -> tuple[int, str | None]:
    """``(workers, backend)`` the engine uses: threads for GIL-free kernels.

    An explicit ``backend`` (argument or ``joblib.parallel_backend`` context,
    e.g. ``"dask"``) is kept; otherwise kernels whose blocks release the GIL
    run in threads and the others in loky processes.
    """
    if n_jobs == 1:
        workers = 1
    elif backend is not None or not active_backend_is_default():
        # a named backend (a dask cluster): joblib counts its workers
        workers = max(1, joblib.effective_n_jobs(-1 if n_jobs is None else n_jobs))
    else:
        workers = effective_n_jobs(n_jobs)  # None: the cores this process may use
    if backend is not None:
        return workers, backend
    if workers == 1:
        return 1, None
    if releases_gil(kernel) and active_backend_is_default():
        return workers, "threading"
    return workers, None


def _raw_gram(
    kernel: BlockKernel,
    X: Sequence,
    Y: Sequence | None,
    *,
    n_jobs: int | None,
    block_size: int | None,
    out: np.ndarray | None,
    progress: bool | None,
    backend: str | None,
    scales: Any = None,
) -> tuple[np.ndarray, int, int]:
    """The Gram's blocks, computed serially, in threads or in processes, placed in ``out``.

    ``out`` is an array in memory (made when None) or a whole writable ``numpy.memmap``,
    which is then written block by block through its file (:class:`FileMatrix`),
    never through its own map.  ``scales`` (file outputs only) normalises every block
    before it is written (:func:`finish_block`): ``(sx, sy)``, or
    :data:`OWN_DIAGONAL` for a symmetric Gram, whose diagonal blocks then run
    first and give the scales of the others.
    """
    symmetric = Y is None
    n = len(X)
    m = n if symmetric else len(Y)
    if out is None:
        out = np.empty((n, m), dtype=np.float64)
    if n == 0 or m == 0:
        return out, 0, 0
    layout = FileMatrix.layout_of(out)
    fm = None if layout is None else FileMatrix(*layout)
    if scales is not None and fm is None:
        raise ValueError("blocks are normalised as they are written only into a file")
    if isinstance(scales, str) and not symmetric:
        raise ValueError("a Gram of X against Y is normalised by the diagonals of both")
    explicit = backend is not None or not active_backend_is_default()
    workers, backend = plan_backend(kernel, n_jobs, backend)
    threads = backend == "threading"
    bs = block_size
    if not bs:
        bs = default_block_size(n, m)
        preferred = getattr(kernel, "preferred_block_size", None)
        if preferred:
            bs = min(int(preferred), bs)
    tasks = list(block_tasks(n, m, bs, symmetric))
    total = count_evals(n, m, symmetric)
    disable = bar_disabled(total, progress)
    bar = tqdm(total=total, unit="eval", unit_scale=True, desc="gram", disable=disable, leave=False)
    # the phases: with scales from the diagonal, the diagonal blocks first
    if isinstance(scales, str):
        phases = [[t for t in tasks if t[0] == t[2]], [t for t in tasks if t[0] != t[2]]]
        diag = np.empty(n, dtype=np.float64)
    else:
        phases = [tasks]
        diag = None
    state = {"scales": scales}

    def write(task, block) -> None:
        if fm is not None:
            write_block_file(fm, task, block, symmetric)
        else:
            write_block(out, task, block, symmetric)

    def compute(task):
        """One block in this process: computed, normalised, written; returns its raw diagonal."""
        block, d = finish_block(task, one_block(kernel, task, X, Y, symmetric), symmetric,
                                 state["scales"])
        write(task, block)
        return task, d

    def done(task, d) -> None:
        if d is not None:
            diag[task[0]:task[1]] = d
        bar.update(task_evals(task, symmetric))

    def serial(todo) -> None:
        for task in todo:
            done(*compute(task))

    def next_phase() -> None:
        if diag is not None:
            # every diagonal block is in: the scales of the others (a zero self-similarity
            # warns here once, as normalising the finished matrix does)
            s, _ = normalization_scales(diag, diag, warn=True, stacklevel=4)
            state["scales"] = (s, s)

    try:
        if workers == 1 or len(tasks) == 1:
            for i, phase in enumerate(phases):
                if i:
                    next_phase()
                serial(phase)
            return out, total, len(tasks)
        first = phases[0][:1]
        todo = [phases[0], *phases[1:]]
        if not explicit and (not threads or total < _PROBE_EVALUATIONS):
            # the engine picks by size: time the first block serially and go
            # parallel only when the rest would take longer than starting workers
            t0 = time.perf_counter()
            serial(first)
            per_eval = (time.perf_counter() - t0) / max(1, task_evals(first[0], symmetric))
            todo[0] = phases[0][1:]
            left = per_eval * sum(task_evals(t, symmetric) for p in todo for t in p)
            if left < (_MIN_THREAD_SECONDS if threads else _MIN_PROCESS_SECONDS):
                for i, phase in enumerate(todo):
                    if i:
                        next_phase()
                    serial(phase)
                return out, total, len(tasks)
        # the largest blocks first, so the workers finish together
        todo = [largest_first(phase, symmetric) for phase in todo]
        if threads:
            # one block per call, results in task order: the same blocks, the same
            # arithmetic and the same placement as the serial loop (bit-identical).
            # A bare pool of threads: joblib's threading backend costs ~20 ms a call.
            # Each thread places its own block (disjoint regions of ``out``).
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for i, phase in enumerate(todo):
                    if i:
                        next_phase()
                    for task, d in pool.map(compute, phase):
                        done(task, d)
        else:
            out_path = None if fm is None else fm.path
            client = _dask_client(backend) if explicit else None
            # the kernel and the data go to a dask cluster's workers once for every phase
            sent = None if client is None else _scatter(client, kernel, X, Y)
            parallel = None if client is not None else joblib.Parallel(
                n_jobs=workers, backend=backend, return_as="generator_unordered"
            )
            for i, phase in enumerate(todo):
                if i:
                    next_phase()
                # chunks that shrink towards the end (a file: one block per task)
                chunks = (guided_chunks(phase, workers, symmetric) if fm is None
                          else [[t] for t in phase])
                extra = () if fm is None else (fm.offset, fm.shape, state["scales"])
                if client is not None:
                    results = _on_dask(client, sent, chunks, symmetric, out_path, extra)
                else:
                    results = parallel(
                        joblib.delayed(compute_blocks)(kernel, chunk, X, Y, symmetric, out_path,
                                                        *extra)
                        for chunk in chunks
                    )
                with contextlib.closing(results):
                    for chunk_results in results:
                        for r0, r1, c0, c1, block, d in chunk_results:
                            if block is not None:
                                write((r0, r1, c0, c1), block)
                            done((r0, r1, c0, c1), d)
    finally:
        bar.close()
        if fm is not None:
            fm.close()
    return out, total, len(tasks)


def normalize_inplace(K: np.ndarray, dx: np.ndarray, dy: np.ndarray, *,
                      row_bytes: int = 1 << 25, warn: bool = True) -> np.ndarray:
    """``K[i, j] /= sqrt(dx[i] dy[j])`` in row blocks of about ``row_bytes`` (memmap-safe).

    The scale of a cell is ``s_x[i] * s_y[j]`` computed before it meets
    ``K[i, j]``, so a symmetric matrix stays exactly symmetric.  A zero (or
    negative) self-similarity zeroes its row/column, with a warning.  A whole
    writable ``numpy.memmap`` is read and written through its file one row block
    at a time (its own map is not touched): memory stays about ``row_bytes``
    whatever the size of the file.
    """
    sx, sy = normalization_scales(dx, dy, warn=warn, stacklevel=3)
    n, m = K.shape
    rows = max(1, row_bytes // max(1, 8 * m))
    layout = FileMatrix.layout_of(K)
    if layout is None:
        for r0 in range(0, n, rows):
            r1 = min(n, r0 + rows)
            block = K[r0:r1] * (sx[r0:r1, None] * sy[None, :])
            check_normalized(block, offsets=(r0, 0))
            K[r0:r1] = block
        return K
    with FileMatrix(*layout) as fm:
        for r0 in range(0, n, rows):
            r1 = min(n, r0 + rows)
            block = fm.read_rows(r0, r1) * (sx[r0:r1, None] * sy[None, :])
            check_normalized(block, offsets=(r0, 0))
            fm.write(r0, 0, block)
    return K


def _compute(kernel, X, Y, normalize, n_jobs, block_size, progress, backend, out=None,
             validate="auto"):
    """Raw Gram, then normalisation; returns ``(K, n_evaluations, n_blocks)``.

    In memory, normalisation runs in row blocks after the diagonal is known, in
    place.  Into a file (``out`` a ``numpy.memmap``), every block is normalised
    before it is written (the diagonal blocks of a symmetric Gram first, then
    the others by the diagonal they gave; the diagonals of ``X`` and ``Y``
    first otherwise), so the matrix is written once and never mapped whole.
    Either way cell ``[i, j]`` is ``K[i, j] * (s_i * s_j)``, the same bits.
    Every block is checked for non-finite values; with full validation
    (:func:`validation_level`) a seeded sample of ``X`` is probed for symmetry
    and PSD first (its evaluations are not counted in ``n_evaluations``, which
    counts the Gram's own).
    """
    n, m = len(X), len(X) if Y is None else len(Y)
    probe_when_asked(kernel, X, count_evals(n, m, Y is None), validate)
    extra = 0
    scales = None
    if normalize and FileMatrix.layout_of(out) is not None:
        if Y is None:
            scales = OWN_DIAGONAL
        else:
            dx, dy = _diagonals(kernel, X, Y)
            extra = len(X) + len(Y)
            scales = normalization_scales(dx, dy, warn=True, stacklevel=3)
    K, n_evals, n_blocks = _raw_gram(
        kernel, X, Y, n_jobs=n_jobs, block_size=block_size, out=out,
        progress=progress, backend=backend, scales=scales,
    )
    if normalize and scales is None:
        if Y is None:
            d = np.diag(K).copy()
            normalize_inplace(K, d, d)
        else:
            dx, dy = _diagonals(kernel, X, Y)
            extra = len(X) + len(Y)
            normalize_inplace(K, dx, dy)
    return K, n_evals + extra, n_blocks


def _diagonals(kernel: BlockKernel, X: Sequence, Y: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """``k(x, x)`` over ``X`` and ``k(y, y)`` over ``Y``, checked."""
    dx = np.asarray(kernel.diag_block(X), dtype=np.float64)
    dy = np.asarray(kernel.diag_block(Y), dtype=np.float64)
    check_kernel_values(kernel, dx, diagonal=True)
    check_kernel_values(kernel, dy, diagonal=True, names=("Y", "Y"))
    return dx, dy


def _compute_keyed(kernel, X, Y, normalize, n_jobs, block_size, progress, backend, code_version,
                   full_validation=False):
    """:func:`_compute` for the ``cache=`` of :func:`gram`: joblib.Memory keys the call on
    its arguments (the kernel and the data hashed by content), and ``code_version``
    (:func:`kernel_code_version`) adds the kernel's code to the key.  ``full_validation`` is in
    the key too: a matrix cached without the symmetry/PSD probe is not served to a call
    that asks for it."""
    return _compute(kernel, X, Y, normalize, n_jobs, block_size, progress, backend,
                    validate=bool(full_validation))


def gram(
    kernel: BlockKernel,
    X: Any,
    Y: Any = None,
    *,
    n_jobs: int | None = None,
    normalize: bool = False,
    block_size: int | None = None,
    out: str | os.PathLike | None = None,
    cache: str | os.PathLike | joblib.Memory | None = None,
    progress: bool | None = None,
    backend: str | None = None,
    return_info: bool = False,
    validate: bool | str = "auto",
) -> np.ndarray | tuple[np.ndarray, GramInfo]:
    """Gram matrix ``K[i, j] = kernel(X[i], Y[j])`` of a kernel object (``Y = X`` when omitted).

    ``kernel`` is any :class:`BlockKernel`; the options are those of :func:`structkernels.gram`,
    which also takes a registered kernel name and documents every option.

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import kernel
    >>> gram(kernel("linear"), np.array([[0.0, 1.0], [1.0, 1.0]])).tolist()
    [[1.0, 1.0], [1.0, 2.0]]
    """
    t0 = time.perf_counter()
    if getattr(kernel, "cosine_normalizes", False):
        kernel, normalize = kernel.kernel, True
    kernel.validate_params()
    level = validation_level(kernel, validate)
    X = kernel.check_input(X)
    Y = None if Y is None else kernel.check_input(Y)
    n_jobs_value(n_jobs)
    if block_size is not None and (isinstance(block_size, bool) or not isinstance(
            block_size, (int, np.integer)) or block_size < 1):
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    n = len(X)
    m = n if Y is None else len(Y)

    final = None
    if out is not None:
        final = Path(os.fspath(out))
        final.parent.mkdir(parents=True, exist_ok=True)

    cache_hit = False
    args = (kernel, X, Y, bool(normalize), n_jobs, block_size, progress, backend)
    with contextlib.ExitStack() as stack:
        # the memory map is built under a temporary name in the folder of ``out`` and
        # renamed over it only when complete: an interrupt, a kill or a full disk leaves
        # the old file intact, and two writers of one output never share a mapping
        target = None
        if final is not None:
            target = stack.enter_context(atomic_memmap(final, (n, m), np.float64))
        if cache is not None:
            memory = (
                cache if isinstance(cache, joblib.Memory)
                else joblib.Memory(os.fspath(cache), verbose=0)
            )
            cached = memory.cache(
                _compute_keyed, ignore=["n_jobs", "block_size", "progress", "backend"]
            )
            keyed = (*args, kernel_code_version(kernel), level == "full")
            cache_hit = bool(cached.check_call_in_cache(*keyed))
            K, n_evals, n_blocks = cached(*keyed)
            if cache_hit:
                n_evals = 0
            if target is not None:
                target[:] = K
                K = target
        else:
            K, n_evals, n_blocks = _compute(*args, out=target, validate=level == "full")
        if target is not None:
            K = target = None  # the temporary file's map: flushed and renamed on leaving
    if final is not None:
        K = np.load(final, mmap_mode="r+")
    info = GramInfo((n, m), int(n_evals), time.perf_counter() - t0, bool(cache_hit), int(n_blocks))
    return (K, info) if return_info else K
