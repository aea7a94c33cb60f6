"""Hashed k-NN search against exact on the full Bio-AMR split; prints JSON.

For a random sample of test paths, the exact 8 nearest training paths (all of
the training half, normalised path kernel, λ = 0.8, partial credit 0.9) are
compared with those found by the hashed classifier under several settings:
recall@8, average precision and F1 (``threshold="auto"``, chosen on the
training half) of the similarity-weighted vote, and kernel evaluations.  This
is the experiment behind the main job's ``--n-tables 2 --probe 1 --n-probes 3``
(docs/npk.md, Diagnosis 6).  Load averages are recorded beside the timings.

Usage::

    python benchmarks/npk_hash_recall.py --n-test 5000 > benchmarks/results/npk_hash_recall.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from sklearn.metrics import average_precision_score, f1_score

from structkernels.datasets import load_interactions
from structkernels.engine.gram import gram
from structkernels.kernels.names import kernel
from structkernels.neighbors.classifier import KernelKNNClassifier

SETTINGS = [
    {"n_tables": 2, "probe": 0},
    {"n_tables": 4, "probe": 0},
    {"n_tables": 2, "probe": 1, "n_probes": 1},
    {"n_tables": 2, "probe": 1, "n_probes": 3},
    {"n_tables": 2, "probe": 1, "n_probes": None},  # every probe
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-test", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args()
    params = {"lam": 0.8, "node_mismatch": 0.9}
    train, test = load_interactions(split="train"), load_interactions(split="test")
    y_tr, y_te = np.asarray(train.labels), np.asarray(test.labels)
    pick = np.sort(np.random.RandomState(args.seed).choice(len(y_te), args.n_test, replace=False))
    X_te, y = [test.paths[i] for i in pick], y_te[pick]
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    K = gram(kernel("path", **params), X_te, list(train.paths), normalize=True, n_jobs=args.n_jobs,
             progress=False)
    exact_s = time.perf_counter() - t0
    top = np.argsort(-K, axis=1, kind="stable")[:, :8]
    w = np.take_along_axis(K, top, 1)
    scores = (w * y_tr[top]).sum(1) / np.maximum(w.sum(1), 1e-300)
    out = {
        "n_train": len(y_tr), "n_test": int(args.n_test), "positives_test": int(y.sum()),
        "exact": {"average_precision": average_precision_score(y, scores),
                  "n_evaluations": int(K.size), "seconds": exact_s, "loadavg": [load0, os.getloadavg()[0]]},
        "hashed": [],
    }
    for st in SETTINGS:
        t0 = time.perf_counter()
        load0 = os.getloadavg()[0]
        clf = KernelKNNClassifier(
            "path", kernel_params=params, n_neighbors=8, hashing="random-knn", weights="similarity",
            threshold="auto", normalize=True, n_jobs=args.n_jobs, random_state=0, **st,
        ).fit(list(train.paths), y_tr)
        proba = clf.predict_proba(X_te)
        idx, _ = clf.kneighbors(X_te)
        recall = float(np.mean([len(set(a) & set(b)) / 8 for a, b in zip(idx, top, strict=True)]))
        out["hashed"].append({
            **st, "recall_at_8": recall,
            "average_precision": average_precision_score(y, proba[:, 1]),
            "f1": f1_score(y, clf.decide(proba).astype(int), zero_division=0),
            "n_fit_evaluations": int(clf.n_fit_evaluations_),
            "n_query_evaluations": int(clf.n_evaluations_),
            "seconds": time.perf_counter() - t0, "loadavg": [load0, os.getloadavg()[0]],
        })
        print(json.dumps(out["hashed"][-1]), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
