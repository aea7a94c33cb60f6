"""The first path Gram in a fresh process: compiling vs reading the compiled-kernel cache.

Issue row: "first path Gram in a fresh install: 7.2 s of numba compilation; the cache is written
into site-packages; goal <= 1 s after the first run on the machine, cache in the user cache
folder".  In one run, fresh processes with ``$STRUCTKERNELS_CACHE`` set to an empty folder:
the first computes a small path Gram (numba compiles and writes its cache there), then
warm, cold, cold, warm (ABBA; cold = a new empty folder each time).  Prints JSON: seconds of
the imports (structkernels and the kernel's modules, scikit-learn and numba among them) and
of the first Gram call (compiling, or reading the compiled code), ``ratio = warm / cold`` of
the first Gram, how long the whole process took, where the cache was written, and the load
average.

    python benchmarks/bench_numba_cache.py --out benchmarks/results/bench_numba_cache.json
"""

from __future__ import annotations

import argparse
import os
import tempfile

from _report import child_json, report

_CHILD = """
import json, time
t0 = time.perf_counter()
import structkernels as sk
from structkernels import Path
k = sk.kernel("path", lam=0.8)  # imports the kernel's modules: scikit-learn, numba
t1 = time.perf_counter()
ps = [Path([(None, "bind"), ("ARG0", "protein"), ("ARG1", "enzyme")]),
      Path([(None, "bind"), ("ARG0", "kinase")])] * 20
K = k.gram(ps, n_jobs=1)
t2 = time.perf_counter()
from structkernels.utils import numba_cache_dir
print(json.dumps({"imports_s": t1 - t0, "first_gram_s": t2 - t1, "cache_dir": numba_cache_dir()}))
"""


def child(folder: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["STRUCTKERNELS_CACHE"] = folder
    return child_json(_CHILD, env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the JSON here too")
    args = ap.parse_args()
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as warm:
        first = child(warm)
        files = sorted(os.path.relpath(os.path.join(r, f), warm)
                       for r, _, fs in os.walk(warm) for f in fs)
        runs: dict[str, list] = {"warm": [], "cold": []}
        for name in ("warm", "cold", "cold", "warm"):
            if name == "warm":
                runs[name].append(child(warm))
            else:
                with tempfile.TemporaryDirectory() as cold:
                    runs[name].append(child(cold))
    mean = {k: sum(r["first_gram_s"] for r in v) / len(v) for k, v in runs.items()}
    process = {k: sum(r["process_s"] for r in v) / len(v) for k, v in runs.items()}
    report({
        "benchmark": "bench_numba_cache",
        "what": "first path Gram (40 paths) in a fresh process, compiled-kernel cache warm vs cold",
        "order": "first (empty cache), then warm, cold, cold, warm",
        "first_run": first,
        "cache_written_under": "user_cache_dir('numba') = $STRUCTKERNELS_CACHE/numba",
        "cache_files": len(files),
        "cache_files_in_the_package": [f for f in files if "site-packages" in f],
        "runs": runs,
        "mean_first_gram_s": mean,
        "ratio_warm_to_cold": mean["warm"] / mean["cold"],
        "mean_process_s": process,
        "goal": "first Gram <= 1 s after the first run on the machine",
        "goal_met": mean["warm"] <= 1.0,
        "load_average_before_after": [load0, os.getloadavg()],
    }, args.out)


if __name__ == "__main__":
    main()
