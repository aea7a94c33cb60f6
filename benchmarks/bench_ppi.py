"""Relation extraction on the four public PPI corpora, as the BioNLP literature reports it.

Three parts (``--part``):

- ``cv``: document-level 10-fold cross-validation of every model on each corpus (the
  train and test files together), beside the all-paths graph kernel's published figures
  (Airola et al. 2008, as quoted in datasets/ppi/README.md);
- ``cross``: cross-corpus evaluation (train on one corpus' files, test on each other
  corpus), for the NPK and all-paths graph kernel models;
- ``cost``: the whole 10-fold evaluation of BioInfer again from the parse cache that
  ``--part cv`` filled (``cv`` with an empty ``--cache-dir`` gives the cold figure,
  parsing included), and the parser's throughput beside spaCy's own ``nlp.pipe`` on the
  same sentences (the ratio is ours over spaCy's).

Prints JSON; ``--out FILE`` also writes it.  Give the load average beside the figures:
it is in the document (``load_before``).

    python benchmarks/bench_ppi.py --part cv --cache-dir /tmp/ppi --out benchmarks/results/ppi_cv.json
    python benchmarks/bench_ppi.py --part cost --cache-dir /tmp/ppi --out benchmarks/results/ppi_cost.json
    python benchmarks/bench_ppi.py --part cross --cache-dir /tmp/ppi --out benchmarks/results/ppi_cross.json
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from _report import report

from structkernels.experiments.relations import DEFAULT_MODELS, MODELS, evaluate_corpora
from structkernels.relations import read_relations
from structkernels.relations.parse import DependencyParser

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"
CORPORA = ("BioInfer", "HPRD50", "IEPA", "LLL")
#: All-paths graph kernel, document-level 10-fold CV, F1 / ROC AUC (data README).
PUBLISHED_APG = {"BioInfer": (61.3, 81.9), "HPRD50": (63.4, 79.7), "IEPA": (75.1, 85.1),
                 "LLL": (76.8, 83.4)}


def corpus(name: str):
    return read_relations([PPI / f"{name}-train.xml", PPI / f"{name}-test.xml"])


def part_cv(args, parser) -> dict:
    out = {}
    for name in args.corpora:
        r = evaluate_corpora(corpus(name), cv=10, parser=parser, n_jobs=args.n_jobs,
                             random_state=args.random_state, progress=False,
                             models=args.models, cache_dir=args.cache_dir)
        f1, auc = PUBLISHED_APG[name]
        r["published_apg"] = {"f1": f1, "roc_auc": auc}
        out[name] = r
        print(f"{name}: {r['seconds']} s", flush=True)
    return out


def part_cross(args, parser) -> dict:
    models = ["NPK SVM", "APG SVM"]
    out: dict = {}
    for train in args.corpora:
        for test in args.corpora:
            if train == test:
                continue
            r = evaluate_corpora(corpus(train), corpus(test), parser=parser, n_jobs=args.n_jobs,
                                 random_state=args.random_state, progress=False, models=models)
            out.setdefault(train, {})[test] = {m: r["models"][m] for m in models}
            print(f"{train} -> {test}: {r['seconds']} s", flush=True)
    return out


def part_cost(args) -> dict:
    """The 10-fold BioInfer evaluation from the parse cache of ``--part cv`` (run that
    first with the same ``--cache-dir``), and the parser beside spaCy's ``nlp.pipe``."""
    bio = corpus("BioInfer")
    t = time.perf_counter()
    warm = evaluate_corpora(bio, cv=10, parser=DependencyParser(cache_dir=args.cache_dir,
                                                                progress=False),
                            n_jobs=args.n_jobs, random_state=args.random_state,
                            progress=False, models=args.models, cache_dir=args.cache_dir)
    warm_s = time.perf_counter() - t
    ours = DependencyParser(cache_dir=False, progress=False)
    nlp = ours.nlp
    texts = [s.text for s in bio]
    t = time.perf_counter()
    for _ in nlp.pipe(texts, batch_size=128):
        pass
    spacy_s = time.perf_counter() - t
    t = time.perf_counter()
    ours.parse(bio)
    ours_s = time.perf_counter() - t
    return {
        "sentences": len(bio), "pairs": warm["pairs"],
        "evaluate_from_cache_seconds": round(warm_s, 1),
        "parse_from_cache_seconds": warm["parse_seconds"],
        "step_seconds": warm["step_seconds"],
        "parser_seconds": round(ours_s, 2), "spacy_pipe_seconds": round(spacy_s, 2),
        "parser_sentences_per_second": round(len(bio) / ours_s, 1),
        "spacy_pipe_sentences_per_second": round(len(bio) / spacy_s, 1),
        "ratio_parser_over_spacy_pipe": round(ours_s / spacy_s, 2),
        "pipeline": f"{nlp.meta['lang']}_{nlp.meta['name']} {nlp.meta['version']}",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["cv", "cross", "cost"], required=True)
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    ap.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), choices=MODELS)
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--random-state", type=int, default=0)
    ap.add_argument("--cache-dir", required=True,
                    help="parse cache: --part cv with an empty folder measures the cold run")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    doc = {"benchmark": f"ppi-{args.part}", "cores": len(os.sched_getaffinity(0)),
           "load_before": [round(x, 2) for x in os.getloadavg()]}
    if args.part == "cost":
        doc["cost"] = part_cost(args)
    else:
        parser = DependencyParser(cache_dir=args.cache_dir, progress=False)
        doc[args.part] = part_cv(args, parser) if args.part == "cv" else part_cross(args, parser)
    doc["load_after"] = [round(x, 2) for x in os.getloadavg()]
    report(doc, args.out)


if __name__ == "__main__":
    main()
