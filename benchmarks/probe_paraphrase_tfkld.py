"""Probe: TF-KLD as the paper builds it (Ji & Eisenstein 2013: unigram + bigram counts,
KL weights from the training labels, NMF to 100 dimensions over the training and test
sentences without their labels, ``[u + v, |u - v|]``, linear SVM), the fine-grained
overlap features (Wan et al. 2006, words and stems), and their normalised sums with
kb-SRK kmax 4 + PR; every weight and C chosen by 5-fold CV on the training split, with
TF-KLD refitted inside every fold on the fold's training labels only.

With CROSS_FIT = k >= 2 the training pairs' TF-KLD features are out of fold (``TfKld(cross_fit=k)``:
each pair weighted by the labels of the other inner folds only), the test pairs' from every
training label.

Usage: python benchmarks/probe_paraphrase_tfkld.py msrp|rte features nmf|svd [MAX_ITER [MIN_DF
           [CROSS_FIT]]]
       python benchmarks/probe_paraphrase_tfkld.py msrp|rte combo nmf|svd [CROSS_FIT]
       python benchmarks/probe_paraphrase_tfkld.py msrp|rte tune   (TF-KLD alone: dimensions,
           pseudo-counts and C by CV on train; writes ..._<data>_tune.json)
Writes benchmarks/results/probe_paraphrase_tfkld_<data>_<factorization>[_cf<k>].json; the
TF-KLD features of each fold go to .cache/tfkld/<data>_<factorization>[_cf<k>].npz (the
combination step reads them).
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
from joblib import Parallel, delayed
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

sys.path.insert(0, os.path.dirname(__file__))
from probe_paraphrase import corpora  # noqa: E402

from structkernels.kernels.srk.common import srk_gram_stack, sum_normalized  # noqa: E402
from structkernels.kernels.srk.kb import KbSRK  # noqa: E402
from structkernels.kernels.srk.pr import overlap_features, pr_features  # noqa: E402
from structkernels.kernels.tfkld import TfKld  # noqa: E402
from structkernels.text.tokenize import TextPipeline  # noqa: E402

CACHE = Path(".cache/tfkld")


def tfkld_features(Xtr, ytr, Xte, fit_idx, other_idx, max_iter, min_df, factorization,
                   cross_fit=None):
    """TF-KLD features of train and test, weights from ``fit_idx``'s labels only; the
    factorisation sees every sentence (no labels).  With ``cross_fit`` the pairs of
    ``fit_idx`` get out-of-fold features (weights from the other inner folds)."""
    unl = [Xtr[i] for i in other_idx] + list(Xte)
    m = TfKld(n_components=100, max_iter=max_iter, min_df=min_df,
              factorization=factorization, cross_fit=cross_fit)
    F_fit = m.fit_transform([Xtr[i] for i in fit_idx], ytr[fit_idx], unlabeled=unl)
    F = np.empty((len(Xtr), F_fit.shape[1]))
    F[fit_idx] = F_fit
    if len(other_idx):
        F[other_idx] = m.transform([Xtr[i] for i in other_idx])
    return F, m.transform(Xte)


def features(name, factorization="nmf", max_iter=200, min_df=1, cross_fit=0):
    t0 = time.time()
    tr, te = corpora(name)
    words = TextPipeline(stem=False)
    Xtr, Xte = tr.tokenized(words), te.tokenized(words)
    ytr = tr.labels
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Xtr, ytr))
    jobs = [(a, b) for a, b in folds] + [(np.arange(len(ytr)), np.array([], int))]
    out = Parallel(n_jobs=2)(delayed(tfkld_features)(Xtr, ytr, Xte, a, b, max_iter, min_df,
                                                     factorization, cross_fit or None)
                             for a, b in jobs)
    CACHE.mkdir(parents=True, exist_ok=True)
    arrays = {f"tr{i}": F for i, (F, _) in enumerate(out)}
    arrays["te"] = out[-1][1]
    np.savez(CACHE / f"{name}_{tag(factorization, cross_fit)}.npz", **arrays)
    print(f"TF-KLD features: {time.time() - t0:.0f} s, load {os.getloadavg()}", flush=True)


def tag(factorization, cross_fit):
    return f"{factorization}_cf{cross_fit}" if cross_fit else factorization


def cosine(F, G):
    nf, ng = np.linalg.norm(F, axis=1), np.linalg.norm(G, axis=1)
    nf[nf == 0] = 1
    ng[ng == 0] = 1
    return (F / nf[:, None]) @ (G / ng[:, None]).T


def combo(name, factorization, cross_fit=0, cache=".cache/srk"):
    t0 = time.time()
    tr, te = corpora(name)
    ytr, yte = tr.labels, te.labels
    stems, words = TextPipeline(), TextPipeline(stem=False)
    Str, Ste = tr.tokenized(stems), te.tokenized(stems)
    Wtr, Wte = tr.tokenized(words), te.tokenized(words)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Str, ytr))
    z = np.load(CACHE / f"{name}_{tag(factorization, cross_fit)}.npz")
    tf_fold = [cosine(z[f"tr{i}"], z[f"tr{i}"]) for i in range(5)]
    tf_full = (cosine(z["tr5"], z["tr5"]), cosine(z["te"], z["tr5"]))
    # fine-grained overlap features: standardised on train, RBF (unit diagonal)
    O_tr = np.hstack([overlap_features(Wtr), overlap_features(Str)])
    O_te = np.hstack([overlap_features(Wte), overlap_features(Ste)])
    sc = StandardScaler().fit(O_tr)
    O_tr, O_te = sc.transform(O_tr), sc.transform(O_te)
    g = 1.0 / O_tr.shape[1]

    def rbf(A, B):
        d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
        return np.exp(-g * np.maximum(d2, 0))
    fg = (rbf(O_tr, O_tr), rbf(O_te, O_tr))
    kern = KbSRK(k=1, kmax=4)
    S_tr, d_tr, _ = srk_gram_stack(kern, Str, n_jobs=2, cache=cache, progress=False)
    S_te, d_te, _ = srk_gram_stack(kern, Ste, Str, n_jobs=2, cache=cache, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srk = (sum_normalized(S_tr[:4], d_tr[:4]) / 4,
               sum_normalized(S_te[:4], d_te[:4], d_tr[:4]) / 4)
    del S_tr, S_te
    P, Pe = pr_features(Str), pr_features(Ste)
    pr = (P @ P.T, Pe @ P.T)   # the paper's linear PR
    base = {"srk": srk, "pr": pr, "fine": fg}
    emb = Path(f".cache/embed_{name}.npz")
    if emb.exists():  # frozen all-MiniLM-L6-v2 (probe_paraphrase_embed.py encode)
        e = np.load(emb)

        def efeats(u, v):
            return np.hstack([(u * v).sum(1, keepdims=True), np.abs(u - v), u * v])
        E, Ee = efeats(e["train_s"], e["train_t"]), efeats(e["test_s"], e["test_t"])
        esc = StandardScaler().fit(E)
        E, Ee = esc.transform(E), esc.transform(Ee)
        ge = 1.0 / E.shape[1]
        d2 = (E * E).sum(1)[:, None] + (E * E).sum(1)[None] - 2 * E @ E.T
        d2e = (Ee * Ee).sum(1)[:, None] + (E * E).sum(1)[None] - 2 * Ee @ E.T
        base["embed"] = (np.exp(-ge * np.maximum(d2, 0)), np.exp(-ge * np.maximum(d2e, 0)))
    names = ("srk", "pr", "fine", "tfkld", "embed")
    grid = [dict(tfkld=1, C=C) for C in (0.3, 1, 3)]
    grid += [dict(fine=1, C=C) for C in (0.3, 1, 3)]
    grid += [dict(srk=1, pr=1, C=1), dict(fine=1, tfkld=1, C=1), dict(fine=1, tfkld=1, C=3)]
    grid += [dict(srk=1, pr=1, fine=f, tfkld=t, embed=m, C=C)
             for f, t, m, C in itertools.product((0, 1, 2), (0, 1), (0, 1, 2), (1, 3))
             if (f, t, m) != (0, 0, 0) and ("embed" in base or m == 0)]
    if "embed" in base:  # the best sum of probe_paraphrase_embed.py, with fine on and off
        grid += [dict(srk=2, pr=2, fine=f, embed=1, C=C)
                 for f, C in itertools.product((0, 1), (1, 3))]
    rows = []
    for C in (0.03, 0.1, 0.3, 1):  # the paper's classifier: a linear SVM on the raw features
        accs = []
        for f, (a, b) in enumerate(folds):
            F = z[f"tr{f}"]
            clf = LinearSVC(C=C, loss="hinge", max_iter=100000).fit(F[a], ytr[a])
            accs.append(accuracy_score(ytr[b], clf.predict(F[b])))
        p = LinearSVC(C=C, loss="hinge", max_iter=100000).fit(z["tr5"], ytr).predict(z["te"])
        r = dict(tfkld_linear_svm=True, C=C, cv=round(100 * np.mean(accs), 2),
                 test_acc=round(100 * accuracy_score(yte, p), 2),
                 test_f1=round(100 * f1_score(yte, p), 2))
        rows.append(r)
        print(r, flush=True)
    for w in grid:
        C = w["C"]
        fixed = [k for k in ("srk", "pr", "fine", "embed") if w.get(k)]
        Ktr = sum(w[k] * base[k][0] for k in fixed) if fixed else 0
        Kte = sum(w[k] * base[k][1] for k in fixed) if fixed else 0
        w_tf = w.get("tfkld", 0)
        accs = []
        for f, (a, b) in enumerate(folds):
            K = Ktr + w_tf * tf_fold[f]
            clf = SVC(kernel="precomputed", C=C).fit(K[np.ix_(a, a)], ytr[a])
            accs.append(accuracy_score(ytr[b], clf.predict(K[np.ix_(b, a)])))
        p = SVC(kernel="precomputed", C=C).fit(Ktr + w_tf * tf_full[0], ytr).predict(
            Kte + w_tf * tf_full[1])
        r = {f"w_{k}": w.get(k, 0) for k in names}
        r.update(C=C, cv=round(100 * np.mean(accs), 2),
                 test_acc=round(100 * accuracy_score(yte, p), 2),
                 test_f1=round(100 * f1_score(yte, p), 2))
        rows.append(r)
        print(r, flush=True)
    best = max((r for r in rows if "w_srk" in r), key=lambda r: r["cv"])
    out = dict(data=name, factorization=factorization, cross_fit=cross_fit,
               n_train=len(tr), n_test=len(te),
               seconds=round(time.time() - t0, 1),
               load=os.getloadavg(), chosen_by_cv=best, rows=rows)
    print("CHOSEN", best, flush=True)
    Path(f"benchmarks/results/probe_paraphrase_tfkld_{name}_{tag(factorization, cross_fit)}.json"
         ).write_text(
        json.dumps(out, indent=1))


def tune(name):
    """TF-KLD alone, linear SVM on out-of-fold features: dimensions, pseudo-counts and C chosen
    by 5-fold CV on the training split (weights refitted per fold), then scored on test."""
    t0 = time.time()
    tr, te = corpora(name)
    ytr, yte = tr.labels, te.labels
    words = TextPipeline(stem=False)
    Xtr, Xte = tr.tokenized(words), te.tokenized(words)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Xtr, ytr))
    Cs = (0.03, 0.3, 3)
    configs = [(100, 1.05), (100, 5.0), (300, 1.05), (300, 5.0)]

    def run(K, sm, a, b):
        m = TfKld(n_components=K, smoothing=sm, factorization="svd", cross_fit=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Fa = m.fit_transform([Xtr[i] for i in a], ytr[a],
                                 unlabeled=[Xtr[i] for i in b] + list(Xte))
            Fb = m.transform([Xtr[i] for i in b] if len(b) else Xte)
            out = {}
            for C in Cs:
                clf = LinearSVC(C=C, loss="hinge", max_iter=100000).fit(Fa, ytr[a])
                out[C] = (accuracy_score(ytr[b], clf.predict(Fb)) if len(b)
                          else clf.predict(Fb))
        return out
    res = Parallel(n_jobs=2)(delayed(run)(K, sm, a, b) for K, sm in configs for a, b in folds)
    rows = []
    for i, (K, sm) in enumerate(configs):
        for C in Cs:
            cv = 100 * np.mean([r[C] for r in res[5 * i:5 * i + 5]])
            rows.append(dict(n_components=K, smoothing=sm, C=C, cv=round(cv, 2)))
            print(rows[-1], flush=True)
    best = dict(max(rows, key=lambda r: r["cv"]))
    p = run(best["n_components"], best["smoothing"], np.arange(len(ytr)), np.array([], int))
    p = p[best["C"]]
    best.update(test_acc=round(100 * accuracy_score(yte, p), 2),
                test_f1=round(100 * f1_score(yte, p), 2),
                test_positive_rate=round(float(p.mean()), 3))
    print("CHOSEN", best, flush=True)
    out = dict(data=name, factorization="svd", cross_fit=5, seconds=round(time.time() - t0, 1),
               load=os.getloadavg(), chosen_by_cv=best, rows=rows)
    Path(f"benchmarks/results/probe_paraphrase_tfkld_{name}_tune.json").write_text(
        json.dumps(out, indent=1))


if __name__ == "__main__":
    if sys.argv[2] == "tune":
        tune(sys.argv[1])
    elif sys.argv[2] == "features":
        features(sys.argv[1], sys.argv[3], *(int(a) for a in sys.argv[4:7]))
    else:
        combo(sys.argv[1], sys.argv[3], *(int(a) for a in sys.argv[4:5]))
