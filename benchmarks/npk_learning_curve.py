"""NPK k-NN against the SVM and the linear baseline as the training set grows; prints JSON.

The baselines table of ``train-npk`` (the Table 6 analogue) trains every model
on 2,000 training paths, about 26 of them positive.  This experiment asks
whether the k-NN classifier's gap to the SVM at that size is the classifier
or the kernel: on the same test sample (3,000 test-half paths per seed), for
nested training sub-samples of N = 1,000 ... 8,000 paths (natural positive
rate), it scores

* the exact similarity-weighted 8-NN (``threshold="auto"``),
* the hashed 8-NN with random k-NN hashing and with KLSH (the main job's
  2 tables, 3 probes; values read from the same Gram with ``GramLookup``),
* ``SVC(kernel="precomputed", class_weight="balanced")`` on the same Gram,
* logistic regression on tuples + edges (the best linear baseline),

all under the normalised NPK (λ = 0.8, partial node credit 0.9, σ zeroing
the labels given by ``--zero``: the main job's σ at seed 0), and the k-NN
rows and the SVM also under the stationary PK, to count the seeds in which
NPK beats PK per model and size.  The full split (22,632 training paths) is
the main job's own figure.

Usage::

    python benchmarks/npk_learning_curve.py > benchmarks/results/npk_learning_curve.json
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from sklearn.metrics import average_precision_score, f1_score
from sklearn.svm import SVC

from structkernels.datasets import load_interactions
from structkernels.engine.gram import gram
from structkernels.experiments.baselines import linear_baselines
from structkernels.kernels.lookup import GramLookup
from structkernels.kernels.names import kernel
from structkernels.neighbors.classifier import KernelKNNClassifier

HASH = {"n_tables": 2, "probe": 1, "n_probes": 3}


def _knn(K_tr, y_tr, K_te, y_te, **kw) -> tuple[float, float]:
    clf = KernelKNNClassifier(n_neighbors=8, weights="similarity", threshold="auto", **kw)
    if kw.get("hashing"):
        n, m = K_tr.shape[0], K_te.shape[0]
        clf.set_params(kernel=GramLookup(np.vstack([K_tr, K_te])))
        clf.fit(np.arange(n), y_tr)
        proba = clf.predict_proba(np.arange(n, n + m))
    else:
        clf.set_params(kernel="precomputed")
        clf.fit(K_tr, y_tr)
        proba = clf.predict_proba(K_te)
    return f1_score(y_te, clf.decide(proba)), average_precision_score(y_te, proba[:, 1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000,4000,8000")
    ap.add_argument("--n-test", type=int, default=3000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--zero", default="op1,op2", help="edge labels σ zeroes")
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    pk_params = {"lam": 0.8, "node_mismatch": 0.9}
    params = {**pk_params, "sigma": {lab: 0.0 for lab in args.zero.split(",") if lab}}
    kernels = {"": kernel("path", **params), "pk_": kernel("path", **pk_params)}
    train, test = load_interactions(split="train"), load_interactions(split="test")
    y_train, y_test = np.asarray(train.labels), np.asarray(test.labels)
    runs = []
    for seed in range(args.seeds):
        rng = np.random.RandomState(seed)
        pool = rng.choice(len(y_train), max(sizes), replace=False)  # nested prefixes
        i_te = np.sort(rng.choice(len(y_test), args.n_test, replace=False))
        X_pool = [train.paths[i] for i in pool]
        X_te, y_te = [test.paths[i] for i in i_te], y_test[i_te]
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        grams = {
            tag: (gram(k, X_pool, normalize=True, n_jobs=args.n_jobs, progress=False),
                  gram(k, X_te, X_pool, normalize=True, n_jobs=args.n_jobs, progress=False))
            for tag, k in kernels.items()
        }
        gram_s = time.perf_counter() - t0
        for n in sizes:
            y_tr = y_train[pool[:n]]
            row = {"seed": seed, "N": n, "positives_train": int(y_tr.sum()),
                   "positives_test": int(y_te.sum())}
            for tag, (K_pool, K_te_pool) in grams.items():
                K_tr, K_te = K_pool[:n, :n], K_te_pool[:, :n]
                for name, kw in (("knn_exact", {"random_state": seed}),
                                 ("knn_random_knn", {"hashing": "random-knn", "random_state": seed, **HASH}),
                                 ("knn_klsh", {"hashing": "klsh", "random_state": seed, **HASH})):
                    f1, apr = _knn(K_tr, y_tr, K_te, y_te, **kw)
                    row[tag + name] = {"f1": f1, "ap": apr}
                svc = SVC(kernel="precomputed", class_weight="balanced").fit(K_tr, y_tr)
                s = svc.decision_function(K_te)
                row[tag + "svm"] = {"f1": f1_score(y_te, s > 0), "ap": average_precision_score(y_te, s)}
            lin = linear_baselines(X_pool[:n], y_tr, X_te, y_te)["logistic regression, tuples + edges"]
            row["lr_tuples_edges"] = {"f1": lin["f1"], "ap": lin["average_precision"]}
            runs.append(row)
        runs[-1]["gram_seconds"] = gram_s
        runs[-1]["load_average_before"] = load0
    summary = []
    for n in sizes:
        rows = [r for r in runs if r["N"] == n]
        cell = {"N": n, "positives_train_mean": float(np.mean([r["positives_train"] for r in rows]))}
        for model in ("knn_exact", "knn_random_knn", "knn_klsh", "svm", "lr_tuples_edges"):
            for metric in ("f1", "ap"):
                vals = [100 * r[model][metric] for r in rows]
                cell[f"{model}_{metric}"] = [round(float(np.mean(vals)), 1), round(float(np.std(vals)), 1)]
        best = max(cell["svm_f1"][0], cell["lr_tuples_edges_f1"][0])
        cell["hashed_knn_over_best_baseline"] = round(
            max(cell["knn_random_knn_f1"][0], cell["knn_klsh_f1"][0]) / best, 2)
        cell["exact_knn_over_svm"] = round(cell["knn_exact_f1"][0] / cell["svm_f1"][0], 2)
        for model in ("knn_exact", "knn_random_knn", "knn_klsh", "svm"):
            cell[f"pk_{model}_f1"] = [round(float(np.mean([100 * r["pk_" + model]["f1"] for r in rows])), 1),
                                      round(float(np.std([100 * r["pk_" + model]["f1"] for r in rows])), 1)]
            cell[f"npk_beats_pk_seeds_{model}"] = sum(
                all(r[model][m] > r["pk_" + model][m] for m in ("f1", "ap")) for r in rows)
        summary.append(cell)
    print(json.dumps({
        "benchmark": "NPK (and PK) k-NN vs SVM and logistic regression against training size",
        "kernel": params, "pk_kernel": pk_params, "n_test": args.n_test, "seeds": args.seeds, "hashing": HASH,
        "summary": summary, "runs": runs,
    }, indent=1))


if __name__ == "__main__":
    main()
