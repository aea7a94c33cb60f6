"""``load_interactions()`` of the shipped dataset in a fresh process: parsed vs its binary copy.

Issue row: "load_interactions() in a fresh process: 6-7 s every time; goal <= 1 s".  In one run,
fresh processes (each imports structkernels and loads the shipped 47,552 candidates) in the
order parse, cached, cached, parse (ABBA), with an empty cache folder first (the first load,
which parses and writes the copy).  Prints JSON: seconds of each (the load alone, and the
whole process), ``ratio = cached / parsed`` and the load average before/after.

    python benchmarks/bench_load.py --out benchmarks/results/bench_load.json
"""

from __future__ import annotations

import argparse
import os
import tempfile

from _report import child_json, report

_CHILD = """
import json, time
t0 = time.perf_counter()
from structkernels.datasets import load_interactions
t1 = time.perf_counter()
d = load_interactions(cache={cache})
t2 = time.perf_counter()
assert len(d) == 47552 and d.paths[123] is not None and d.records[5]["id"]
print(json.dumps({{"import_s": t1 - t0, "load_s": t2 - t1}}))
"""


def child(cache: str, env: dict) -> dict:
    return child_json(_CHILD.format(cache=cache), env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the JSON here too")
    args = ap.parse_args()
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, STRUCTKERNELS_CACHE=tmp)
        first = child("None", env)  # empty cache: parses and writes the copy
        runs: dict[str, list] = {"parsed": [], "cached": []}
        for name in ("parsed", "cached", "cached", "parsed"):
            runs[name].append(child("False" if name == "parsed" else "None", env))
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(tmp) for f in fs)
    med = {k: sum(r["load_s"] for r in v) / len(v) for k, v in runs.items()}
    report({
        "benchmark": "bench_load",
        "what": "load_interactions() of the shipped dataset (47,552 records), fresh process",
        "order": "first load (empty cache), then parsed, cached, cached, parsed",
        "first_load": first,
        "runs": runs,
        "mean_load_s": med,
        "ratio_cached_to_parsed": med["cached"] / med["parsed"],
        "goal": "cached load <= 1 s",
        "goal_met": med["cached"] <= 1.0,
        "cache_bytes": size,
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_average_before_after": [load0, os.getloadavg()],
    }, args.out)


if __name__ == "__main__":
    main()
