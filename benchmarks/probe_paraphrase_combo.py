"""Probe: kb-SRK (kmax 1..4) + PR + TF-KLD, normalised Grams summed with weights; weights, C
chosen by 5-fold CV on the training split (TF-KLD refitted inside every fold); the chosen
setting is trained on the whole training split and tested once.

Writes benchmarks/results/probe_paraphrase_combo_<data>.json.

The saved results predate the paper's TF-KLD weights (docs/srk.md, note 1); the truncated
SVD keeps this probe's cost.
"""
from __future__ import annotations

import itertools
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

sys.path.insert(0, os.path.dirname(__file__))
from probe_paraphrase import corpora  # noqa: E402

from structkernels.kernels.srk.common import srk_gram_stack, sum_normalized  # noqa: E402
from structkernels.kernels.srk.kb import KbSRK  # noqa: E402
from structkernels.kernels.srk.pr import pr_features  # noqa: E402
from structkernels.kernels.tfkld import TfKld  # noqa: E402
from structkernels.text.tokenize import TextPipeline  # noqa: E402


def cosine(F, G):
    nf, ng = np.linalg.norm(F, axis=1), np.linalg.norm(G, axis=1)
    nf[nf == 0] = 1
    ng[ng == 0] = 1
    return (F / nf[:, None]) @ (G / ng[:, None]).T


def main(name, cache=".cache/srk"):
    t0 = time.time()
    tr, te = corpora(name)
    pipe = TextPipeline()
    Xtr, Xte = tr.tokenized(pipe), te.tokenized(pipe)
    ytr, yte = tr.labels, te.labels
    kern = KbSRK(k=1, kmax=4)
    S_tr, d_tr, _ = srk_gram_stack(kern, Xtr, n_jobs=2, cache=cache, progress=False)
    S_te, d_te, _ = srk_gram_stack(kern, Xte, Xtr, n_jobs=2, cache=cache, progress=False)
    t_srk = time.time() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srk = {k: (sum_normalized(S_tr[:k], d_tr[:k]) / k,
                   sum_normalized(S_te[:k], d_te[:k], d_tr[:k]) / k) for k in (2, 4)}
    del S_tr, S_te
    P, Pe = pr_features(Xtr), pr_features(Xte)
    pr = (cosine(P, P), cosine(Pe, P))
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Xtr, ytr))
    t1 = time.time()
    # TF-KLD Grams: per fold (fitted on the fold's training part), and on the whole split
    tf_fold = []
    for a, _ in folds:
        m = TfKld(n_components=100, factorization="svd").fit([Xtr[i] for i in a], ytr[a])
        F = m.transform(Xtr)
        tf_fold.append(cosine(F, F))
    m = TfKld(n_components=100, factorization="svd").fit(Xtr, ytr)
    F, Fe = m.transform(Xtr), m.transform(Xte)
    tf_full = (cosine(F, F), cosine(Fe, F))
    t_tf = time.time() - t1
    if name == "msrp":  # the larger split: a smaller grid
        grid = list(itertools.product((0, 4), (0, 1), (0, 0.5, 1), (1,)))
    else:
        grid = list(itertools.product((0, 2, 4), (0, 0.5, 1), (0, 0.5, 1, 2), (0.3, 1, 3)))
    rows = []
    for kmax, w_pr, w_tf, C in grid:
        if kmax == 0 and w_pr == 0 and w_tf == 0:
            continue
        accs = []
        for f, (a, b) in enumerate(folds):
            K = w_pr * pr[0] + w_tf * tf_fold[f]
            if kmax:
                K = K + srk[kmax][0]
            clf = SVC(kernel="precomputed", C=C).fit(K[np.ix_(a, a)], ytr[a])
            accs.append(accuracy_score(ytr[b], clf.predict(K[np.ix_(b, a)])))
        Ktr = w_pr * pr[0] + w_tf * tf_full[0] + (srk[kmax][0] if kmax else 0)
        Kte = w_pr * pr[1] + w_tf * tf_full[1] + (srk[kmax][1] if kmax else 0)
        p = SVC(kernel="precomputed", C=C).fit(Ktr, ytr).predict(Kte)
        r = dict(kmax=kmax, w_pr=w_pr, w_tfkld=w_tf, C=C, cv=round(100 * np.mean(accs), 2),
                 test_acc=round(100 * accuracy_score(yte, p), 2),
                 test_f1=round(100 * f1_score(yte, p), 2))
        rows.append(r)
        print(r, flush=True)
    best = max(rows, key=lambda r: r["cv"])
    out = dict(data=name, n_train=len(tr), n_test=len(te), srk_seconds=round(t_srk, 1),
               tfkld_seconds=round(t_tf, 1), load=os.getloadavg(), chosen_by_cv=best,
               rows=rows)
    print("CHOSEN", best, flush=True)
    Path("benchmarks/results").mkdir(exist_ok=True)
    Path(f"benchmarks/results/probe_paraphrase_combo_{name}.json").write_text(
        json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
