"""Reproduce Tables 1 and 2 of Bu, Li & Zhu (ACL 2012): SRKs on MSRP and RTE-3.

Protocol (paper, Sec. 6): sentences tokenised and stemmed (here: the
project's tokenizer, lower-casing and the Snowball English stemmer); every
window kernel ``K_k`` cosine-normalised and summed, ``K_1 + ... + K_kmax``
for kmax in 1..4, each with and without the PR features (unigram precision
and recall, linear kernel, added to the SRK); SVC(kernel="precomputed",
C=1); lam = 1.  Accuracy on the test set.

The paper reports, per kernel, the best test accuracy over the 8 settings
(kmax x PR).  This script prints that figure ("best on test", the paper's
protocol) and, separately, the test accuracy of the setting chosen by
5-fold cross-validation on the training set alone (no test tuning).

Each ``K_k`` Gram (train + test together) is computed once per kernel and
data set and cached as ``.npy`` under ``--cache`` (git-ignored ``.cache/``).

Usage::

    python benchmarks/reproduce_srk_tables.py --data ../shared/data --n-jobs 2
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from structkernels.datasets.rewriting import RewritingCorpus, load_msrp, load_rte
from structkernels.engine.checks import ZeroSelfSimilarityWarning, normalize_gram
from structkernels.kernels.names import kernel as make_kernel
from structkernels.kernels.srk.common import srk_gram_stack
from structkernels.kernels.srk.pr import pr_features
from structkernels.text.tokenize import TextPipeline
from structkernels.utils import atomic_open

PAPER = {
    "msrp": {"kb-srk": 76.3, "ps-srk": 75.6, "pw-srk": 75.0, "pr": 73.6},
    "rte3": {"kb-srk": 65.1, "ps-srk": 64.6, "pw-srk": 63.8, "pr": 62.0},
}
KMAX = 4


def load(data: Path, name: str) -> tuple[RewritingCorpus, RewritingCorpus]:
    if name == "msrp":
        return (load_msrp(data / "msrp/msr_paraphrase_train.txt"),
                load_msrp(data / "msrp/msr_paraphrase_test.txt"))
    rte = data / "rte/nltk_rte"
    train = load_rte(rte / "rte3_dev.xml")
    for f in ("rte1_dev.xml", "rte1_test.xml", "rte2_dev.xml", "rte2_test.xml"):
        train = train + load_rte(rte / f)
    return train, load_rte(rte / "rte3_test.xml")


def fit_eval(K: np.ndarray, y: np.ndarray, tr: np.ndarray, te: np.ndarray) -> dict:
    clf = SVC(kernel="precomputed", C=1.0)
    clf.fit(K[np.ix_(tr, tr)], y[tr])
    pred = clf.predict(K[np.ix_(te, tr)])
    return {"accuracy": 100 * accuracy_score(y[te], pred), "f1": 100 * f1_score(y[te], pred)}


def cv_accuracy(K: np.ndarray, y: np.ndarray, tr: np.ndarray, seed: int) -> float:
    skf = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    accs = []
    for a, b in skf.split(tr, y[tr]):
        ia, ib = tr[a], tr[b]
        clf = SVC(kernel="precomputed", C=1.0).fit(K[np.ix_(ia, ia)], y[ia])
        accs.append(accuracy_score(y[ib], clf.predict(K[np.ix_(ib, ia)])))
    return 100 * float(np.mean(accs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--datasets", default="msrp,rte3")
    ap.add_argument("--kernels", default="kb-srk,ps-srk,pw-srk")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--cache", default=".cache/srk")
    ap.add_argument("--no-cv", action="store_true", help="skip the train-only selection")
    ap.add_argument("--random-state", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None, help="first N train/test pairs (smoke)")
    ap.add_argument("--merge", nargs="*", default=[],
                    help="JSON outputs of other runs (e.g. one data set or kernel each) to "
                    "merge into --out; with --datasets '' nothing is recomputed")
    ap.add_argument("--out", default="benchmarks/results/srk_tables")
    args = ap.parse_args()
    data = Path(args.data)
    out_json = Path(args.out + ".json")
    out_json.parent.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "protocol": "lowercase + Snowball stem; sum of normalised K_1..K_kmax (+ linear PR); "
        "SVC(precomputed, C=1); lam=1",
        "python": platform.python_version(),
        "paper": PAPER,
        "datasets": {},
    }
    if out_json.exists():
        results["datasets"] = json.loads(out_json.read_text()).get("datasets", {})
    for other in args.merge:
        for ds, R in json.loads(Path(other).read_text())["datasets"].items():
            mine = results["datasets"].setdefault(ds, {k: v for k, v in R.items() if k != "kernels"})
            mine.setdefault("kernels", {}).update(R["kernels"])
    pipe = TextPipeline(lowercase=True, stem=True)

    def save() -> None:
        with atomic_open(out_json) as fh:
            fh.write(json.dumps(results, indent=2))
        write_markdown(results, Path(args.out + ".md"))

    save()
    for ds in [d for d in args.datasets.split(",") if d]:
        train, test = load(data, ds)
        if args.limit:
            train, test = (RewritingCorpus(c.sources[:args.limit], c.targets[:args.limit],
                                           c.labels[:args.limit], c.ids[:args.limit], c.path)
                           for c in (train, test))
        X = train.tokenized(pipe) + test.tokenized(pipe)
        y = np.concatenate([train.labels, test.labels])
        tr = np.arange(len(train))
        te = np.arange(len(train), len(X))
        R = results["datasets"].setdefault(ds, {"n_train": len(train), "n_test": len(test),
                                                "kernels": {}})
        f = pr_features(X)
        Kpr = f @ f.T
        R["kernels"]["pr"] = {"test": fit_eval(Kpr, y, tr, te)}
        if not args.no_cv:
            R["kernels"]["pr"]["cv_train"] = cv_accuracy(Kpr, y, tr, args.random_state)
        save()
        for name in args.kernels.split(","):
            t0 = time.perf_counter()
            kern = make_kernel(name, k=1, kmax=KMAX, lam=1.0)
            stack, dx, _ = srk_gram_stack(
                kern, X, n_jobs=args.n_jobs, cache_dir=args.cache,
                block_size=None if name == "kb-srk" else 4096, progress=True,
            )
            gram_s = time.perf_counter() - t0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ZeroSelfSimilarityWarning)
                norm = [normalize_gram(stack[j], dx[j], dx[j]) for j in range(KMAX)]
            n_zero = [int((dx[j] <= 0).sum()) for j in range(KMAX)]
            del stack
            settings = {}
            K = np.zeros_like(norm[0])
            for kmax in range(1, KMAX + 1):
                K += norm[kmax - 1]
                for pr in (False, True):
                    Kc = K + Kpr if pr else K
                    entry = {"kmax": kmax, "pr": pr, "test": fit_eval(Kc, y, tr, te)}
                    if not args.no_cv:
                        entry["cv_train"] = cv_accuracy(Kc, y, tr, args.random_state)
                    settings[f"kmax={kmax}{'+PR' if pr else ''}"] = entry
                    print(ds, name, kmax, pr, entry, flush=True)
            best_test = max(settings, key=lambda s: settings[s]["test"]["accuracy"])
            out = {"gram_seconds": round(gram_s, 1), "zero_self_similarity": n_zero,
                   "settings": settings, "best_on_test": best_test}
            if not args.no_cv:
                out["chosen_by_cv"] = max(settings, key=lambda s: settings[s]["cv_train"])
            R["kernels"][name] = out
            save()
            del norm, K


def write_markdown(results: dict, path: Path) -> None:
    lines = ["# String re-writing kernels: Tables 1 and 2 of Bu, Li & Zhu (2012)", "",
             f"Protocol: {results['protocol']}.", ""]
    for ds, R in results["datasets"].items():
        title = "MSRP (Table 1)" if ds == "msrp" else "RTE-3 (Table 2)"
        lines += [f"## {title}: train {R['n_train']}, test {R['n_test']}", "",
                  "| kernel | paper acc. | ours, best on test (setting) | ours, chosen by "
                  "train CV (setting) | F1 of CV choice |",
                  "|---|---|---|---|---|"]
        for name, K in R["kernels"].items():
            paper = results["paper"][ds].get(name, "")
            if name == "pr":
                acc = f"{K['test']['accuracy']:.1f}"
                lines.append(f"| PR (linear SVC) | {paper} | {acc} | {acc} (single setting) | "
                             f"{K['test']['f1']:.1f} |")
                continue
            bt = K["settings"][K["best_on_test"]]
            cvk = K.get("chosen_by_cv")
            cvs = (f"{K['settings'][cvk]['test']['accuracy']:.1f} ({cvk})" if cvk else "")
            f1 = f"{K['settings'][cvk]['test']['f1']:.1f}" if cvk else ""
            lines.append(f"| {name} | {paper} | {bt['test']['accuracy']:.1f} "
                         f"({K['best_on_test']}) | {cvs} | {f1} |")
        lines += ["", "All settings (test accuracy %, 5-fold train CV accuracy %):", "",
                  "| kernel | " + " | ".join(f"kmax={k}{p}" for k in range(1, KMAX + 1)
                                            for p in ("", "+PR")) + " |",
                  "|---|" + "---|" * (2 * KMAX)]
        for name, K in R["kernels"].items():
            if name == "pr":
                continue
            cells = []
            for k in range(1, KMAX + 1):
                for p in ("", "+PR"):
                    s = K["settings"][f"kmax={k}{p}"]
                    cv = f" / {s['cv_train']:.1f}" if "cv_train" in s else ""
                    cells.append(f"{s['test']['accuracy']:.1f}{cv}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    with atomic_open(path) as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
