#!/usr/bin/env python
"""Build the shipped interaction dataset from the Bio AMR corpus.

Reads the raw Bio AMR files in ``bio-amr-interactions/raw/`` (copies of
``../shared/data/amr``; ``--copy-raw`` refreshes them from there), generates
every candidate interaction of every graph (:mod:`structkernels.amr`), reads
its path and tree, labels it by the distant-label rule of
:mod:`structkernels.amr.labels`, splits by graph id and writes, into the
package data folder ``structkernels/data/`` (so that a wheel carries it and
:func:`structkernels.datasets.load_interactions` finds it through
:mod:`importlib.resources`),

- ``interactions.jsonl.gz``: one record per candidate (gzip, mtime 0: the
  same bytes on every run);
- ``counts.json``: counts per split and label, quoted in the README.

Usage::

    python datasets/build_bio_amr_interactions.py [--copy-raw] [--no-dedupe]

Takes well under a minute; Ctrl-C stops it cleanly.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path as FilePath

from tqdm import tqdm

from structkernels.amr import CandidateExtractor, read_amr
from structkernels.amr.labels import DistantLabeler
from structkernels.datasets import split_of

HERE = FilePath(__file__).resolve().parent
OUT = HERE.parent / "structkernels" / "data"
RAW = HERE / "bio-amr-interactions" / "raw"
SHARED = HERE.parent.parent / "shared" / "data" / "amr"

#: Raw files in reading order.  An id present in several files keeps its first
#: graph: the v3.0 release (newer annotation) wins over v0.8.
SOURCES = [
    ("bio_amr_v3.0_partial", "amr-release-bio-v3.0.complete_prefix.txt"),
    ("bio_amr_v0.8", "amr-release-dev-bio.txt"),
    ("bio_amr_v0.8", "amr-release-test-bio.txt"),
    ("bio_amr_v0.8", "amr-release-training-bio.complete_prefix.txt"),
]

#: Entities farther than this (edges, undirected) from the interaction node are
#: not paired with it.  Every positive of the labelling rule lies within 3 edges
#: (an argument, possibly through nested coordinations); 4 keeps a margin of
#: harder negatives while keeping the data small enough to load in seconds.
MAX_DISTANCE = 4

#: Least number of distinct paths other components need (k-NN hashing at 16k).
MIN_DISTINCT_PATHS = 16_000


def _node(G, v):
    if v is None:
        return None
    d = G.nodes[v]
    return {"node": v, "concept": d["concept"], "name": d.get("name")}


def build(dedupe: bool = True, progress: bool = True) -> tuple[list[dict], dict]:
    files = [RAW / name for _, name in SOURCES]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"raw Bio AMR files missing: {missing}; run with --copy-raw")
    corpus = read_amr(files, on_error="raise", deduplicate=True)
    graphs = sorted(corpus, key=lambda g: g.id)
    records: list[dict] = []
    seen: dict[tuple, int] = {}
    n_candidates = 0
    n_conflicts = 0
    n_cand_labels: Counter = Counter()
    for amr in tqdm(graphs, desc="graphs", unit="graph", disable=not progress):
        x = CandidateExtractor(amr)
        G = amr.graph
        labeler = DistantLabeler(G)
        split = split_of(amr.id)
        for k, cand in enumerate(x.candidates(max_distance=MAX_DISTANCE)):
            n_candidates += 1
            path = x.path_tuples(cand)
            lab = labeler(cand)
            n_cand_labels["swapped" if lab.swapped else lab.label] += 1
            key = tuple(path)
            if dedupe:
                first = seen.get(key)
                if first is not None:
                    if records[first]["label"] != lab.label:
                        n_conflicts += 1
                    continue
                seen[key] = len(records)
            records.append(
                {
                    "id": f"{amr.id}#{k}",
                    "graph_id": amr.id,
                    "sentence": amr.sentence,
                    "interaction": {
                        "type": G.nodes[cand.interaction]["concept"],
                        "node": cand.interaction,
                        "catalyst": _node(G, cand.catalyst),
                        "participants": [_node(G, p) for p in cand.participants],
                    },
                    "path": [list(t) for t in path],
                    "tree": x.tree_json(cand),
                    "label": lab.label,
                    "swapped": lab.swapped,
                    "split": split,
                }
            )
    counts: dict = {
        "graphs": len(graphs),
        "duplicate_graphs_dropped": len(corpus.duplicates),
        "candidates": n_candidates,
        "candidates_positive": n_cand_labels[1],
        "candidates_negative_swapped": n_cand_labels["swapped"],
        "records": len(records),
        "max_distance": MAX_DISTANCE,
        "deduplicated_by_path": dedupe,
        "duplicate_paths_dropped": n_candidates - len(records) if dedupe else 0,
        "duplicates_with_other_label": n_conflicts,
        "distinct_paths": len({tuple(map(tuple, r["path"])) for r in records}),
        "splits": {},
    }
    for split in ("train", "test"):
        rs = [r for r in records if r["split"] == split]
        c = Counter(r["label"] for r in rs)
        counts["splits"][split] = {
            "graphs": len({r["graph_id"] for r in rs}),
            "records": len(rs),
            "positive": c[1],
            "negative": c[0],
            "negative_swapped": sum(1 for r in rs if r["swapped"]),
        }
    return records, counts


def write_jsonl_gz(records: list[dict], path: FilePath) -> None:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as gz:
        for r in records:
            gz.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
            gz.write(b"\n")
    path.write_bytes(buf.getvalue())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copy-raw", action="store_true", help=f"copy the raw files from {SHARED}")
    ap.add_argument("--no-dedupe", action="store_true", help="keep candidates with equal paths")
    ap.add_argument("--out", type=FilePath, default=OUT, help="output folder")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.copy_raw:
        RAW.mkdir(parents=True, exist_ok=True)
        for folder, name in SOURCES:
            shutil.copyfile(SHARED / folder / name, RAW / name)
    try:
        records, counts = build(dedupe=not args.no_dedupe)
    except KeyboardInterrupt:
        print("interrupted: nothing written", file=sys.stderr)
        return 130
    if counts["distinct_paths"] < MIN_DISTINCT_PATHS:
        print(f"warning: only {counts['distinct_paths']} distinct paths", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl_gz(records, args.out / "interactions.jsonl.gz")
    (args.out / "counts.json").write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    counts["seconds"] = round(time.perf_counter() - t0, 2)
    print(json.dumps(counts, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
