"""NPK on the dependency view, the AMR view and both, for the shipped Bio AMR candidates.

The shipped candidates' labels are read off the gold AMR the AMR path comes from, so a
kernel on the AMR path is scored on what the labelling rule read (circular).  The
dependency view (``structkernels/data/interactions_dependency.jsonl.gz``, built by
``datasets/build_bio_amr_dependency_view.py`` from the sentence text, the AMR saying only
which words the candidate's nodes are) is not.  On the candidates both views cover, with
the data's own ``split`` and ``label``:

- views: ``dependency``, ``amr``, ``amr+dependency`` (the Gram of
  ``ViewKernel(Normalized(NPK amr), "amr") + ViewKernel(Normalized(NPK dep), "dependency")``,
  σ learned separately per view on the training paths; checked against the ViewKernel sum on
  a block);
- models: ``NPK k-NN`` (KernelKNNClassifier, the main job's settings, on the exact
  precomputed Gram: no hashing), ``NPK SVM`` (KernelSVC on the precomputed Gram, C = 1,
  balanced class weights), ``PK k-NN``/``PK SVM`` (the same without σ; λ 0.8, node mismatch
  0.9, normalised), and baselines: the majority class and a logistic regression on the
  path's edge n-grams (1 to 3, binary, balanced, C = 1);
- σ: :class:`~structkernels.NonstationaryLearner` with the main job's objective
  (``knn-ap``, 8 neighbours, the most frequent half of the edge labels);
- scores: precision, recall, F1 and ROC AUC of the positive class, in percent (as
  :func:`structkernels.experiments.relations.pooled_scores`), mean and standard
  deviation over ``--seeds`` seeds; each seed draws its own stratified training
  subsample (``--train-size``); the test subsample (``--test-size``, stratified, natural
  prevalence) is drawn once (``--test-seed``) so that all models and seeds are scored on
  the same candidates.  Subsampling keeps the whole run within minutes on 2 shared cores.

    python benchmarks/npk_views.py --out benchmarks/results/npk_views.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from pathlib import Path as FilePath

import numpy as np
from _report import report

from structkernels import Path
from structkernels.classifiers import KernelSVC
from structkernels.datasets.interactions import SHIPPED_DATASET
from structkernels.experiments.relations import PATH_PARAMS, pooled_scores
from structkernels.kernels.base import Normalized
from structkernels.kernels.names import kernel as make_kernel
from structkernels.kernels.views import ViewKernel
from structkernels.neighbors.classifier import KernelKNNClassifier
from structkernels.npk.learner import NonstationaryLearner

DEP_FILE = FilePath(SHIPPED_DATASET) / "interactions_dependency.jsonl.gz"
CAND_FILE = FilePath(SHIPPED_DATASET) / "interactions.jsonl.gz"
VIEWS = ("dependency", "amr", "amr+dependency")
#: σ learner settings: the main job's (structkernels train-npk) objective.
SIGMA = {"objective": "knn-ap", "objective_sample": 8000, "n_neighbors": 8,
         "top_fraction": 0.5, "min_gain": 0.005}
METRICS = ("f1", "precision", "recall", "roc_auc")


def load() -> tuple[list[dict], dict]:
    with gzip.open(DEP_FILE, "rt", encoding="utf-8") as fh:
        dep = {r["id"]: r["path"] for r in map(json.loads, fh)}
    items, n = [], 0
    with gzip.open(CAND_FILE, "rt", encoding="utf-8") as fh:
        for r in map(json.loads, fh):
            n += 1
            if r["id"] in dep:
                items.append({"id": r["id"], "split": r["split"], "label": int(r["label"]),
                              "amr": Path(r["path"]), "dependency": Path(dep[r["id"]])})
    return items, {"candidates": n, "dependency_view": len(dep), "covered_by_both": len(items)}


def stratified(y: np.ndarray, size: int, seed: int) -> np.ndarray:
    """``size`` positions of ``y`` drawn without replacement, each class in proportion
    (all of them when ``size`` is at least ``len(y)``), sorted."""
    if size >= len(y):
        return np.arange(len(y))
    rng = np.random.RandomState(seed)
    classes = np.unique(y)
    want = {c: int(round(size * np.mean(y == c))) for c in classes}
    want[classes[0]] += size - sum(want.values())
    picked = [rng.choice(np.flatnonzero(y == c), want[c], replace=False) for c in classes]
    return np.sort(np.concatenate(picked))


def gram(kern, X, Y=None) -> np.ndarray:
    K = Normalized(kern).gram(X, Y, n_jobs=N_JOBS)
    if not np.all(np.isfinite(K)):
        raise FloatingPointError("a Gram matrix has a non-finite value")
    return K


def edge_ngrams(p: Path) -> list[str]:
    edges = ["ROOT" if e is None else e for e in p.edges]
    return ["|".join(edges[i:i + n]) for n in (1, 2, 3) for i in range(len(edges) - n + 1)]


def scores(y: np.ndarray, pred: np.ndarray, score: np.ndarray) -> dict:
    if not np.all(np.isfinite(score)):
        raise FloatingPointError("a decision value is not finite")
    idx = np.arange(len(y))
    s = pooled_scores(y, np.asarray(pred), np.asarray(score, dtype=float), [(idx, idx)])
    return {k: s[k] for k in METRICS}


def run_seed(items, tr, te, seed, out, sigma_log, seconds):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    y_tr = np.array([items[i]["label"] for i in tr])
    y_te = np.array([items[i]["label"] for i in te])
    grams: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    kernels = {}
    for view in ("dependency", "amr"):
        X = [items[i][view] for i in tr]
        Y = [items[i][view] for i in te]
        t = time.perf_counter()
        pk = make_kernel("path", **PATH_PARAMS)
        grams[("PK", view)] = (gram(pk, X), gram(pk, Y, X))
        seconds["pk_grams"] += time.perf_counter() - t
        t = time.perf_counter()
        learner = NonstationaryLearner("path", dict(PATH_PARAMS), n_jobs=N_JOBS,
                                       random_state=seed, progress=False, **SIGMA)
        learner.fit(X, y_tr)
        zeroed = sorted(lab for lab, v in learner.sigma_.items() if v != 1.0)
        sigma_log[view].append(zeroed)
        seconds["sigma"] += time.perf_counter() - t
        t = time.perf_counter()
        npk = make_kernel("path", **PATH_PARAMS, sigma=dict.fromkeys(zeroed, 0.0)) if zeroed else pk
        kernels[view] = npk
        grams[("NPK", view)] = grams[("PK", view)] if not zeroed else (gram(npk, X), gram(npk, Y, X))
        seconds["npk_grams"] += time.perf_counter() - t
    for fam in ("PK", "NPK"):
        a, d = grams[(fam, "amr")], grams[(fam, "dependency")]
        grams[(fam, "amr+dependency")] = (a[0] + d[0], a[1] + d[1])
    # the summed Gram is the ViewKernel sum's (checked on a block)
    both = (ViewKernel(Normalized(kernels["amr"]), "amr")
            + ViewKernel(Normalized(kernels["dependency"]), "dependency"))
    blk = both.gram([items[i] for i in te[:40]], [items[i] for i in tr[:60]])
    if not np.allclose(blk, grams[("NPK", "amr+dependency")][1][:40, :60], atol=1e-9):
        raise AssertionError("the summed Gram differs from the ViewKernel sum")

    t = time.perf_counter()
    for view in VIEWS:
        res = out[view]
        for fam in ("NPK", "PK"):
            K_tr, K_te = grams[(fam, view)]
            knn = KernelKNNClassifier(kernel="precomputed", random_state=seed).fit(K_tr, y_tr)
            res[f"{fam} k-NN"].append(scores(y_te, knn.predict(K_te), knn.predict_proba(K_te)[:, 1]))
            svm = KernelSVC(kernel="precomputed", C=1.0, random_state=seed).fit(K_tr, y_tr)
            s = svm.decision_function(K_te)
            res[f"{fam} SVM"].append(scores(y_te, (s > 0).astype(int), s))
        names = ("amr", "dependency") if view == "amr+dependency" else (view,)
        docs_tr = [[f"{v}:{g}" for v in names for g in edge_ngrams(items[i][v])] for i in tr]
        docs_te = [[f"{v}:{g}" for v in names for g in edge_ngrams(items[i][v])] for i in te]
        vec = CountVectorizer(analyzer=lambda d: d, binary=True)
        lr = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000)
        lr.fit(vec.fit_transform(docs_tr), y_tr)
        s = lr.decision_function(vec.transform(docs_te))
        res["edge n-gram LR"].append(scores(y_te, (s > 0).astype(int), s))
        res["majority"].append(scores(y_te, np.zeros(len(te), dtype=int), np.zeros(len(te))))
    seconds["classifiers"] += time.perf_counter() - t


def summarise(runs: list[dict]) -> dict:
    out = {}
    for m in METRICS:
        vals = [r[m] for r in runs if r[m] is not None]
        out[m] = {"mean": round(float(np.mean(vals)), 2), "sd": round(float(np.std(vals)), 2),
                  "runs": vals}
    return out


def main(argv=None) -> int:
    global N_JOBS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--train-size", type=int, default=4000)
    ap.add_argument("--test-size", type=int, default=4000)
    ap.add_argument("--test-seed", type=int, default=12345)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    N_JOBS = args.n_jobs
    load_before = [round(x, 2) for x in os.getloadavg()]
    t0 = time.perf_counter()
    items, sizes = load()
    seconds = {"load": round(time.perf_counter() - t0, 2), "pk_grams": 0.0, "sigma": 0.0,
               "npk_grams": 0.0, "classifiers": 0.0}
    y = np.array([it["label"] for it in items])
    split = np.array([it["split"] for it in items])
    train_pool = np.flatnonzero(split == "train")
    test_pool = np.flatnonzero(split == "test")
    te = test_pool[stratified(y[test_pool], args.test_size, args.test_seed)]
    models = ("NPK k-NN", "NPK SVM", "PK k-NN", "PK SVM", "edge n-gram LR", "majority")
    runs = {v: {m: [] for m in models} for v in VIEWS}
    sigma_log: dict[str, list] = {"dependency": [], "amr": []}
    train_sizes = []
    for seed in range(args.seeds):
        tr = train_pool[stratified(y[train_pool], args.train_size, seed)]
        train_sizes.append({"seed": seed, "candidates": int(len(tr)), "positive": int(y[tr].sum())})
        run_seed(items, tr, te, seed, runs, sigma_log, seconds)
        print(f"seed {seed} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    doc = {
        "benchmark": "npk_views",
        "what": ("NPK/PK k-NN and SVM on the dependency view (non-circular), the AMR view "
                 "(circular: labels read off the same AMR) and both (ViewKernel sum)"),
        "sizes": {
            **sizes,
            "train_pool": {"candidates": int(len(train_pool)), "positive": int(y[train_pool].sum())},
            "test_pool": {"candidates": int(len(test_pool)), "positive": int(y[test_pool].sum())},
            "train_subsample": train_sizes,
            "test_subsample": {"candidates": int(len(te)), "positive": int(y[te].sum()),
                               "seed": args.test_seed},
            "subsampled": ("training: a stratified subsample of --train-size per seed; test: one "
                           "stratified subsample of --test-size for every seed and model "
                           "(kernel Grams on the full halves do not fit the time budget)"),
        },
        "settings": {
            "path_kernel": PATH_PARAMS, "normalized": True, "sigma_learner": SIGMA,
            "knn": "KernelKNNClassifier(kernel='precomputed'): main job settings "
                   "(8 neighbours, similarity weights, threshold 'auto'), exact Gram, no hashing",
            "svm": "KernelSVC(kernel='precomputed', C=1, class_weight='balanced')",
            "combined": "Normalized(K_amr) + Normalized(K_dep), σ learned per view",
            "baseline_lr": "LogisticRegression(C=1, balanced) on binary edge 1-3-grams of the path(s)",
            "seeds": args.seeds, "n_jobs": args.n_jobs,
            "metrics": "positive class, percent; mean and sd over seeds",
        },
        "results": {v: {m: summarise(runs[v][m]) for m in models} for v in VIEWS},
        "sigma_zeroed": sigma_log,
        "seconds": {**{k: round(v, 1) for k, v in seconds.items()},
                    "total": round(time.perf_counter() - t0, 1)},
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
    }
    report(doc, args.out)
    return 0


N_JOBS = 2

if __name__ == "__main__":
    raise SystemExit(main())
