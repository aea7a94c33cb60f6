"""Probe: two TF-KLD variants on MSRP (RBF SVM, C = 1, standardised features).

1. ``[cos(u, v), precision, recall, |u - v|, u * v]`` with the SVD fitted on the training
   sentences (inductive) and on train + test sentences (no test labels; transductive).
2. The TF-KLD cosine computed out of fold for the training pairs, added to PR.

Prints one line per setting (CV accuracy on train, test accuracy and F1).

The saved results predate the paper's TF-KLD weights (docs/srk.md, note 1); the truncated
SVD keeps this probe's cost.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import TruncatedSVD
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.dirname(__file__))
from probe_paraphrase import corpora, cv_acc, rbf, test_score  # noqa: E402

from structkernels.kernels.srk.pr import pr_features  # noqa: E402
from structkernels.kernels.tfkld import TfKld, ngram_features  # noqa: E402
from structkernels.text.tokenize import TextPipeline  # noqa: E402


def cos(a, b):
    den = np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return (a * b).sum(1) / den


def score(tag, F, Fe, ytr, yte, folds, t0):
    sc = StandardScaler().fit(F)
    F, Fe = sc.transform(F), sc.transform(Fe)
    g = 1 / F.shape[1]
    Ktr, Kte = rbf(F, F, g), rbf(Fe, F, g)
    print(tag, "cv", round(cv_acc(Ktr, ytr, 1, folds), 2), "test",
          test_score(Ktr, Kte, ytr, yte, 1), round(time.time() - t0), flush=True)


def main():
    t0 = time.time()
    tr, te = corpora("msrp")
    pipe = TextPipeline()
    Xtr, Xte = tr.tokenized(pipe), te.tokenized(pipe)
    ytr, yte = tr.labels, te.labels
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Xtr, ytr))
    P, Pe = pr_features(Xtr), pr_features(Xte)
    m = TfKld(n_components=100, factorization="svd").fit(Xtr, ytr)

    def feats(U, V, Ue, Ve):
        return (np.c_[cos(U, V), P, np.abs(U - V), U * V],
                np.c_[cos(Ue, Ve), Pe, np.abs(Ue - Ve), Ue * Ve])

    score("inductive (cv leaky)", *feats(*m.latent(Xtr), *m.latent(Xte)), ytr, yte, folds, t0)
    W = sp.diags(m.weights_)
    sides = ([s for s, _ in Xtr], [t for _, t in Xtr], [s for s, _ in Xte], [t for _, t in Xte])
    S = [m._counts([ngram_features(x, 2) for x in side]) @ W for side in sides]
    svd = TruncatedSVD(100, random_state=0).fit(sp.vstack(S))
    score("transductive svd (cv leaky)", *feats(*(svd.transform(x) for x in S)), ytr, yte,
          folds, t0)
    c_tr, c_te = np.zeros(len(Xtr)), np.zeros(len(Xte))
    for a, b in StratifiedKFold(5, shuffle=True, random_state=1).split(Xtr, ytr):
        mf = TfKld(n_components=100, factorization="svd").fit([Xtr[i] for i in a], ytr[a])
        c_tr[b] = cos(*mf.latent([Xtr[i] for i in b]))
        c_te += cos(*mf.latent(Xte)) / 5
    score("pr", P, Pe, ytr, yte, folds, t0)
    score("out-of-fold tfkld cos + pr", np.c_[c_tr, P], np.c_[c_te, Pe], ytr, yte, folds, t0)


if __name__ == "__main__":
    main()
