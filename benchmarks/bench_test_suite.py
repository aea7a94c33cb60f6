"""The test suite as the README runs it (``python -m pytest -q``): its whole time, the largest
``ru_maxrss`` of every process it starts, the tests' counts, and the load average before and
after (the figure means something only on a quiet machine).

Usage::

    python benchmarks/bench_test_suite.py --out benchmarks/results/test_suite.json
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import tempfile
import time

from _report import measured, report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as folder:
        log = os.path.join(folder, "pytest.log")
        run = measured(["bash", "-c",
                        f"{sys.executable} -m pytest -q -p no:cacheprovider > {log} 2>&1"])
        tail = open(log, encoding="utf-8").read().strip().splitlines()[-1]
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|xfailed|errors?)", tail)}
    report({
        "command": "python -m pytest -q",
        "cores": os.cpu_count(), "platform": platform.platform(),
        "load_before": load_before, "load_after": os.getloadavg(),
        "counts": counts, "summary": tail, **run,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
    }, args.out)


if __name__ == "__main__":
    main()
