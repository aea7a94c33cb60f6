"""The Gram engine: blocked, parallel, cached, memory-mappable Gram matrices.

:func:`gram` splits the matrix into square blocks, computes only the upper
triangle of blocks when the matrix is symmetric, and runs the blocks through
joblib (processes, ``loky`` by default: threads give no speed-up on
Python-level kernels).  Because it is joblib, the same call runs on a
dask.distributed or ray cluster::

    from dask.distributed import Client, LocalCluster
    import joblib
    client = Client(LocalCluster(n_workers=4))
    with joblib.parallel_backend("dask"):
        K = gram(kernel, X, n_jobs=-1)
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from tqdm.auto import tqdm

from structkernels.kernel import Kernel, Normalized, normalize_gram
from structkernels.registry import as_kernel

__all__ = ["gram", "GramInfo", "block_ranges"]


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


def block_ranges(n: int, block_size: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``range(n)`` in blocks of ``block_size``."""
    return [(s, min(s + block_size, n)) for s in range(0, n, block_size)]


def _default_block_size(n: int, m: int, n_jobs: int) -> int:
    workers = max(1, joblib.effective_n_jobs(n_jobs))
    # about 8 tasks per worker for load balance, blocks of 32 .. 512 rows
    target = int(np.sqrt(n * m / (8 * workers))) if n and m else 1
    return int(min(512, max(32, target)))


def _block_tasks(n: int, m: int, block_size: int, symmetric: bool):
    rows = block_ranges(n, block_size)
    cols = block_ranges(m, block_size)
    for bi, (r0, r1) in enumerate(rows):
        for bj, (c0, c1) in enumerate(cols):
            if symmetric and bj < bi:
                continue
            yield r0, r1, c0, c1


def _compute_blocks(kernel: Kernel, tasks, X, Y, symmetric: bool):
    """Run a chunk of block tasks (in a worker process)."""
    out = []
    for r0, r1, c0, c1 in tasks:
        if symmetric and r0 == c0:
            block = kernel.gram_block_symmetric(X[r0:r1])
        else:
            block = kernel.gram_block(X[r0:r1], (X if symmetric else Y)[c0:c1])
        out.append((r0, r1, c0, c1, np.asarray(block, dtype=np.float64)))
    return out


def _chunk(seq: list, n_chunks: int) -> list[list]:
    n_chunks = max(1, min(n_chunks, len(seq)))
    return [seq[i::n_chunks] for i in range(n_chunks)]


def _n_evals(n: int, m: int, symmetric: bool) -> int:
    return n * (n + 1) // 2 if symmetric else n * m


def _raw_gram(
    kernel: Kernel,
    X: Sequence,
    Y: Sequence | None,
    *,
    n_jobs: int,
    block_size: int | None,
    out: np.ndarray | None,
    progress: bool | None,
    backend: str | None,
) -> tuple[np.ndarray, int, int]:
    symmetric = Y is None
    n = len(X)
    m = n if symmetric else len(Y)
    if out is None:
        out = np.empty((n, m), dtype=np.float64)
    if n == 0 or m == 0:
        return out, 0, 0
    bs = block_size or getattr(kernel, "preferred_block_size", None) or _default_block_size(
        n, m, n_jobs
    )
    tasks = list(_block_tasks(n, m, bs, symmetric))
    total = _n_evals(n, m, symmetric)
    disable = (None if total >= 200_000 else True) if progress is None else (not progress)
    bar = tqdm(total=total, unit="eval", unit_scale=True, desc="gram", disable=disable, leave=False)
    workers = joblib.effective_n_jobs(n_jobs) if n_jobs != 1 else 1

    def place(results) -> None:
        for r0, r1, c0, c1, block in results:
            out[r0:r1, c0:c1] = block
            if symmetric and r0 != c0:
                out[c0:c1, r0:r1] = block.T
            if symmetric and r0 == c0:
                bar.update((r1 - r0) * (r1 - r0 + 1) // 2)
            else:
                bar.update((r1 - r0) * (c1 - c0))

    try:
        if workers == 1 and backend is None:
            for task in tasks:
                place(_compute_blocks(kernel, [task], X, Y, symmetric))
        else:
            chunks = _chunk(tasks, 4 * workers)
            parallel = joblib.Parallel(
                n_jobs=n_jobs, backend=backend, return_as="generator_unordered"
            )
            for results in parallel(
                joblib.delayed(_compute_blocks)(
                    kernel,
                    chunk,
                    X,
                    Y,
                    symmetric,
                )
                for chunk in chunks
            ):
                place(results)
    finally:
        bar.close()
    return out, total, len(tasks)


def _compute(kernel, X, Y, normalize, n_jobs, block_size, progress, backend, out=None):
    """Raw Gram, then normalisation; returns ``(K, n_evaluations, n_blocks)``."""
    K, n_evals, n_blocks = _raw_gram(
        kernel, X, Y, n_jobs=n_jobs, block_size=block_size, out=out,
        progress=progress, backend=backend,
    )
    if normalize:
        if Y is None:
            d = np.diag(K).copy()
            K[...] = normalize_gram(K, d, d)
        else:
            dx = kernel.diag_block(X)
            dy = kernel.diag_block(Y)
            n_evals += len(X) + len(Y)
            K[...] = normalize_gram(K, dx, dy)
    return K, n_evals, n_blocks


def gram(
    kernel: Kernel | str,
    X: Any,
    Y: Any = None,
    *,
    n_jobs: int = 1,
    normalize: bool = False,
    block_size: int | None = None,
    out: str | os.PathLike | None = None,
    cache: str | os.PathLike | joblib.Memory | None = None,
    progress: bool | None = None,
    backend: str | None = None,
    return_info: bool = False,
    **params: Any,
) -> np.ndarray | tuple[np.ndarray, GramInfo]:
    """Gram matrix ``K[i, j] = kernel(X[i], Y[j])`` (``Y = X`` when omitted).

    Parameters
    ----------
    kernel : Kernel or str
        A kernel instance or a registered name (then ``**params`` build it).
    X, Y : sequences of structures (or 2-D arrays for vector kernels)
    n_jobs : int, default 1
        Worker processes (joblib, ``-1`` for all cores).  Parallel and serial
        results are equal to round-off.
    normalize : bool, default False
        Return ``K / sqrt(diag_x diag_y)``; 0 where a self-similarity is 0
        (with a warning).  A :class:`~structkernels.kernel.Normalized`
        kernel is handled the same way (its diagonal is computed once).
    block_size : int, optional
        Rows/columns per block; chosen from the sizes and ``n_jobs`` if None.
    out : path, optional
        Write the result into a ``.npy`` memory-mapped file there (for
        matrices larger than memory) and return the memmap.
    cache : path or joblib.Memory, optional
        On-disk cache keyed by the kernel's parameters and a hash of the
        data: a repeated call loads the matrix and makes no kernel call.
    progress : bool, optional
        Show a progress bar (default: on long work, when stderr is a terminal).
    backend : str, optional
        joblib backend; None uses the active one (``loky`` unless a
        ``joblib.parallel_backend`` context says otherwise).
    return_info : bool, default False
        Also return a :class:`GramInfo` (evaluations, seconds, cache hit).

    Returns
    -------
    K : ndarray of float64, shape (len(X), len(Y) or len(X))
    info : GramInfo, only if ``return_info``

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import gram
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0]])
    >>> gram("linear", X).tolist()
    [[1.0, 1.0], [1.0, 2.0]]
    >>> K, info = gram("linear", X, return_info=True)
    >>> info.n_evaluations
    3
    """
    t0 = time.perf_counter()
    kernel = as_kernel(kernel, **params)
    if isinstance(kernel, Normalized):
        kernel, normalize = kernel.kernel, True
    kernel.validate_params()
    X = kernel.check_input(X)
    Y = None if Y is None else kernel.check_input(Y)
    if not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero int, got {n_jobs!r}")
    if block_size is not None and (not isinstance(block_size, (int, np.integer)) or block_size < 1):
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    n = len(X)
    m = n if Y is None else len(Y)

    target = None
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        target = np.lib.format.open_memmap(os.fspath(out), mode="w+", dtype=np.float64, shape=(n, m))

    cache_hit = False
    args = (kernel, X, Y, bool(normalize), n_jobs, block_size, progress, backend)
    if cache is not None:
        memory = cache if isinstance(cache, joblib.Memory) else joblib.Memory(os.fspath(cache), verbose=0)
        cached = memory.cache(_compute, ignore=["n_jobs", "block_size", "progress", "backend", "out"])
        cache_hit = bool(cached.check_call_in_cache(*args))
        K, n_evals, n_blocks = cached(*args)
        if cache_hit:
            n_evals = 0
        if target is not None:
            target[:] = K
            K = target
    else:
        K, n_evals, n_blocks = _compute(*args, out=target)
    if isinstance(K, np.memmap):
        K.flush()
    info = GramInfo((n, m), int(n_evals), time.perf_counter() - t0, bool(cache_hit), int(n_blocks))
    return (K, info) if return_info else K
