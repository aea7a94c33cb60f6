"""The consumers of kernel values, timed in this tree against a baseline tree, same run.

Every consumer that now reads kernel values through the engine's kernel-access layer
(``engine.source``, ``engine.parallel``) is timed on the shipped Bio-AMR paths: the Gram
engine, the exact k-NN graph (``map_blocks`` with a top-k reduce), scattered pair values of
the σ trials (``KernelSource.pairs``), a σ learner fit (trials, leave-one-out bands), the
SRK Gram stack and the tiled HSIC of the plugin. Each measurement runs in a fresh process,
alternating the two trees (A B B A ...), and the JSON gives each tree's median seconds and
the ratio ``this / baseline`` (below 1: faster) of the medians and of the minima (the run
least disturbed by the machine), with the load average around the run.

Usage::

    python benchmarks/bench_kernel_access.py --baseline ../structkernels-before --rounds 3 \\
        --out benchmarks/results/bench_kernel_access.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _report import report

HERE = Path(__file__).resolve().parents[1]

#: One measurement: prints the seconds of the timed part (imports and data outside it).
CASES = {
    "knn_graph exact, 6,000 paths": """
import time, numpy as np
from structkernels.datasets import load_interactions
from structkernels import knn_graph, kernel, Normalized
X = load_interactions(split="train").paths[:6000]
k = Normalized(kernel("path", lam=0.8, node_mismatch=0.9))
knn_graph(X[:300], k, k=4, n_jobs=2)
t = time.perf_counter(); g = knn_graph(X, k, k=4, n_jobs=2); print(time.perf_counter() - t)
""",
    "gram, 3,000 paths": """
import time, numpy as np
from structkernels.datasets import load_interactions
from structkernels import gram, kernel, Normalized
X = load_interactions(split="train").paths[:3000]
k = Normalized(kernel("path", lam=0.8, node_mismatch=0.9))
gram(k, X[:200], n_jobs=2)
t = time.perf_counter(); gram(k, X, n_jobs=2); print(time.perf_counter() - t)
""",
    "σ trial pairs, 400,000 pairs": """
import time, numpy as np
from structkernels.datasets import load_interactions
from structkernels import kernel
from structkernels.engine.source import KernelSource
X = load_interactions(split="train").paths[:3000]
k = kernel("path", lam=0.8, node_mismatch=0.9)
Xe = k.check_input(X)
rng = np.random.default_rng(0)
lo = rng.integers(0, 2999, 400_000); hi = lo + 1 + rng.integers(0, 2999 - lo)
KernelSource(k, Xe, checked=True).pairs(lo[:1000], hi[:1000], n_jobs=2)
t = time.perf_counter(); KernelSource(k, Xe, checked=True).pairs(lo, hi, n_jobs=2); print(time.perf_counter() - t)
""",
    "σ learner fit, 6,000 paths": """
import time, numpy as np
from structkernels.datasets import load_interactions
from structkernels import NonstationaryLearner
d = load_interactions(split="train")
X, y = d.paths[:6000], np.asarray(d.labels[:6000])
t = time.perf_counter()
NonstationaryLearner(n_iter=1, random_state=0, n_jobs=2, progress=False).fit(X, y)
print(time.perf_counter() - t)
""",
    "SRK stack, kb-srk 1,000 pairs": """
import time, numpy as np
from structkernels.kernels.srk.common import srk_gram_stack
from structkernels.kernels.srk.kb import KbSRK
rng = np.random.default_rng(0)
words = [f"w{i}" for i in range(40)]
X = [(tuple(rng.choice(words, 12)), tuple(rng.choice(words, 12))) for _ in range(1000)]
srk_gram_stack(KbSRK(k=1, kmax=3), X[:20], n_jobs=2)
t = time.perf_counter(); srk_gram_stack(KbSRK(k=1, kmax=3), X, n_jobs=2); print(time.perf_counter() - t)
""",
    "HSIC tiled, n = 12,000": """
import time, numpy as np
from structkernels_hsic import HSIC
rng = np.random.default_rng(0)
x = rng.normal(size=(12_000, 3)); y = x[:, :1] + rng.normal(size=(12_000, 1))
HSIC(n_jobs=2).fit(x[:500], y[:500])
t = time.perf_counter(); HSIC(n_jobs=2).fit(x, y); print(time.perf_counter() - t)
""",
}


def _run(tree: Path, code: str) -> float:
    env = dict(os.environ, STRUCTKERNELS_PROGRESS="0",
               PYTHONPATH=os.pathsep.join([str(tree), str(tree / "plugins" / "structkernels-hsic")]))
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="a checkout of the baseline version")
    ap.add_argument("--rounds", type=int, default=3, help="measurements per tree and case")
    ap.add_argument("--cases", default=";".join(CASES), help="case names, separated by ';'")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args(argv)
    base = Path(args.baseline).resolve()
    doc: dict = {"baseline": str(base), "this": str(HERE), "rounds": args.rounds,
                 "load_before": os.getloadavg(), "cases": {}}
    for name in [c for c in args.cases.split(";") if c]:
        code = CASES[name]
        times: dict[str, list[float]] = {"this": [], "baseline": []}
        for r in range(args.rounds):
            order = ("this", "baseline") if r % 2 == 0 else ("baseline", "this")
            for which in order:
                times[which].append(_run(HERE if which == "this" else base, code))
        med = {k: statistics.median(v) for k, v in times.items()}
        low = {k: min(v) for k, v in times.items()}
        doc["cases"][name] = {"seconds": times, "median": med, "min": low,
                              "ratio_this_over_baseline": med["this"] / med["baseline"],
                              "ratio_of_minima": low["this"] / low["baseline"]}
        print(f"{name}: {med['this']:.3f} s vs {med['baseline']:.3f} s "
              f"({med['this'] / med['baseline']:.3f})", file=sys.stderr)
    doc["load_after"] = os.getloadavg()
    doc["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    report(doc, args.out)


if __name__ == "__main__":
    main()
