"""Probe: TF-KLD latent vectors (Ji & Eisenstein 2013) on MSRP / RTE-3, alone and summed
with kb-SRK and PR Grams; every choice by 5-fold CV on the training split.

Writes benchmarks/results/probe_paraphrase.json.
"""
from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import NMF, TruncatedSVD
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from structkernels.datasets.rewriting import load_rewritings
from structkernels.text.tokenize import TextPipeline

D = Path(__file__).resolve().parents[2] / "shared" / "data"  # ../shared/data beside the checkout
R = D / "rte/nltk_rte"


def corpora(name):
    if name == "msrp":
        return (load_rewritings(D / "msrp/msr_paraphrase_train.txt"),
                load_rewritings(D / "msrp/msr_paraphrase_test.txt"))
    tr = load_rewritings(R / "rte3_dev.xml")
    for f in ("rte1_dev.xml", "rte1_test.xml", "rte2_dev.xml", "rte2_test.xml"):
        tr = tr + load_rewritings(R / f)
    return tr, load_rewritings(R / "rte3_test.xml")


def ngrams(toks, n_max=2):
    out = list(toks)
    for n in range(2, n_max + 1):
        out += [" ".join(toks[i:i + n]) for i in range(len(toks) - n + 1)]
    return out


def tf_matrix(sents, vocab):
    rows, cols, vals = [], [], []
    for i, s in enumerate(sents):
        for w, c in Counter(s).items():
            j = vocab.get(w)
            if j is not None:
                rows.append(i)
                cols.append(j)
                vals.append(c)
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(sents), len(vocab)), dtype=float)


def kld_weights(A, B, y, alpha=0.05, prior=False):
    """Bernoulli KL(p||q): p = P(in one side | in the other, y=1), q = same for y=0."""
    a, b = (A > 0).astype(float), (B > 0).astype(float)
    both = a.multiply(b)
    either = ((a + b) > 0).astype(float)
    out = []
    for lab in (1, 0):
        m = (y == lab)
        nb = np.asarray(both[m].sum(0)).ravel()
        ne = np.asarray(either[m].sum(0)).ravel()
        # present in both / present in at least one: p(in s1 | in s2) symmetrised
        if prior:
            p0 = nb.sum() / ne.sum()
            out.append((nb + alpha * p0) / (ne + alpha))
        else:
            out.append((nb + alpha) / (ne + 2 * alpha))
    p, q = out
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


def tfkld(Str, Ttr, ytr, Ste, Tte, dim=100, method="svd", min_df=1, n_max=2, seed=0,
          alpha=0.05, prior=False, weight=True):
    Str, Ttr, Ste, Tte = ([ngrams(s, n_max) for s in S] for S in (Str, Ttr, Ste, Tte))
    df = Counter(w for s in Str + Ttr for w in set(s))
    vocab = {w: i for i, w in enumerate(sorted(w for w, c in df.items() if c >= min_df))}
    A, B = tf_matrix(Str, vocab), tf_matrix(Ttr, vocab)
    w = kld_weights(A, B, ytr, alpha, prior) if weight else np.ones(len(vocab))
    W = sp.diags(w)
    Xtr = sp.vstack([A @ W, B @ W]).tocsr()
    if method == "svd":
        m = TruncatedSVD(dim, random_state=seed).fit(Xtr)
    else:
        m = NMF(dim, init="nndsvd", max_iter=300, random_state=seed).fit(Xtr)
    n = len(Str)
    Z = m.transform(Xtr)
    u, v = Z[:n], Z[n:]
    ue, ve = m.transform(tf_matrix(Ste, vocab) @ W), m.transform(tf_matrix(Tte, vocab) @ W)
    return (u, v), (ue, ve)


def pair_feats(u, v):
    return np.hstack([u + v, np.abs(u - v)])


def lin_norm(F, G=None):
    G = F if G is None else G
    nf, ng = np.linalg.norm(F, axis=1), np.linalg.norm(G, axis=1)
    nf[nf == 0] = 1
    ng[ng == 0] = 1
    return (F / nf[:, None]) @ (G / ng[:, None]).T


def rbf(F, G, gamma):
    d = (F * F).sum(1)[:, None] + (G * G).sum(1)[None] - 2 * F @ G.T
    return np.exp(-gamma * np.maximum(d, 0))


def cv_acc(K, y, C, folds):
    acc = []
    for tr, te in folds:
        clf = SVC(kernel="precomputed", C=C).fit(K[np.ix_(tr, tr)], y[tr])
        acc.append(accuracy_score(y[te], clf.predict(K[np.ix_(te, tr)])))
    return 100 * float(np.mean(acc))


def test_score(Ktr, Kte, ytr, yte, C):
    p = SVC(kernel="precomputed", C=C).fit(Ktr, ytr).predict(Kte)
    return round(100 * accuracy_score(yte, p), 2), round(100 * f1_score(yte, p), 2)


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "msrp"
    out = {}
    t0 = time.time()
    tr, te = corpora(name)
    pipe = TextPipeline(lowercase=True, stem=True)
    Xtr, Xte = tr.tokenized(pipe), te.tokenized(pipe)
    ytr, yte = tr.labels, te.labels
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Xtr, ytr))
    rows = []
    grid = [dict(weight=False), dict(alpha=0.05, min_df=2), dict(alpha=1.0, min_df=2),
            dict(alpha=5.0, prior=True, min_df=2), dict(alpha=5.0, prior=True, min_df=5),
            dict(alpha=20.0, prior=True, min_df=2)]
    for g in grid:
        (u, v), (ue, ve) = tfkld([s for s, _ in Xtr], [t for _, t in Xtr], ytr,
                                 [s for s, _ in Xte], [t for _, t in Xte], dim=100, **g)
        F, Fe = pair_feats(u, v), pair_feats(ue, ve)
        Ktr, Kte = lin_norm(F), lin_norm(Fe, F)
        for C in (1,):
            r = dict(g, C=C, cv=round(cv_acc(Ktr, ytr, C, folds), 2),
                     test=test_score(Ktr, Kte, ytr, yte, C))
            print(r, round(time.time() - t0), flush=True)
            rows.append(r)
    out["tfkld"] = rows
    Path("benchmarks/results").mkdir(exist_ok=True)
    Path(f"benchmarks/results/probe_paraphrase_{name}.json").write_text(json.dumps(out, indent=1))
