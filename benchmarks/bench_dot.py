#!/usr/bin/env python
"""Reading the same Bio AMR graphs as PENMAN and as DOT, in one process (ABBA order).

The shipped Bio AMR PENMAN graphs (``datasets/bio-amr-interactions/raw``, 1,885 unique
graphs, as :mod:`bench_graphs` reads them) are written to a temporary folder three ways:
their PENMAN blocks, as they stand in the release, in one file; one DOT file per graph
with every node kept (:func:`structkernels.graphs.write_dot`, reads back equal to the
PENMAN graph); one DOT file per graph with entity names collapsed into one node (the NPK
authors' layout).  Then each is read, timed, in the order PENMAN, DOT, DOT collapsed,
DOT collapsed, DOT, PENMAN (repeated ``--rounds`` times), so that a load that drifts
during the run weighs on all alike: :func:`structkernels.amr.read_amr` and
:func:`structkernels.graphs.read_dot` (one process).  The old baseline, pydot's parser
(pyparsing), is timed on the first ``--pydot`` DOT files: the parse alone, which was
nearly all of the old reader's cost.  The run checks that the DOT graphs equal the
PENMAN graphs (nodes, concepts, names, edges, roots).

Prints one JSON document: sizes, seconds of each timing, graphs/s, the ratio of seconds
per graph DOT / PENMAN (``ratio_dot_to_penman_per_graph``; the aim is at most 2), the
pydot baseline, and the load average before and after (the figures are only as quiet as
the machine).

Usage::

    python benchmarks/bench_dot.py [--limit 0 (all)] [--rounds 1] [--pydot 30]
                                   [--out benchmarks/results/bench_dot.json]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path as FilePath

from _report import report
from bench_amr import FILES, RAW  # the shipped Bio AMR files, as the AMR benchmark reads them

from structkernels.amr import read_amr
from structkernels.graphs import read_dot, write_dot


def penman_blocks(graphs) -> str:
    """The PENMAN text of ``graphs`` as it stands in the release files (each graph's block
    from its ``# ::id`` line to the next blank line), blank-line separated."""
    texts: dict[str, list[str]] = {}
    out = []
    for g in graphs:
        lines = texts.get(g.file)
        if lines is None:
            lines = texts[g.file] = FilePath(g.file).read_text(encoding="utf-8").split("\n")
        end = g.line - 1
        while end < len(lines) and lines[end].strip():
            end += 1
        out.append("\n".join(lines[g.line - 1 : end]))
    return "\n\n".join(out) + "\n"


def same_graphs(pen, dot) -> bool:
    """The DOT graphs read back as their PENMAN graphs (ids as write_dot names files)."""
    by_id = {g.id: g for g in dot}
    for g in pen:
        h = by_id.get(re.sub(r"[^\w.-]", "_", str(g.id)))
        if h is None or list(h.graph.nodes) != list(g.graph.nodes):
            return False
        for v, d in g.graph.nodes(data=True):
            if any(h.graph.nodes[v].get(k) != d.get(k) for k in ("concept", "name", "wiki")):
                return False
        if sorted(h.graph.edges(data="role")) != sorted(g.graph.edges(data="role")):
            return False
        if h.graph.graph["root"] != g.graph.graph["root"]:
            return False
    return True


def pydot_parse(files: list[str]) -> float:
    """Seconds pydot's parser (the old reader's) takes on the texts of ``files``."""
    with warnings.catch_warnings():  # pydot's grammar uses pyparsing's deprecated names
        warnings.simplefilter("ignore", DeprecationWarning)
        from pydot.dot_parser import GraphParser
    t0 = time.perf_counter()
    for f in files:
        text = FilePath(f).read_text(encoding="utf-8")
        GraphParser.parser.parse_string(text, parse_all=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=0, help="only the first N graphs (0: all 1,885)")
    ap.add_argument("--rounds", type=int, default=1, help="ABBA rounds (each reads each twice)")
    ap.add_argument("--pydot", type=int, default=30,
                    help="DOT files parsed by pydot for the old baseline (0: none)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    load_before = os.getloadavg()
    res: dict = {"python": sys.version.split()[0], "platform": platform.platform(),
                 "cpu_count": os.cpu_count()}

    corpus = read_amr([RAW / f for f in FILES], deduplicate=True)
    graphs = corpus.graphs[: args.limit] if args.limit else corpus.graphs
    res["n_graphs"] = len(graphs)
    res["n_nodes"] = sum(g.graph.number_of_nodes() for g in graphs)
    res["n_edges"] = sum(g.graph.number_of_edges() for g in graphs)

    with tempfile.TemporaryDirectory() as tmp:
        penman = FilePath(tmp) / "graphs.amr"
        penman.write_text(penman_blocks(graphs), encoding="utf-8")
        full, coll = FilePath(tmp) / "dot", FilePath(tmp) / "dot_collapsed"
        t0 = time.perf_counter()
        files = write_dot(graphs, full)
        t_write = time.perf_counter() - t0
        write_dot(graphs, coll, collapse_names=True)
        res["bytes"] = {
            "penman": penman.stat().st_size,
            "dot": sum(f.stat().st_size for f in full.iterdir()),
            "dot_collapsed": sum(f.stat().st_size for f in coll.iterdir()),
        }
        res["dot_write"] = {"seconds": t_write, "graphs_per_s": len(graphs) / t_write}

        readers = {
            "penman": lambda: read_amr(penman),
            "dot": lambda: read_dot(full, progress=False),
            "dot_collapsed": lambda: read_dot(coll, progress=False),
        }
        order = ["penman", "dot", "dot_collapsed", "dot_collapsed", "dot", "penman"]
        times: dict[str, list[float]] = {k: [] for k in readers}
        read: dict = {}
        for _ in range(args.rounds):
            for name in order:
                t0 = time.perf_counter()
                read[name] = readers[name]()
                times[name].append(time.perf_counter() - t0)
        n = {k: len(v) for k, v in read.items()}
        assert n["penman"] == n["dot"] == n["dot_collapsed"] == len(graphs), n
        assert not read["dot"].skipped and not read["dot_collapsed"].skipped
        res["same_graphs_dot_and_penman"] = same_graphs(read["penman"].graphs, read["dot"].graphs)

        k = min(args.pydot, len(files))
        if k:
            t_pydot = pydot_parse(files[:k])
            res["pydot_parse_baseline"] = {
                "graphs": k, "seconds": t_pydot, "graphs_per_s": k / t_pydot,
                "note": "pydot's parser (pyparsing) on the first DOT files: the parse alone, "
                        "which was nearly all of the old reader's cost",
            }

    order_note = "ABBA: penman, dot, dot_collapsed, dot_collapsed, dot, penman"
    res["order"] = f"{args.rounds} round(s) of {order_note}"
    for name, ts in times.items():
        mean = statistics.fmean(ts)
        res[f"read_{name}"] = {"seconds": ts, "mean_seconds": mean,
                               "graphs_per_s": len(graphs) / mean,
                               "best_graphs_per_s": len(graphs) / min(ts),
                               "ms_per_graph": 1000 * mean / len(graphs)}
    pen = statistics.fmean(times["penman"])
    res["ratio_dot_to_penman_per_graph"] = statistics.fmean(times["dot"]) / pen
    res["ratio_dot_collapsed_to_penman_per_graph"] = statistics.fmean(times["dot_collapsed"]) / pen
    res["ratio_dot_to_penman_best"] = min(times["dot"]) / min(times["penman"])
    if "pydot_parse_baseline" in res:
        base = res["pydot_parse_baseline"]["seconds"] / res["pydot_parse_baseline"]["graphs"]
        res["speedup_dot_over_pydot_parse_per_graph"] = base / (statistics.fmean(times["dot"])
                                                                / len(graphs))
    res["load_average_before"] = load_before
    res["load_average_after"] = os.getloadavg()
    report(res, args.out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
