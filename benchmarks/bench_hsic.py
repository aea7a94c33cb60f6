"""Speed and accuracy of HSIC and PHSIC (structkernels-hsic) against their anchors, in one run.

Every comparison is timed in ABBA order (ours, anchor, anchor, ours; each
figure is the mean of its two runs), with the load average beside it, and
printed as a ratio measured in that same run.  Sections:

phsic_feature
    Feature-space PHSIC (cosine, Eq. 18-21), fit + scoring of all training pairs,
    n x d = 1e5 x 300: ours in float64 vs the authors' algorithm (below), and ours
    in float32 (float32 input, ``dtype=np.float32``) vs ours in float64, with the
    largest score difference relative to the largest score.
phsic_icd_rbf
    RBF PHSIC by incomplete Cholesky, rank 100 per side (``max_rank=100, tol=0``,
    the paper's setting), fit at n = 1e5, d = 300, vs the authors' ICD; kernel
    evaluations (n + rank n per side for a column-by-column decomposition; fewer at a
    fixed rank, where a pivot's row needs none after its column) and the largest factor difference;
    then ours with ``n_jobs=2`` (the two sides in two threads) vs ours with the default
    ``n_jobs=1``, ABBA again.
hsic_vs_hyppo
    d = 10 Gaussian x, y = sin(x) + noise, RBF with the median-heuristic sigma of x
    on both sides (hyppo's convention): ours exact biased / unbiased vs
    ``hyppo.independence.Hsic().statistic`` (n = 1,000-5,000), and ICD at the
    default tolerance: rank reached, relative error against the exact statistic,
    error bound, kernel evaluations.
exact_tiles
    Exact biased HSIC at n = 8,000: the default symmetric tiles vs the whole Grams
    from the Gram engine (``hsic_biased(gram(k, x), gram(k, y))``).
amr_paths
    The shipped Bio-AMR interaction paths (seeded subset, default 2,000) with the
    cosine-normalised path kernel (lam = 0.8) against one-hot labels: exact tiled
    HSIC, ICD at the default tolerance and at fixed ranks, and Nyström with
    uniform and ridge-leverage landmarks, each with its relative error and kernel
    evaluations; ``first_to_1e-2`` names the cheapest (in evaluations) to reach a
    relative error of 1e-2.

The authors' algorithm.  Yokoi et al. (2018) published PHSIC at
https://github.com/cl-tohoku/phsic (``phsic/phsic.py``, ``phsic/kernel.py``).
:func:`authors_feature` and :func:`authors_icd` re-implement what that code does,
step for step, so that its cost is measured here (it is not copied and not a
dependency): the feature estimator forms ``X^T Y / n - x_bar y_bar^T`` and scores
``sum((X - x_bar) C * (Y - y_bar), axis=1)``; the ICD computes the diagonal with
one Python kernel call per point, and for each pivot removes it from a Python
list of remaining indices, evaluates the column with scikit-learn's ``rbf_kernel``
(their ``k_batch`` for a Gaussian of fixed sigma) and updates the remaining rows
through that list.

Usage::

    python benchmarks/bench_hsic.py                 # full sizes (a few minutes)
    python benchmarks/bench_hsic.py --quick         # small sizes (a smoke run)

Writes ``benchmarks/results/hsic_bench.{json,md}`` and prints the JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel
from structkernels_hsic import HSIC, PHSIC, median_heuristic
from structkernels_hsic.hsic import hsic_biased

import structkernels as sk
from structkernels.utils import atomic_open

ROOT = Path(__file__).resolve().parents[1]


def load() -> float:
    return round(os.getloadavg()[0], 2)


def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def abba(ours, anchor):
    """Run ``ours, anchor, anchor, ours``; mean seconds of each, the load averages, last results."""
    ta, tb, loads = [], [], []
    ra = rb = None
    for which in "ABBA":
        gc.collect()
        loads.append(load())
        if which == "A":
            ra, t = timed(ours)
            ta.append(t)
        else:
            rb, t = timed(anchor)
            tb.append(t)
    return ra, rb, float(np.mean(ta)), float(np.mean(tb)), loads


# ------------------------------------------------------------------ authors' algorithm


def authors_feature(X, Y):
    """Feature-space PHSIC as the authors' ``PHSIC.fit_XY`` + ``predict_batch_training_data``."""
    n = len(X)
    x_mean = np.sum(X, axis=0) / n
    y_mean = np.sum(Y, axis=0) / n
    C = np.dot(X.T, Y) / n - np.outer(x_mean, y_mean)
    return np.sum((X - x_mean) @ C * (Y - y_mean), axis=-1)


def authors_icd(X, sigma: float, d: int):
    """The authors' ``icd_kernel`` with a Gaussian kernel of fixed sigma (their k and k_batch)."""
    n = len(X)
    gamma = 1.0 / (2.0 * sigma**2)

    def k(v1, v2):  # their per-pair Gaussian
        if np.array_equal(v1, v2):
            return 1.0
        return float(np.exp(-np.sum((v1 / sigma - v2 / sigma) ** 2) / 2))

    A = np.zeros((n, d))
    diag = np.array([k(x, x) for x in X])
    remain = list(range(n))
    pivots = []
    for i in range(d):
        p = int(np.argmax(diag))
        pivots.append(p)
        remain.remove(p)
        A[p, i] = np.sqrt(diag[p])
        col = rbf_kernel(X, X[p].reshape(1, -1), gamma=gamma).reshape(n)
        A[remain, i] = ((col - A[:, 0:i] @ A[p, 0:i]) / A[p, i])[remain]
        diag[remain] -= A[remain, i] ** 2
        diag[p] = 0.0
    return A, pivots


# ------------------------------------------------------------------ sections


def pairs(n: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d), dtype=np.float32)
    W = rng.standard_normal((d, d), dtype=np.float32) / np.float32(np.sqrt(d))
    Y = X @ W + rng.standard_normal((n, d), dtype=np.float32)
    return X, Y


def bench_phsic_feature(n: int, d: int = 300) -> dict:
    X32, Y32 = pairs(n, d, 0)
    X, Y = X32.astype(np.float64), Y32.astype(np.float64)

    def ours64():
        return PHSIC("cosine", "cosine").fit(X, Y).score(X, Y)

    def ours32():
        return PHSIC("cosine", "cosine", dtype=np.float32).fit(X32, Y32).score(X32, Y32)

    def authors():
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)  # the cosine kernel's feature map
        Yn = Y / np.linalg.norm(Y, axis=1, keepdims=True)
        return authors_feature(Xn, Yn)

    s64, sa, t64, ta, l1 = abba(ours64, authors)
    s32, s64b, t32, t64b, l2 = abba(ours32, ours64)
    scale = float(np.abs(s64).max())
    return {
        "n": n, "d": d,
        "ours_float64_s": round(t64, 3), "authors_float64_s": round(ta, 3),
        "authors_over_ours": round(ta / t64, 2),
        "max_abs_diff_vs_authors_relative": float(np.abs(s64 - sa).max() / scale),
        "ours_float32_s": round(t32, 3), "ours_float64_again_s": round(t64b, 3),
        "float64_over_float32": round(t64b / t32, 2),
        "float32_max_abs_diff_relative": float(np.abs(s32 - s64b).max() / scale),
        "loadavg": l1 + l2,
    }


def bench_phsic_icd(n: int, d: int = 300, rank: int = 100) -> dict:
    X32, Y32 = pairs(n, d, 1)
    X, Y = X32.astype(np.float64), Y32.astype(np.float64)
    sx, sy = median_heuristic(X), median_heuristic(Y)
    kx, ky = sk.kernel("rbf", sigma=sx), sk.kernel("rbf", sigma=sy)
    model = PHSIC(kx, ky, estimator="icd", max_rank=rank, tol=0)

    def ours():
        return model.fit(X, Y)

    def authors():
        return authors_icd(X, sx, rank), authors_icd(Y, sy, rank)

    # load the compiled steps (serial and parallel) from numba's cache and start its threads
    # outside the timings (as hyppo's are compiled)
    PHSIC(kx, ky, estimator="icd", max_rank=rank, tol=0).fit(X[:8_000], Y[:8_000])

    m, ((Aa, pa), (Ba, pb)), t_ours, t_auth, loads = abba(ours, authors)
    two = PHSIC(kx, ky, estimator="icd", max_rank=rank, tol=0, n_jobs=2)
    m2, _, t_two, t_one, loads2 = abba(lambda: two.fit(X, Y), ours)
    return {
        "n": n, "d": d, "rank": rank, "sigma_x": sx, "sigma_y": sy,
        "ours_fit_s": round(t_ours, 3), "authors_fit_s": round(t_auth, 3),
        "authors_over_ours": round(t_auth / t_ours, 2),
        "kernel_evaluations": int(m.n_kernel_evaluations_),
        "kernel_evaluations_minimum": int(2 * (n + rank * n)),
        "same_pivots": bool(list(m.icd_x_.pivots_) == pa and list(m.icd_y_.pivots_) == pb),
        "max_abs_factor_diff": float(max(np.abs(m.icd_x_.factor_ - Aa).max(), np.abs(m.icd_y_.factor_ - Ba).max())),
        "residual": [float(r) for r in m.residual_],
        "loadavg": loads,
        "ours_n_jobs2_fit_s": round(t_two, 3), "ours_n_jobs1_again_s": round(t_one, 3),
        "n_jobs1_over_n_jobs2": round(t_one / t_two, 2), "authors_over_ours_n_jobs2": round(t_auth / t_two, 2),
        "n_jobs2_same_pivots": bool(list(m2.icd_x_.pivots_) == pa and list(m2.icd_y_.pivots_) == pb),
        "loadavg_n_jobs": loads2,
    }


def gaussian(n: int, d: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return x, np.sin(x) + 0.5 * rng.normal(size=(n, d))


def bench_hsic(sizes) -> dict:
    try:
        import hyppo
        from hyppo.independence import Hsic
    except ImportError:
        hyppo = Hsic = None
    if Hsic is not None:  # compile hyppo's numba functions outside the timings
        w = np.random.default_rng(0).normal(size=(50, 10))
        Hsic(gamma=0.5).statistic(w, w**2)
    rows = []
    for n in sizes:
        x, y = gaussian(n, seed=n)
        sigma = median_heuristic(x)
        k = sk.kernel("rbf", sigma=sigma)
        row = {"n": n, "d": 10, "sigma": sigma}
        biased = HSIC(k, k)
        unbiased = HSIC(k, k, estimator="unbiased")
        exact = biased.fit(x, y).statistic_
        if Hsic is not None:
            gamma = 1.0 / (2 * sigma**2)
            _, stat, t_ours, t_h, loads = abba(
                lambda b=biased, x=x, y=y: b.fit(x, y), lambda x=x, y=y, g=gamma: Hsic(gamma=g).statistic(x, y)
            )
            _, _, t_unb, _, loads2 = abba(lambda u=unbiased, x=x, y=y: u.fit(x, y), lambda: None)
            row.update({
                "ours_biased_s": round(t_ours, 4), "ours_unbiased_s": round(t_unb, 4),
                "hyppo_s": round(t_h, 4), "hyppo_over_ours_biased": round(t_h / t_ours, 1),
                "hyppo_over_ours_unbiased": round(t_h / t_unb, 1), "loadavg": loads + loads2,
                "hyppo_statistic_normalised_unbiased": float(stat),
            })
        else:
            row["hyppo"] = "not installed"
        icd = HSIC(k, k, estimator="icd")
        _, t_icd = timed(lambda icd=icd, x=x, y=y: icd.fit(x, y))
        row.update({
            "exact_statistic": exact, "exact_kernel_evaluations": biased.n_kernel_evaluations_,
            "icd_default_tol": icd.tol, "icd_s": round(t_icd, 4), "icd_rank": list(icd.rank_),
            "icd_residual": [float(r) for r in icd.residual_],
            "icd_relative_error": abs(icd.statistic_ - exact) / exact,
            "icd_relative_error_bound": icd.error_bound_ / exact,
            "icd_kernel_evaluations": icd.n_kernel_evaluations_, "icd_loadavg": load(),
        })
        rows.append(row)
        print(f"hsic n={n}: {row}", file=sys.stderr)
    return {"rows": rows, "hyppo_version": getattr(hyppo, "__version__", None)}


def bench_exact_tiles(n: int) -> dict:
    x, y = gaussian(n, seed=1)
    k = sk.kernel("rbf", sigma=median_heuristic(x))
    a, b, t_tiles, t_full, loads = abba(
        lambda: HSIC(k, k).fit(x, y).statistic_, lambda: hsic_biased(sk.gram(k, x), sk.gram(k, y))
    )
    return {"n": n, "tiles_s": round(t_tiles, 3), "whole_grams_s": round(t_full, 3),
            "whole_over_tiles": round(t_full / t_tiles, 2), "relative_difference": abs(a - b) / b,
            "loadavg": loads}


def bench_amr(n: int, ranks) -> dict:
    """Only the path-kernel side is approximated: the labels' linear kernel has the exact factor Y."""
    from structkernels_hsic._kernels import KernelSource
    from structkernels_hsic.hsic import (
        DEFAULT_BLOCK,
        _from_sums,
        _tiled_stats,
        hsic_icd,
        hsic_lowrank_bound,
    )
    from structkernels_hsic.icd import icd_factor, nystrom_factor

    from structkernels.datasets import load_interactions

    try:
        data = load_interactions()
    except FileNotFoundError as exc:
        return {"skipped": f"shipped dataset absent: {exc}"}
    labels = np.asarray([int(v) for v in data.labels])
    idx = np.sort(np.random.default_rng(0).choice(len(labels), n, replace=False))
    paths = [data.paths[i] for i in idx]
    Y = np.eye(2)[labels[idx]]
    k = sk.Normalized(sk.kernel("path", lam=0.8))

    def exact():
        sx, sy = KernelSource(k, paths), KernelSource(sk.kernel("linear"), Y)
        return _from_sums(n, *_tiled_stats(sx, sy, False, DEFAULT_BLOCK), False), sx.n_evaluations

    (stat, ev), t_ex = timed(exact)
    rows = [{"method": "exact (tiles)", "rank": None, "relative_error": 0.0, "seconds": round(t_ex, 3),
             "kernel_evaluations": int(ev), "loadavg": load()}]

    def run(label, factor):
        def go():
            src = KernelSource(k, paths)
            A, res, tr = factor(src)
            return A, res, tr, src.n_evaluations

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (A, res, tr, ev), t = timed(go)
        h = hsic_icd(A, Y)
        rows.append({"method": label, "rank": int(A.shape[1]), "residual": res / tr,
                     "relative_error": abs(h - stat) / stat,
                     "relative_error_bound": hsic_lowrank_bound(A, Y, res, 0.0) / stat,
                     "seconds": round(t, 3), "kernel_evaluations": int(ev), "loadavg": load()})
        print(f"amr: {rows[-1]}", file=sys.stderr)

    def icd(r, tol):
        def f(src):
            A, _, res, tr = icd_factor(src, r, tol)
            return A, res, tr
        return f

    def nys(r, how):
        def f(src):
            A, _, res, tr = nystrom_factor(src, r, how, 0)
            return A, res, tr
        return f

    run("icd, default tol 1e-3", icd(None, 1e-3))
    for r in ranks:
        run("icd, fixed rank", icd(r, 0.0))
        run("nystrom, uniform", nys(r, "uniform"))
        run("nystrom, leverage", nys(r, "leverage"))
    ok = [r for r in rows[1:] if r["relative_error"] <= 1e-2]
    first = min(ok, key=lambda r: r["kernel_evaluations"]) if ok else None
    return {"n": n, "exact_statistic": stat, "rows": rows,
            "kernel_evaluations_side": "path kernel (X) only; the labels' factor is Y itself",
            "first_to_1e-2": None if first is None else {k2: first[k2] for k2 in ("method", "rank", "kernel_evaluations")}}


# ------------------------------------------------------------------ report


def table(out: dict) -> str:
    lines = ["| work | ours | anchor | ratio (anchor / ours) | notes | load avg |", "|---|---|---|---|---|---|"]
    f = out.get("phsic_feature")
    if f:
        lines.append(f"| PHSIC feature space fit + score, n={f['n']:,}, d={f['d']}, float64 | {f['ours_float64_s']} s | "
                     f"authors {f['authors_float64_s']} s | {f['authors_over_ours']}x | max score diff "
                     f"{f['max_abs_diff_vs_authors_relative']:.1e} (relative) | {max(f['loadavg'])} |")
        lines.append(f"| same, float32 end to end | {f['ours_float32_s']} s | ours float64 {f['ours_float64_again_s']} s | "
                     f"{f['float64_over_float32']}x | max score diff {f['float32_max_abs_diff_relative']:.1e} (relative) "
                     f"| {max(f['loadavg'])} |")
    p = out.get("phsic_icd_rbf")
    if p:
        lines.append(f"| PHSIC RBF-ICD rank {p['rank']} fit, n={p['n']:,}, d={p['d']} | {p['ours_fit_s']} s | "
                     f"authors {p['authors_fit_s']} s | {p['authors_over_ours']}x | {p['kernel_evaluations']:,} evaluations "
                     f"(n + rank n per side: {p['kernel_evaluations_minimum']:,}); same pivots {p['same_pivots']}, factor diff "
                     f"{p['max_abs_factor_diff']:.1e} | {max(p['loadavg'])} |")
        if "ours_n_jobs2_fit_s" in p:
            lines.append(f"| same, n_jobs=2 (the two sides in two threads) | {p['ours_n_jobs2_fit_s']} s | ours n_jobs=1 "
                         f"{p['ours_n_jobs1_again_s']} s | {p['n_jobs1_over_n_jobs2']}x (authors / ours: "
                         f"{p['authors_over_ours_n_jobs2']}x) | same pivots {p['n_jobs2_same_pivots']} | "
                         f"{max(p['loadavg_n_jobs'])} |")
    for r in out.get("hsic_vs_hyppo", {}).get("rows", []):
        if "hyppo_s" in r:
            lines.append(f"| HSIC exact biased / unbiased, n={r['n']:,}, d=10 | {r['ours_biased_s']} / "
                         f"{r['ours_unbiased_s']} s | hyppo {r['hyppo_s']} s | {r['hyppo_over_ours_biased']}x / "
                         f"{r['hyppo_over_ours_unbiased']}x | {r['exact_kernel_evaluations']:,} evaluations | "
                         f"{max(r['loadavg'])} |")
        lines.append(f"| HSIC ICD tol {r['icd_default_tol']:g}, n={r['n']:,}, d=10 | {r['icd_s']} s | - | - | rank "
                     f"{r['icd_rank'][0]}/{r['icd_rank'][1]}, relative error {r['icd_relative_error']:.1e} (bound "
                     f"{r['icd_relative_error_bound']:.1e}), {r['icd_kernel_evaluations']:,} evaluations | "
                     f"{r['icd_loadavg']} |")
    e = out.get("exact_tiles")
    if e:
        lines.append(f"| HSIC exact n={e['n']:,}, default (tiles) | {e['tiles_s']} s | whole Grams {e['whole_grams_s']} s | "
                     f"{e['whole_over_tiles']}x | | {max(e['loadavg'])} |")
    a = out.get("amr_paths")
    if a and "rows" in a:
        for r in a["rows"]:
            lines.append(f"| AMR paths n={a['n']:,}: {r['method']} | {r['seconds']} s | - | - | rank {r['rank']}, relative "
                         f"error {r['relative_error']:.1e}, {r['kernel_evaluations']:,} evaluations | {r['loadavg']} |")
        lines.append(f"| AMR paths: first to relative error 1e-2 | {a['first_to_1e-2']} | | | | |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--only", action="append",
                    choices=["phsic_feature", "phsic_icd_rbf", "hsic_vs_hyppo", "exact_tiles", "amr_paths"])
    ap.add_argument("--no-write", action="store_true", help="print only; do not write benchmarks/results/")
    args = ap.parse_args()
    only = set(args.only or ["phsic_feature", "phsic_icd_rbf", "hsic_vs_hyppo", "exact_tiles", "amr_paths"])
    q = args.quick
    out: dict = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                             "python": platform.python_version(), "numpy": np.__version__,
                             "loadavg_at_start": os.getloadavg()},
                 "command": "python benchmarks/bench_hsic.py" + (" --quick" if q else "")}
    if "phsic_feature" in only:
        out["phsic_feature"] = bench_phsic_feature(10_000 if q else 100_000)
    if "phsic_icd_rbf" in only:
        out["phsic_icd_rbf"] = bench_phsic_icd(5_000 if q else 100_000)
    if "hsic_vs_hyppo" in only:
        out["hsic_vs_hyppo"] = bench_hsic([500, 1000] if q else [1000, 2000, 5000])
    if "exact_tiles" in only:
        out["exact_tiles"] = bench_exact_tiles(2000 if q else 8000)
    if "amr_paths" in only:
        out["amr_paths"] = bench_amr(500 if q else 2000, [50, 200] if q else [100, 400, 1000, 1600])
    out["machine"]["loadavg_at_end"] = os.getloadavg()
    md = table(out)
    out["table"] = md
    if not args.no_write:
        res = ROOT / "benchmarks" / "results"
        res.mkdir(parents=True, exist_ok=True)
        with atomic_open(res / "hsic_bench.json") as fh:
            fh.write(json.dumps(out, indent=1))
        with atomic_open(res / "hsic_bench.md") as fh:
            fh.write(
                f"`{out['command']}`; load average at start {out['machine']['loadavg_at_start']}, "
                f"at end {out['machine']['loadavg_at_end']} (2 cores shared).\n\n{md}\n"
            )
    print(md, file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
