"""Dask LocalCluster path Gram against local threads, in one run: the speed ratio.

The path Gram (lam 0.8) of N Bio-AMR paths (N = 4,000 by default, the setting of
``bench_parallel.py``'s ``path_gram``) is timed four ways in ABBA rounds
(``threads, threads_file, dask, dask_tmpfs`` then the reverse, ``--rounds`` times):

- ``threads``: ``gram(kernel, X, n_jobs=2)``, an in-memory matrix (the reference);
- ``threads_file``: ``gram(kernel, X, n_jobs=2, out=<.npy>)``, the same into a file
  on disk (built under a temporary name, flushed to disk and renamed);
- ``dask``: ``dask_gram(kernel, X, <.npy>, client=client, block_size=512)`` on a
  ``LocalCluster`` of 2 single-threaded worker processes, the file on disk (the
  folder of ``--folder``, default the system's temporary folder);
- ``dask_tmpfs``: the same with the file in ``/dev/shm`` (memory; skipped where
  there is none): the dask path without the cost of writing 8 N^2 bytes to disk.

What the ``dask`` time includes: the whole ``dask_gram`` call with the cluster
already started and warmed up: the run key (a content hash of the data and the
kernel), the matrix file (space reserved on disk), sending the data, kernel (and
scale) to the workers once, the blocks (computed, written to the shared file,
made durable and marked, in the background, by each worker), waiting for the
last marks, the final flush and rename.  Not included: starting the cluster
(``cluster_start_seconds``), the workers' first call (imports and the compiled
code loaded from numba's cache: ``first_call_seconds``), deleting the previous
output between runs, and reading the result.

Printed: ``ratio = sum(threads seconds) / sum(dask seconds)`` (dask's speed
relative to threads; aim from issue 25: >= 0.9), the same for ``dask_tmpfs``,
and ``dask`` against ``threads_file`` (the same output on both sides).  Every result is checked against the serial Gram bit for bit.
The JSON (``--out``) holds sizes, seconds per run, the ratios, the phases of the
last dask run (``info["phases"]``) and the load average before and after.

Usage (about 1-2 minutes on 2 cores)::

    python benchmarks/bench_dask_ratio.py --out benchmarks/results/bench_dask_ratio.json
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _report import report

import structkernels as sk
from structkernels.datasets import load_interactions
from structkernels.engine.distributed import dask_gram, parts_dir


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def clear(out: Path) -> None:
    """Remove a previous output and its run folder (not timed)."""
    if out.exists():
        out.unlink()
    shutil.rmtree(parts_dir(out), ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--lam", type=float, default=0.8)
    ap.add_argument("--block-size", type=int, default=512)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="ABBA rounds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folder", default=None, help="where the files on disk go")
    ap.add_argument("--out", default=None, help="write the JSON here too")
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    la0 = load()
    data = load_interactions()
    train = data.split("train")
    perm = np.random.default_rng(args.seed).permutation(len(train))
    X = train.paths[perm[: args.n]]
    kern = sk.kernel("path", lam=args.lam)
    tmp = Path(tempfile.mkdtemp(prefix="bench_dask_ratio_", dir=args.folder))
    shm = Path(tempfile.mkdtemp(prefix="bench_dask_ratio_", dir="/dev/shm")) if Path(
        "/dev/shm").is_dir() else None
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    client = Client(cluster)
    client.wait_for_workers(args.workers)
    cluster_start = time.perf_counter() - t0
    outs = {"dask": tmp / "dask.npy", "threads_file": tmp / "threads.npy"}
    if shm is not None:
        outs["dask_tmpfs"] = shm / "dask.npy"
    infos: dict[str, dict] = {}

    def run_threads():
        return sk.gram(kern, X, n_jobs=args.workers, progress=False)

    def run_threads_file():
        return sk.gram(kern, X, n_jobs=args.workers, out=outs["threads_file"], progress=False)

    def dask_into(name):
        def run():
            K, info = dask_gram(kern, X, outs[name], client=client,
                                block_size=args.block_size, progress=False)
            infos[name] = info
            return K
        return run

    fns = {"threads": run_threads, "threads_file": run_threads_file, "dask": dask_into("dask")}
    if shm is not None:
        fns["dask_tmpfs"] = dask_into("dask_tmpfs")
    try:
        # the workers' first call: imports, compiled code from the cache (timed apart)
        t0 = time.perf_counter()
        dask_gram(kern, X[:64], tmp / "warm.npy", client=client, block_size=32, progress=False)
        first_call = time.perf_counter() - t0
        ref = sk.gram(kern, X, n_jobs=1, progress=False)
        for name, f in fns.items():  # one untimed run each at full size
            clear(outs.get(name, tmp / "none"))
            f()
        order = list(fns) + list(fns)[::-1]
        seconds: dict[str, list[float]] = {k: [] for k in fns}
        same: dict[str, bool] = {k: True for k in fns}
        la_rounds = load()
        for _ in range(args.rounds):
            for name in order:
                clear(outs.get(name, tmp / "none"))
                t0 = time.perf_counter()
                K = fns[name]()
                seconds[name].append(round(time.perf_counter() - t0, 4))
                same[name] = same[name] and bool(np.array_equal(np.asarray(K), ref))
                del K
        la_end = load()
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)
        if shm is not None:
            shutil.rmtree(shm, ignore_errors=True)
    total = {k: sum(v) for k, v in seconds.items()}
    last = infos["dask"]
    doc = {
        "benchmark": "bench_dask_ratio",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "setting": f"path kernel lam={args.lam}, N Bio-AMR train paths (encoded PathList), "
                   f"{args.workers} single-threaded dask workers vs n_jobs={args.workers} threads",
        "n": len(X), "block_size": args.block_size, "workers": args.workers,
        "matrix_bytes": 8 * len(X) ** 2,
        "blocks": last["blocks"],
        "order": order, "rounds": args.rounds,
        "seconds": seconds,
        "ratio_dask_speed_to_threads": round(total["threads"] / total["dask"], 3),
        "ratio_dask_speed_to_threads_file": round(total["threads_file"] / total["dask"], 3),
        "ratio_dask_tmpfs_speed_to_threads": (round(total["threads"] / total["dask_tmpfs"], 3)
                                              if "dask_tmpfs" in total else None),
        "aim": "ratio_dask_speed_to_threads >= 0.9",
        "bit_identical_to_serial": same,
        "dask_includes": "the whole dask_gram call: run key, matrix file, data/kernel sent once, "
                         "blocks computed, written, made durable and marked, final flush and "
                         "rename",
        "dask_excludes": "cluster start-up, the workers' first call, removing the previous "
                         "output, reading the result",
        "cluster_start_seconds": round(cluster_start, 2),
        "first_call_seconds": round(first_call, 2),
        "last_dask_info": {name: {"seconds": round(i["seconds"], 4), "phases": i["phases"],
                                  "workers": {w[-5:]: {k: round(v, 3) for k, v in d.items()}
                                              for w, d in i["workers"].items()}}
                           for name, i in infos.items()},
        "load_average_before_after": [la0, la_end],
        "load_average_at_rounds_start": la_rounds,
    }
    report(doc, args.out)
    print(f"dask speed / threads speed = {doc['ratio_dask_speed_to_threads']} "
          f"(file in memory: {doc['ratio_dask_tmpfs_speed_to_threads']}; against threads into "
          f"a file: {doc['ratio_dask_speed_to_threads_file']})", file=sys.stderr)


if __name__ == "__main__":
    main()
