"""Speed of PHSIC and HSIC (structkernels-hsic); prints one JSON document.

Sections
--------
phsic_feature
    Feature-space PHSIC (cosine, Eq. 18-21): fit + scoring of all training pairs
    at n = 1e4, 1e5, 5e5 with d = 300 (float64 and float32).  Baseline measured
    in the same run: the naive data-space estimator (Eq. 27) at n = 1e4.  For
    reference, the paper reports 2.8 s at n = 5e5 on 6 cores (Table 4) and the
    authors' code 9 s + 18 s (fit + score).
phsic_icd_rbf
    RBF PHSIC via incomplete Cholesky, rank 100 per side, n = 1e5, d = 300
    (authors: 29 s), fit + scoring of all training pairs.
hsic_vs_hyppo
    Exact biased HSIC and ICD (rank 100) against ``hyppo.independence.Hsic``'s
    statistic at n = 1k, 2k, 5k, 20k (hyppo is a benchmark-only dependency;
    marked absent when not installed, skipped where its n x n matrices would
    not fit in memory).  Both use the RBF kernel with the median-heuristic
    bandwidth of x for both sides, as hyppo does.  hyppo reports the
    normalised unbiased statistic HSIC_u(K, L) / sqrt(HSIC_u(K, K) HSIC_u(L, L));
    ``value_check`` recomputes it from our Grams.

Wall seconds are reported beside CPU seconds (all threads of the process):
on a machine shared with other work the wall time grows with the load
(``machine.loadavg_*``) while the CPU time stays close to what an idle machine
would show.

Usage: ``python benchmarks/bench_hsic.py [--quick] > benchmarks/results/hsic_bench.json``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time

import numpy as np
from structkernels_hsic import HSIC, PHSIC, median_heuristic
from structkernels_hsic.hsic import hsic_unbiased

import structkernels as sk


def _available_gb() -> float:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return float("nan")


_CPU: list[float] = []


def _timed(f):
    """Run ``f``; return its result and wall seconds (CPU seconds go to ``_CPU``)."""
    c = time.process_time()
    t = time.perf_counter()
    out = f()
    wall = time.perf_counter() - t
    _CPU.append(time.process_time() - c)
    return out, wall


def _cpu(k: int = 1) -> float:
    """CPU seconds (all threads) of the last ``k`` timed calls."""
    return round(sum(_CPU[-k:]), 4)


def _pairs(n: int, d: int, seed: int, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d), dtype=np.float32).astype(dtype, copy=False)
    W = rng.standard_normal((d, d), dtype=np.float32).astype(dtype) / np.sqrt(d)
    Y = X @ W
    Y += rng.standard_normal((n, d), dtype=np.float32).astype(dtype, copy=False)
    return X, Y


def bench_phsic_feature(sizes, d=300) -> dict:
    rows = []
    for n in sizes:
        for dtype in (np.float64, np.float32):
            X, Y = _pairs(n, d, 0, dtype)
            model = PHSIC("cosine", "cosine", dtype=dtype)
            _, t_fit = _timed(lambda model=model, X=X, Y=Y: model.fit(X, Y))
            scores, t_score = _timed(lambda model=model, X=X, Y=Y: model.score(X, Y))
            rows.append({
                "n": n, "d": d, "dtype": np.dtype(dtype).name, "fit_s": round(t_fit, 4),
                "score_all_training_pairs_s": round(t_score, 4), "total_s": round(t_fit + t_score, 4),
                "total_cpu_s": _cpu(2), "mean_phsic": float(scores.mean()), "kernel_evaluations": 0,
            })
            print(f"phsic feature n={n} {np.dtype(dtype).name}: {t_fit:.2f} + {t_score:.2f} s", file=sys.stderr)
            del X, Y, model, scores
            gc.collect()
    n0 = min(sizes)
    X, Y = _pairs(n0, d, 0)
    naive = PHSIC("cosine", "cosine", estimator="naive")
    _, t_fit = _timed(lambda: naive.fit(X, Y))
    s_naive, t_score = _timed(lambda: naive.score(X, Y))
    naive_cpu = _cpu(2)
    feat = PHSIC("cosine", "cosine").fit(X, Y)
    ours = next(r for r in rows if r["n"] == n0 and r["dtype"] == "float64")
    return {
        "rows": rows,
        "baseline": {
            "what": "naive data-space PHSIC (Eq. 27), same data, same run", "n": n0,
            "fit_s": round(t_fit, 4), "score_all_training_pairs_s": round(t_score, 4),
            "total_s": round(t_fit + t_score, 4), "total_cpu_s": naive_cpu,
            "kernel_evaluations": int(naive.n_kernel_evaluations_),
            "speedup_of_feature_estimator": round((t_fit + t_score) / ours["total_s"], 1),
            "max_abs_diff_vs_feature": float(np.abs(s_naive - feat.score(X, Y)).max()),
        },
        "paper": {"n": 500_000, "table4_learning_s_6_cores": 2.8, "authors_code_fit_s": 9, "authors_code_score_s": 18},
        "aim_total_s_at_5e5": 1.5,
    }


def bench_phsic_icd(n=100_000, d=300, rank=100) -> dict:
    X, Y = _pairs(n, d, 1)
    sx, sy = median_heuristic(X), median_heuristic(Y)
    model = PHSIC(sk.kernel("rbf", sigma=sx), sk.kernel("rbf", sigma=sy), estimator="icd", rank=rank, n_jobs=2)
    _, t_fit = _timed(lambda: model.fit(X, Y))
    scores, t_score = _timed(model.score_training)
    cpu = _cpu(2)
    one = PHSIC(sk.kernel("rbf", sigma=sx), sk.kernel("rbf", sigma=sy), estimator="icd", rank=rank)
    _, t_fit1 = _timed(lambda: one.fit(X, Y))
    out = {
        "n": n, "d": d, "rank": rank, "sigma_x": sx, "sigma_y": sy,
        "fit_s_two_threads": round(t_fit, 3), "fit_s_one_thread": round(t_fit1, 3),
        "score_all_training_pairs_s": round(t_score, 3), "total_s": round(t_fit + t_score, 3),
        "total_cpu_s": cpu, "kernel_evaluations": int(model.n_kernel_evaluations_),
        "kernel_evaluations_needed": int(2 * (n + rank * n)),
        "mean_phsic": float(scores.mean()), "authors_s": 29, "aim_s": 3,
    }
    print(f"phsic icd n={n}: fit {t_fit:.2f} s, score {t_score:.2f} s", file=sys.stderr)
    return out


def bench_hsic(sizes, rank=100, d=2) -> dict:
    try:
        from hyppo.independence import Hsic
    except ImportError:
        Hsic = None
    if Hsic is not None:  # compile hyppo's numba functions outside the timings
        w = np.random.default_rng(0).normal(size=(50, d))
        Hsic(gamma=0.5).statistic(w, w**2)
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        x = rng.normal(size=(n, d))
        y = np.sin(2 * x) + 0.5 * rng.normal(size=(n, d))
        sigma = median_heuristic(x)  # hyppo: gamma = 1 / (2 med^2) from x, for both sides
        k = sk.kernel("rbf", sigma=sigma)
        exact, t_exact = _timed(lambda k=k, x=x, y=y: HSIC(k, k).fit(x, y))
        exact_cpu = _cpu()
        icd, t_icd = _timed(lambda k=k, x=x, y=y: HSIC(k, k, estimator="icd", rank=rank).fit(x, y))
        icd_cpu = _cpu()
        row = {
            "n": n, "d": d, "sigma": sigma,
            "exact_s": round(t_exact, 4), "exact_cpu_s": exact_cpu, "exact_statistic": exact.statistic_,
            "exact_kernel_evaluations": exact.n_kernel_evaluations_,
            "icd_s": round(t_icd, 4), "icd_cpu_s": icd_cpu, "icd_statistic": icd.statistic_,
            "icd_kernel_evaluations": icd.n_kernel_evaluations_,
            "icd_relative_error": abs(icd.statistic_ - exact.statistic_) / exact.statistic_,
        }
        need_gb = 7 * n * n * 8 / 1024**3  # hyppo keeps about seven n x n float64 matrices
        if Hsic is None:
            row["hyppo"] = "absent"
        elif need_gb > 0.5 * _available_gb():
            row["hyppo"] = f"skipped: needs about {need_gb:.0f} GB of memory"
        else:
            gamma = 1.0 / (2 * sigma**2)
            stat, t_h = _timed(lambda x=x, y=y, gamma=gamma: Hsic(gamma=gamma).statistic(x, y))
            row.update({
                "hyppo_s": round(t_h, 4), "hyppo_cpu_s": _cpu(), "hyppo_statistic": float(stat),
                "exact_speedup_vs_hyppo": round(t_h / t_exact, 1),
                "icd_speedup_vs_hyppo": round(t_h / t_icd, 1),
            })
            if n <= 5000:
                K, L = sk.gram(k, x), sk.gram(k, y)
                ours = hsic_unbiased(K, L) / np.sqrt(hsic_unbiased(K, K) * hsic_unbiased(L, L))
                row["value_check"] = {"ours_normalised_unbiased": float(ours),
                                      "abs_diff_vs_hyppo": abs(float(ours) - float(stat))}
                del K, L
        rows.append(row)
        print(f"hsic n={n}: exact {t_exact:.3f} s, icd {t_icd:.3f} s, hyppo {row.get('hyppo_s', row.get('hyppo'))}",
              file=sys.stderr)
        gc.collect()
    return {"rows": rows, "aims_at_5000": {"exact_speedup": 5, "icd_speedup": 100, "icd_relative_error": 0.01}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--only", choices=["phsic_feature", "phsic_icd_rbf", "hsic_vs_hyppo"], action="append")
    args = ap.parse_args()
    only = set(args.only or ["phsic_feature", "phsic_icd_rbf", "hsic_vs_hyppo"])
    out = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "numpy": np.__version__, "loadavg_at_start": os.getloadavg()},
    }
    if "phsic_feature" in only:
        out["phsic_feature"] = bench_phsic_feature([2000, 10000] if args.quick else [10_000, 100_000, 500_000])
    if "phsic_icd_rbf" in only:
        out["phsic_icd_rbf"] = bench_phsic_icd(n=5000 if args.quick else 100_000)
    if "hsic_vs_hyppo" in only:
        out["hsic_vs_hyppo"] = bench_hsic([500, 1000] if args.quick else [1000, 2000, 5000, 20000])
    try:
        import hyppo

        out["hyppo_version"] = hyppo.__version__
    except ImportError:
        out["hyppo_version"] = None
    out["machine"]["loadavg_at_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
