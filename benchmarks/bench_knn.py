"""Hashed vs exact kernel k-NN on the Bio-AMR interaction paths; prints JSON.

For each N (default 1k, 4k, 16k paths of the training split, drawn with a fixed
seed; all training positives are kept so that F1 is defined) it measures:

* the exact blocked 1-NN graph (``n (n + 1) / 2`` kernel evaluations, cached
  in ``.cache/`` because it is the slow part) -- the baseline;
* the hashed graphs with random k-NN hashing and KLSH: kernel evaluations,
  wall time, recall of the exact 1-NN (a point counts when the neighbour
  found is as similar as the exact one, so ties count; the stricter
  same-index rate is reported too) and the bucket-size distribution;
* the k-NN classifier (k = 8, the paper's setting) trained on those N paths
  and tested on a fixed test sample (all test positives plus random
  negatives): F1, precision and recall of the positive class, and the
  kernel evaluations of prediction, exact vs hashed.

The exponent of evaluations ~ N**a is fitted by least squares on log-log.

Usage::

    nice python benchmarks/bench_knn.py --n-jobs 2 > benchmarks/results/knn_amr.json
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path as FsPath

import numpy as np
from _report import report

import structkernels as sk
from structkernels.neighbors.classifier import positive_class_scores
from structkernels.neighbors.graph import exact_knn_graph
from structkernels.utils import atomic_open

ROOT = FsPath(__file__).resolve().parents[1]
DATA = ROOT / "structkernels" / "data" / "interactions.jsonl.gz"


def load_split(split: str):
    """Paths and labels of one split (the shipped loader when present, else the JSONL)."""
    try:
        from structkernels.datasets import load_interactions  # type: ignore

        ds = load_interactions().split(split)
        return list(ds.paths), np.asarray(ds.labels)
    except (ImportError, AttributeError):
        paths, labels = [], []
        with gzip.open(DATA, "rt", encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                if r["split"] == split:
                    paths.append(sk.Path([tuple(t) for t in r["path"]]))
                    labels.append(int(r["label"]))
        return paths, np.asarray(labels)


def subsample(labels: np.ndarray, n: int, rng: np.random.Generator, keep_positive: bool):
    pos = np.flatnonzero(labels == 1)
    neg = np.flatnonzero(labels != 1)
    if keep_positive and len(pos) < n:
        idx = np.concatenate([pos, rng.choice(neg, n - len(pos), replace=False)])
    else:
        idx = rng.choice(len(labels), n, replace=False)
    return np.sort(idx)


def bucket_stats(sizes: np.ndarray) -> dict:
    sizes = np.sort(np.asarray(sizes))[::-1]
    n = sizes.sum()
    return {
        "n_buckets": int(len(sizes)),
        "max": int(sizes[0]),
        "mean": float(sizes.mean()),
        "median": float(np.median(sizes)),
        "p90": float(np.quantile(sizes, 0.9)),
        "largest_share": float(sizes[0] / n),
        "singletons": int((sizes == 1).sum()),
        # sum b^2 / (n^2 / n_buckets): 1 for perfectly even buckets
        "unevenness": float((sizes.astype(float) ** 2).sum() / (n**2 / len(sizes))),
        "cv": float(sizes.std() / sizes.mean()),
        "top10": sizes[:10].tolist(),
    }


def exact_cached(paths, kern, n_jobs: int, key: str):
    cache = ROOT / ".cache"
    cache.mkdir(exist_ok=True)
    f = cache / f"knn_exact_{key}.npz"
    if f.exists():
        z = np.load(f)
        return z["indices"], z["similarities"], int(z["n_evaluations"]), float(z["seconds"]), True
    g = exact_knn_graph(paths, kern, 1, n_jobs=n_jobs)
    with atomic_open(f, "wb") as fh:  # a cache file is whole or absent
        np.savez(fh, indices=g.indices, similarities=g.similarities,
                 n_evaluations=g.n_evaluations, seconds=g.seconds)
    return g.indices, g.similarities, g.n_evaluations, g.seconds, False


def synthetic_buckets(seed: int) -> dict:
    """Bucket sizes of both hashes on tight Gaussian clusters under an RBF kernel.

    50 clusters (centres ~ N(0, 9 I) in 8-D, unit noise), N = 1000, sigma = 1:
    most points have kernel values ~0 against every sampled point.
    """
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(50, 8)) * 3
    X = centres[rng.integers(0, 50, 1000)] + rng.normal(size=(1000, 8))
    out = {"setting": "N=1000, 50 Gaussian clusters in 8-D, rbf sigma=1, 1 table, no probe"}
    for fam in ("random-knn", "klsh"):
        g = sk.knn_graph(X, "rbf", 1, hashing=fam, random_state=seed)
        out[fam] = {"evaluations": g.n_evaluations, "buckets": bucket_stats(g.bucket_sizes()[0])}
    return out


def fit_exponent(ns, evals) -> float:
    return float(np.polyfit(np.log(ns), np.log(evals), 1)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000])
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--lam", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-tables", type=int, default=2)
    ap.add_argument("--probe", type=int, default=1)
    ap.add_argument("--n-test", type=int, default=4000)
    ap.add_argument("--no-classifier", action="store_true")
    ap.add_argument("--families", nargs="+", default=["random-knn", "klsh"])
    ap.add_argument("--out", type=str, default=None, help="also write the JSON here")
    ap.add_argument("--synthetic", action="store_true",
                    help="only the bucket sizes on synthetic RBF clusters (seconds)")
    args = ap.parse_args(argv)
    if args.synthetic:
        report(synthetic_buckets(args.seed), args.out, indent=2)
        return 0

    t_load = time.perf_counter()
    data_sha1 = hashlib.sha1(DATA.read_bytes()).hexdigest()
    tr_paths, tr_labels = load_split("train")
    te_paths, te_labels = load_split("test")
    t_load = time.perf_counter() - t_load
    kern = sk.Normalized(sk.kernel("path", lam=args.lam))
    rng = np.random.default_rng(args.seed)
    te_idx = subsample(te_labels, min(args.n_test, len(te_labels)), rng, keep_positive=True)
    Xte = [te_paths[i] for i in te_idx]
    yte = te_labels[te_idx]

    out = {
        "benchmark": "bench_knn",
        "kernel": f"Normalized(path, lam={args.lam})",
        "dataset": "bio-amr-interactions (train split for the graphs and classifier, test split "
        "for classification)",
        "data_sha1": data_sha1,
        "train_records": len(tr_paths),
        "train_positive": int((tr_labels == 1).sum()),
        "test_sample": {"n": len(Xte), "positive": int((yte == 1).sum())},
        "settings": {"k_graph": 1, "k_classifier": 8, "n_tables": args.n_tables,
                     "probe": args.probe, "n_bits": "ceil(log2(N)/2)",
                     "n_reference": "ceil(sqrt(N))", "n_jobs": args.n_jobs, "seed": args.seed},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "load_seconds": t_load,
        "runs": [],
    }
    for n in args.sizes:
        idx = subsample(tr_labels, n, np.random.default_rng(args.seed + n), keep_positive=True)
        X = [tr_paths[i] for i in idx]
        y = tr_labels[idx]
        key = hashlib.sha1(
            f"{data_sha1}-{n}-{args.seed}-{args.lam}-{idx.tobytes().hex()}".encode()
        ).hexdigest()[:16]
        ex_idx, ex_sim, ex_evals, ex_sec, hit = exact_cached(X, kern, args.n_jobs, key)
        run = {"N": n, "positive": int((y == 1).sum()),
               "exact": {"evaluations": ex_evals, "seconds": ex_sec, "cached": hit}}
        print(f"N={n}: exact {ex_evals} evals {ex_sec:.1f}s (cached={hit})", file=sys.stderr)
        for fam in args.families:
            g = sk.knn_graph(X, kern, 1, hashing=fam, n_tables=args.n_tables, probe=args.probe,
                             n_jobs=args.n_jobs, random_state=args.seed)
            found = g.similarities[:, 0]
            rec = float(np.mean(found >= ex_sim[:, 0] - 1e-12))
            same = float(np.mean(g.indices[:, 0] == ex_idx[:, 0]))
            run[fam] = {
                "evaluations": g.n_evaluations,
                "evaluations_per_N^1.5": g.n_evaluations / n**1.5,
                "evaluation_ratio_to_exact": g.n_evaluations / ex_evals,
                "seconds": g.seconds,
                "speedup_vs_exact_seconds": ex_sec / g.seconds if not hit else None,
                "recall_1nn": rec,
                "same_index_1nn": same,
                "n_bits": g.hashers[0].n_bits_,
                "buckets": [bucket_stats(s) for s in g.bucket_sizes()],
            }
            print(f"  {fam}: {g.n_evaluations} evals ({g.n_evaluations / ex_evals:.3f} of "
                  f"exact) recall {rec:.3f} {g.seconds:.1f}s", file=sys.stderr)
        if not args.no_classifier:
            run["classifier"] = {}
            for fam in [None, *args.families]:
                # the settings this benchmark has always measured (majority vote, no threshold,
                # every probe), not the classifier's defaults, which follow the main job
                extra = {} if fam is None else {"n_tables": args.n_tables, "probe": args.probe,
                                                 "n_probes": None, "random_state": args.seed}
                clf = sk.KernelKNNClassifier(kern, n_neighbors=8, hashing=fam,
                                             weights="uniform", threshold=None, normalize=False,
                                             n_jobs=args.n_jobs, **extra)
                t0 = time.perf_counter()
                clf.fit(X, y)
                pred = clf.predict(Xte)
                sec = time.perf_counter() - t0
                s = positive_class_scores(yte, pred, pos_label=1)
                run["classifier"][fam or "exact"] = {
                    **s,
                    "accuracy": float(np.mean(pred == yte)),
                    "fit_evaluations": clf.n_fit_evaluations_,
                    "predict_evaluations": clf.n_evaluations_,
                    "seconds": sec,
                }
                print(f"  classifier {fam or 'exact'}: F1 {s['f1']:.3f} "
                      f"evals {clf.n_evaluations_}", file=sys.stderr)
        out["runs"].append(run)
    if len(args.sizes) >= 2:
        ns = [r["N"] for r in out["runs"]]
        out["exponent"] = {"exact": fit_exponent(ns, [r["exact"]["evaluations"] for r in out["runs"]])}
        for fam in args.families:
            out["exponent"][fam] = fit_exponent(ns, [r[fam]["evaluations"] for r in out["runs"]])
    report(out, args.out, indent=2, make_folder=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
