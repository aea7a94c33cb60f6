"""Speed of kb-SRK (Algorithm 2) on real MSRP re-writings, against the Eq. 4 direct sum.

Prints JSON: for k = 1..4, kb-SRK evaluations per second over a block of
real MSRP pairs, the direct sum of Eq. 4 (Algorithm 1 on every quadruple of
k-grams) on a subset of the same pairs in the same run, their ratio, and a
check that both agree; the all-windows pass (K_1..K_4 together); and the
time of the full MSRP train+test Gram for kmax = 4 with ``--n-jobs``
workers (measured with ``--full-gram``, otherwise extrapolated from the
all-windows rate).

``abba`` compares the current implementation with an earlier one (the
module ``structkernels/kernels/kb_srk.py`` of ``--baseline-ref``, read with
``git show`` and imported from a temporary directory) on the same block of
MSRP pairs, in the order old, new, new, old per round; the ratio of the
minima over rounds is meaningful on a loaded machine where the absolute
rates are not.  It also checks that both give the same values and projects
the full MSRP Gram at ``--n-jobs`` from ``--quiet-rate`` (a single-core
all-windows rate of the baseline measured on a quiet machine) times the
ratio, assuming perfect scaling over workers.

Usage::

    python benchmarks/bench_srk.py --data ../shared/data [--full-gram]
    python benchmarks/bench_srk.py --abba-only --n 150 --rounds 3
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _report import report

from structkernels.datasets.rewriting import load_msrp
from structkernels.kernels.srk.common import srk_gram_stack
from structkernels.kernels.srk.kb import KbSRK, kb_srk_direct, kb_srk_stack
from structkernels.text.tokenize import TextPipeline

#: the last kb-SRK before the single-grid-pass join (one grid scan per window size)
BASELINE_REF = "9978cc000a3ca10e17da98e3ff28f2a77ca60d17"


def load_baseline(ref: str, tmp: str):
    """Import ``structkernels/kernels/kb_srk.py`` as it was at git ``ref`` (a module object)."""
    root = Path(__file__).resolve().parent.parent
    try:
        src = subprocess.run(
            ["git", "show", f"{ref}:structkernels/kernels/kb_srk.py"], cwd=root,
            capture_output=True, text=True, check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"bench_srk: cannot read the baseline kb_srk.py at {ref!r} with git "
                         f"in {root}: {exc}") from exc
    # a baseline older than the package layout: point its imports at today's modules
    src = src.replace("structkernels.kernels._srk_common", "structkernels.kernels.srk.common")
    src = src.replace("from structkernels.kernel import", "from structkernels.kernels.base import")
    path = Path(tmp) / "kb_srk_baseline.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("kb_srk_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kb_srk_baseline"] = mod
    spec.loader.exec_module(mod)
    return mod


def abba(A, B, ref: str, rounds: int, kmax: int, quiet_rate: float, n_full: int,
         n_jobs: int) -> dict:
    """Old vs new kb-SRK (windows 1..kmax) on the block A x B, ABBA order, min over rounds."""
    with tempfile.TemporaryDirectory() as tmp:
        old = load_baseline(ref, tmp)
        new_f = kb_srk_stack
        old_f = old.kb_srk_stack
        S_old = old_f(A, B, 1, kmax, 1.0)  # also compiles the baseline
        S_new = new_f(A, B, 1, kmax, 1.0)
        S_old7 = old_f(A[:20], B[:20], 1, kmax, 0.7)
        S_new7 = new_f(A[:20], B[:20], 1, kmax, 0.7)
        rel = max(
            float(np.max(np.abs(S_old - S_new) / np.maximum(np.abs(S_old), 1e-300))),
            float(np.max(np.abs(S_old7 - S_new7) / np.maximum(np.abs(S_old7), 1e-300))),
        )
        t_old: list[float] = []
        t_new: list[float] = []
        load_before = [round(v, 2) for v in os.getloadavg()]
        for _ in range(rounds):
            for f, acc in ((old_f, t_old), (new_f, t_new), (new_f, t_new), (old_f, t_old)):
                t0 = time.perf_counter()
                f(A, B, 1, kmax, 1.0)
                acc.append(time.perf_counter() - t0)
        load_after = [round(v, 2) for v in os.getloadavg()]
    evals = len(A) * len(B)
    ratio = min(t_old) / min(t_new)
    proj_rate = quiet_rate * ratio
    return {
        "baseline_ref": ref, "windows": [1, kmax], "lam": 1.0,
        "pairs": [len(A), len(B)], "evals_per_timing": evals, "rounds": rounds,
        "order": "old,new,new,old per round", "load_average_before": load_before,
        "load_average_after": load_after,
        "old_seconds": [round(t, 4) for t in t_old], "new_seconds": [round(t, 4) for t in t_new],
        "old_evals_per_s_best": round(evals / min(t_old), 1),
        "new_evals_per_s_best": round(evals / min(t_new), 1),
        "ratio_old_over_new": round(ratio, 3),
        "max_relative_difference": rel, "agree_1e-12": bool(rel <= 1e-12),
        "projection": {
            "quiet_single_core_rate_baseline": quiet_rate,
            "projected_single_core_rate": round(proj_rate, 1),
            "full_msrp_pair_evaluations": n_full,
            "projected_seconds_one_core": round(n_full / proj_rate, 1),
            "n_jobs": n_jobs,
            "projected_seconds_n_jobs_perfect_scaling": round(n_full / proj_rate / n_jobs, 1),
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--n", type=int, default=150, help="block side: n x n Algorithm 2 evaluations")
    ap.add_argument("--n-direct", type=int, default=30, help="pairs for the Eq. 4 direct sum")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--full-gram", action="store_true", help="time the full MSRP Gram (minutes)")
    ap.add_argument("--random-state", type=int, default=0)
    ap.add_argument("--out", default=None, help="also write the JSON here")
    ap.add_argument("--abba-only", action="store_true",
                    help="only the old-vs-new ABBA comparison (skip per-k and direct sums)")
    ap.add_argument("--no-abba", action="store_true", help="skip the ABBA comparison")
    ap.add_argument("--baseline-ref", default=BASELINE_REF,
                    help="git revision of the baseline kb_srk.py for the ABBA comparison")
    ap.add_argument("--rounds", type=int, default=3, help="ABBA rounds (4 timings each)")
    ap.add_argument("--quiet-rate", type=float, default=21281.0,
                    help="baseline single-core all-windows evals/s on a quiet machine "
                         "(for the projection)")
    args = ap.parse_args()
    data = Path(args.data)
    pipe = TextPipeline()
    train = load_msrp(data / "msrp/msr_paraphrase_train.txt").tokenized(pipe)
    test = load_msrp(data / "msrp/msr_paraphrase_test.txt").tokenized(pipe)
    rng = np.random.default_rng(args.random_state)
    idx = rng.choice(len(train), size=2 * args.n, replace=False)
    A = [train[i] for i in idx[: args.n]]
    B = [train[i] for i in idx[args.n:]]
    kb_srk_stack(A[:2], B[:2], 1, 4, 1.0)  # compile / load the numba cache
    kb_srk_direct(A[0], B[0], 1)
    out: dict = {
        "python": platform.python_version(), "cpu_count": os.cpu_count(),
        "load_average_at_start": [round(v, 2) for v in os.getloadavg()],
        "data": "MSRP train, lower-cased + Snowball stemmed",
        "mean_tokens": float(np.mean([len(s) + len(t) for s, t in train]) / 2),
        "block": [args.n, args.n], "per_k": {},
    }
    X = train + test
    n_full = len(X) * (len(X) + 1) // 2
    if not args.no_abba:
        out["abba"] = abba(A, B, args.baseline_ref, args.rounds, 4, args.quiet_rate, n_full,
                           args.n_jobs)
        print(json.dumps({"abba": out["abba"]}), flush=True)
    if args.abba_only:
        report(out, args.out, indent=2)
        return
    for k in (1, 2, 3, 4):
        t0 = time.perf_counter()
        S = kb_srk_stack(A, B, k, k, 1.0)[0]
        fast_s = time.perf_counter() - t0
        n_fast = args.n * args.n
        t0 = time.perf_counter()
        direct = [kb_srk_direct(A[i], B[i], k) for i in range(args.n_direct)]
        direct_s = time.perf_counter() - t0
        agree = bool(np.allclose(direct, [S[i, i] for i in range(args.n_direct)], rtol=1e-12))
        fast_rate = n_fast / fast_s
        direct_rate = args.n_direct / direct_s
        out["per_k"][str(k)] = {
            "alg2_evals": n_fast, "alg2_seconds": round(fast_s, 3),
            "alg2_evals_per_s": round(fast_rate, 1),
            "eq4_direct_evals": args.n_direct, "eq4_direct_seconds": round(direct_s, 3),
            "eq4_direct_evals_per_s": round(direct_rate, 2),
            "speedup_vs_eq4": round(fast_rate / direct_rate, 1), "agree": agree,
        }
        print(json.dumps({k: out["per_k"][str(k)]}), flush=True)
    t0 = time.perf_counter()
    kb_srk_stack(A, B, 1, 4, 1.0)
    all_s = time.perf_counter() - t0
    out["all_windows_k1_to_4"] = {"evals": args.n * args.n, "seconds": round(all_s, 3),
                                  "evals_per_s": round(args.n * args.n / all_s, 1)}
    full = {"n": len(X), "pair_evaluations": n_full, "n_jobs": args.n_jobs,
            "extrapolated_seconds_one_core": round(n_full * all_s / (args.n * args.n), 1)}
    if args.full_gram:
        t0 = time.perf_counter()
        srk_gram_stack(KbSRK(k=1, kmax=4), X, n_jobs=args.n_jobs, progress=True)
        full["measured_seconds"] = round(time.perf_counter() - t0, 1)
    out["full_msrp_gram_kmax4"] = full
    report(out, args.out, indent=2)


if __name__ == "__main__":
    main()
