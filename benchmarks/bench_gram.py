"""Gram engine benchmark: parallel speed-up, engine overhead, and the BLAS vector path.

Prints one JSON object:

- ``python_kernel``: a pure-Python pair kernel (about 50 µs a call) on N structures:
  a bare double loop over the upper triangle (baseline), the engine with
  n_jobs=1 and with n_jobs=2; ``overhead`` = engine(1) / bare - 1 (aim <= 0.10),
  ``speedup`` = engine(1) / engine(2) (aim >= 1.8 on 2 cores).
  Bare loop and engine are timed in ABBA order (bare, engine, engine, bare) and
  summed, because timings drift by ~10% over minutes on a shared machine;
  the speed-up compares the n_jobs=2 run with the engine run just before it.
- ``rbf``: ``gram("rbf")`` on an n x d array vs scikit-learn's ``rbf_kernel`` with
  gamma = 1 / (2 sigma^2) (aim ratio <= 1.2).

Usage: ``python benchmarks/bench_gram.py [--n 2000] [--rbf-n 20000] [--dim 50]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel

import structkernels as sk
from structkernels import Kernel


class PurePythonKernel(Kernel):
    """A deliberately slow pure-Python kernel: sum_i min(x_i, y_i) (histogram intersection)."""

    def pair(self, x, y) -> float:
        s = 0.0
        for a, b in zip(x, y, strict=True):
            s += a if a < b else b
        return s


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bare_loop(k: Kernel, X) -> np.ndarray:
    n = len(X)
    K = np.empty((n, n))
    pair = k.pair
    for i in range(n):
        xi = X[i]
        for j in range(i, n):
            K[i, j] = K[j, i] = pair(xi, X[j])
    return K


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="structures for the pure-Python kernel")
    ap.add_argument("--length", type=int, default=1100, help="vector length (sets ~µs per call)")
    ap.add_argument("--rbf-n", type=int, default=20000)
    ap.add_argument("--dim", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the rbf timing (best kept)")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    k = PurePythonKernel()
    X = [tuple(rng.random(args.length).tolist()) for _ in range(args.n)]
    # per-call cost
    reps = 2000
    t0 = time.perf_counter()
    for i in range(reps):
        k.pair(X[i % args.n], X[(i * 7) % args.n])
    us_per_call = (time.perf_counter() - t0) / reps * 1e6

    # Timings drift on a shared machine (a run of two minutes can be 10% slower than the
    # one before it), so the baseline and the engine are timed in ABBA order and summed.
    K_bare, b1 = timed(lambda: bare_loop(k, X))
    (K1, info1), e1 = timed(lambda: sk.gram(k, X, n_jobs=1, return_info=True, progress=False))
    _, e2 = timed(lambda: sk.gram(k, X, n_jobs=1, progress=False))
    _, b2 = timed(lambda: bare_loop(k, X))
    t_bare, t1 = b1 + b2, e1 + e2
    (K2, info2), t2 = timed(lambda: sk.gram(k, X, n_jobs=2, return_info=True, progress=False))
    assert np.max(np.abs(K1 - K_bare)) == 0 and np.max(np.abs(K2 - K1)) <= 1e-12

    Z = rng.normal(size=(args.rbf_n, args.dim))
    sigma = float(np.sqrt(args.dim))
    t_sk, t_sk_ = [], []
    for _ in range(args.repeats):
        R, t = timed(lambda: rbf_kernel(Z, gamma=1.0 / (2 * sigma**2)))
        del R
        t_sk.append(t)
        (G, info_r), t = timed(
            lambda: sk.gram("rbf", Z, sigma=sigma, return_info=True, progress=False)
        )
        t_sk_.append(t)
        if _ == 0:
            R = rbf_kernel(Z[:500], Z, gamma=1.0 / (2 * sigma**2))
            max_err = float(np.max(np.abs(G[:500] - R)))
            del R
        del G

    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "python_kernel": {
            "n": args.n,
            "us_per_call": round(us_per_call, 2),
            "evaluations": info1.n_evaluations,
            "timing_order": "bare, engine, engine, bare (ABBA)",
            "bare_loop_s": [round(b1, 3), round(b2, 3)],
            "engine_n_jobs_1_s": [round(e1, 3), round(e2, 3)],
            "engine_n_jobs_2_s": round(t2, 3),
            "overhead_vs_bare_loop": round(t1 / t_bare - 1.0, 4),
            "speedup_n_jobs_2": round(e2 / t2, 3),
            "evaluations_per_s_n_jobs_2": round(info2.n_evaluations / t2, 1),
        },
        "rbf": {
            "n": args.rbf_n,
            "dim": args.dim,
            "evaluations": info_r.n_evaluations,
            "sklearn_rbf_kernel_s": round(min(t_sk), 3),
            "structkernels_gram_s": round(min(t_sk_), 3),
            "ratio_to_sklearn": round(min(t_sk_) / min(t_sk), 3),
            "max_abs_difference": max_err,
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
