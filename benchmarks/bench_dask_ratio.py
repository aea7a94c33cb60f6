"""Dask LocalCluster path Gram against local threads, in one run: the speed ratios.

The path Gram (lam 0.8) of N Bio-AMR paths (N = 4,000 by default, the setting of
``bench_parallel.py``'s ``path_gram``) is computed by local threads and by a dask
``LocalCluster`` of two workers, each into memory and into a ``.npy`` file on disk.  Two
clusters are measured one after the other (``--clusters``):

- ``threads``: ``LocalCluster(n_workers=1, threads_per_worker=2, processes=False)``, one
  worker of two threads in the client's process, as the README starts one on 2 cores
  (``LocalCluster(processes=False)``; dask's advice for code that releases the GIL, as
  the compiled kernels do: no value crosses a process boundary);
- ``processes``: ``LocalCluster(n_workers=2, threads_per_worker=1)``, a worker process
  each (every block travels from the worker to the client, or through the file).

For each cluster, four ways, timed in two groups of ABBA rounds (the group then its
reverse, ``--rounds`` times): in memory (``threads``, ``dask_memory``), then into files
(``threads``, ``threads_file``, ``dask_file``), each dask way against the threads runs of
its own group:

- ``threads``: ``gram(kernel, X, n_jobs=2)``, an in-memory matrix (the reference);
- ``threads_file``: ``gram(kernel, X, n_jobs=2, out=<.npy>)``, the same into a file
  (built under a temporary name, flushed to disk and renamed);
- ``dask_memory``: ``gram(kernel, X)`` inside ``joblib.parallel_backend("dask")`` (the
  README's cluster call): the blocks computed on the cluster, the matrix in memory;
- ``dask_file``: ``gram(kernel, X, out=<.npy>, backend="dask", client=client)`` (blocks of
  1,024 by default):
  the out-of-core, restartable path, each block written by its worker, made durable and
  marked.

What a dask time includes: the whole call with the cluster started and warmed up (for
``dask_file``: the run key, the matrix file, the data sent, the blocks computed, written,
flushed and marked, the final flush and rename).  Not included: starting the cluster
(``cluster_start_seconds``), the workers' first call (``first_call_seconds``), deleting
the previous output between runs, reading the result.

Printed: per cluster, ``sum(threads seconds) / sum(dask seconds)`` (dask's speed relative
to threads; aim from issue 25: >= 0.9 on one machine) for both outputs, and ``dask_file``
against ``threads_file`` (the same output on both sides).  Every result is checked against
the serial Gram bit for bit.  The JSON (``--out``) holds sizes, seconds per run, the
ratios, the phases of the last ``dask_file`` run (``info["phases"]``), the machine's CPU
seconds (user, system, idle: ``/proc/stat``) summed per way, and the load average.

Usage (about 1 minute on 2 cores at N = 4,000; 4 at N = 10,000)::

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

import joblib
import numpy as np
from _report import report

import structkernels as sk
from structkernels.datasets import load_interactions

CLUSTERS = {
    "threads": {"n_workers": 1, "threads_per_worker": 2, "processes": False},
    "processes": {"n_workers": 2, "threads_per_worker": 1, "processes": True},
}
WAYS = ("threads", "threads_file", "dask_memory", "dask_file")
#: timed apart, each in its own ABBA rounds: a file written just before an in-memory run
#: leaves the page cache full and memory fragmented, and the in-memory matrix then gets
#: fewer huge pages (its system time varied 0.02-0.4 s a run at N = 4,000)
GROUPS = {"memory": ("threads", "dask_memory"),
          "file": ("threads", "threads_file", "dask_file")}


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def machine_cpu() -> dict[str, float]:
    """The machine's CPU seconds so far (all cores): user, system, idle (``/proc/stat``)."""
    try:
        with open("/proc/stat") as fh:
            v = [int(x) for x in fh.readline().split()[1:8]]
    except OSError:  # not Linux
        return {}
    hz = os.sysconf("SC_CLK_TCK")
    return {"user": (v[0] + v[1]) / hz, "system": (v[2] + v[5] + v[6]) / hz,
            "idle": (v[3] + v[4]) / hz}


def clear(out: Path) -> None:
    """Remove a previous output and its run folder (not timed)."""
    if out.exists():
        out.unlink()
    shutil.rmtree(f"{out}.parts", ignore_errors=True)


def measure(kind: str, kern, X, ref: np.ndarray, args, tmp: Path) -> dict:
    """The four ways on one cluster, in ABBA rounds."""
    from dask.distributed import Client, LocalCluster

    t0 = time.perf_counter()
    cluster = LocalCluster(dashboard_address=":0", **CLUSTERS[kind])
    client = Client(cluster)
    client.wait_for_workers(CLUSTERS[kind]["n_workers"])
    cluster_start = time.perf_counter() - t0
    outs = {"threads_file": tmp / "threads.npy", "dask_file": tmp / "dask.npy"}
    rounds = {"memory": args.memory_rounds or args.rounds, "file": args.rounds}
    infos: dict = {}

    def dask_file():
        K, info = sk.gram(kern, X, out=outs["dask_file"], backend="dask", client=client,
                          block_size=args.block_size, progress=False, return_info=True)
        infos["dask_file"] = info.run
        return K

    def dask_memory():
        with joblib.parallel_backend("dask"):
            return sk.gram(kern, X, progress=False)

    fns = {
        "threads": lambda: sk.gram(kern, X, n_jobs=2, progress=False),
        "threads_file": lambda: sk.gram(kern, X, n_jobs=2, out=outs["threads_file"],
                                        progress=False),
        "dask_memory": dask_memory,
        "dask_file": dask_file,
    }
    try:
        t0 = time.perf_counter()  # the workers' first call: imports, compiled code
        sk.gram(kern, X[:64], out=tmp / "warm.npy", backend="dask", client=client, block_size=32,
                progress=False)
        first_call = time.perf_counter() - t0
        for name, f in fns.items():  # one untimed run each at full size
            clear(outs.get(name, tmp / "none"))
            f()
        seconds: dict[str, list[float]] = {k: [] for k in WAYS}
        cpu: dict[str, dict[str, float]] = {k: {} for k in WAYS}
        same = dict.fromkeys(WAYS, True)
        la_start = load()
        for gname, group in GROUPS.items():
            order = list(group) + list(group)[::-1]
            for _ in range(rounds[gname]):
                for name in order:
                    clear(outs.get(name, tmp / "none"))
                    c0, t0 = machine_cpu(), time.perf_counter()
                    K = fns[name]()
                    seconds[name].append(round(time.perf_counter() - t0, 4))
                    c1 = machine_cpu()
                    for k in c1:
                        cpu[name][k] = round(cpu[name].get(k, 0.0) + c1[k] - c0[k], 2)
                    same[name] = same[name] and bool(np.array_equal(np.asarray(K), ref))
                    del K
        la_end = load()
    finally:
        client.close()
        cluster.close()
    n_memory = 2 * rounds["memory"]  # the threads runs of the memory group come first
    total = {k: sum(v) for k, v in seconds.items()}
    total["threads_memory_group"] = sum(seconds["threads"][:n_memory])
    total["threads_file_group"] = sum(seconds["threads"][n_memory:])
    info = infos["dask_file"]
    return {
        "cluster": CLUSTERS[kind],
        "groups": {k: list(v) + list(v)[::-1] for k, v in GROUPS.items()},
        "rounds": rounds,
        "seconds": seconds,
        "machine_cpu_seconds_summed": cpu,
        "ratio_dask_memory_speed_to_threads": round(
            total["threads_memory_group"] / total["dask_memory"], 3),
        "ratio_dask_file_speed_to_threads": round(
            total["threads_file_group"] / total["dask_file"], 3),
        "ratio_dask_file_speed_to_threads_file": round(
            total["threads_file"] / total["dask_file"], 3),
        "ratio_threads_file_speed_to_threads": round(
            total["threads_file_group"] / total["threads_file"], 3),
        "bit_identical_to_serial": same,
        "cluster_start_seconds": round(cluster_start, 2),
        "first_call_seconds": round(first_call, 2),
        "dask_file_blocks": info["blocks"],
        "last_dask_file_info": {"seconds": round(info["seconds"], 4), "phases": info["phases"],
                                "workers": {w[-5:]: {k: round(v, 3) for k, v in d.items()}
                                            for w, d in info["workers"].items()}},
        "load_average_start_end": [la_start, la_end],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--lam", type=float, default=0.8)
    ap.add_argument("--block-size", type=int, default=1024, help="the dask file Gram's blocks")
    ap.add_argument("--rounds", type=int, default=4, help="ABBA rounds per group")
    ap.add_argument("--memory-rounds", type=int, default=None,
                    help="ABBA rounds of the in-memory group (default: --rounds)")
    ap.add_argument("--clusters", default="threads,processes",
                    help="comma-separated: " + ", ".join(CLUSTERS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folder", default=None, help="where the files on disk go")
    ap.add_argument("--out", default=None, help="write the JSON here too")
    args = ap.parse_args()
    kinds = [k.strip() for k in args.clusters.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in CLUSTERS]
    if unknown or not kinds:
        ap.error(f"--clusters: unknown {unknown or kinds}; choose from {list(CLUSTERS)}")

    la0 = load()
    train = load_interactions().split("train")
    perm = np.random.default_rng(args.seed).permutation(len(train))
    X = train.paths[perm[: args.n]]
    kern = sk.kernel("path", lam=args.lam)
    ref = sk.gram(kern, X, n_jobs=1, progress=False)
    tmp = Path(tempfile.mkdtemp(prefix="bench_dask_ratio_", dir=args.folder))
    try:
        results = {kind: measure(kind, kern, X, ref, args, tmp) for kind in kinds}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    doc = {
        "benchmark": "bench_dask_ratio",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "setting": f"path kernel lam={args.lam}, N Bio-AMR train paths (encoded PathList); "
                   "a dask cluster of 2 threads (in one worker in the client's process, or "
                   "2 worker processes) vs n_jobs=2 threads",
        "n": len(X), "matrix_bytes": 8 * len(X) ** 2, "dask_file_block_size": args.block_size,
        "aim": "dask speed / threads speed >= 0.9 on one machine (issue 25)",
        "clusters": results,
        "dask_includes": "the whole call: for dask_file the run key, matrix file, data/kernel "
                         "sent once, blocks computed, written, made durable and marked, final "
                         "flush and rename",
        "dask_excludes": "cluster start-up, the workers' first call, removing the previous "
                         "output, reading the result",
        "load_average_before_after": [la0, load()],
    }
    report(doc, args.out)
    for kind, r in results.items():
        print(f"{kind} cluster: dask / threads speed, in memory "
              f"{r['ratio_dask_memory_speed_to_threads']}, into a file "
              f"{r['ratio_dask_file_speed_to_threads']} (against threads into a file "
              f"{r['ratio_dask_file_speed_to_threads_file']})", file=sys.stderr)


if __name__ == "__main__":
    main()
