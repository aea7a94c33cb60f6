"""Cost of checking what a kernel returns: ``gram(validate=...)`` on plugin and user kernels.

Prints JSON.  A kernel not shipped with structkernels gets, by default, a
symmetry / positive-semi-definiteness probe on a seeded sample of up to 64
structures, and every value it returns is checked to be finite.  This script
times ``gram(k, X, validate="auto")`` (the default: probe and finite checks)
against ``gram(k, X, validate=False)`` (finite checks only) in the same run, in
alternating order (A B B A ...), for

- the example plugin's ``bag-of-labels`` kernel (a batched sparse product, so
  the cheapest kernel there is and the worst case for the probe's share);
- a user kernel written with ``pair`` only (one Python call per pair, the
  common case for a researcher's own kernel).

Both on paths of the shipped interaction dataset.  The ratio is the median
seconds with the probe over the median without it (1.0 = free).  The load
average is recorded beside every timing.

Usage::

    python benchmarks/bench_validation.py [--n 500] [--n-pair 200] [--rounds 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
from _report import report

import structkernels as sk
from structkernels import Kernel
from structkernels.datasets import load_interactions


class PairOnlyOverlap(Kernel):
    """A user kernel as a researcher writes one: distinct (edge, node) steps shared, pair by pair."""

    def pair(self, x, y):
        return float(len({tuple(s) for s in x} & {tuple(s) for s in y}))


def _time(k, X, validate, rounds):
    out = []
    loads = []
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        t0 = time.perf_counter()
        sk.gram(k, X, validate=validate, n_jobs=1, progress=False)
        out.append(time.perf_counter() - t0)
    return out, loads


def measure(name, k, X, rounds):
    sk.gram(k, X[:20], validate="auto", n_jobs=1, progress=False)  # warm-up
    on, off, loads = [], [], []
    for r in range(rounds):
        order = (("auto", on), (False, off)) if r % 2 == 0 else ((False, off), ("auto", on))
        for validate, bucket in order:
            t, ld = _time(k, X, validate, 1)
            bucket.extend(t)
            loads.extend(ld)
    return {
        "kernel": name,
        "n": len(X),
        "evaluations": len(X) * (len(X) + 1) // 2,
        "seconds_validate_auto": [round(t, 4) for t in on],
        "seconds_validate_false": [round(t, 4) for t in off],
        "median_auto": round(statistics.median(on), 4),
        "median_false": round(statistics.median(off), 4),
        "ratio_auto_over_false": round(statistics.median(on) / statistics.median(off), 3),
        "load_average": [round(min(loads), 2), round(max(loads), 2)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500, help="paths for the bag-of-labels Gram")
    ap.add_argument("--n-pair", type=int, default=200, help="paths for the pair-only kernel")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    data = load_interactions()
    rng = np.random.default_rng(0)
    idx = rng.choice(len(data.paths), size=max(args.n, args.n_pair), replace=False)
    paths = [data.paths[int(i)] for i in idx]
    rows = [
        measure("bag-of-labels (example plugin)", sk.kernel("bag-of-labels"),
                paths[: args.n], args.rounds),
        measure("PairOnlyOverlap (user subclass, pair only)", PairOnlyOverlap(),
                paths[: args.n_pair], args.rounds),
    ]
    doc = {
        "what": "gram(validate='auto') over gram(validate=False), same run, alternating order",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "results": rows,
    }
    report(doc, args.out, indent=1)


if __name__ == "__main__":
    main()
