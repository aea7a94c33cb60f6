"""The default ``structkernels paraphrase`` run, from nothing cached, as JSON.

Runs the whole command (start-up, reading, tokenising, the kb-SRK Grams train x train and
test x train, the 5-fold CV choice of k, PR weight and C, the final SVM) on a training and a
test file, and, as the baseline in the same run, the paper's fixed setting
(``--cv 0 --kmax 4 --pr --no-trees``: the kb-SRK Grams alone, no choice); no ``--cache``, so every Gram is
computed.  Each command goes in a fresh process that waits for it: its seconds and the
largest ``ru_maxrss`` of every process it started.  Prints the figures, the choice and the
load average before and after.

Usage::

    python benchmarks/bench_paraphrase_default.py --train msr_paraphrase_train.txt \\
        --test msr_paraphrase_test.txt --out benchmarks/results/paraphrase_default_msrp.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

from _report import measured, report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", action="append", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    base = [sys.executable, "-m", "structkernels", "--quiet", "paraphrase",
            *(a for f in args.train for a in ("--train", f)), "--test", args.test,
            "--n-jobs", str(args.n_jobs), "--json"]
    runs = {}
    load = {"before": os.getloadavg()}
    for name, extra in (("default", []),
                        ("fixed_paper_setting", ["--cv", "0", "--pr", "--no-trees"])):
        r = measured([*base, *extra])
        if r["rc"] != 0:
            raise SystemExit(f"{name}: exit {r['rc']}: {r['stderr']}")
        result = json.loads(r["stdout"])
        runs[name] = {"seconds": round(r["seconds"], 1), "max_rss_mib": round(r["max_rss_mib"]),
                      "accuracy_pct": result.get("accuracy"), "f1_pct": result.get("f1"),
                      "setting": {k: result[k] for k in ("kmax", "pr", "trees", "tfkld", "C")}}
        if "cv" in result:  # the choice against the best without the pair trees, fold by fold
            rows = result["cv"]["settings"]
            chosen = result["cv"]["chosen"]
            runs[name]["cv_chosen"] = next(
                r for r in rows if all(r[k] == v for k, v in chosen.items()))
            runs[name]["cv_best_without_trees"] = max(
                (r for r in rows if r["trees"] == 0), key=lambda r: r["cv_accuracy_pct"])
        print(name, runs[name], file=sys.stderr, flush=True)
    load["after"] = os.getloadavg()
    report({
        "what": "structkernels paraphrase from nothing cached: the default (5-fold CV choice) "
                "against the paper's fixed setting, the same Grams",
        "train": args.train, "test": args.test, "n_jobs": args.n_jobs,
        "runs": runs,
        "ratio_default_to_fixed": round(runs["default"]["seconds"]
                                        / runs["fixed_paper_setting"]["seconds"], 3),
        "load_average": load, "cpus": os.cpu_count(), "python": platform.python_version(),
    }, args.out)


if __name__ == "__main__":
    main()
