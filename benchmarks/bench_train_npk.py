"""``structkernels train-npk`` as the README writes it: wall time and peak memory, default n_jobs.

Issue row: "train-npk as the README writes it (default --n-jobs): 185 s wall, 1.9 GB peak;
goal <= 60 s on 2 cores, n_jobs defaulting to the cores the process may use, peak memory
<= 1 GB".  In one run: one warm-up run (fills the dataset and compiled-kernel caches, as any
machine's first run does), then the command with its default ``--n-jobs`` and with
``--n-jobs 1`` (A, B, and A again with ``--repeat 2``), each in a fresh process.  Prints JSON:
wall seconds and peak resident memory of each run (``ru_maxrss`` of that process alone),
``ratio = serial / default`` (what the default workers give), the cores the process may use,
whether the figures are the same in every run, and the load average before and after.

    python benchmarks/bench_train_npk.py --out benchmarks/results/bench_train_npk.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from _report import report

from structkernels.utils import available_cores

_WRAP = """
import resource, subprocess, sys, time, json
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"rc": p.returncode, "wall_s": wall, "peak_rss_bytes": rss,
                  "stdout": p.stdout, "stderr_tail": p.stderr[-2000:]}))
"""


def run(extra: list[str], folder: str) -> dict:
    cmd = [sys.executable, "-m", "structkernels", "--quiet", "train-npk", "--out",
           os.path.join(folder, "model.npk.json.gz"), *extra]
    out = subprocess.run([sys.executable, "-c", _WRAP, *cmd], capture_output=True, text=True,
                         check=True)
    doc = json.loads(out.stdout)
    if doc["rc"] != 0:
        raise SystemExit(f"train-npk failed: {doc['stderr_tail']}")
    text = doc.pop("stdout")
    doc.pop("stderr_tail")
    # the figures without the seconds columns: equal across runs
    doc["figures"] = [re.sub(r"\s+[0-9.]+$", "", line) for line in text.splitlines()
                      if "%" not in line and "seconds" not in line and "time" not in line
                      and not line.startswith(("learning:", "baselines ("))]
    m = re.search(r"learning: .*?, ([0-9.]+) s$", text, re.M)
    doc["learning_s"] = float(m.group(1)) if m else None
    m = re.search(r"^baselines \(.*?, ([0-9.]+) s$", text, re.M)
    doc["table_s"] = float(m.group(1)) if m else None
    doc["peak_rss_gb"] = doc["peak_rss_bytes"] / 1e9
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the JSON here too")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each setting after the warm-up (default: %(default)s)")
    args = ap.parse_args()
    load0 = os.getloadavg()
    order = ["default", "serial"] * args.repeat
    runs: dict[str, list] = {"default": [], "serial": []}
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        warm = run([], folder)
        print(f"warm-up run {time.perf_counter() - t:.0f} s", file=sys.stderr)
        for name in order:
            runs[name].append(run([] if name == "default" else ["--n-jobs", "1"], folder))
            print(f"{name}: {runs[name][-1]['wall_s']:.1f} s, "
                  f"{runs[name][-1]['peak_rss_gb']:.2f} GB", file=sys.stderr)
    figures = [r["figures"] for v in runs.values() for r in v] + [warm["figures"]]
    mean = {k: sum(r["wall_s"] for r in v) / len(v) for k, v in runs.items()}
    peak = max(r["peak_rss_gb"] for r in runs["default"])
    for v in [*runs.values(), [warm]]:
        for r in v:
            r.pop("figures")
    report({
        "benchmark": "bench_train_npk",
        "command": "structkernels --quiet train-npk --out model.npk.json.gz [--n-jobs 1]",
        "available_cores": available_cores(),
        "order": ["warm-up (default)", *order],
        "warm_up": warm,
        "runs": runs,
        "mean_wall_s": mean,
        "ratio_serial_to_default": mean["serial"] / mean["default"],
        "peak_rss_gb_default": peak,
        "same_figures_in_every_run": all(f == figures[0] for f in figures),
        "goal": "default run <= 60 s on 2 cores, peak memory <= 1 GB",
        "goal_met": {"wall": mean["default"] <= 60.0, "memory": peak <= 1.0},
        "load_average_before_after": [load0, os.getloadavg()],
    }, args.out)


if __name__ == "__main__":
    main()
