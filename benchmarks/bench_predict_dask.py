"""Weak scaling of ``predict`` on a dask cluster: the same sentences per worker, 1 and 2
workers (and more with ``--workers``).

For ``w`` in ``--workers`` (default 1, 2) a ``LocalCluster`` of ``w`` worker processes of
one thread each runs :func:`structkernels.extraction.predict` (``backend="dask"``) over
``w * --per-worker`` sentences drawn with replacement from ``--corpus`` (default
BioInfer-test; sentences with at least two entities), each under a new id and document,
written as JSON Lines, parsed without a cache.  The cluster is started and warmed up
(a few sentences: spaCy's pipeline, the compiled kernels and the model in every worker)
before the timed run.  Efficiency is ``t(1) / t(w)`` (1.0 is perfect weak scaling).

The 1-worker size is also run in this process without dask (``local_seconds``: what
``structkernels predict`` costs here) and its output is compared with the cluster's, byte
for byte (``identical``).  Peak memory: the resident peak of this process (the client)
and of each worker process.  Load and cores are reported: on a shared machine the figures
move with the load.

    python benchmarks/bench_predict_dask.py --model /tmp/bioinfer.json.gz \
        --out benchmarks/results/predict_dask_scaling.json

Without ``--model`` an extractor is trained on ``--train`` (default LLL-train: seconds).
A smoke run: ``--per-worker 20 --workers 1``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from _report import report

from structkernels.extraction import RelationExtractor, predict
from structkernels.relations import PairWriter, iter_relations, read_relations
from structkernels.utils import available_cores

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def peak_mb() -> float:
    """The resident peak of the calling process, MB (``ru_maxrss`` is in KiB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def write_sample(pool: list, n: int, seed: int, path: Path, tag: str) -> None:
    """``n`` sentences of ``pool`` drawn with replacement, new ids, as JSON Lines."""
    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for k, i in enumerate(rng.integers(0, len(pool), size=n)):
            s = pool[int(i)]
            ents = [{"id": e.id, "spans": [list(sp) for sp in e.spans]} for e in s.entities]
            fh.write(json.dumps({"id": f"{tag}{k}", "document": f"{tag}d{k}", "text": s.text,
                                 "entities": ents}) + "\n")


def local_run(model: str, path: Path, out: Path, batch_size: int) -> float:
    """``structkernels predict``'s work in this process: batches parsed, scored, written."""
    t0 = time.perf_counter()
    ex = RelationExtractor.load(model, cache_dir=False, progress=False, n_jobs=1)
    with open(out, "w", encoding="utf-8") as fh:
        writer = PairWriter(fh, "jsonl")
        for batch in iter_relations(str(path), batch_size=batch_size):
            writer.write(batch, ex.predict_pairs(batch) if len(batch) else [])
        writer.finish()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="a saved extractor (trained when absent)")
    ap.add_argument("--train", default=str(PPI / "LLL-train.xml"),
                    help="the training corpus when no --model is given")
    ap.add_argument("--corpus", default=str(PPI / "BioInfer-test.xml"),
                    help="the sentences are drawn from it")
    ap.add_argument("--per-worker", type=int, default=500, help="sentences per worker")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--batch-size", type=int, default=50, help="sentences per partition")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from dask.distributed import Client, LocalCluster

    workers = [int(w) for w in args.workers.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-predict-dask-"))
    model = args.model
    train_seconds = None
    if model is None:
        t0 = time.perf_counter()
        ex = RelationExtractor(cache_dir=False, progress=False, n_jobs=1)
        ex.fit(read_relations(args.train))
        model = str(tmp / "model.json.gz")
        ex.save(model)
        train_seconds = round(time.perf_counter() - t0, 3)
        del ex
    pool = [s for s in read_relations(args.corpus) if len(s.entities) > 1]
    warm = tmp / "warm.jsonl"
    write_sample(pool, 4, args.seed + 999, warm, "w")
    doc: dict = {"benchmark": "predict_dask weak scaling", "model": model,
                 "train_seconds": train_seconds, "corpus": args.corpus,
                 "per_worker": args.per_worker, "batch_size": args.batch_size,
                 "cores": available_cores(), "load_before": load(), "runs": []}
    for w in workers:
        n = w * args.per_worker
        src = tmp / f"in{w}.jsonl"
        write_sample(pool, n, args.seed + w, src, f"b{w}_")
        with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            predict([str(warm)], tmp / "warm.out", model, backend="dask", client=client,
                    batch_size=2, cache_dir=False, progress=False)
            out = tmp / f"out{w}.jsonl"
            info = predict([str(src)], out, model, backend="dask", client=client,
                           batch_size=args.batch_size, cache_dir=False, progress=False)
            worker_peaks = client.run(peak_mb)
        run = {"workers": w, "sentences": info["sentences"], "pairs": info["pairs"],
               "partitions": info["partitions"], "seconds": round(info["seconds"], 3),
               "sentences_per_second": round(info["sentences"] / info["seconds"], 2),
               "worker_busy_seconds": {a: round(v["seconds"], 3)
                                       for a, v in info["workers"].items()},
               "peak_mb_client": peak_mb(),
               "peak_mb_workers": sorted(worker_peaks.values()), "load": load()}
        if w == workers[0]:
            local_out = tmp / "local.jsonl"
            run["local_seconds"] = round(local_run(model, src, local_out, args.batch_size), 3)
            run["identical"] = local_out.read_bytes() == out.read_bytes()
        doc["runs"].append(run)
    base = doc["runs"][0]
    for run in doc["runs"]:
        run["efficiency"] = round(base["seconds"] / run["seconds"], 3)  # t(1) / t(w)
    shutil.rmtree(tmp, ignore_errors=True)
    report(doc, args.out)


if __name__ == "__main__":
    main()
