"""Weak scaling of the dask path Gram: the same work per worker, 1, 2 and 4 workers, and beyond
by simulation.

For ``w`` in ``--workers`` (default 1, 2, 4) a ``LocalCluster`` of ``w`` single-threaded
worker processes computes ``gram(out=, backend="dask")`` of the path kernel (lam 0.8) over
``N_w = round(N1 sqrt(w))`` Bio-AMR paths (N1 = 4,000 by default), so that the
evaluations per worker, ``N_w^2 / (2 w)``, stay the same.  Each worker process (all
its threads) is pinned with ``os.sched_setaffinity`` to one core of those this process
may use, worker ``i`` to core ``i mod cores``; with more workers than cores (4 on a
2-core machine) the workers share cores, which the output says (``oversubscribed``).
The cluster is started and warmed up (a small Gram) before the timed runs, and each
size is timed ``--repeats`` times (median).  Efficiency is ``t(1) / t(w)`` (1.0 is
perfect weak scaling).  40 random rows of every result are checked against the kernel,
bit for bit (the upper triangle as computed, the lower one an exact mirror).

The simulation (``model`` in the JSON) predicts ``t(w)`` for 8, 16 and 64 workers from
parameters measured in the 1-worker run:

- ``c_eval``: seconds per kernel evaluation of a worker (its ``compute_seconds``
  over its evaluations);
- ``c_write``: seconds per byte written by a worker (its ``write_seconds`` over the
  bytes of its blocks and their mirrors);
- ``o_job``: seconds per job not spent in blocks (the blocks phase minus the
  worker's busy seconds, over the jobs): scheduling, transfer, start-up of a job;
- ``s_sched``: CPU seconds of the scheduler's process (this one) per task, from a
  burst of 200 empty tasks on the 1-worker cluster: a job leaves the scheduler every
  ``s_sched`` at best;
- ``B``: the write bandwidth of the disk (bytes per second: a matrix-sized file
  written and flushed);
- ``setup`` (per structure: hashing, sending the data) and ``tail`` (last marks,
  rename), seconds.

The blocks of ``N_w`` (largest first) are cut into jobs as the resumable dask route cuts them,
and the jobs are placed on ``w`` workers by list scheduling (each job to the first free
worker, not before the scheduler has sent it).  With ``M_w`` the makespan::

    t(w) = setup * N_w + max(M_w, 8 N_w^2 / B_w) + tail

where ``B_w = B`` (one disk shared by all workers: the matrix, which grows as ``w``,
must pass through it) or ``B_w = B w`` (storage whose bandwidth grows with the
workers), both reported.  For ``w`` above the cores measured here, each worker is
assumed to have a core of its own (a cluster); for the measured 4 workers on 2 cores
the model slows each worker by ``cores / w``.

Usage (about 2-3 minutes on 2 cores)::

    python benchmarks/bench_dask_scaling.py --out benchmarks/results/bench_dask_scaling.json
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _report import report

import structkernels as sk
from structkernels import gram
from structkernels.datasets import load_interactions
from structkernels.engine._blocks import block_tasks, guided_chunks, largest_first, task_evals
from structkernels.utils import atomic_memmap


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def pin(client, cores: list[int]) -> dict:
    """Pin worker ``i`` (every thread of its process) to ``cores[i % len(cores)]``."""
    pids = client.run(os.getpid)
    placed = {}
    for i, addr in enumerate(sorted(pids)):
        core = cores[i % len(cores)]
        pid = pids[addr]
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                os.sched_setaffinity(int(tid), {core})
            except OSError:  # a thread that ended meanwhile
                pass
        placed[addr] = core
    return placed


def _nothing(i: int) -> int:
    return i


def scheduler_cost(client, tasks: int = 200) -> dict:
    """CPU seconds of this process (scheduler and client) and wall seconds per empty task."""
    client.gather(client.map(_nothing, range(20), pure=False))  # warm
    c0, t0 = cpu_seconds(), time.perf_counter()
    client.gather(client.map(_nothing, range(tasks), pure=False))
    return {"cpu_per_task": (cpu_seconds() - c0) / tasks,
            "wall_per_task": (time.perf_counter() - t0) / tasks}


def write_bandwidth(folder: Path, n: int) -> float:
    """Bytes per second of writing an ``n x n`` float64 matrix file and flushing it to disk."""
    path = folder / "bandwidth.npy"
    t0 = time.perf_counter()
    with atomic_memmap(path, (n, n)) as mm:
        mm[:] = 1.0
    seconds = time.perf_counter() - t0
    path.unlink()
    return 8.0 * n * n / seconds


def rows_check(K, X, kern, rng) -> bool:
    """40 random rows against the kernel, bit for bit: the upper triangle as computed (cell
    ``[i, j]``, ``j >= i``, is ``k(x_i, x_j)``), the lower one an exact mirror."""
    n = len(X)
    rows = np.sort(rng.choice(n, size=min(n, 40), replace=False))
    got = np.asarray(K[rows])
    ref = sk.gram(kern, X[rows], X)
    upper = np.arange(n)[None, :] >= rows[:, None]
    return bool(np.array_equal(got[upper], ref[upper])
                and np.array_equal(got, np.asarray(K[:, rows]).T))


def block_bytes(task) -> int:
    r0, r1, c0, c1 = task
    cells = (r1 - r0) * (c1 - c0)
    return 8 * (cells if r0 == c0 else 2 * cells)


def simulate(n: int, workers: int, block_size: int, p: dict, bandwidth: float,
             speed: float = 1.0) -> dict:
    """Predicted seconds of the resumable dask Gram on ``workers`` workers (model in the
    docstring)."""
    tasks = largest_first(block_tasks(n, n, block_size, True), True)
    jobs = guided_chunks(tasks, workers, True)
    free = [0.0] * workers
    heapq.heapify(free)
    for k, job in enumerate(jobs):
        start = max(heapq.heappop(free), (k + 1) * p["s_sched"])
        work = sum(p["c_eval"] * task_evals(t, True) + p["c_write"] * block_bytes(t)
                   for t in job)
        heapq.heappush(free, start + p["o_job"] + work / speed)
    makespan = max(free)
    io = 8.0 * n * n / bandwidth
    return {"seconds": round(p["setup_per_structure"] * n + max(makespan, io) + p["tail"], 3),
            "makespan": round(makespan, 3), "disk_seconds": round(io, 3), "jobs": len(jobs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n1", type=int, default=4000, help="paths for one worker")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--predict", default="8,16,64", help="workers predicted by the model")
    ap.add_argument("--block-size", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lam", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folder", default=None, help="where the matrices go (default: temp)")
    ap.add_argument("--out", default=None, help="write the JSON here too")
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    la0 = load()
    worker_counts = [int(v) for v in args.workers.split(",")]
    cores = sorted(os.sched_getaffinity(0))
    data = load_interactions()
    pool = data.paths
    rng = np.random.default_rng(args.seed)
    kern = sk.kernel("path", lam=args.lam)
    tmp = Path(tempfile.mkdtemp(prefix="bench_dask_scaling_", dir=args.folder))
    runs: dict[int, dict] = {}
    try:
        for w in worker_counts:
            n = round(args.n1 * math.sqrt(w))
            X = pool[rng.choice(len(pool), size=n, replace=n > len(pool))]
            t0 = time.perf_counter()
            cluster = LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
            client = Client(cluster)
            client.wait_for_workers(w)
            start_s = time.perf_counter() - t0
            try:
                placed = pin(client, cores)
                gram(kern, X[:64], out=tmp / "warm.npy", backend="dask", client=client,
                     block_size=32, progress=False)
                burst = scheduler_cost(client) if w == 1 else None
                out = tmp / "K.npy"
                seconds, infos, sched_cpu = [], [], []
                la_w = load()
                for _ in range(args.repeats):
                    if out.exists():
                        out.unlink()
                    shutil.rmtree(f"{out}.parts", ignore_errors=True)
                    c0 = cpu_seconds()
                    t0 = time.perf_counter()
                    K, info = gram(kern, X, out=out, backend="dask", client=client,
                                   block_size=args.block_size, progress=False,
                                   return_info=True)
                    seconds.append(round(time.perf_counter() - t0, 4))
                    sched_cpu.append(cpu_seconds() - c0)
                    infos.append(info.run)
                    same = rows_check(K, X, kern, rng)
                    del K
                la_w_end = load()
            finally:
                client.close()
                cluster.close()
            med = statistics.median(seconds)
            i_med = seconds.index(min(seconds, key=lambda s: abs(s - med)))
            info = infos[i_med]
            runs[w] = {
                "n": n, "matrix_bytes": 8 * n * n, "evaluations": n * (n + 1) // 2,
                "evaluations_per_worker": round(n * (n + 1) / 2 / w),
                "blocks": info["blocks"], "seconds": seconds, "median_seconds": med,
                "cluster_start_seconds": round(start_s, 2),
                "pinned_to_cores": {a[-5:]: c for a, c in placed.items()},
                "oversubscribed": w > len(cores),
                "phases_of_median_run": info["phases"],
                "scheduler_process_cpu_seconds": round(sched_cpu[i_med], 3),
                "workers": {a[-5:]: {k: round(v, 3) for k, v in d.items()}
                            for a, d in info["workers"].items()},
                "rows_bit_identical": same,
                "empty_task_burst": ({k: float(f"{v:.4g}") for k, v in burst.items()}
                                     if burst else None),
                "load_average_before_after": [la_w, la_w_end],
            }
            print(f"{w} worker(s), N = {n}: {med:.3f} s", file=sys.stderr, flush=True)
        bandwidth = write_bandwidth(tmp, args.n1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    t1 = runs[min(runs)]["median_seconds"]
    for r in runs.values():
        r["efficiency"] = round(t1 / r["median_seconds"], 3)
    model: dict = {
        "formula": "t(w) = setup_per_structure * N_w + max(M_w, 8 N_w^2 / B_w) + tail; M_w = "
                   "list-scheduling makespan of the dask Gram's jobs over w workers, job duration "
                   "o_job + sum over its blocks of (c_eval * evaluations + c_write * bytes) / "
                   "speed, job k not started before (k + 1) * s_sched; speed = min(1, cores / w) "
                   "for the workers measured here, 1 beyond (a core per worker); B_w = B (one "
                   "shared disk) or B * w (storage bandwidth growing with the workers); "
                   "efficiency = model t(1) / model t(w)",
        "cores_here": len(cores),
    }
    if 1 in runs:
        # calibration from the median 1-worker run
        one = runs[1]
        [wk] = one["workers"].values()
        n1 = one["n"]
        ph = one["phases_of_median_run"]
        tasks1 = largest_first(block_tasks(n1, n1, args.block_size, True), True)
        jobs1 = len(guided_chunks(tasks1, 1, True))
        params = {
            "c_eval": wk["compute_seconds"] / wk["evaluations"],
            "c_write": wk["write_seconds"] / sum(block_bytes(t) for t in tasks1),
            "o_job": max(0.0, (ph["blocks"] - wk["busy_seconds"]) / jobs1),
            "s_sched": one["empty_task_burst"]["cpu_per_task"],
            "setup_per_structure": ph["setup"] / n1,
            "tail": ph["marks"] + ph["finish"],
            "B_bytes_per_second": bandwidth,
        }
        model["calibrated_on"] = (f"the median 1-worker run (N = {n1}) and a "
                                  f"{8 * args.n1 ** 2 / 1e6:.0f} MB file written and flushed")
        model["parameters"] = {k: float(f"{v:.4g}") for k, v in params.items()}
        t1_model = simulate(n1, 1, args.block_size, params, bandwidth)["seconds"]
        predicted: dict = {}
        for w in sorted(set(worker_counts) | {int(v) for v in args.predict.split(",")}):
            n = round(args.n1 * math.sqrt(w))
            speed = min(1.0, len(cores) / w) if w in runs else 1.0
            shared = simulate(n, w, args.block_size, params, bandwidth, speed)
            scaled = simulate(n, w, args.block_size, params, bandwidth * w, speed)
            predicted[w] = {
                "n": n,
                "measured_seconds": runs[w]["median_seconds"] if w in runs else None,
                "measured_efficiency": runs[w]["efficiency"] if w in runs else None,
                "one_shared_disk": shared | {
                    "efficiency": round(t1_model / shared["seconds"], 3)},
                "bandwidth_grows_with_workers": scaled | {
                    "efficiency": round(t1_model / scaled["seconds"], 3)},
            }
        model["predicted"] = predicted
    doc = {
        "benchmark": "bench_dask_scaling",
        "machine": {"cpus": os.cpu_count(), "cores_usable": cores,
                    "python": platform.python_version()},
        "setting": f"resumable dask gram of the path kernel lam={args.lam}, N_w = N1 sqrt(w) "
                   "Bio-AMR "
                   f"paths, block_size {args.block_size}, single-threaded worker processes "
                   "pinned one core each (workers beyond the cores share them)",
        "n1": args.n1, "repeats": args.repeats,
        "matrix_folder": str(args.folder or tempfile.gettempdir()),
        "runs": runs,
        "efficiency": {w: r["efficiency"] for w, r in runs.items()},
        "model": model,
        "load_average_before_after": [la0, load()],
    }
    report(doc, args.out)
    print("weak-scaling efficiency t(1)/t(w): "
          + ", ".join(f"{w}: {r['efficiency']}" + (" (oversubscribed)" if r["oversubscribed"]
                                                   else "") for w, r in runs.items()),
          file=sys.stderr)


if __name__ == "__main__":
    main()
