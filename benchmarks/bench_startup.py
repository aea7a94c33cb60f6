"""Start-up time of the command line, as JSON.

Runs ``structkernels --help`` and ``structkernels kernels`` (and, as the
baseline measured in the same run, ``python -c "import sklearn.base"``, what
every command paid before imports were made lazy) several times in fresh
processes, in ABBA order, and prints the median wall seconds, the summed
top-level ``-X importtime`` figures and the load average.

Usage::

    python benchmarks/bench_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

CASES = {
    "help": [sys.executable, "-m", "structkernels", "--help"],
    "kernels": [sys.executable, "-m", "structkernels", "kernels"],
    "baseline_import_sklearn_base": [sys.executable, "-c", "import sklearn.base"],
}


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def importtime_ms(cmd: list[str]) -> float:
    proc = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], capture_output=True, text=True)
    total = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        _, cumulative, name = line.split("|")
        if name.startswith(" ") and not name.startswith("  "):  # top level only
            try:
                total += int(cumulative)
            except ValueError:
                continue
    return total / 1000.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    load_before = os.getloadavg()
    names = list(CASES)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.repeat):
        order = names if r % 2 == 0 else names[::-1]  # ABBA
        for n in order:
            times[n].append(wall(CASES[n]))
    result = {
        "python": platform.python_version(),
        "repeat": args.repeat,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "median_seconds": {n: round(statistics.median(v), 3) for n, v in times.items()},
        "importtime_top_level_ms": {n: round(importtime_ms(c), 1) for n, c in CASES.items()},
    }
    base = result["median_seconds"]["baseline_import_sklearn_base"]
    result["ratio_to_baseline"] = {
        n: round(result["median_seconds"][n] / base, 3) for n in ("help", "kernels")
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
