"""The Gram engine: blocked, parallel, cached, memory-mappable Gram matrices.

:func:`gram` computes the upper triangle of blocks of a symmetric matrix (the lower is an
exact mirror), run as :func:`structkernels.engine.parallel.plan` says; the results are
bit-identical to ``n_jobs=1``.  With ``out=`` every block is written into the ``.npy`` file
(normalised first), so memory stays about one block per worker.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from structkernels.engine._blocks import (
    BlockKernel,
    FileMatrix,
    block_ranges,
    block_tasks,
    compute_blocks,
    count_evals,
    default_block_size,
    guided_chunks,
    largest_first,
    one_block,
    task_evals,
    write_block,
    write_block_file,
)
from structkernels.engine._keys import content_hash, kernel_key  # kernel_key: public here
from structkernels.engine._resume import resumable_gram
from structkernels.engine.checks import (
    OWN_DIAGONAL,
    check_kernel_values,
    normalization_scales,
    normalize_block,
    normalize_gram,
    probe_when_asked,
    validation_level,
)
from structkernels.engine.parallel import Plan, map_tasks, plan
from structkernels.utils import (
    CacheFolder,
    NpyFormatError,
    atomic_memmap,
    bar_disabled,
    n_jobs_value,
    read_npy,
    save_npy,
    tqdm,
)

__all__ = ["gram", "GramInfo", "GRAM_OPTIONS", "block_ranges", "kernel_key"]


@dataclass
class GramInfo:
    """What a :func:`gram` call did.

    Attributes
    ----------
    shape : tuple of int
    n_evaluations, n_blocks : int
        Kernel evaluations made and blocks computed (0 on a cache hit).
    seconds : float
    cache_hit : bool
    run : dict or None
        The record of a resumable run (``out=`` on dask): ``blocks``, ``blocks_skipped``
        (found done), ``blocks_computed``, ``restarted`` (None, or why nothing was reused),
        ``rounds``, ``phases`` (seconds) and ``workers`` (per address).
    """

    shape: tuple[int, int]
    n_evaluations: int
    seconds: float
    cache_hit: bool
    n_blocks: int
    run: dict | None = None


def _block_size(kernel: BlockKernel, block_size: int | None, n: int, m: int) -> int:
    """``block_size``, or the kernel's preferred size capped by :func:`default_block_size`."""
    return block_size or min(int(getattr(kernel, "preferred_block_size", 0) or 1 << 30),
                             default_block_size(n, m))


def _compute(kernel, X, Y, normalize, n_jobs, block_size, progress, backend, client,
             out=None, validate="auto"):
    """``(K, n_evaluations, n_blocks)``: the blocks as :func:`plan` says, placed in ``out``
    (made when None, or a writable memmap), normalised in place, or block by block before a
    file is written (diagonal blocks first); either way ``K[i, j] * (s_i * s_j)``."""
    symmetric = Y is None
    n = len(X)
    m = n if symmetric else len(Y)
    total = count_evals(n, m, symmetric)
    probe_when_asked(kernel, X, total, validate)
    layout = FileMatrix.layout_of(out)
    scales = None
    if normalize and layout is not None:
        scales = OWN_DIAGONAL if symmetric else normalization_scales(
            *_diagonals(kernel, X, Y), warn=True, stacklevel=3)
    if out is None:
        out = np.empty((n, m), dtype=np.float64)
    tasks = list(block_tasks(n, m, _block_size(kernel, block_size, n, m), symmetric)
                 if total else ())
    fm = None if layout is None else FileMatrix(*layout)
    run = plan(kernel, n_jobs, backend, n_evaluations=total) if len(tasks) > 1 else Plan()
    if client is not None and run.backend == "dask":
        run = replace(run, client=client)
    bar = tqdm(total=total, unit="eval", unit_scale=True, desc="gram",
               disable=not total or bar_disabled(total, progress), leave=False)
    # with scales from the diagonal, the diagonal blocks first
    own = isinstance(scales, str)
    phases = ([[t for t in tasks if t[0] == t[2]], [t for t in tasks if t[0] != t[2]]] if own
              else [tasks])
    diag = np.empty(n, dtype=np.float64) if own else None

    def compute(task):
        """One block in this process: computed, normalised, written; its raw diagonal."""
        block, d = normalize_block(one_block(kernel, task, X, Y, symmetric), task[::2], scales)
        if fm is not None:
            write_block_file(fm, task, block, symmetric)
        else:
            write_block(out, task, block, symmetric)
        return task, d

    def done(task, d) -> None:
        if d is not None:
            diag[task[0]:task[1]] = d
        bar.update(task_evals(task, symmetric))

    try:
        for i, phase in enumerate(phases):
            if i:  # every diagonal block is in: the scales of the others (a zero
                # self-similarity warns here once, as normalising the finished matrix does)
                s, _ = normalization_scales(diag, diag, warn=True, stacklevel=3)
                scales = (s, s)
            if run.probe_seconds is not None:
                # time the first block serially: workers only when the rest is worth them
                t0 = time.perf_counter()
                done(*compute(phase[0]))
                per_eval = (time.perf_counter() - t0) / max(1, task_evals(phase[0], symmetric))
                phase = phase[1:]
                run = run.after_probe(per_eval * sum(
                    task_evals(t, symmetric) for p in [phase, *phases[1:]] for t in p))
            if run.backend in ("serial", "threads"):
                # threads: one block per call, each placing its own (disjoint regions), the
                # largest first so that the workers finish together
                todo = largest_first(phase, symmetric) if run.backend == "threads" else phase
                for task, d in map_tasks(compute, todo, backend=run):
                    done(task, d)
                continue
            # the largest blocks first, so the workers finish together; chunks that shrink
            # towards the end (a file: one block per task)
            todo = largest_first(phase, symmetric)
            chunks = (guided_chunks(todo, run.workers, symmetric) if fm is None
                      else [[t] for t in todo])
            job = functools.partial(compute_blocks, symmetric=symmetric, file=layout,
                                    scales=scales)
            for chunk_results in map_tasks(job, chunks, backend=run, ordered=False,
                                           shared=(kernel, X, Y)):
                for r0, r1, c0, c1, block, d in chunk_results:
                    if block is not None:
                        write_block(out, (r0, r1, c0, c1), block, symmetric)
                    done((r0, r1, c0, c1), d)
    finally:
        bar.close()
        if fm is not None:
            fm.close()
    if normalize and layout is None:
        d = (np.diag(out).copy(),) * 2 if symmetric else _diagonals(kernel, X, Y)
        normalize_gram(out, *d, inplace=True)
    return out, total + (n + m if normalize and not symmetric else 0), len(tasks)


def _diagonals(kernel: BlockKernel, X: Sequence, Y: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """``k(x, x)`` over ``X`` and ``k(y, y)`` over ``Y``, checked."""
    dx = np.asarray(kernel.diag_block(X), dtype=np.float64)
    dy = np.asarray(kernel.diag_block(Y), dtype=np.float64)
    check_kernel_values(kernel, dx, diagonal=True)
    check_kernel_values(kernel, dy, diagonal=True, names=("Y", "Y"))
    return dx, dy


def _cached(cache: str | os.PathLike, kernel: BlockKernel, X, Y, normalize: bool, full: bool,
            compute) -> tuple[np.ndarray, int, int, bool]:
    """``compute()`` through the checked ``.npy`` entries of folder ``cache`` (read without
    pickle): ``(K, n_evaluations, n_blocks, hit)``."""
    key = content_hash([kernel_key(kernel), content_hash(X), content_hash(Y), normalize, full])
    folder = CacheFolder(cache, "Gram cache")
    name = f"gram-{key}.npy"
    n, m = len(X), len(X) if Y is None else len(Y)
    if folder.check_file(name, key, 8 * n * m + 4096):
        try:
            return read_npy(folder.file(name), max_bytes=8 * n * m), 0, 0, True
        except NpyFormatError as exc:
            folder.discard(name, str(exc))
    K, n_evals, n_blocks = compute()
    folder.write_file(name, key, lambda path: save_npy(path, K))
    return K, n_evals, n_blocks, False


def gram(
    kernel: BlockKernel,
    X: Any,
    Y: Any = None,
    *,
    n_jobs: int | None = None,
    normalize: bool = False,
    block_size: int | None = None,
    out: str | os.PathLike | None = None,
    cache: str | os.PathLike | None = None,
    progress: bool | None = None,
    backend: str | None = None,
    client: Any = None,
    return_info: bool = False,
    validate: bool | str = "auto",
) -> np.ndarray | tuple[np.ndarray, GramInfo]:
    """Gram matrix ``K[i, j] = kernel(X[i], Y[j])`` of a kernel object (``Y = X`` when omitted).

    The one Gram function: :func:`structkernels.gram` (a kernel or a registered name) and
    :meth:`structkernels.Kernel.gram` pass their options here.

    Parameters
    ----------
    kernel : Kernel
        Any :class:`BlockKernel`.
    X, Y : sequences of structures (or 2-D arrays for vector kernels)
    n_jobs : int or None, default None
        Workers (``-1`` for all cores); parallel and serial results are bit-identical.
    normalize : bool, default False
        Return ``K / sqrt(diag_x diag_y)``; 0 where a self-similarity is 0 (with a
        warning).  A :class:`~structkernels.kernels.base.Normalized` kernel is the same.
    block_size : int, optional
        Rows/columns per block; chosen from the sizes if None.
    out : path, optional
        Write the result into a ``.npy`` file there, built atomically (an interrupt, a kill
        or a full disk leaves an existing ``out`` intact), and return its map (``r+``).  A
        symmetric Gram on dask without ``cache`` is resumable: the same call computes only
        the blocks not yet flushed to disk (``<out>.parts/``).
    cache : path, optional
        A folder of checked ``.npy`` entries (never pickles) keyed by the kernel (all its
        parameters and code versions) and a hash of the data: a repeated call loads it.
    progress : bool, optional
        Show a progress bar (default: on long work, when stderr is a terminal).
    backend : str, optional
        joblib backend, or ``"dask"``; None lets
        :func:`~structkernels.engine.parallel.plan` pick.
    client : dask.distributed.Client, optional
        The cluster of ``backend="dask"`` (default: the current client).
    return_info : bool, default False
        Also return a :class:`GramInfo`.
    validate : {"auto", True, False}, default "auto"
        Checks of the kernel's output (:func:`~structkernels.engine.checks.validation_level`):
        a NaN or infinite value is always refused, naming the pair; ``True`` also probes
        symmetry and positive semi-definiteness on a seeded sample of ``X``
        (:func:`~structkernels.engine.checks.probe_kernel`, not counted in
        ``n_evaluations``).

    Returns
    -------
    K : ndarray of float64, shape (len(X), len(Y) or len(X))
    info : GramInfo, only if ``return_info``

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import kernel
    >>> gram(kernel("linear"), np.array([[0.0, 1.0], [1.0, 1.0]])).tolist()
    [[1.0, 1.0], [1.0, 2.0]]
    """
    t0 = time.perf_counter()
    n_jobs_value(n_jobs)
    if getattr(kernel, "cosine_normalizes", False):  # its diagonal computed once
        kernel, normalize = kernel.kernel, True
    kernel.validate_params()
    if block_size is not None and (isinstance(block_size, bool) or not isinstance(
            block_size, (int, np.integer)) or block_size < 1):
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    X, Y = kernel.check_input(X), None if Y is None else kernel.check_input(Y)
    level = validation_level(kernel, validate)
    n = len(X)
    m = n if Y is None else len(Y)

    final = None if out is None else Path(os.fspath(out))
    if final is not None:
        final.parent.mkdir(parents=True, exist_ok=True)
    args = (kernel, X, Y, bool(normalize), n_jobs, block_size, progress, backend, client)
    full, run, cache_hit = level == "full", None, False
    if (final is not None and Y is None and cache is None and n
            and "dask" in (backend, plan(kernel, n_jobs, backend).backend)):
        probe_when_asked(kernel, X, count_evals(n, n, True), full)
        K, run = resumable_gram(kernel, X, final, client, _block_size(kernel, block_size, n, n),
                                bool(normalize), progress)
        n_evals, n_blocks = run["n_evaluations"], run["blocks_computed"]
    else:
        with (contextlib.nullcontext() if final is None
              else atomic_memmap(final, (n, m), np.float64)) as target:
            if cache is not None:
                K, n_evals, n_blocks, cache_hit = _cached(
                    cache, kernel, X, Y, bool(normalize), full,
                    lambda: _compute(*args, validate=full))
                if target is not None:
                    target[:] = K
            else:
                K, n_evals, n_blocks = _compute(*args, out=target, validate=full)
            if final is not None:
                K = target = None  # the temporary file's map: flushed and renamed on leaving
        if final is not None:
            K = np.load(final, mmap_mode="r+")
    info = GramInfo((n, m), int(n_evals), time.perf_counter() - t0, cache_hit, int(n_blocks),
                    run)
    return (K, info) if return_info else K


#: the keyword options of :func:`gram`
GRAM_OPTIONS = frozenset(list(inspect.signature(gram).parameters)[3:])
