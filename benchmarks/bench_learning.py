"""Cost of learning σ (Algorithm 1) against N and β on the Bio-AMR paths; prints JSON.

For each training size N (random sub-samples of the shipped training half,
fixed seed; ``all`` is every record of the shipped dataset, both halves,
47,552 paths with their labels as shipped) and each β, the nonstationary
learner is fitted with α trials per label and the path kernel (λ = 0.8,
cosine-normalised, random k-NN hashing for the global graph).  Reported per
run: seconds, kernel evaluations (global graph and sampled subsets), the
evaluations the same trials cost without reuse (each trial's subset Gram
computed from scratch, the σ_t = 0 block in full: ``n_evaluations_from_scratch``,
what the learner made before values were reused and the σ_t = 0 block
pruned; the subsets and σ are the same), the mean sampled-subset size |a|,
and the ratio of evaluations to N² and to N (N + 1) / 2 -- the evaluations of
the exact loss on the full Gram matrix, the baseline Algorithm 1 avoids.  The
kernel's evaluation rate is measured in the same run (an exact Gram of 2,000
paths) to convert the baseline into seconds.

Each (N, β) runs with the default budget ``max_evaluations="gram"`` (never
more than one Gram matrix) and, for N up to ``--unbudgeted-max``, also without
it (``max_evaluations=None``: Algorithm 1 as written), so the table shows what
the budget saves and how many sampled subsets it cut.  The load average is
recorded before and after every timing.  From the budgeted runs the script
fits ``evaluations ~ N^a`` and ``seconds ~ N^b`` per β (least squares on
log-log) and projects both to ``--project-n`` (default the paper's scale,
N = 50,000, at β = 550; the paper reports 12 h on 16 cores there).  Quick
check::

    nice python benchmarks/bench_learning.py --sizes 2000,8000 --betas 100 --alpha 2

Usage (the full grid, a few minutes on 2 idle cores)::

    nice python benchmarks/bench_learning.py --sizes 2000,8000,22632,all --betas 100,550 \
        --n-jobs 2 > benchmarks/results/npk_learning_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

import structkernels as sk
from structkernels.datasets import load_interactions
from structkernels.npk.learner import NonstationaryLearner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,8000,22632,all",
                    help="training sizes (sub-samples of the training half); 'all': every record")
    ap.add_argument("--betas", default="100,550")
    ap.add_argument("--node-mismatch", type=float, default=0.9)
    ap.add_argument("--unbudgeted-max", type=int, default=8000,
                    help="also run without the budget up to this N")
    ap.add_argument("--alpha", type=int, default=3)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--project-n", type=int, default=50_000)
    ap.add_argument("--project-beta", type=int, default=550)
    args = ap.parse_args()

    load_start = os.getloadavg()
    data = load_interactions()
    train = data.split("train")
    paths, y = list(train.paths), np.asarray(train.labels)
    all_paths, all_y = list(data.paths), np.asarray(data.labels)
    rng = np.random.RandomState(args.seed)
    order = rng.permutation(len(paths))

    params = {"lam": 0.8, "node_mismatch": args.node_mismatch}
    kern = sk.kernel("path", **params)
    probe = [paths[i] for i in order[:2000]]
    sk.gram(kern, probe[:50], normalize=True, n_jobs=args.n_jobs)  # compiled code loaded
    t0 = time.perf_counter()
    _, info = sk.gram(kern, probe, normalize=True, n_jobs=args.n_jobs, return_info=True)
    rate = info.n_evaluations / (time.perf_counter() - t0)

    runs = []
    for size in args.sizes.split(","):
        if size.strip() == "all":
            n, X, yn, sample = len(all_paths), all_paths, all_y, "all records (both halves)"
        else:
            n = min(int(size), len(paths))
            idx = np.sort(order[:n])
            X, yn, sample = [paths[i] for i in idx], y[idx], "training half"
        for beta, budget in [(int(b), m) for b in args.betas.split(",")
                             for m in (["gram", None] if n <= args.unbudgeted_max else ["gram"])]:
            learner = NonstationaryLearner(
                "path", params, alpha=args.alpha, beta=beta, hashing="random-knn",
                max_evaluations=budget, n_jobs=args.n_jobs, random_state=args.seed,
                progress=False,
            )
            load_before = os.getloadavg()
            t0 = time.perf_counter()
            learner.fit(X, yn)
            sec = time.perf_counter() - t0
            full = n * (n + 1) // 2
            run = {
                "N": n,
                "sample": sample,
                "beta": beta,
                "alpha": args.alpha,
                "max_evaluations": budget,
                "n_trimmed": learner.n_trimmed_,
                "load_average_before": load_before,
                "load_average_after": os.getloadavg(),
                "labels": len(learner.labels_),
                "zeroed": learner.ignored_labels_,
                "seconds": round(sec, 2),
                "n_evaluations": learner.n_evaluations_,
                "n_evaluations_graph": learner.n_evaluations_graph_,
                "n_evaluations_subsets": learner.n_evaluations_ - learner.n_evaluations_graph_,
                "n_evaluations_from_scratch": learner.n_evaluations_ + learner.n_evaluations_reused_,
                "ratio_to_full_gram_from_scratch":
                    (learner.n_evaluations_ + learner.n_evaluations_reused_) / full,
                "mean_subset_size": round(float(np.mean(learner.subset_sizes_)), 1),
                "N2": n * n,
                "evaluations_over_N2": learner.n_evaluations_ / (n * n),
                "baseline_full_gram_evaluations": full,
                "ratio_to_full_gram": learner.n_evaluations_ / full,
                "baseline_full_gram_seconds_est": round(full / rate, 1),
            }
            runs.append(run)
            print(json.dumps(run), file=sys.stderr)
    # growth of evaluations and seconds ~ N**a per beta (least squares on log-log), and the
    # projection to the paper's scale
    fits, projection = {}, {}
    for beta in sorted({r["beta"] for r in runs}):
        rs = [r for r in runs if r["beta"] == beta and r["max_evaluations"] == "gram"]
        if len(rs) < 2:
            continue
        logn = np.log([r["N"] for r in rs])
        a, b = np.polyfit(logn, np.log([r["n_evaluations"] for r in rs]), 1)
        c, d = np.polyfit(logn, np.log([max(r["seconds"], 1e-3) for r in rs]), 1)
        fits[str(beta)] = {"evaluations": round(float(a), 3), "seconds": round(float(c), 3)}
        if beta == args.project_beta:
            pn = args.project_n
            evals = float(np.exp(b) * pn ** a)
            full = pn * (pn + 1) // 2
            projection = {
                "N": pn,
                "beta": beta,
                "alpha": args.alpha,
                "fitted_on_N": [r["N"] for r in rs],
                "exponent_evaluations": round(float(a), 3),
                "exponent_seconds": round(float(c), 3),
                "evaluations": round(evals),
                "ratio_to_full_gram": evals / full,
                "seconds": round(float(np.exp(d) * pn ** c), 1),
                "full_gram_evaluations": full,
                "full_gram_seconds_est": round(full / rate, 1),
                "paper": "about 12 h on a 16-core machine (Garg et al. 2018, Sec. 7: N about "
                         "50k, beta = 550, alpha = 10, 61 labels)",
                "note": "extrapolated from the budgeted runs above at their alpha; the paper's "
                        "alpha = 10 multiplies the trials by 10 / alpha",
            }
    out = {
        "benchmark": "nonstationary sigma learner cost (Algorithm 1)",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "n_jobs": args.n_jobs},
        "kernel": f"path, {params}, cosine-normalised",
        "kernel_evaluations_per_second": round(rate),
        "load_average_start_end": [load_start, os.getloadavg()],
        "runs": runs,
        "growth_exponents": fits,
        "projection": projection,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
