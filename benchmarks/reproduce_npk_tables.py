"""PK vs NPK in the shape of Tables 2-4 of Garg et al. (2018) on the shipped Bio-AMR data.

Protocol (Sec. 7):

* data: the two halves of the shipped interaction candidates (split by graph
  id), at their natural positive rate (1.3% / 1.7%) by default, or pools of
  ``--pool-size`` random candidates per half; ``--pos-rate R`` instead builds
  *enriched pools*: every positive of a half plus random negatives so that a
  share R of the pool is positive.  Pools are drawn once (``--seed``).
* learning: σ is learned on the training pool (top 50% most frequent edge
  labels, α trials, random k-NN hashing for the k-NN graphs, λ = 0.8) with
  β ∈ {25, 100, 550} and with the pure-random baseline (PR, β = 1000).
* inference: the hashed k-NN classifier (k = 8), trained on a sub-selection
  of the training pool and tested on the same share of the test pool, for
  sub-selections of 100%, 80%, 50% and 30%, 5 trials each (mean ± sd of F1,
  precision, recall of the positive class), with random k-NN hashing
  (Table 2a) and Kulis & Grauman's KLSH (Table 2b).  Nothing is tuned on the
  test pool.  The k-NN classifier votes by similarity and chooses its
  decision threshold on the training data (``threshold="auto"``); the kernel
  gives partial credit ``--node-mismatch`` (default 0.9) to tuples whose edges
  agree and nodes differ (0 is the paper's indicator kernel).
* Table 6 analogue: PK and NPK (the primary model's σ) with k-NN exact and
  hashed, SVC on their Gram matrices, bag-of-tuples logistic regression and
  chance, on the same sub-samples, mean ± sd over ``--trials`` seeds
  (:func:`structkernels.experiments.baselines.baselines_table`).

Writes ``benchmarks/results/npk_tables.json`` and ``npk_tables.md``.

Usage::

    nice python benchmarks/reproduce_npk_tables.py --n-jobs 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path as FsPath

import numpy as np

from structkernels.datasets import load_interactions
from structkernels.neighbors.classifier import KernelKNNClassifier, positive_class_scores
from structkernels.npk.learner import NonstationaryLearner
from structkernels.utils import atomic_open

RESULTS = FsPath(__file__).resolve().parent / "results"

#: The paper's figures (F1 (precision, recall)), for the tables' "paper" columns.
PAPER = {
    "table2a": {"BioNLP (100%)": ("42.4 (43.1, 41.8)", "47.2 (53.7, 42.2)"),
                "BioNLP (80%)": ("41.0 ± 0.5", "43.9 ± 1.3"),
                "All (100%)": ("55.0 (52.5, 57.8)", "58.4 (55.0, 62.2)"),
                "All (50%)": ("50.9 ± 0.6", "54.1 ± 0.7"),
                "All (30%)": ("48.6 ± 1.2", "51.5 ± 0.9")},
    "table2b": {"BioNLP (100%)": ("44.8 (45.7, 44.0)", "46.8 (52.7, 42.1)"),
                "All (50%)": ("52.2 ± 0.4", "54.3 ± 0.6"),
                "All (30%)": ("50.3 ± 0.6", "51.6 ± 0.8")},
    "table3a_bionlp": {"550": "47.2", "100": "47.3", "50": "47.1", "25": "48.4"},
    "table4b_bionlp": {"PK": "42.4", "100": "47.3", "PR 1000": "42.4", "550": "47.2",
                       "PR 5000": "43.7"},
}


def pool(ds, pos_rate: float, pool_size: int, rng: np.random.RandomState) -> np.ndarray:
    y = np.asarray(ds.labels)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if pos_rate > 0:
        n_neg = min(len(neg), int(round(len(pos) * (1 - pos_rate) / pos_rate)))
        return np.sort(np.concatenate([pos, rng.choice(neg, n_neg, replace=False)]))
    return np.sort(rng.choice(len(y), min(pool_size, len(y)), replace=False))


def stats(values: list[float]) -> dict[str, float]:
    a = 100 * np.asarray(values, dtype=float)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0}


def evaluate(X_tr, y_tr, X_te, y_te, kernel_params, hashing, frac, trials, seed, n_jobs):
    """Hashed k-NN (similarity votes, threshold chosen on the training sub-selection)."""
    out = {"f1": [], "precision": [], "recall": [], "n_evaluations": []}
    for t in range(trials):
        rng = np.random.RandomState(seed + 1000 * t)
        i_tr = np.sort(rng.choice(len(X_tr), int(round(frac * len(X_tr))), replace=False))
        i_te = np.sort(rng.choice(len(X_te), int(round(frac * len(X_te))), replace=False))
        clf = KernelKNNClassifier(
            "path", kernel_params=kernel_params, n_neighbors=8, hashing=hashing, normalize=True,
            weights="similarity", threshold="auto", n_tables=4, probe=0,
            n_jobs=n_jobs, random_state=seed + t,
        ).fit([X_tr[i] for i in i_tr], y_tr[i_tr])
        pred = clf.predict([X_te[i] for i in i_te])
        s = positive_class_scores(y_te[i_te], pred)
        for k in ("f1", "precision", "recall"):
            out[k].append(s[k])
        out["n_evaluations"].append(int(clf.n_fit_evaluations_ + clf.n_evaluations_))
    return {
        "f1": stats(out["f1"]), "precision": stats(out["precision"]),
        "recall": stats(out["recall"]), "raw": out,
    }


def cell(r: dict) -> str:
    f, p, rc = r["f1"], r["precision"], r["recall"]
    return f"{f['mean']:.1f} ± {f['sd']:.1f} ({p['mean']:.1f}, {rc['mean']:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pos-rate", type=float, default=0.0)
    ap.add_argument("--pool-size", type=int, default=10**9)
    ap.add_argument("--alpha", type=int, default=10)
    ap.add_argument("--alpha-550", type=int, default=5, help="α for β = 550 (cost)")
    ap.add_argument("--betas", default="25,100,550")
    ap.add_argument("--pr-beta", type=int, default=1000)
    ap.add_argument("--fractions", default="1.0,0.8,0.5,0.3")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--node-mismatch", type=float, default=0.9)
    ap.add_argument("--table6-train", type=int, default=2000)
    ap.add_argument("--table6-test", type=int, default=3000)
    ap.add_argument("--out", default=str(RESULTS / "npk_tables"))
    args = ap.parse_args()
    t_start = time.perf_counter()

    train, test = load_interactions(split="train"), load_interactions(split="test")
    rng = np.random.RandomState(args.seed)
    i_tr, i_te = pool(train, args.pos_rate, args.pool_size, rng), pool(test, args.pos_rate, args.pool_size, rng)
    X_tr = [train.paths[i] for i in i_tr]
    y_tr = np.asarray(train.labels)[i_tr]
    X_te = [test.paths[i] for i in i_te]
    y_te = np.asarray(test.labels)[i_te]
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    log(f"pools: train {len(X_tr)} ({int(y_tr.sum())} pos), test {len(X_te)} ({int(y_te.sum())} pos)")

    pk_params = {"lam": 0.8, "node_mismatch": args.node_mismatch}
    models = {}
    configs = [(f"beta={b}", int(b), "neighbourhood") for b in args.betas.split(",")]
    configs.append((f"PR beta={args.pr_beta}", args.pr_beta, "random"))
    for name, beta, sampling in configs:
        alpha = args.alpha_550 if beta >= 550 and sampling != "random" else args.alpha
        t0 = time.perf_counter()
        learner = NonstationaryLearner(
            "path", pk_params, alpha=alpha, beta=beta, sampling=sampling,
            hashing="random-knn", n_jobs=args.n_jobs, random_state=args.seed, progress=False,
        ).fit(X_tr, y_tr)
        models[name] = {
            "alpha": alpha, "beta": beta, "sampling": sampling,
            "zeroed": learner.ignored_labels_, "n_labels": len(learner.labels_),
            "n_evaluations": learner.n_evaluations_, "N2": len(X_tr) ** 2,
            "seconds": round(time.perf_counter() - t0, 1),
            "kernel_params": learner.kernel_params_(),
        }
        log(name, models[name]["zeroed"], models[name]["seconds"], "s")

    primary = f"beta={max(int(b) for b in args.betas.split(','))}"
    fractions = [float(f) for f in args.fractions.split(",")]
    table2 = {}
    for hashing in ("random-knn", "klsh"):
        for frac in fractions:
            key = f"{hashing} {int(100 * frac)}%"
            table2[key] = {
                "PK": evaluate(X_tr, y_tr, X_te, y_te, pk_params, hashing, frac,
                               args.trials, args.seed, args.n_jobs),
                "NPK": evaluate(X_tr, y_tr, X_te, y_te, models[primary]["kernel_params"], hashing,
                                frac, args.trials, args.seed, args.n_jobs),
            }
            log(key, cell(table2[key]["PK"]), cell(table2[key]["NPK"]))
    table34 = {}
    for name in models:
        table34[name] = evaluate(X_tr, y_tr, X_te, y_te, models[name]["kernel_params"],
                                 "random-knn", 1.0, args.trials, args.seed, args.n_jobs)
        log(name, cell(table34[name]))

    from structkernels.experiments.baselines import baselines_table, format_table

    t0 = time.perf_counter()
    table6 = baselines_table(
        train, test, pk_params, models[primary]["kernel_params"], n_train=args.table6_train,
        n_test=args.table6_test, seeds=range(args.seed, args.seed + args.trials),
        n_jobs=args.n_jobs, hash_settings={"n_tables": 4, "probe": 0},
    )
    table6["seconds"] = round(time.perf_counter() - t0, 1)
    table6["load_average"] = os.getloadavg()
    log(format_table(table6))

    result = {
        "benchmark": "PK vs NPK, Tables 2-4 shape (Garg et al. 2018)",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "n_jobs": args.n_jobs},
        "protocol": {
            "pos_rate": args.pos_rate, "pool_size": args.pool_size,
            "train_pool": len(X_tr), "train_pool_positive": int(y_tr.sum()),
            "test_pool": len(X_te), "test_pool_positive": int(y_te.sum()),
            "alpha": args.alpha, "alpha_550": args.alpha_550, "trials": args.trials,
            "n_neighbors": 8, "lam": 0.8, "node_mismatch": args.node_mismatch,
            "seed": args.seed, "primary_model": primary,
        },
        "models": models,
        "table2": table2,
        "table3_4": table34,
        "table6": table6,
        "load_average": os.getloadavg(),
        "paper": PAPER,
        "seconds": round(time.perf_counter() - t_start, 1),
    }
    FsPath(args.out).parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(args.out + ".json") as fh:
        fh.write(json.dumps(result, indent=1) + "\n")
    with atomic_open(args.out + ".md") as fh:
        fh.write(markdown(result) + "\n")
    print(json.dumps({k: result[k] for k in ("protocol", "seconds")}, indent=1))


def markdown(r: dict) -> str:
    p = r["protocol"]
    lines = [
        "# PK vs NPK on the shipped Bio-AMR interaction candidates (Tables 2-4 shape)",
        "",
        f"Pools: train {p['train_pool']} candidates ({p['train_pool_positive']} positive), "
        f"test {p['test_pool']} ({p['test_pool_positive']} positive); "
        + (f"all positives plus random negatives to {100 * p['pos_rate']:.0f}% positive."
           if p["pos_rate"] > 0 else "natural positive rate."),
        f"k-NN k = {p['n_neighbors']}, λ = {p['lam']}, cosine-normalised path kernel; "
        f"{p['trials']} trials per cell (mean ± sd of F1; mean precision, recall in brackets). "
        f"NPK = σ learned with {p['primary_model']} (α = {p['alpha_550']}).",
        "",
        "## Table 2: PK vs NPK, both hashes, data sub-selections",
        "",
        "| hashing | sub-selection | PK F1 (P, R) | NPK F1 (P, R) |",
        "|---|---|---|---|",
    ]
    for key, v in r["table2"].items():
        h, frac = key.rsplit(" ", 1)
        lines.append(f"| {h} | {frac} | {cell(v['PK'])} | {cell(v['NPK'])} |")
    lines += [
        "",
        "## Tables 3(a) / 4(b): sampling rate β and the pure-random baseline (random k-NN hashing, 100%)",
        "",
        "| model | α | zeroed labels | learning evaluations (% of N²) | learning s | F1 (P, R) |",
        "|---|---|---|---|---|---|",
    ]
    for name, m in r["models"].items():
        lines.append(
            f"| NPK {name} | {m['alpha']} | {len(m['zeroed'])}/{m['n_labels']}: "
            f"{', '.join(m['zeroed'])} | {m['n_evaluations']:,} "
            f"({100 * m['n_evaluations'] / m['N2']:.1f}%) | {m['seconds']} | "
            f"{cell(r['table3_4'][name])} |"
        )
    pk = r["table2"].get("random-knn 100%", {}).get("PK")
    if pk:
        lines.append(f"| PK | - | - | - | - | {cell(pk)} |")
    lines += [
        "",
        "Paper (BioNLP, Table 2a / 3a / 4b): PK 42.4, NPK β=550 47.2, β=100 47.3, β=25 48.4, "
        "PR β=1000 42.4, PR β=5000 43.7.",
        "",
        f"Total time {r['seconds']:.0f} s on {r['machine']['cpus']} CPUs (n_jobs = "
        f"{r['machine']['n_jobs']}).",
    ]
    t6 = r.get("table6")
    if t6:
        from structkernels.experiments.baselines import format_table

        lines += [
            "",
            f"Table 6 analogue: {t6['n_train']:,} training / {t6['n_test']:,} test sub-samples, "
            f"the same for every model, mean ± sd over seeds {t6['seeds']} "
            f"(load average {t6['load_average']}):",
            "",
            "```text",
            format_table(t6),
            "```",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
