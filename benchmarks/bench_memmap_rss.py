"""Peak memory of a normalised Gram written to a memory-mapped ``.npy`` file, as a ratio.

``gram(kernel, X, out="K.npy", normalize=True)`` of N Bio-AMR paths (path kernel,
lam 0.8; N = 9,000 by default: a 648 MB float64 matrix) runs in a fresh
subprocess.  The subprocess imports structkernels, loads the data, picks the
N paths and computes their normalised Gram in memory (the warm-up: every
compiled function the data need, and the reference for the bit check, kept);
then it resets its peak-RSS counter (``/proc/self/clear_refs``, value 5, where
the kernel allows it), reads its baseline RSS (``VmRSS``), computes the Gram
into the file and reads its peak.  Printed ratio::

    (peak RSS - baseline RSS) / (8 N^2 bytes)

(aim from issue 25: <= 0.25; a matrix kept mapped while it is normalised
costs 1.0).  The peak is the high-water mark ``VmHWM`` (reset with the
counter) and ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` beside it: the
latter also keeps the high-water mark recorded when a thread exits, so a
thread of the warm-up that ended before the reset can hold it above the
baseline (``ru_maxrss_floor_kb``, read just after the reset, shows it; the
ratio from ``ru_maxrss`` is then an upper bound).  The subprocess then checks
the file against the in-memory normalised Gram, bit for bit.  The JSON holds
the sizes, seconds, both ratios, whether the counter could be reset, and the
load average (``os.getloadavg()``) before and after.

Usage (about 1-2 minutes on 2 cores)::

    python benchmarks/bench_memmap_rss.py --out benchmarks/results/bench_memmap_rss.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import report


def _status_kb(field: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``); -1 where absent."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def _reset_peak() -> bool:
    """Reset this process's peak RSS to its current RSS (Linux ``clear_refs``, value 5)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def child(args: argparse.Namespace) -> dict:
    """The measured process: data, warm-up, baseline, the Gram into a file, peak, bit check."""
    import gc

    import numpy as np

    import structkernels as sk
    from structkernels.datasets import load_interactions

    t0 = time.perf_counter()
    data = load_interactions()
    train = data.split("train")
    perm = np.random.default_rng(args.seed).permutation(len(train))
    X = train.paths[perm[: args.n]]
    del data, train
    load_s = time.perf_counter() - t0
    kern = sk.kernel("path", lam=args.lam)
    folder = Path(args.folder)
    # warm-up and reference: compiled code (from numba's cache, or compiled now), threads
    t0 = time.perf_counter()
    ref = sk.gram(kern, X, normalize=True, n_jobs=args.n_jobs, block_size=args.block_size,
                  progress=False)
    in_memory_s = time.perf_counter() - t0
    sk.gram(kern, X[:300], out=folder / "warm.npy", normalize=True, n_jobs=args.n_jobs,
            block_size=args.block_size, progress=False)
    os.unlink(folder / "warm.npy")
    gc.collect()
    reset = _reset_peak()
    base_rss_kb = _status_kb("VmRSS")
    floor_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    K = sk.gram(kern, X, out=folder / "K.npy", normalize=True, n_jobs=args.n_jobs,
                block_size=args.block_size, progress=False)
    seconds = time.perf_counter() - t0
    maxrss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    hwm_kb = _status_kb("VmHWM")
    del K
    F = np.load(folder / "K.npy", mmap_mode="r")
    same = all(np.array_equal(F[r:r + 1024], ref[r:r + 1024]) for r in range(0, len(X), 1024))
    return {
        "n": len(X), "load_seconds": round(load_s, 2), "gram_seconds": round(seconds, 3),
        "in_memory_gram_seconds": round(in_memory_s, 3),
        "peak_reset": reset, "baseline_rss_kb": base_rss_kb, "vm_hwm_kb": hwm_kb,
        "ru_maxrss_kb": maxrss_kb, "ru_maxrss_floor_kb": floor_kb,
        "bit_identical_to_in_memory": bool(same),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=9000, help="paths (default 9,000: a 648 MB matrix)")
    ap.add_argument("--lam", type=float, default=0.8)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--block-size", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the JSON here too")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.stdout.write(json.dumps(child(args)) + "\n")
        return
    la0 = [round(v, 2) for v in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="bench_memmap_rss_") as folder:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--folder", folder,
               "--n", str(args.n), "--lam", str(args.lam), "--n-jobs", str(args.n_jobs),
               "--seed", str(args.seed)]
        if args.block_size:
            cmd += ["--block-size", str(args.block_size)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            sys.stderr.write(r.stderr[-4000:])
            raise SystemExit(f"the measured subprocess failed ({r.returncode})")
        res = json.loads(r.stdout.strip().splitlines()[-1])
    matrix = 8 * args.n * args.n
    base = res["baseline_rss_kb"]
    above = max(0, res["vm_hwm_kb"] - base) * 1024
    above_ru = max(0, res["ru_maxrss_kb"] - base) * 1024
    doc = {
        "benchmark": "bench_memmap_rss",
        "what": "gram(path kernel, N Bio-AMR paths, out=<.npy>, normalize=True, n_jobs): "
                "peak RSS above the baseline (after imports, data load and warm-up), "
                "over the matrix bytes",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "n": args.n, "n_jobs": args.n_jobs, "block_size": args.block_size,
        "matrix_bytes": matrix,
        "peak_above_baseline_bytes": above,
        "ratio_peak_above_baseline_to_matrix": round(above / matrix, 4),
        "ratio_from_ru_maxrss": round(above_ru / matrix, 4),
        "ru_maxrss_is_upper_bound": res["ru_maxrss_floor_kb"] > base,
        "peak_counter": "VmHWM after /proc/self/clear_refs (5)" if res["peak_reset"]
                        else "not reset: ru_maxrss and VmHWM since the process started",
        "aim": "<= 0.25",
        "seconds": {"gram_to_file": res["gram_seconds"],
                    "gram_in_memory_warm_up": res["in_memory_gram_seconds"],
                    "data_load": res["load_seconds"]},
        "child": res,
        "load_average_before_after": [la0, [round(v, 2) for v in os.getloadavg()]],
    }
    report(doc, args.out)
    print(f"peak RSS above baseline / matrix = {doc['ratio_peak_above_baseline_to_matrix']}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
