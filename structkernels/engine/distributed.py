"""Out-of-core Gram matrices on a dask cluster, restartable after a lost worker.

:func:`dask_gram` writes the Gram matrix of ``X`` block by block into a
``.npy`` file opened as a memory map by every worker (on a cluster: a path on
a file system all workers share).  Next to it, ``<out>.parts/`` holds one
marker file per finished block, written only after the block is flushed, and
the key of the run (``meta.json``), and the matrix being built
(``partial.npy``): ``out`` itself is written only when the matrix is complete,
by renaming ``partial.npy`` over it, so an existing ``out`` is intact until
then.  So:

* memory per worker is one block (``block_size**2`` doubles), whatever ``n``;
* a worker that dies loses only the blocks it was computing: the scheduler
  hands them to another worker (``allowed_failures`` retries in dask);
* a whole run that stops (scheduler lost, machine rebooted, Ctrl-C) is resumed
  by calling :func:`dask_gram` again with the same arguments: blocks with a
  marker are skipped;
* the key of a run covers the data (a content hash of the structures, block by
  block), the kernel (its class, a hash of all its parameters and its code
  version: :func:`structkernels.engine.gram._kernel_key`), ``n``, ``block_size`` and
  ``normalize``.  A call whose key differs from the one found (other data, the
  same data in another order, another σ, a new version of the kernel's code)
  reuses nothing: it says so on stderr and computes every block again;
* with ``normalize=True`` the diagonal is computed first (saved as
  ``diag.npy``) and every block is normalised before it is written, so a
  resumed run never normalises a block twice.

Needs the ``distributed`` extra (``pip install structkernels[distributed]``).
The result equals :func:`structkernels.gram` bit for bit (same blocks, same
arithmetic, the lower triangle an exact mirror of the upper).

Example (a script in ``benchmarks/cluster_gram.py`` runs this at scale)::

    from dask.distributed import Client, LocalCluster
    from structkernels.engine.distributed import dask_gram
    client = Client(LocalCluster(n_workers=4, threads_per_worker=1))
    K, info = dask_gram("path", paths, "gram.npy", client=client, block_size=2048)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import joblib
import numpy as np

from structkernels.engine.gram import (
    BlockKernel,
    _block_tasks,
    _content_hash,
    _kernel_key,
    _one_block,
    _task_evals,
    _write_block,
    block_ranges,
)
from structkernels.utils import atomic_memmap, atomic_open, atomic_path, move_into_place, save_npy

__all__ = ["dask_gram", "parts_dir", "partial_path"]

#: the format of ``meta.json``; a run keyed by another format is not resumed
_META_FORMAT = "structkernels.dask-gram"
_META_VERSION = 2


def parts_dir(out: str | os.PathLike) -> Path:
    """The folder of block markers and run parameters next to ``out``."""
    return Path(os.fspath(out) + ".parts")


def partial_path(out: str | os.PathLike) -> Path:
    """The matrix being built for ``out``; renamed to ``out`` when complete."""
    return parts_dir(out) / "partial.npy"


def _marker(parts: Path, task) -> Path:
    r0, _, c0, _ = task
    return parts / f"r{r0}_c{c0}.done"


def _touch_atomic(path: Path, text: str = "") -> None:
    with atomic_open(path) as fh:
        fh.write(text)


def _data_key(X: Any, block_size: int) -> str:
    """A content hash of ``X``, taken block by block (memory: one block pickled at a time)."""
    hashes = [_content_hash(X[r0:r1]) for r0, r1 in block_ranges(len(X), block_size)]
    return joblib.hash([len(X), hashes])


def _run_key(kernel: BlockKernel, X: Any, block_size: int, normalize: bool) -> dict:
    return {
        "format": _META_FORMAT,
        "version": _META_VERSION,
        "n": len(X),
        "block_size": int(block_size),
        "normalize": bool(normalize),
        **_kernel_key(kernel),
        "data": _data_key(X, int(block_size)),
    }


def _read_key(path: Path) -> dict | None:
    """The key stored in ``path``, or None when it is missing or unreadable."""
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
        with contextlib.suppress(FileNotFoundError):
            (parts / name).unlink()
    for f in parts.glob("*.done"):
        f.unlink()
    with atomic_memmap(partial, shape, np.float64):
        pass  # zeros, with the file's blocks reserved: a full disk is a WriteError here
    _touch_atomic(parts / "meta.json", json.dumps(key))


def _copy_file(src: Path, dst: Path) -> None:
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def _scale(d: np.ndarray) -> np.ndarray:
    s = np.zeros_like(d)
    ok = d > 0
    s[ok] = 1.0 / np.sqrt(d[ok])
    return s


def _block_job(kernel: BlockKernel, X, task, out: str, parts: str, scale) -> tuple[str, float, int]:
    """Worker: one block, normalised if asked, written and flushed, then marked done."""
    t0 = time.perf_counter()
    r0, r1, c0, c1 = task
    block = _one_block(kernel, task, X, None, True)
    if scale is not None:
        block = block * (scale[r0:r1, None] * scale[None, c0:c1])
    target = np.load(out, mmap_mode="r+")
    _write_block(target, task, block, True)
    target.flush()
    del target
    _touch_atomic(_marker(Path(parts), task))
    try:
        from distributed import get_worker

        who = get_worker().address
    except Exception:  # pragma: no cover - run outside a worker
        who = "local"
    return who, time.perf_counter() - t0, _task_evals(task, True)


def _diag_job(kernel: BlockKernel, X, r0: int, r1: int) -> tuple[int, np.ndarray]:
    return r0, np.asarray(kernel.diag_block(X[r0:r1]), dtype=np.float64)


def dask_gram(
    kernel: BlockKernel,
    X: Any,
    out: str | os.PathLike,
    *,
    client: Any = None,
    block_size: int = 1024,
    normalize: bool = False,
    progress: bool | None = None,
) -> tuple[np.memmap, dict]:
    """Symmetric Gram of ``X`` computed by a dask cluster into the ``.npy`` file ``out``.

    Parameters
    ----------
    kernel : Kernel
        A kernel object (``structkernels.kernel(name, **params)`` builds one by name).
    X : sequence of structures
    out : path
        The ``.npy`` file, replaced only when the new matrix is complete (it
        is built as ``<out>.parts/partial.npy``).  A run is resumed when
        ``<out>.parts/`` holds the blocks of a run with the same key (data,
        kernel and its parameters, code version, ``block_size``,
        ``normalize``); otherwise every block is computed again (said on
        stderr).
    client : dask.distributed.Client, optional
        The cluster (default: the current client, ``distributed.get_client()``).
    block_size : int, default 1024
        Rows/columns per block; memory per worker is about ``8 block_size**2``
        bytes plus the kernel's work space.
    normalize : bool, default False
        Cosine-normalise (diagonal first, then every block as it is written).
    progress : bool, optional
        tqdm bar over blocks.

    Returns
    -------
    K : numpy.memmap, shape (n, n)
    info : dict
        ``blocks``, ``blocks_skipped`` (found done), ``blocks_computed``,
        ``n_evaluations``, ``seconds``, ``restarted`` (None, or why the blocks
        found were not reused) and ``workers``: per worker address its
        ``blocks``, ``evaluations``, ``busy_seconds`` and
        ``evaluations_per_second``.

    Examples
    --------
    >>> from dask.distributed import Client, LocalCluster  # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> K, info = dask_gram(kernel("path"), paths, "K.npy", client=client)  # doctest: +SKIP
    """
    from distributed import as_completed, get_client
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    if getattr(kernel, "cosine_normalizes", False):
        kernel, normalize = kernel.kernel, True
    kernel.validate_params()
    X = kernel.check_input(X)
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    client = client or get_client()
    n = len(X)
    out = Path(os.fspath(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    parts = parts_dir(out)
    partial = partial_path(out)
    meta_file = parts / "meta.json"
    result_file = parts / "result.json"
    key = _run_key(kernel, X, int(block_size), normalize)
    tasks = list(_block_tasks(n, n, int(block_size), True))
    old = _read_key(meta_file)
    restarted = None
    if old == key and partial.is_file():
        pass  # resume the matrix being built
    elif old == key and out.is_file() and _read_key(result_file) == key:
        # ``out`` is the result of this key: nothing to do when every block is marked,
        # otherwise the missing blocks are computed into a copy, renamed over ``out``
        if any(not _marker(parts, t).exists() for t in tasks):
            _copy_file(out, partial)
    else:
        if old is not None:
            restarted = (
                f"the blocks in {parts} were computed for another "
                + ", ".join(_differences(old, key))
                if old != key
                else f"the matrix being built ({partial}) is missing"
            )
            print(
                f"dask_gram: {out}: {restarted}; none is reused: computing all {len(tasks)} "
                f"blocks again ({out} is replaced when the new matrix is complete)",
                file=sys.stderr,
            )
        _start_afresh(parts, partial, (n, n), key)
    todo = [t for t in tasks if not _marker(parts, t).exists()]
    info: dict = {"n": n, "blocks": len(tasks), "blocks_skipped": len(tasks) - len(todo),
                  "blocks_computed": 0, "n_evaluations": 0, "restarted": restarted,
                  "workers": {}}
    if todo:
        [Xf] = client.scatter([X], broadcast=True, hash=False)
        scale = None
        if normalize:
            dfile = parts / "diag.npy"
            if dfile.is_file():
                d = np.load(dfile)
            else:
                d = np.empty(n, dtype=np.float64)
                futs = [client.submit(_diag_job, kernel, Xf, r0, min(n, r0 + block_size),
                                      pure=False) for r0 in range(0, n, block_size)]
                for fut in as_completed(futs):
                    r0, v = fut.result()
                    d[r0:r0 + len(v)] = v
                save_npy(dfile, d)
                info["n_evaluations"] += n
            scale = _scale(d)
        futs = [client.submit(_block_job, kernel, Xf, t, os.fspath(partial), os.fspath(parts),
                              scale,
                              pure=False, key=f"sk-gram-block-{t[0]}-{t[2]}-{time.time_ns()}")
                for t in todo]
        disable = (len(todo) < 8) if progress is None else not progress
        try:
            with tqdm(total=len(todo), unit="block", desc="dask gram", disable=disable) as bar:
                for fut in as_completed(futs):
                    who, sec, ev = fut.result()
                    w = info["workers"].setdefault(who, {"blocks": 0, "evaluations": 0,
                                                         "busy_seconds": 0.0})
                    w["blocks"] += 1
                    w["evaluations"] += ev
                    w["busy_seconds"] += sec
                    info["blocks_computed"] += 1
                    info["n_evaluations"] += ev
                    bar.update(1)
        except BaseException:
            # a failed block or Ctrl-C: the blocks not started are dropped; the finished
            # ones keep their markers, and ``out`` is untouched (a later call resumes)
            with contextlib.suppress(Exception):
                client.cancel(futs)
            raise
        for w in info["workers"].values():
            w["evaluations_per_second"] = w["evaluations"] / max(w["busy_seconds"], 1e-12)
    if partial.is_file():
        move_into_place(partial, out)  # complete: flushed, then renamed over ``out``
        _touch_atomic(result_file, json.dumps(key))
    info["seconds"] = time.perf_counter() - t_start
    return np.load(out, mmap_mode="r+"), info
