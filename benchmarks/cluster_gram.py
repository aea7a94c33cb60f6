"""A Gram matrix too large for memory, computed by a dask cluster into an on-disk array.

The documented cluster path (docs/kernels.md, "Out of core on a cluster"):
every worker computes square blocks of the upper triangle and writes them
(and their mirror) into one ``.npy`` memory map on a file system that all
workers share; a marker file per finished block makes the run restartable:
a lost worker's blocks are recomputed elsewhere by the scheduler, and a run
that stopped is resumed by running the same command again (finished blocks
are skipped).  Prints JSON: sizes, blocks computed/skipped, seconds and their
phases (setup, blocks, waiting for the last markers, final flush and rename),
evaluations per second overall and per worker (with each worker's seconds
computing and writing), load average.

At the paper's scale (N = 50,000 paths: a 20 GB float64 matrix)::

    dask scheduler &                      # on the head node
    dask worker tcp://HEAD:8786 --nthreads 1 --nworkers 16 &   # on each node
    python benchmarks/cluster_gram.py --scheduler tcp://HEAD:8786 \
        --n 50000 --block-size 2048 --out /shared/gram-50k.npy

On one machine (a LocalCluster; the default is a reduced size)::

    python benchmarks/cluster_gram.py --n 8000 --workers 2 --out /tmp/gram.npy

Kill a worker (or the script) half-way and run the command again: the
``blocks_skipped`` field shows the work that was kept.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import structkernels as sk
from structkernels.datasets import load_interactions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8000, help="paths (repeated when N > the dataset)")
    ap.add_argument("--kernel", default="path")
    ap.add_argument("--lam", type=float, default=0.8)
    ap.add_argument("--normalize", action="store_true")
    ap.add_argument("--block-size", type=int, default=1024)
    ap.add_argument("--out", default="gram.npy")
    ap.add_argument("--scheduler", default=None, help="address of a running dask scheduler")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster workers (no --scheduler)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    data = load_interactions()
    rng = np.random.default_rng(args.seed)
    idx = rng.choice(len(data), size=args.n, replace=args.n > len(data))
    X = data.paths[idx]
    la0 = [round(v, 2) for v in os.getloadavg()]
    cluster = None
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=":0")
        client = Client(cluster)
    try:
        t0 = time.perf_counter()
        K, info = sk.gram(sk.kernel(args.kernel, lam=args.lam), X, out=args.out, backend="dask",
                          client=client, block_size=args.block_size, normalize=args.normalize,
                          progress=True, return_info=True)
        info = info.run
        seconds = time.perf_counter() - t0
        n_workers = len(client.scheduler_info()["workers"])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    print(json.dumps({
        "n": args.n, "kernel": f"{args.kernel}(lam={args.lam})", "normalize": args.normalize,
        "out": os.path.abspath(args.out), "matrix_gb": round(8 * args.n * args.n / 1e9, 3),
        "block_size": args.block_size, "workers": n_workers,
        "blocks": info["blocks"], "blocks_computed": info["blocks_computed"],
        "blocks_skipped": info["blocks_skipped"], "evaluations": info["n_evaluations"],
        "seconds": round(seconds, 2), "phases": info["phases"], "rounds": info["rounds"],
        "evaluations_per_second": round(info["n_evaluations"] / max(seconds, 1e-9), 1),
        "per_worker": {w: {"blocks": v["blocks"],
                           "evaluations_per_second": round(v["evaluations_per_second"], 1),
                           "compute_seconds": round(v["compute_seconds"], 2),
                           "write_seconds": round(v["write_seconds"], 2)}
                       for w, v in info["workers"].items()},
        "load_average_before_after": [la0, [round(v, 2) for v in os.getloadavg()]],
    }, indent=2))


if __name__ == "__main__":
    main()
