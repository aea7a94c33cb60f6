"""Speed of kb-SRK (Algorithm 2) on real MSRP re-writings, against the Eq. 4 direct sum.

Prints JSON: for k = 1..4, kb-SRK evaluations per second over a block of
real MSRP pairs, the direct sum of Eq. 4 (Algorithm 1 on every quadruple of
k-grams) on a subset of the same pairs in the same run, their ratio, and a
check that both agree; the all-windows pass (K_1..K_4 together); and the
time of the full MSRP train+test Gram for kmax = 4 with ``--n-jobs``
workers (measured with ``--full-gram``, otherwise extrapolated from the
all-windows rate).

Usage::

    python benchmarks/bench_srk.py --data ../shared/data [--full-gram]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from structkernels.kernels._srk_common import srk_gram_stack
from structkernels.kernels.kb_srk import KbSRK, kb_srk_direct, kb_srk_stack
from structkernels.text.loaders import load_msrp
from structkernels.text.tokenize import TextPipeline


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--n", type=int, default=150, help="block side: n x n Algorithm 2 evaluations")
    ap.add_argument("--n-direct", type=int, default=30, help="pairs for the Eq. 4 direct sum")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--full-gram", action="store_true", help="time the full MSRP Gram (minutes)")
    ap.add_argument("--random-state", type=int, default=0)
    ap.add_argument("--out", default=None, help="also write the JSON here")
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
    X = train + test
    n_full = len(X) * (len(X) + 1) // 2
    full = {"n": len(X), "pair_evaluations": n_full, "n_jobs": args.n_jobs,
            "extrapolated_seconds_one_core": round(n_full * all_s / (args.n * args.n), 1)}
    if args.full_gram:
        t0 = time.perf_counter()
        srk_gram_stack(KbSRK(k=1, kmax=4), X, n_jobs=args.n_jobs, progress=True)
        full["measured_seconds"] = round(time.perf_counter() - t0, 1)
    out["full_msrp_gram_kmax4"] = full
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
