"""Cost of hostile size parameters and of the hardened AMR reader.

Prints JSON.  (1) For each string re-writing kernel, on ``--n`` real MSRP pairs,
the Gram with ``kmax`` = the longest usable window against ``kmax = 10**6``
(same run, same pairs): both seconds, their ratio (1 means the hostile value
costs nothing extra) and whether the Grams agree.  Before windows were bounded,
``kmax = 10**6`` raised MemoryError (kb-SRK) or ran for minutes (ps-SRK); the
old figures are not re-measured here.  (2) ``read_amr`` on the Bio AMR corpus
in strict mode against lenient mode on a copy with one Latin-1 byte and one
600-level graph added (graphs kept, skipped, seconds).  The load average is
recorded beside every timing.

Usage::

    python benchmarks/bench_reliability.py --data ../shared/data [--n 150]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from structkernels import kernel
from structkernels.amr import read_amr
from structkernels.datasets.rewriting import load_msrp
from structkernels.kernels.srk.common import MemoryBudgetError, usable_window
from structkernels.text.tokenize import TextPipeline


def _timed(fn):
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t0, 4), round(load, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--n", type=int, default=150, help="MSRP pairs in the Gram")
    args = ap.parse_args()
    data = Path(args.data)
    corpus = load_msrp(data / "msrp" / "msr_paraphrase_train.txt")
    X = corpus.tokenized(TextPipeline())[: args.n]
    top = usable_window(X)
    result: dict = {"platform": platform.platform(), "n_pairs": len(X), "usable_window": top,
                    "srk": {}}
    for name in ("kb-srk", "ps-srk", "pw-srk"):
        kmax_small = min(top, 4) if name == "pw-srk" else top  # pw-SRK: 2^k patterns
        kern = kernel(name, k=1, kmax=kmax_small)
        kern.gram(X[:2])  # compile / warm up
        G1, s1, l1 = _timed(lambda kern=kern: kern.gram(X))
        if name == "pw-srk":  # 2^k patterns per k-gram: refused before allocating
            try:
                _, s2, l2 = _timed(lambda: kernel("pw-srk", k=1, kmax=10**6).gram(X))
                hostile = "computed"
            except MemoryBudgetError as exc:
                s2, l2, hostile = None, None, f"refused: {str(exc)[:160]}"
            entry = {"kmax": kmax_small, "seconds": s1, "load": l1, "kmax_1e6": hostile}
        else:
            G2, s2, l2 = _timed(lambda name=name: kernel(name, k=1, kmax=10**6).gram(X))
            entry = {"kmax": kmax_small, "seconds": s1, "load": l1, "kmax_1e6_seconds": s2,
                     "kmax_1e6_load": l2, "ratio_1e6_over_usable": round(s2 / max(s1, 1e-9), 3),
                     "equal": bool(np.allclose(G1, G2, rtol=1e-12, atol=0))}
        result["srk"][name] = entry
        print(name, entry, flush=True)
    amr = data / "amr" / "bio_amr_v0.8" / "amr-release-dev-bio.txt"
    corpus_a, s_strict, l_strict = _timed(lambda: read_amr(amr))
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "hostile.amr"
        deep = "(a0 / x" + "".join(f" :ARG0 (a{i} / x" for i in range(1, 600)) + ")" * 600
        f.write_bytes(amr.read_bytes() + b"\n\n# ::id bad ::snt caf\xe9\n(c / cafe)\n\n"
                      + f"# ::id deep\n{deep}\n".encode())
        corpus_b, s_lenient, l_lenient = _timed(lambda: read_amr(f, on_error="skip"))
    result["read_amr"] = {
        "graphs": len(corpus_a), "strict_seconds": s_strict, "strict_load": l_strict,
        "hostile_kept": len(corpus_b), "hostile_skipped": [s.graph_id for s in corpus_b.skipped],
        "lenient_seconds": s_lenient, "lenient_load": l_lenient,
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
