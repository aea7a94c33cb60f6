#!/usr/bin/env python
"""Reading DOT and CoNLL-U graphs and extracting candidates, on the Bio AMR corpus as DOT.

The shipped Bio AMR PENMAN graphs (``datasets/bio-amr-interactions/raw``, 1,885
unique graphs) are written as one DOT file per graph (pydot), twice: with
every node kept (reads back equal to the PENMAN graph) and with entity names
collapsed into one node (the NPK authors' layout).  Then, timed: reading the
folder back (:func:`structkernels.graphs.read_dot`), and candidate extraction
with paths and trees (entities within 4 edges, the shipped dataset's
setting).  The baseline measured in the same run is the PENMAN route:
:func:`structkernels.amr.read_amr` and :func:`generate_candidates` on the same
graphs.  The run also checks that the DOT graphs give the same candidates and
paths as the PENMAN ones, and times CoNLL-U reading on a file of the shipped
test sentences repeated.

Prints JSON (sizes, seconds, graphs/s, candidates, ratios, load average).

Usage::

    python benchmarks/bench_graphs.py [--limit 300 (0: all)] [--n-jobs 2] [--out benchmarks/results/bench_graphs.json]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path as FilePath

from _report import report
from bench_amr import FILES, RAW, ROOT  # the shipped Bio AMR files, as the AMR benchmark reads them

from structkernels.amr import CandidateExtractor, generate_candidates, read_amr
from structkernels.graphs import extract_candidates, read_conllu, read_dot, write_dot

MAX_DISTANCE = 4


def structures(graphs, extract):
    """(candidates, seconds, path/tree pairs) of candidate extraction with paths and trees."""
    t0 = time.perf_counter()
    n, out = 0, []
    for g in graphs:
        x = CandidateExtractor(g)
        for c in extract(g):
            out.append((x.path(c), x.tree(c)))
            n += 1
    return n, time.perf_counter() - t0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=300, help="only the first N graphs (0: all 1,885)")
    ap.add_argument("--n-jobs", type=int, default=2, help="processes for the parallel DOT read")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    load_before = os.getloadavg()
    res: dict = {"python": sys.version.split()[0], "platform": platform.platform()}

    t0 = time.perf_counter()
    corpus = read_amr([RAW / f for f in FILES], deduplicate=True)
    t_penman_all = time.perf_counter() - t0
    graphs = corpus.graphs[: args.limit] if args.limit else corpus.graphs
    res["n_graphs"] = len(graphs)
    res["n_nodes"] = sum(g.graph.number_of_nodes() for g in graphs)
    res["penman_read_all"] = {"graphs": len(corpus), "seconds": t_penman_all,
                              "graphs_per_s": len(corpus) / t_penman_all}

    with tempfile.TemporaryDirectory() as tmp:
        full, coll = FilePath(tmp) / "full", FilePath(tmp) / "collapsed"
        t0 = time.perf_counter()
        write_dot(graphs, full)
        t_write = time.perf_counter() - t0
        write_dot(graphs, coll, collapse_names=True)
        size = sum(f.stat().st_size for f in full.iterdir())
        t0 = time.perf_counter()
        dot = read_dot(full, progress=False)
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        dot_c = read_dot(coll, progress=False)
        t_read_c = time.perf_counter() - t0
        t0 = time.perf_counter()
        dot_p = read_dot(full, progress=False, n_jobs=args.n_jobs)
        t_read_p = time.perf_counter() - t0
        assert [g.id for g in dot_p] == [g.id for g in dot]
    per_graph_penman = t_penman_all / len(corpus)
    res["dot_write"] = {"seconds": t_write, "graphs_per_s": len(graphs) / t_write, "bytes": size}
    res["dot_read"] = {
        "seconds": t_read, "graphs_per_s": len(dot) / t_read, "skipped": len(dot.skipped),
        "ratio_to_penman_per_graph": (t_read / len(dot)) / per_graph_penman,
    }
    res["dot_read_parallel"] = {"n_jobs": args.n_jobs, "seconds": t_read_p,
                                "graphs_per_s": len(dot_p) / t_read_p, "ratio_to_serial": t_read_p / t_read}
    res["dot_read_collapsed"] = {"seconds": t_read_c, "graphs_per_s": len(dot_c) / t_read_c,
                                 "skipped": len(dot_c.skipped)}

    by_id = {g.id: g for g in dot}
    n_pen, t_pen, s_pen = structures(
        graphs, lambda g: generate_candidates(g, max_distance=MAX_DISTANCE)
    )
    dot_graphs = [by_id[g.id] for g in graphs]
    n_dot, t_dot, s_dot = structures(
        dot_graphs, lambda g: extract_candidates(g, max_distance=MAX_DISTANCE)
    )
    n_col, t_col, _ = structures(dot_c.graphs, lambda g: extract_candidates(g, max_distance=MAX_DISTANCE))
    res["candidates_penman"] = {"candidates": n_pen, "seconds": t_pen}
    res["candidates_dot"] = {"candidates": n_dot, "seconds": t_dot, "ratio_to_penman": t_dot / t_pen,
                             "same_paths_and_trees_as_penman": s_pen == s_dot}
    res["candidates_dot_collapsed"] = {"candidates": n_col, "seconds": t_col}

    conllu = ROOT / "tests" / "data" / "graphs" / "parsed.conllu"
    reps = 500
    with tempfile.TemporaryDirectory() as tmp:
        big = FilePath(tmp) / "big.conllu"
        text = conllu.read_text()
        big.write_text("".join(text.replace("sent_id = c", f"sent_id = {i}-c") for i in range(reps)))
        t0 = time.perf_counter()
        cc = read_conllu(big)
        t_c = time.perf_counter() - t0
    res["conllu_read"] = {"sentences": len(cc), "seconds": t_c, "sentences_per_s": len(cc) / t_c}
    res["load_average_before"] = load_before
    res["load_average_after"] = os.getloadavg()
    report(res, args.out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
