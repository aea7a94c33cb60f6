"""A structkernels vector kernel as a scikit-learn callable, against scikit-learn's own kernel.

Prints JSON.  ``KernelRidge(kernel=sk.kernel("rbf")).fit`` (scikit-learn's
``pairwise_kernels`` calls a structkernels kernel once with the whole arrays); the same fit
with ``kernel="rbf"`` (scikit-learn's vectorised kernel), with ``kernel="precomputed"`` on
``sk.gram`` and with a plain Python function (called once per pair of rows: the floor of
any such callable) are the baselines, in the same run, on the same data.  Median of ``--rounds`` fits each, alternating order; the
load average is recorded.

Usage::

    python benchmarks/bench_sklearn_callable.py [--n 120] [--d 5] [--rounds 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from _report import report
from sklearn.kernel_ridge import KernelRidge

import structkernels as sk


def _plain_rbf(a: np.ndarray, b: np.ndarray) -> float:
    d = a - b
    return float(np.exp(-0.5 * (d @ d)))


def _fits(n: int, d: int, rounds: int) -> dict:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = X[:, 0] + 0.1 * rng.normal(size=n)
    k = sk.kernel("rbf", sigma=1.0)
    ways = {
        "structkernels callable": lambda: KernelRidge(kernel=k).fit(X, y),
        "scikit-learn 'rbf'": lambda: KernelRidge(kernel="rbf", gamma=0.5).fit(X, y),
        "precomputed sk.gram": lambda: KernelRidge(kernel="precomputed").fit(sk.gram(k, X), y),
        # the floor of any callable scikit-learn calls once per pair of rows
        "plain Python callable": lambda: KernelRidge(kernel=_plain_rbf).fit(X, y),
    }
    for f in ways.values():
        f()  # warm-up
    times: dict[str, list[float]] = {w: [] for w in ways}
    loads = []
    for r in range(rounds):
        order = list(ways) if r % 2 == 0 else list(reversed(ways))
        for w in order:
            loads.append(os.getloadavg()[0])
            t0 = time.perf_counter()
            ways[w]()
            times[w].append(time.perf_counter() - t0)
    med = {w: statistics.median(t) for w, t in times.items()}
    return {
        "n": n, "d": d, "pair_calls": n * (n + 1) // 2,
        "median_seconds": {w: round(v, 5) for w, v in med.items()},
        "ratio_callable_over_sklearn": round(med["structkernels callable"]
                                             / med["scikit-learn 'rbf'"], 1),
        "ratio_callable_over_precomputed": round(med["structkernels callable"]
                                                 / med["precomputed sk.gram"], 1),
        "ratio_plain_callable_over_sklearn": round(med["plain Python callable"]
                                                   / med["scikit-learn 'rbf'"], 1),
        "load_average": [round(min(loads), 2), round(max(loads), 2)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=120)
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    doc = {"what": "KernelRidge fit, rbf kernel three ways, same run",
           "cpus": os.cpu_count(), "results": [_fits(args.n, args.d, args.rounds)]}
    report(doc, args.out, indent=1)


if __name__ == "__main__":
    main()
