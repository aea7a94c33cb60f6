"""Serial vs n_jobs=2 vs dask (2 workers), in one run, ABBA order: Grams, k-NN graph, GC pauses.

Prints one JSON object.  For each piece of work it times ``serial``,
``n_jobs=2`` (threads for the compiled, GIL-free kernels) and ``dask`` (a
``LocalCluster`` of 2 single-threaded worker processes) in the order
``serial, n_jobs=2, dask, dask, n_jobs=2, serial``, sums the two timings of
each, and reports ``speedup = serial / other``, the aim from issue 14, a
bit-for-bit check of every result against the serial one, and the load
average (``os.getloadavg()``) before and after.  The work:

- ``path_gram``: path kernel Gram (lam 0.8), N Bio-AMR paths (aim >= 1.8x);
- ``tree_gram``: tree kernel Gram (lam 0.8), N trees (aim: never slower than serial);
- ``kb_srk_gram``: kb-SRK Gram (k=1, kmax=4, the paper's setting), N random MSRP
  pairs (aim >= 1.8x), with the full MSRP Gram (5,801 pairs) projected from it
  (pairs scale as N^2; aim <= 300 s on 2 cores);
- ``hashed_knn``: 1-NN graph, normalised path kernel, random k-NN hashing,
  2 tables, probe 1 (the README's high-recall setting), N paths (aim >= 1.6x);
- ``gc``: objects tracked by the collector after ``load_interactions()`` and the
  time of a full collection, array-backed storage vs the same structures as
  Python objects, and the longest collector pause (``gc.callbacks``) during
  the tree Gram runs.

- ``ceiling``: the 2-thread speedup of a trivially parallel, compute-bound numba
  ``prange`` loop, measured first in the same run (what 2 threads can give on this
  machine now); ``path_gram`` reports beside it the serial fraction ``f`` that
  Amdahl's law ``speedup = c / (1 + f (c - 1))`` gives against that ceiling ``c``.

The dask runs write the Grams out of core (:func:`structkernels.gram` with ``out=`` and
``backend="dask"``, a memmap per run) and report throughput per worker; the k-NN graph runs
through joblib's dask backend.  Cluster start-up is timed separately.

Usage (defaults take about 3-5 minutes on 2 idle cores)::

    python benchmarks/bench_parallel.py [--data ../shared/data] [--small] [--out FILE]

``--small`` runs every piece at a tenth of the size (a check that it works);
``--only path_gram`` (comma-separated piece names) runs only those pieces, e.g.
to re-measure the path Gram on a quiet machine::

    nice python benchmarks/bench_parallel.py --only path_gram
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _report import report

import structkernels as sk
from structkernels.datasets import load_interactions


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def abba(fns: dict, check) -> dict:
    """Run fns in order A B C C B A; times summed per name; outputs checked against the first."""
    names = list(fns)
    order = names + names[::-1]
    times: dict[str, list[float]] = {k: [] for k in names}
    first = {}
    la0 = load()
    for name in order:
        t0 = time.perf_counter()
        out = fns[name]()
        times[name].append(round(time.perf_counter() - t0, 4))
        if name not in first:
            first[name] = out
    ref = first[names[0]]
    res = {
        "order": order,
        "seconds": times,
        "bit_identical_to_serial": {k: bool(check(ref, first[k])) for k in names[1:]},
        "load_average_before_after": [la0, load()],
    }
    base = sum(times[names[0]])
    for k in names[1:]:
        res[f"speedup_{k}"] = round(base / sum(times[k]), 3)
    return res


def ceiling(reps: int = 3) -> dict:
    """The 2-thread speedup of a trivially parallel, compute-bound numba ``prange`` loop.

    No memory traffic, no Python, no shared data: what two threads can give on
    this machine at this moment (about 2.0 on two idle cores, less when other
    work shares them).  Timed 1, 2, 2, 1 threads, ``reps`` times, summed.
    """
    import numba
    from numba import njit, prange

    @njit(parallel=True, nogil=True)
    def work(n, inner):  # pragma: no cover - compiled
        out = np.empty(n)
        for i in prange(n):
            x = 0.0
            for r in range(inner):
                x = x * 0.999999 + np.sqrt(i + r + 1.0)
            out[i] = x
        return out

    old = numba.get_num_threads()
    work(64, 10)
    times = {1: [], 2: []}
    la0 = load()
    try:
        for _ in range(reps):
            for t in (1, 2, 2, 1):
                numba.set_num_threads(min(t, numba.config.NUMBA_NUM_THREADS))
                t0 = time.perf_counter()
                work(2000, 100_000)
                times[t].append(round(time.perf_counter() - t0, 4))
    finally:
        numba.set_num_threads(old)
    return {"seconds": {"1_thread": times[1], "2_threads": times[2]},
            "speedup_2_threads": round(sum(times[1]) / sum(times[2]), 3),
            "load_average_before_after": [la0, load()]}


def amdahl(speedup: float, ceiling_speedup: float) -> float:
    """Serial fraction ``f`` with ``speedup = c / (1 + f (c - 1))``, ``c`` the ceiling."""
    c = ceiling_speedup
    return round((c / speedup - 1.0) / (c - 1.0), 4) if c > 1.0 else float("nan")


def gram_fns(kernel, X, client, tmp: Path, block_size: int) -> dict:
    def dask_run():
        out = tmp / "K.npy"
        if out.exists():
            out.unlink()
        shutil.rmtree(str(out) + ".parts", ignore_errors=True)
        K, info = sk.gram(kernel, X, out=out, backend="dask", client=client,
                          block_size=block_size, return_info=True)
        dask_run.info = info.run
        return np.array(K)

    return {
        "serial": lambda: sk.gram(kernel, X, n_jobs=1, progress=False),
        "n_jobs_2": lambda: sk.gram(kernel, X, n_jobs=2, progress=False),
        "dask": dask_run,
    }, dask_run


def per_worker(info: dict) -> dict:
    return {w: {"blocks": v["blocks"], "evaluations": v["evaluations"],
                "evaluations_per_second": round(v["evaluations_per_second"], 1)}
            for w, v in info["workers"].items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data", help="folder holding msrp/")
    ap.add_argument("--n-path", type=int, default=4000)
    ap.add_argument("--n-tree", type=int, default=2000)
    ap.add_argument("--n-srk", type=int, default=300)
    ap.add_argument("--n-knn", type=int, default=16000)
    ap.add_argument("--small", action="store_true", help="a tenth of every size")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None,
                    help="comma-separated pieces to run (path_gram, tree_gram, kb_srk_gram, "
                         "hashed_knn); default all.  The ceiling and GC parts always run")
    args = ap.parse_args()
    only = None if args.only is None else set(args.only.split(","))

    def wanted(piece: str) -> bool:
        return only is None or piece in only

    if args.small:
        for a in ("n_path", "n_tree", "n_srk", "n_knn"):
            setattr(args, a, max(40, getattr(args, a) // 10))
    from dask.distributed import Client, LocalCluster

    out: dict = {
        "benchmark": "bench_parallel",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_at_start": load(),
        "timing_order": "serial, n_jobs=2, dask, dask, n_jobs=2, serial (ABBA); seconds summed",
    }
    rng = np.random.default_rng(args.seed)
    out["ceiling"] = ceiling()
    print(json.dumps({"ceiling": out["ceiling"]}), file=sys.stderr, flush=True)

    # ---------------------------------------------------------------- storage / GC
    gc.collect()
    t0 = time.perf_counter()
    data = load_interactions()
    t_load = time.perf_counter() - t0
    tracked = len(gc.get_objects())
    t0 = time.perf_counter()
    gc.collect()
    full_gc = time.perf_counter() - t0
    as_objects = (list(data.paths), list(data.trees), list(data.records))
    tracked_obj = len(gc.get_objects())
    t0 = time.perf_counter()
    gc.collect()
    full_gc_obj = time.perf_counter() - t0
    del as_objects
    data.paths._items = None  # drop the Path objects cached by list() above
    data.trees._items = None
    gc.collect()
    out["gc"] = {
        "records": len(data), "load_seconds": round(t_load, 2),
        "array_backed": {"tracked_objects": tracked, "full_collection_s": round(full_gc, 4)},
        "as_python_objects": {"tracked_objects": tracked_obj,
                              "full_collection_s": round(full_gc_obj, 4)},
    }

    train = data.split("train")
    perm = rng.permutation(len(train))
    pathsX = train.paths[perm[: args.n_path]]
    treesX = train.trees[perm[: args.n_tree]]
    knnX = train.paths[perm[: min(args.n_knn, len(train))]]

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    client = Client(cluster)
    out["dask_cluster_start_s"] = round(time.perf_counter() - t0, 2)
    tmp = Path(tempfile.mkdtemp(prefix="bench_parallel_"))
    eq = np.array_equal
    try:
        # warm-up: compile caches, thread pool, dask workers (not timed)
        for kern, X in ((sk.kernel("path", lam=0.8), pathsX[:64]),
                        (sk.kernel("tree", lam=0.8), treesX[:64])):
            fns, _ = gram_fns(kern, X, client, tmp, 32)
            for f in fns.values():
                f()

        # ------------------------------------------------------------ path Gram
        if wanted("path_gram"):
            kern = sk.kernel("path", lam=0.8)
            fns, dask_run = gram_fns(kern, pathsX, client, tmp, 512)
            # one untimed call each at full size first: the first 4,000 x 4,000 result pays
            # the page faults of a fresh 128 MB allocation, later ones reuse the memory
            fns["serial"]()
            fns["n_jobs_2"]()
            # threads against serial on their own first (two ABBA rounds, no dask run in
            # between: a dask run just before leaves its worker processes busy for a while)
            r2 = abba({"serial": fns["serial"], "n_jobs_2": fns["n_jobs_2"]}, eq)
            r2b = abba({"serial": fns["serial"], "n_jobs_2": fns["n_jobs_2"]}, eq)
            threads = {
                "order": r2["order"] + r2b["order"],
                "seconds": {k: r2["seconds"][k] + r2b["seconds"][k] for k in r2["seconds"]},
                "bit_identical_to_serial": r2["bit_identical_to_serial"]["n_jobs_2"],
                "load_average_before_after": [r2["load_average_before_after"][0],
                                              r2b["load_average_before_after"][1]],
            }
            threads["speedup_n_jobs_2"] = round(
                sum(threads["seconds"]["serial"]) / sum(threads["seconds"]["n_jobs_2"]), 3)
            r = abba(fns, eq)
            c = out["ceiling"]["speedup_2_threads"]
            r.update(threads_only=threads,
                     serial_fraction_amdahl_threads_only=amdahl(threads["speedup_n_jobs_2"], c))
            r.update(n=len(pathsX), evaluations=len(pathsX) * (len(pathsX) + 1) // 2,
                     setting="path kernel lam=0.8, Bio-AMR train paths (encoded PathList)",
                     aim="n_jobs_2 >= 1.8x",
                     ceiling_speedup_2_threads=c,
                     serial_fraction_amdahl=amdahl(r["speedup_n_jobs_2"], c),
                     dask_per_worker=per_worker(dask_run.info))
            out["path_gram"] = r
            print(json.dumps({"path_gram": r}), file=sys.stderr, flush=True)

        # ------------------------------------------------------------ tree Gram
        if wanted("tree_gram"):
            kern = sk.kernel("tree", lam=0.8)
            pauses: list[float] = []
            start: list[float] = []

            def cb(phase, info):
                if phase == "start":
                    start.append(time.perf_counter())
                elif start:
                    pauses.append(time.perf_counter() - start.pop())

            gc.callbacks.append(cb)
            try:
                fns, dask_run = gram_fns(kern, treesX, client, tmp, 256)
                r = abba(fns, eq)
            finally:
                gc.callbacks.remove(cb)
            r.update(n=len(treesX), evaluations=len(treesX) * (len(treesX) + 1) // 2,
                     setting="tree kernel lam=0.8 span decay, Bio-AMR train trees",
                     aim="n_jobs_2 never slower than serial",
                     dask_per_worker=per_worker(dask_run.info))
            out["tree_gram"] = r
            out["gc"]["pauses_during_tree_grams"] = {
                "collections": len(pauses),
                "max_pause_s": round(max(pauses), 5) if pauses else 0.0,
            }
            print(json.dumps({"tree_gram": r}), file=sys.stderr, flush=True)

        # ------------------------------------------------------------ kb-SRK Gram
        if wanted("kb_srk_gram"):
            from structkernels.datasets.rewriting import load_msrp
            from structkernels.text.tokenize import TextPipeline

            msrp = Path(args.data) / "msrp"
            if (msrp / "msr_paraphrase_train.txt").is_file():
                pipe = TextPipeline()
                allp = (load_msrp(msrp / "msr_paraphrase_train.txt").tokenized(pipe)
                        + load_msrp(msrp / "msr_paraphrase_test.txt").tokenized(pipe))
                pick = rng.choice(len(allp), size=min(args.n_srk, len(allp)), replace=False)
                S = [allp[i] for i in pick]
                kern = sk.kernel("kb-srk", k=1, kmax=4)
                sk.gram(kern, S[:8])
                fns, dask_run = gram_fns(kern, S, client, tmp, 64)
                r = abba(fns, eq)
                n = len(S)
                full = len(allp)
                scale = (full * (full + 1) / 2) / (n * (n + 1) / 2)
                r.update(n=n, evaluations=n * (n + 1) // 2,
                         setting="kb-SRK k=1 kmax=4 lam=1 (sum of normalised K_1..K_4), random "
                                 "MSRP train+test pairs, lower-cased + stemmed",
                         aim="n_jobs_2 >= 1.8x; full MSRP Gram <= 300 s on 2 cores",
                         dask_per_worker=per_worker(dask_run.info),
                         full_msrp_projection={
                             "pairs": full, "scale_from_subset": round(scale, 1),
                             "serial_s": round(scale * sum(r["seconds"]["serial"]) / 2, 1),
                             "n_jobs_2_s": round(scale * sum(r["seconds"]["n_jobs_2"]) / 2, 1),
                             "dask_2_workers_s": round(scale * sum(r["seconds"]["dask"]) / 2, 1),
                             "note": "pair cost varies with sentence length; a random subset "
                                     "projects the mean",
                         })
                out["kb_srk_gram"] = r
                print(json.dumps({"kb_srk_gram": r}), file=sys.stderr, flush=True)
            else:
                out["kb_srk_gram"] = {"skipped": f"MSRP not found under {msrp}"}

        # ------------------------------------------------------------ hashed 1-NN graph
        if wanted("hashed_knn"):
            import joblib

            kern = sk.Normalized(sk.kernel("path", lam=0.8))
            kw = dict(hashing="random-knn", n_tables=2, probe=1, random_state=args.seed,
                      progress=False)

            def knn(n_jobs, dask=False):
                if dask:
                    with joblib.parallel_backend("dask"):
                        g = sk.knn_graph(knnX, kern, 1, n_jobs=2, **kw)
                else:
                    g = sk.knn_graph(knnX, kern, 1, n_jobs=n_jobs, **kw)
                knn.evals = g.n_evaluations
                return g.indices, g.similarities

            sk.knn_graph(knnX[:200], kern, 1, n_jobs=2, **kw)
            r = abba({"serial": lambda: knn(1), "n_jobs_2": lambda: knn(2),
                      "dask": lambda: knn(2, dask=True)},
                     lambda a, b: eq(a[0], b[0]) and eq(a[1], b[1]))
            r.update(n=len(knnX), evaluations=knn.evals,
                     setting="1-NN graph, Normalized(path lam=0.8), random k-NN hashing, "
                             "2 tables, probe 1",
                     aim="n_jobs_2 >= 1.6x at N=16,000")
            out["hashed_knn"] = r
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)
    out["load_average_at_end"] = load()
    report(out, args.out, indent=2)


if __name__ == "__main__":
    main()
