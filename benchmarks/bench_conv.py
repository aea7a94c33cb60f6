"""Benchmark of the compiled path and tree convolution kernels; prints JSON.

Gram matrices of ``--n`` (default 2,000) paths and trees of the shipped Bio-AMR
interaction dataset (``structkernels.datasets.load_interactions()``), λ = 0.8,
with ``n_jobs`` = 1 and 2 (first call, which starts the worker processes, and a
second, warm call).  The baseline is a straightforward pure-Python dynamic
programme of the same kernel (prefix-sum subsequence DP for paths, recursive
child-sequence DP for trees) run in the same process on a subsample; its
results are checked against the compiled kernel there.  Also measured: the
time of one small ``gram_block`` call (1 x 5 and 20 x 20), as made by the σ
learner, on lists of structures and on sub-lists of ``kernel.check_input(X)``
(encoded once).  Seconds are wall-clock; for ``n_jobs=1`` CPU seconds and a
CPU-time ratio are given too, which other load on a shared machine disturbs less.

When the dataset is not installed, synthetic paths and trees of a similar shape
(5-15 tuples, 60 edge labels, 300 node labels, Zipf-like frequencies) are used,
and the JSON says so (``"data": "synthetic"``).

Usage::

    python benchmarks/bench_conv.py [--n 2000] [--baseline-n 200] [--synthetic] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
from _report import report

from structkernels import Path, Tree, gram, kernel

LAM = 0.8


# ------------------------------------------------------------------------ data
def synthetic(n: int, random_state: int = 0) -> tuple[list[Path], list[Tree]]:
    """Paths of 5-15 tuples and small trees over 60 edge and 300 node labels."""
    rng = np.random.default_rng(random_state)
    edges = [f"ARG{i}" for i in range(6)] + [f"op{i}" for i in range(1, 6)]
    edges += [f"rel{i}" for i in range(60 - len(edges))]
    nodes = [f"concept{i}" for i in range(300)]
    pe = 1.0 / np.arange(1, len(edges) + 1) ** 1.1
    pe /= pe.sum()
    pn = 1.0 / np.arange(1, len(nodes) + 1)
    pn /= pn.sum()
    paths, trees = [], []
    for _ in range(n):
        length = int(rng.integers(5, 16))
        es = rng.choice(len(edges), length, p=pe)
        ns = rng.choice(len(nodes), length, p=pn)
        root = int(rng.integers(0, length))
        paths.append(Path([(None if i == root else edges[es[i]], nodes[ns[i]])
                           for i in range(length)]))

        def make(depth: int) -> Tree:
            kids = []
            if depth < 3:
                for _ in range(int(rng.integers(0, 4 if depth == 0 else 3))):
                    kids.append((edges[rng.choice(len(edges), p=pe)], make(depth + 1)))
            label = nodes[rng.choice(len(nodes), p=pn)] if depth else nodes[rng.integers(0, 5)]
            return Tree(label, kids)

        trees.append(make(0))
    return paths, trees


def load_data(n: int, synthetic_only: bool = False) -> tuple[str, list[Path], list[Tree]]:
    if synthetic_only:
        paths, trees = synthetic(n)
        return "synthetic", paths, trees
    try:
        from structkernels.datasets import load_interactions  # type: ignore[attr-defined]

        ds = load_interactions()
        paths, trees = list(ds.paths), list(ds.trees)
        if len(paths) >= 1 and len(trees) >= 1:
            rng = np.random.default_rng(0)
            # sample n of each (with replacement only when the set is smaller than n)
            ip = rng.choice(len(paths), n, replace=len(paths) < n)
            it = rng.choice(len(trees), n, replace=len(trees) < n)
            note = "bio-amr interactions" + (
                " (sampled with replacement)" if len(paths) < n or len(trees) < n else ""
            )
            return note, [paths[i] for i in ip], [trees[i] for i in it]
    except (ImportError, AttributeError, OSError, ValueError) as exc:
        print(f"dataset unavailable ({type(exc).__name__}: {exc}); using synthetic data",
              file=sys.stderr)
    paths, trees = synthetic(n)
    return "synthetic", paths, trees


# ------------------------------------------------- pure-Python reference DPs
def py_path_kernel(S: Path, T: Path, lam: float, sigma: dict[str, float]) -> float:
    """Straightforward prefix-sum DP of the path kernel (every length), pure Python."""
    n, m = len(S), len(T)
    if n == 0 or m == 0:
        return 0.0
    lam2 = lam * lam
    D = [[0.0] * (m + 1) for _ in range(n + 1)]  # D[s][t]: decayed sums of E up to (s-1, t-1)
    total = 0.0
    for s in range(1, n + 1):
        es, ns = S[s - 1]
        ws = 1.0 if es is None else sigma.get(es, 1.0)
        R = 0.0
        for t in range(1, m + 1):
            et, nt = T[t - 1]
            if es == et and ns == nt:
                wt = 1.0 if et is None else sigma.get(et, 1.0)
                e = lam2 * ws * wt * (1.0 + D[s - 1][t - 1])
            else:
                e = 0.0
            total += e
            R = e + lam * R
            D[s][t] = R + lam * D[s - 1][t]
    return total


def py_tree_kernel(a: Tree, b: Tree, lam: float, sigma: dict[str, float],
                   ea: str | None = None, eb: str | None = None) -> float:
    """Straightforward recursive DP of the tree kernel (span decay), pure Python."""

    def sim(e1, n1, e2, n2):
        if e1 != e2 or n1 != n2:
            return 0.0
        w = 1.0 if e1 is None else sigma.get(e1, 1.0)
        return w * w

    m = sim(ea, a.label, eb, b.label)
    if m == 0.0:
        return 0.0
    ca, cb = a.children, b.children
    p, q = len(ca), len(cb)
    lam2 = lam * lam
    # P/Q: decayed prefix sums of products / of products with one marked subtree kernel
    DP = [[0.0] * (q + 1) for _ in range(p + 1)]
    DQ = [[0.0] * (q + 1) for _ in range(p + 1)]
    C = 0.0
    for s in range(1, p + 1):
        es, ts = ca[s - 1]
        RP = RQ = 0.0
        for t in range(1, q + 1):
            et, tt = cb[t - 1]
            w = sim(es, ts.label, et, tt.label)
            if w:
                g = py_tree_kernel(ts, tt, lam, sigma, es, et)
                ep = lam2 * w * (1.0 + DP[s - 1][t - 1])
                eq = lam2 * w * (DQ[s - 1][t - 1] + g * (1.0 + DP[s - 1][t - 1]))
            else:
                ep = eq = 0.0
            C += eq
            RP = ep + lam * RP
            RQ = eq + lam * RQ
            DP[s][t] = RP + lam * DP[s - 1][t]
            DQ[s][t] = RQ + lam * DQ[s - 1][t]
    return m * (m + C)


# ------------------------------------------------------------------ measures
def baseline(fn, X, sigma) -> tuple[np.ndarray, float, float, int]:
    n = len(X)
    K = np.empty((n, n))
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(n):
        for j in range(i, n):
            K[i, j] = K[j, i] = fn(X[i], X[j], LAM, sigma)
    return K, time.perf_counter() - t0, time.process_time() - c0, n * (n + 1) // 2


def small_calls(k, X) -> dict[str, float]:
    """Microseconds per ``gram_block`` call on lists, and on pre-encoded sub-lists."""
    out = {}
    Xe = k.check_input(X)
    for r, c in [(1, 5), (20, 20)]:
        ia, ib = list(range(r)), list(range(100, 100 + c))
        for how, A, B in [("lists", [X[i] for i in ia], [X[i] for i in ib]),
                          ("encoded", Xe[ia], Xe[ib])]:
            k.gram_block(A, B)
            reps = 2000 if r == 1 else 300
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(reps):
                    k.gram_block(A, B)
                times.append((time.perf_counter() - t0) / reps)
            out[f"{r}x{c}_{how}_us"] = round(1e6 * min(times), 1)
    return out


def run_kernel(name: str, k, X, py_fn, sigma, baseline_n: int) -> dict:
    k.gram(X[:8])  # compile or load the numba cache in this process
    res: dict = {"kernel": name, "params": {k2: v for k2, v in k.get_params().items()
                                              if k2 != "tuple_kernel"}, "n": len(X)}
    Kb, tb, cb, nb = baseline(py_fn, X[:baseline_n], sigma)
    Kf = k.gram(X[:baseline_n])
    res["baseline"] = {
        "what": "pure-Python DP of the same kernel, same process",
        "n": baseline_n, "evaluations": nb, "seconds": round(tb, 3),
        "cpu_seconds": round(cb, 3),
        "evaluations_per_s": round(nb / tb, 1),
        "evaluations_per_cpu_s": round(nb / cb, 1),
        "max_rel_diff_to_compiled": float(np.max(np.abs(Kf - Kb) / np.maximum(np.abs(Kb), 1e-300))),
    }
    # the compiled programme alone: structures encoded beforehand, one symmetric block
    Xe = k.check_input(X)
    c0 = time.process_time()
    k.gram_block_symmetric(Xe)
    block_cpu = time.process_time() - c0
    res["compiled_block_only"] = {
        "what": "gram_block_symmetric on pre-encoded structures (no encoding, no engine)",
        "evaluations": len(X) * (len(X) + 1) // 2, "cpu_seconds": round(block_cpu, 4),
        "ratio_to_baseline_cpu": round(
            len(X) * (len(X) + 1) // 2 / block_cpu / res["baseline"]["evaluations_per_cpu_s"], 1),
    }
    if name == "tree":
        # most tree pairs differ at the root, where both programmes stop at once;
        # compare them also where all roots match (the most frequent root label)
        roots = [t.label for t in X]
        top = max(set(roots), key=roots.count)
        same = [t for t in X if t.label == top][:baseline_n]
        Kb2, tb2, cb2, nb2 = baseline(py_fn, same, sigma)
        c0 = time.process_time()
        Kf2 = k.gram(same)
        cf2 = time.process_time() - c0
        res["matching_roots_subset"] = {
            "root": top, "n": len(same), "evaluations": nb2,
            "baseline_cpu_seconds": round(cb2, 4), "compiled_cpu_seconds": round(cf2, 4),
            "ratio_cpu": round(cb2 / max(cf2, 1e-9), 1),
            "max_rel_diff_to_compiled": float(
                np.max(np.abs(Kf2 - Kb2) / np.maximum(np.abs(Kb2), 1e-300))),
        }
    runs = []
    for n_jobs in (1, 2):
        for call in ("first", "warm"):
            c0 = time.process_time()
            K, info = gram(k, X, n_jobs=n_jobs, return_info=True)
            cpu = time.process_time() - c0
            rate = info.n_evaluations / info.seconds
            run = {
                "n_jobs": n_jobs, "call": call, "seconds": round(info.seconds, 3),
                "evaluations": info.n_evaluations, "evaluations_per_s": round(rate, 1),
                "ratio_to_baseline": round(rate / res["baseline"]["evaluations_per_s"], 1),
            }
            if n_jobs == 1:  # CPU time: robust to other load on a shared machine
                run["cpu_seconds"] = round(cpu, 3)
                run["ratio_to_baseline_cpu"] = round(
                    info.n_evaluations / cpu / res["baseline"]["evaluations_per_cpu_s"], 1)
            runs.append(run)
    res["gram"] = runs
    res["small_gram_block_calls"] = small_calls(k, X)
    return res


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--baseline-n", type=int, default=200)
    ap.add_argument("--synthetic", action="store_true",
                    help="use synthetic structures even when the dataset is installed")
    ap.add_argument("--out", default=None, help="also write the JSON there")
    args = ap.parse_args(argv)
    data, paths, trees = load_data(args.n, args.synthetic)
    sigma = {"ARG0": 0.0, "op2": 0.0}  # a nonstationary σ, as learned by the paper's NPK
    result = {
        "benchmark": "bench_conv",
        "data": data,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_1m_at_start": round(os.getloadavg()[0], 2)},
        "mean_path_length": round(float(np.mean([len(p) for p in paths])), 2),
        "mean_tree_size": round(float(np.mean([t.size for t in trees])), 2),
        "results": [
            run_kernel("path", kernel("path", lam=LAM, sigma=sigma), paths, py_path_kernel,
                       sigma, args.baseline_n),
            run_kernel("tree", kernel("tree", lam=LAM, sigma=sigma), trees, py_tree_kernel,
                       sigma, 3 * args.baseline_n),
        ],
    }
    result["machine"]["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    report(result, args.out, indent=1, make_folder=True)
    return result


if __name__ == "__main__":
    main()
