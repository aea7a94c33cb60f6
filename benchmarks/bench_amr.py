#!/usr/bin/env python
"""Throughput of AMR -> candidates -> paths and trees over the whole Bio AMR corpus.

Prints JSON: graphs/s for parse (read_amr) + candidate generation + path and
tree reading over all 1,885 unique graphs, for every candidate (no distance
limit) and for the shipped dataset's setting (entities within 4 edges); and,
as the baseline measured in the same run, a literal extractor that calls
``networkx.shortest_path`` for every candidate and role (no shared
breadth-first trees), on the shipped setting's candidates.

Usage::

    python benchmarks/bench_amr.py [--out benchmarks/results/bench_amr.json]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path as FilePath

import networkx as nx
from _report import report

from structkernels import Path, Tree
from structkernels.amr import CandidateExtractor, read_amr
from structkernels.graphs.model import concept_label

ROOT = FilePath(__file__).resolve().parents[1]
RAW = ROOT / "datasets" / "bio-amr-interactions" / "raw"
FILES = [
    "amr-release-bio-v3.0.complete_prefix.txt",
    "amr-release-dev-bio.txt",
    "amr-release-test-bio.txt",
    "amr-release-training-bio.complete_prefix.txt",
]


def naive_structures(G, U, cand):
    """Baseline: one networkx shortest path per role, structures built from them."""
    lab = {v: concept_label(c) for v, c in G.nodes(data="concept")}

    def steps(t):
        nodes = nx.shortest_path(U, cand.interaction, t)
        out = []
        for a, b in zip(nodes, nodes[1:], strict=False):
            d = G.get_edge_data(a, b)
            out.append((d[0]["role"] if d else G.get_edge_data(b, a)[0]["role"] + "-of", b))
        return out

    root = (None, lab[cand.interaction])
    tuples = []
    children: dict = {cand.interaction: []}
    roles = {}
    for role, t in ([("catalyst", cand.catalyst)] if cand.catalyst else []) + [
        ("domain", p) for p in cand.participants
    ]:
        st = steps(t)
        seg = [(e, lab[n]) for e, n in st]
        tuples += (list(reversed(seg)) + [root]) if role == "catalyst" else ([root] + seg)
        prev = cand.interaction
        for e, n in st:
            if n not in children:
                children[n] = []
                children[prev].append((e, n))
            prev = n
        roles[t] = role

    def build(v):
        kids = [(e, build(c)) for e, c in children[v]]
        if v in roles:
            kids.append(("role", Tree(roles[v])))
        return Tree(lab[v], kids)

    return Path(tuples), build(cand.interaction)


def run(max_distance):
    t0 = time.perf_counter()
    corpus = read_amr([RAW / f for f in FILES], deduplicate=True)
    t_parse = time.perf_counter() - t0
    n_cand = n_nodes = 0
    t1 = time.perf_counter()
    for amr in corpus:
        x = CandidateExtractor(amr)
        for cand in x.candidates(max_distance=max_distance):
            x.path(cand)
            n_nodes += x.tree(cand).size
            n_cand += 1
    t_struct = time.perf_counter() - t1
    return corpus, {
        "max_distance": max_distance,
        "graphs": len(corpus),
        "candidates": n_cand,
        "tree_nodes": n_nodes,
        "parse_seconds": round(t_parse, 3),
        "candidates_paths_trees_seconds": round(t_struct, 3),
        "total_seconds": round(t_parse + t_struct, 3),
        "graphs_per_second": round(len(corpus) / (t_parse + t_struct), 1),
        "candidates_per_second": round(n_cand / t_struct, 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=FilePath, default=None)
    args = ap.parse_args(argv)
    corpus, shipped = run(4)
    _, full = run(None)
    # baseline on the shipped setting's candidates
    t0 = time.perf_counter()
    n = 0
    for amr in corpus:
        G = amr.graph
        U = nx.Graph(G.to_undirected())
        for cand in CandidateExtractor(amr).candidates(max_distance=4):
            naive_structures(G, U, cand)
            n += 1
    t_base = time.perf_counter() - t0
    result = {
        "benchmark": "bench_amr",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "shipped_setting": shipped,
        "all_candidates": full,
        "baseline_networkx_shortest_path_per_candidate": {
            "candidates": n,
            "seconds": round(t_base, 3),
            "candidates_per_second": round(n / t_base, 1),
        },
        "speedup_vs_baseline": round(t_base / shipped["candidates_paths_trees_seconds"], 2),
    }
    report(result, args.out, indent=2, make_folder=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
