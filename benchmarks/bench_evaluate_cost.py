"""What the default ``structkernels evaluate`` of a PPI corpus costs, from empty caches.

Runs ``structkernels evaluate CORPUS-train.xml CORPUS-test.xml --cv 10 --json --quiet`` as
a user would (a fresh process, an empty ``STRUCTKERNELS_CACHE``: parses, Grams, σ and
compiled kernels all computed), once per memory budget given (``--budgets``; ``default``
is the machine's own, any other value is put in ``$STRUCTKERNELS_MEMORY_BUDGET``).  A
budget of ``2G`` leaves room for one Gram's fold slices at a time, so the model fits run
one after another as they did before the fits were spread over the workers: the baseline
of the same run.  Each run records its wall seconds, the largest ``ru_maxrss`` of every
process the command started (``RUSAGE_CHILDREN`` of a fresh process that waits for it: not
a sample), the load average every 10 s, the command's own ``step_seconds`` and every
model's row; the document gives the ratio of each run's seconds to the first's, and
whether the F1 and the rows are the same.

Nothing else should run on the machine meanwhile: the load is in the document.

    python benchmarks/bench_evaluate_cost.py --out benchmarks/results/ppi_evaluate_cost_quiet.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from pathlib import Path

import psutil
from _report import measured, report

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"


def run(corpus: str, budget: str) -> dict:
    """One evaluation from empty caches under ``budget`` ("default": none set)."""
    with tempfile.TemporaryDirectory(prefix="bench-evaluate-") as cache:
        env = dict(os.environ, STRUCTKERNELS_CACHE=cache)
        env.pop("STRUCTKERNELS_MEMORY_BUDGET", None)
        if budget != "default":
            env["STRUCTKERNELS_MEMORY_BUDGET"] = budget
        cmd = [sys.executable, "-m", "structkernels", "evaluate",
               str(PPI / f"{corpus}-train.xml"), str(PPI / f"{corpus}-test.xml"),
               "--cv", "10", "--json", "--quiet"]
        loads = [[round(x, 2) for x in os.getloadavg()]]
        done = threading.Event()

        def sample_load() -> None:
            while not done.wait(10):
                loads.append([round(x, 2) for x in os.getloadavg()])

        sampler = threading.Thread(target=sample_load, daemon=True)
        sampler.start()
        got = measured(cmd, env)
        done.set()
        sampler.join()
        loads.append([round(x, 2) for x in os.getloadavg()])
        if got["rc"] != 0:
            raise SystemExit(f"evaluate failed ({got['rc']}): {got['stderr'].strip()}")
        result = json.loads(got["stdout"])
        grams = sum(f.stat().st_size for f in Path(cache).rglob("*.npy"))
    one_minute = [x[0] for x in loads]
    return {
        "memory_budget": budget,
        "wall_seconds": round(got["seconds"], 1),
        "seconds_reported": result["seconds"],
        "parse_seconds": result.get("parse_seconds"),
        "step_seconds": result.get("step_seconds"),
        "largest_process_max_rss_mib": round(got["max_rss_mib"]),
        "gram_cache_gib": round(grams / 2**30, 2),
        "load_1min": {"min": min(one_minute), "max": max(one_minute),
                      "samples": len(one_minute)},
        "pairs": result["pairs"],
        "f1": {m: r["f1"] for m, r in result["models"].items()},
        "roc_auc": {m: r["roc_auc"] for m, r in result["models"].items()},
        "models": result["models"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="BioInfer",
                    choices=["BioInfer", "HPRD50", "IEPA", "LLL"])
    ap.add_argument("--budgets", nargs="+", default=["default", "2G"],
                    help="memory budgets, one run each; 'default': the machine's own")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    runs = [run(args.corpus, b) for b in args.budgets]
    first = runs[0]
    for r in runs:
        r["seconds_ratio_to_first"] = round(r["wall_seconds"] / first["wall_seconds"], 3)
        r["same_f1_as_first"] = r["f1"] == first["f1"]
        r["same_rows_as_first"] = r["models"] == first["models"]
    doc = {
        "benchmark": "evaluate-cost",
        "command": f"STRUCTKERNELS_CACHE=<empty folder> structkernels evaluate "
                   f"datasets/ppi/{args.corpus}-train.xml datasets/ppi/{args.corpus}-test.xml "
                   "--cv 10 --json --quiet",
        "corpus": args.corpus,
        "cores": len(os.sched_getaffinity(0)),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "target_seconds": 600,
        "runs": runs,
    }
    report(doc, args.out)


if __name__ == "__main__":
    main()
