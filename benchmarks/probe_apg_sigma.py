"""How far a weight per dependency type on the all-paths graph's edges moves its SVM: the room
σ would have on the view that carries the composite model.

The all-paths graph (Airola et al. 2008) weighs every dependency edge 0.3 (0.9 on the
shortest path) whatever its type.  A nonstationary version multiplies the edge from each
dependency vertex to its dependent by ``σ(type)`` (every walk through that dependency is
scaled by it; ``σ = 0`` cuts it).  On BioInfer (train and test pooled), document-level
10-fold cross-validation with the folds of ``structkernels evaluate`` (``random_state=0``),
an SVM (C = 1, threshold 0) on the normalised all-paths kernel with:

- ``σ ≡ 1`` (the published kernel);
- ``σ = 0`` on groups of types (punctuation, determiners and coordination; prepositions;
  subject and object; noun modifiers);
- ``σ`` drawn uniformly in [0.3, 1] per type (three seeds).

Prints the pooled F1 and ROC AUC of the positive class and the F1 of each fold.

    python benchmarks/probe_apg_sigma.py --out benchmarks/results/apg_sigma_probe.json
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np
from _report import report
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.svm import SVC

from structkernels.experiments.relations import document_folds
from structkernels.kernels.allpaths import AllPathsGraphKernel
from structkernels.relations import read_relations
from structkernels.relations.parse import DependencyParser
from structkernels.relations.structures import pair_views
from structkernels.structures import LabelledGraph

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"
GROUPS = [("punct", "det", "cc"), ("prep", "pobj"), ("nsubj", "dobj"),
          ("amod", "compound", "nmod")]


def dependency_vertices(g: LabelledGraph) -> range:
    """The dependency vertices of an all-paths graph: ``T`` tokens, ``D`` dependencies and
    ``T`` linear tokens, with ``2 D`` dependency edges and ``T - 1`` linear ones."""
    n, m = len(g), len(g.edges)
    T = (2 * n - m - 1) // 3
    return range(T, n - T)


def reweighted(g: LabelledGraph, sigma: dict[str, float]) -> LabelledGraph:
    """``g`` with the edge from each dependency vertex to its dependent times σ(type)."""
    deps = dependency_vertices(g)
    edges = []
    for u, v, w in g.edges:
        if u in deps:
            w *= sigma.get(g.labels[u][0], 1.0)
        if w > 0:
            edges.append((u, v, w))
    return LabelledGraph(g.labels, edges)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="BioInfer")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    load = [round(x, 2) for x in os.getloadavg()]
    train = read_relations(PPI / f"{args.corpus}-train.xml")
    test = read_relations(PPI / f"{args.corpus}-test.xml")
    pairs = train.pairs() + test.pairs()
    y = np.array([int(p.label) for p in pairs])
    docs = [p.sentence.document for p in pairs]
    parsed = DependencyParser(progress=False).parse(list(train) + list(test))
    graphs = [it["apg"] for it in pair_views(parsed, pairs, views=("apg",), blind=True)]
    splits = document_folds(docs, y, 10, 0)
    types = Counter(g.labels[u][0] for g in graphs for u in dependency_vertices(g))

    def evaluate(name: str, gs: list[LabelledGraph]) -> dict:
        K = np.asarray(AllPathsGraphKernel().gram(gs), dtype=np.float64)
        d = np.sqrt(np.maximum(np.diag(K), 1e-300))
        K = K / d[:, None] / d[None, :]
        scores, folds = np.zeros(len(y)), []
        for tr, te in splits:
            svc = SVC(C=1.0, kernel="precomputed").fit(K[np.ix_(tr, tr)], y[tr])
            scores[te] = svc.decision_function(K[np.ix_(te, tr)])
            folds.append(round(100 * f1_score(y[te], scores[te] > 0), 1))
        return {"setting": name, "f1": round(100 * f1_score(y, scores > 0), 2),
                "roc_auc": round(100 * roc_auc_score(y, scores), 2), "f1_folds": folds}

    rows = [evaluate("sigma = 1 (published)", graphs)]
    for group in GROUPS:
        zero = dict.fromkeys(group, 0.0)
        rows.append(evaluate(f"sigma = 0 on {', '.join(group)}",
                             [reweighted(g, zero) for g in graphs]))
    for seed in range(3):
        rng = np.random.default_rng(seed)
        sigma = {t: float(rng.uniform(0.3, 1.0)) for t in sorted(types)}
        rows.append(evaluate(f"sigma uniform in [0.3, 1], seed {seed}",
                             [reweighted(g, sigma) for g in graphs]))
    base = rows[0]["f1_folds"]
    for r in rows[1:]:
        diff = np.subtract(r["f1_folds"], base)
        r["f1_folds_minus_published"] = [round(float(x), 1) for x in diff]
    report({"benchmark": "apg-sigma-probe", "corpus": args.corpus, "pairs": len(y),
            "positives": int(y.sum()), "folds": len(splits), "classifier": "SVC C=1, threshold 0",
            "dependency_types": len(types), "settings": rows,
            "seconds": round(time.perf_counter() - t0, 1), "load_before": load}, args.out)


if __name__ == "__main__":
    main()
