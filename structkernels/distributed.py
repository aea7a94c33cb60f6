"""Out-of-core Gram matrices on a dask cluster, restartable after a lost worker.

:func:`dask_gram` writes the Gram matrix of ``X`` block by block into a
``.npy`` file opened as a memory map by every worker (on a cluster: a path on
a file system all workers share).  Next to it, ``<out>.parts/`` holds one
marker file per finished block, written only after the block is flushed, and
the parameters of the run (``meta.json``).  So:

* memory per worker is one block (``block_size**2`` doubles), whatever ``n``;
* a worker that dies loses only the blocks it was computing: the scheduler
  hands them to another worker (``allowed_failures`` retries in dask);
* a whole run that stops (scheduler lost, machine rebooted, Ctrl-C) is resumed
  by calling :func:`dask_gram` again with the same arguments: blocks with a
  marker are skipped;
* with ``normalize=True`` the diagonal is computed first (saved as
  ``diag.npy``) and every block is normalised before it is written, so a
  resumed run never normalises a block twice.

Needs the ``distributed`` extra (``pip install structkernels[distributed]``).
The result equals :func:`structkernels.gram` bit for bit (same blocks, same
arithmetic, the lower triangle an exact mirror of the upper).

Example (a script in ``benchmarks/cluster_gram.py`` runs this at scale)::

    from dask.distributed import Client, LocalCluster
    from structkernels.distributed import dask_gram
    client = Client(LocalCluster(n_workers=4, threads_per_worker=1))
    K, info = dask_gram("path", paths, "gram.npy", client=client, block_size=2048)
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from structkernels.gram import _block_tasks, _one_block, _task_evals, _write_block
from structkernels.kernel import Kernel, Normalized
from structkernels.registry import as_kernel

__all__ = ["dask_gram", "parts_dir"]


def parts_dir(out: str | os.PathLike) -> Path:
    """The folder of block markers and run parameters next to ``out``."""
    return Path(os.fspath(out) + ".parts")


def _marker(parts: Path, task) -> Path:
    r0, _, c0, _ = task
    return parts / f"r{r0}_c{c0}.done"


def _touch_atomic(path: Path, text: str = "") -> None:
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _scale(d: np.ndarray) -> np.ndarray:
    s = np.zeros_like(d)
    ok = d > 0
    s[ok] = 1.0 / np.sqrt(d[ok])
    return s


def _block_job(kernel: Kernel, X, task, out: str, parts: str, scale) -> tuple[str, float, int]:
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


def _diag_job(kernel: Kernel, X, r0: int, r1: int) -> tuple[int, np.ndarray]:
    return r0, np.asarray(kernel.diag_block(X[r0:r1]), dtype=np.float64)


def dask_gram(
    kernel: Kernel | str,
    X: Any,
    out: str | os.PathLike,
    *,
    client: Any = None,
    block_size: int = 1024,
    normalize: bool = False,
    progress: bool | None = None,
    **params: Any,
) -> tuple[np.memmap, dict]:
    """Symmetric Gram of ``X`` computed by a dask cluster into the ``.npy`` file ``out``.

    Parameters
    ----------
    kernel : Kernel or str
        A kernel instance or a registered name (``**params`` build it).
    X : sequence of structures
    out : path
        The ``.npy`` file (created, or resumed when ``<out>.parts/`` says a
        run with the same parameters began there).
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
        ``n_evaluations``, ``seconds`` and ``workers``: per worker address its
        ``blocks``, ``evaluations``, ``busy_seconds`` and
        ``evaluations_per_second``.

    Examples
    --------
    >>> from dask.distributed import Client, LocalCluster  # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> K, info = dask_gram("path", paths, "K.npy", client=client)  # doctest: +SKIP
    """
    from distributed import as_completed, get_client
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    kernel = as_kernel(kernel, **params)
    if isinstance(kernel, Normalized):
        kernel, normalize = kernel.kernel, True
    kernel.validate_params()
    X = kernel.check_input(X)
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    client = client or get_client()
    n = len(X)
    out = os.fspath(out)
    parts = parts_dir(out)
    meta = {"n": n, "block_size": int(block_size), "normalize": bool(normalize),
            "kernel": repr(kernel)}
    meta_file = parts / "meta.json"
    resume = meta_file.is_file() and Path(out).is_file()
    if resume:
        old = json.loads(meta_file.read_text())
        if old != meta:
            raise ValueError(
                f"{out}: a run with other parameters began there ({old}); remove {out} and "
                f"{parts} to start again"
            )
    else:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        parts.mkdir(parents=True, exist_ok=True)
        for f in parts.glob("*.done"):
            f.unlink()
        np.lib.format.open_memmap(out, mode="w+", dtype=np.float64, shape=(n, n)).flush()
        _touch_atomic(meta_file, json.dumps(meta))
    tasks = list(_block_tasks(n, n, int(block_size), True))
    todo = [t for t in tasks if not _marker(parts, t).exists()]
    info: dict = {"n": n, "blocks": len(tasks), "blocks_skipped": len(tasks) - len(todo),
                  "blocks_computed": 0, "n_evaluations": 0, "workers": {}}
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
                np.save(dfile, d)
                info["n_evaluations"] += n
            scale = _scale(d)
        futs = [client.submit(_block_job, kernel, Xf, t, out, os.fspath(parts), scale,
                              pure=False, key=f"sk-gram-block-{t[0]}-{t[2]}-{time.time_ns()}")
                for t in todo]
        disable = (len(todo) < 8) if progress is None else not progress
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
        for w in info["workers"].values():
            w["evaluations_per_second"] = w["evaluations"] / max(w["busy_seconds"], 1e-12)
    info["seconds"] = time.perf_counter() - t_start
    return np.load(out, mmap_mode="r+"), info
