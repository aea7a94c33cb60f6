"""Probe: the composite's views weighted by learned weights instead of summed.

The composite relation models add three normalised kernels with weight 1 each: the path
kernel, the context bag and the all-paths graph.  Issue 35 asks for the view weights to be
learned on the training folds.  This probe learns them by centred alignment (Cortes, Mohri &
Rostamizadeh 2012, "alignf", Prop. 9: ``β ∝ argmin_{β >= 0} βᵀMβ - 2βᵀa`` with ``M_kl =
<K_k^c, K_l^c>_F`` and ``a_k = <K_k^c, yyᵀ>_F``), rescaled so that the weights add up to 3
(the sum's scale, so that C = 1 means the same), and by the SVM's own dual objective as
multiple-kernel learning does (SimpleMKL's alternation, Rakotomamonjy et al. 2008: an SVM fit,
then an exponentiated-gradient step on the weights, ``∂J/∂β_k = -½ (α∘y)ᵀ K_k (α∘y)``, on a
sample of the training documents, the step kept by the average precision on held-out training
documents, step 0 the plain sum), on each training fold only.  It compares the SVM on each
weighted Gram with the SVM on the plain sum, fold by fold, on the same document
folds as ``evaluate`` (``document_folds``, ``random_state=0``), thresholds by grouped inner
CV as ``evaluate`` chooses them.  σ ≡ 1 (the PK composite): the weighting is the question,
and an NPK model and its twin would share it.

    python benchmarks/probe_view_weights.py --cache-dir /tmp/probe --out benchmarks/results/view_weights_probe.json
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _report import report
from scipy.linalg import solve_triangular
from scipy.optimize import nnls
from sklearn.metrics import average_precision_score
from sklearn.model_selection import GroupShuffleSplit
from sklearn.svm import SVC

from structkernels.experiments.relations import document_folds, pooled_scores
from structkernels.relations import read_relations
from structkernels.relations.decision import fit_decision
from structkernels.relations.models import APG, NGRAM, PK, PRECOMPUTED_SVC_PARAMS
from structkernels.relations.parse import DependencyParser
from structkernels.relations.structures import pair_views

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"
PARTS = (PK, NGRAM, APG)
NAMES = ("path", "context", "apg")


def centred(K: np.ndarray) -> np.ndarray:
    return K - K.mean(0) - K.mean(1)[:, None] + K.mean()


def alignment_weights(Ks: list[np.ndarray], y: np.ndarray) -> np.ndarray:
    """The alignf weights of the training Grams ``Ks``, adding up to ``len(Ks)``."""
    t = np.where(y == 1, 1.0, -1.0)
    t -= t.mean()
    Kc = [centred(K) for K in Ks]
    M = np.array([[float((a * b).sum()) for b in Kc] for a in Kc])
    a = np.array([float(t @ K @ t) for K in Kc])
    # min βᵀMβ - 2βᵀa, β >= 0: least squares ||Lᵀβ - L⁻¹a|| with M = L Lᵀ
    L = np.linalg.cholesky(M)
    beta, _ = nnls(L.T, solve_triangular(L, a, lower=True))
    if beta.sum() <= 0:
        return np.ones(len(Ks))
    return len(Ks) * beta / beta.sum()


def mkl_weights(Ks: list[np.ndarray], y: np.ndarray, groups: np.ndarray, *, steps: int = 12,
                rate: float = 0.5, n_samples: int = 1500, seed: int = 0) -> tuple[np.ndarray, int]:
    """SVM-dual weights (adding up to ``len(Ks)``) and the step kept."""
    rng = np.random.RandomState(seed)
    inner, held = next(GroupShuffleSplit(1, test_size=0.25, random_state=seed).split(
        y, y, groups))
    S = np.sort(rng.choice(inner, min(n_samples, len(inner)), replace=False))
    H = np.sort(rng.choice(held, min(n_samples, len(held)), replace=False))
    KS = [K[np.ix_(S, S)] for K in Ks]
    KH = [K[np.ix_(H, S)] for K in Ks]
    m = len(Ks)
    beta = np.ones(m)
    best = (-np.inf, 0, beta.copy())
    for step in range(steps + 1):
        G = sum(b * K for b, K in zip(beta, KS, strict=True))
        clf = SVC(kernel="precomputed", C=1.0, **PRECOMPUTED_SVC_PARAMS).fit(G, y[S])
        ap = average_precision_score(y[H], clf.decision_function(
            sum(b * K for b, K in zip(beta, KH, strict=True))))
        if ap > best[0] + 1e-9:
            best = (ap, step, beta.copy())
        a = np.zeros(len(S))
        a[clf.support_] = clf.dual_coef_[0]  # α_i y_i
        grad = np.array([-0.5 * float(a @ K @ a) for K in KS])  # ∂J/∂β_k, J minimised
        beta = beta * np.exp(-rate * grad / (np.abs(grad).max() or 1.0))
        beta = m * beta / beta.sum()
    return best[2], best[1]


def svm_row(K_tr, K_te, y_tr, groups):
    clf = SVC(kernel="precomputed", C=1.0, **PRECOMPUTED_SVC_PARAMS).fit(K_tr, y_tr)
    score = clf.decision_function(K_te)
    cut = fit_decision(K_tr, y_tr, groups, C=1.0, random_state=0, threshold="inner-cv",
                       calibration=None).threshold
    return score, (score > cut).astype(np.int64)


def view_grams(corpus: str, cache_dir: str, n_jobs: int | None
               ) -> tuple[list, np.ndarray, np.ndarray, list[np.ndarray]]:
    """The pairs of a corpus (its train and test files), their labels and documents, and
    the normalised Gram of each view of :data:`PARTS` (σ ≡ 1), parses from ``cache_dir``."""
    data = read_relations([PPI / f"{corpus}-train.xml", PPI / f"{corpus}-test.xml"])
    pairs = data.pairs()
    y = np.array([int(p.label) for p in pairs], dtype=np.int64)
    docs = np.array([p.sentence.document for p in pairs])
    parsed = DependencyParser(cache_dir=cache_dir, progress=False).parse(list(data))
    items = pair_views(parsed, pairs, views=tuple(p.view for p in PARTS), blind=True)
    del parsed
    grams = [np.asarray(part.normalized().gram([it[part.view] for it in items], n_jobs=n_jobs,
                                               progress=False)) for part in PARTS]
    return pairs, y, docs, grams


def probe(corpus: str, cache_dir: str, n_jobs: int | None) -> dict:
    t0 = time.perf_counter()
    _, y, docs, grams = view_grams(corpus, cache_dir, n_jobs)
    splits = document_folds(list(docs), y, 10, 0)
    n = len(y)
    names = ("PK SVM (sum)", "PK SVM (aligned views)", "PK SVM (MKL views)")
    preds = {m: np.zeros(n, dtype=np.int64) for m in names}
    scores = {m: np.zeros(n) for m in preds}
    betas, mkl, kept = [], [], []
    for tr, te in splits:
        Ks_tr = [K[np.ix_(tr, tr)] for K in grams]
        beta = alignment_weights(Ks_tr, y[tr])
        betas.append([round(float(b), 4) for b in beta])
        gamma, step = mkl_weights(Ks_tr, y[tr], docs[tr])
        mkl.append([round(float(b), 4) for b in gamma])
        kept.append(step)
        for name, w in zip(names, (np.ones(3), beta, gamma), strict=True):
            K_tr = sum(b * K for b, K in zip(w, Ks_tr, strict=True))
            K_te = sum(b * K[np.ix_(te, tr)] for b, K in zip(w, grams, strict=True))
            s, p = svm_row(K_tr, K_te, y[tr], docs[tr])
            scores[name][te], preds[name][te] = s, p
        del Ks_tr
    models = {m: pooled_scores(y, preds[m], scores[m], splits) for m in preds}
    b = models["PK SVM (sum)"]
    against_sum = {}
    for name in names[1:]:
        a = models[name]
        diff = [round(x - z, 2) for x, z in zip(a["f1_folds"], b["f1_folds"], strict=True)]
        against_sum[name] = {"f1": round(a["f1"] - b["f1"], 2), "f1_folds": diff,
                             "better_folds": sum(d > 0 for d in diff),
                             "worse_folds": sum(d < 0 for d in diff)}
    return {
        "pairs": n, "positives": int(y.sum()), "folds": len(splits),
        "models": models,
        "against_sum": against_sum,
        "weights": {"views": list(NAMES), "alignment": betas, "mkl": mkl,
                    "mkl_step_kept": kept},
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", nargs="+", default=["BioInfer", "HPRD50", "IEPA", "LLL"])
    ap.add_argument("--cache-dir", required=True, help="parse cache")
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    doc = {"benchmark": "view-weights-probe", "cores": len(os.sched_getaffinity(0)),
           "load_before": [round(x, 2) for x in os.getloadavg()],
           "runs": {c: probe(c, args.cache_dir, args.n_jobs) for c in args.corpora}}
    doc["load_after"] = [round(x, 2) for x in os.getloadavg()]
    report(doc, args.out)


if __name__ == "__main__":
    main()
