"""Relation extraction on new text: predict against spaCy's own parse time, stage by stage.

Trains (or loads, ``--model``) the extractor on BioInfer-train, then scores ``--sentences``
sentences drawn with replacement from BioInfer-test, each under a new id (no parse
cache), and reports, in one run on the same texts:

- ``spacy_pipe_seconds``: spaCy's ``nlp.pipe`` alone (the pipeline, one process);
- ``parse_seconds``: the extractor's parser (entity boundaries, one tree per sentence);
- ``views_seconds``: the pairs' structure views;
- ``score_seconds``: the kernel side with the references encoded once
  (:class:`structkernels.extraction.scoring.ReferenceScorer`), and
  ``score_seconds_composite``: the same scores through the composite kernel's Gram
  (references encoded again for every batch), on the first ``--composite-pairs`` pairs,
  with the ratio per pair;
- ``end_to_end_over_spacy``: (parse + views + score) / spaCy's ``nlp.pipe``;
- the peak resident memory of the process.

    python benchmarks/bench_predict.py --sentences 2000 --model /tmp/bioinfer.json.gz \
        --out benchmarks/results/predict_cost.json
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import numpy as np
from _report import report

from structkernels.extraction import RelationExtractor
from structkernels.relations import read_relations
from structkernels.relations.model import RelationCorpus, Sentence
from structkernels.relations.structures import pair_views

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"


def sample(corpus: RelationCorpus, n: int, seed: int) -> RelationCorpus:
    """``n`` sentences with pairs drawn with replacement, each under a new id and document."""
    rng = np.random.default_rng(seed)
    pool = [s for s in corpus if len(s.entities) > 1]
    out = []
    for k, i in enumerate(rng.integers(0, len(pool), size=n)):
        s = pool[int(i)]
        out.append(Sentence(f"b{k}", s.text, f"bd{k}", s.entities, s.interactions, s.labelled))
    return RelationCorpus(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--model", default=None, help="a saved extractor (trained when absent)")
    ap.add_argument("--train", default=str(PPI / "BioInfer-train.xml"),
                    help="the training corpus when no --model is given")
    ap.add_argument("--composite-pairs", type=int, default=512)
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    doc: dict = {"benchmark": "predict-cost", "cores": len(os.sched_getaffinity(0)),
                 "load_before": list(os.getloadavg())}
    if args.model and Path(args.model).exists():
        ex = RelationExtractor.load(args.model, cache_dir=False, n_jobs=args.n_jobs,
                                    progress=False)
    else:
        t = time.perf_counter()
        ex = RelationExtractor(cache_dir=False, n_jobs=args.n_jobs, progress=False,
                               calibration="platt")
        ex.fit(read_relations(args.train))
        doc["train"] = Path(args.train).name
        doc["train_seconds"] = round(time.perf_counter() - t, 1)
        if args.model:
            ex.save(args.model)
    doc["references"] = len(ex.references_)
    corpus = sample(read_relations(PPI / "BioInfer-test.xml"), args.sentences, args.seed)
    pairs = corpus.pairs()
    doc.update(sentences=len(corpus), pairs=len(pairs))
    parser = ex._parser()
    nlp = parser.nlp
    texts = [s.text for s in corpus]
    list(nlp.pipe(texts[:50]))  # warm
    t = time.perf_counter()
    for _ in nlp.pipe(texts, batch_size=128):
        pass
    doc["spacy_pipe_seconds"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    parsed = parser.parse(list(corpus))
    doc["parse_seconds"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    items = pair_views(parsed, pairs, views=ex._model().views, blind=bool(ex.blind))
    doc["views_seconds"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    scores = ex._scores(items)
    doc["score_seconds"] = round(time.perf_counter() - t, 2)
    m = min(args.composite_pairs, len(items))
    t = time.perf_counter()
    direct = np.concatenate([
        np.asarray(ex.kernel_.gram(items[i:i + 256], ex.references_, n_jobs=args.n_jobs))
        @ ex.weights_ + ex.intercept_ for i in range(0, m, 256)])
    composite = time.perf_counter() - t
    doc["score_seconds_composite"] = round(composite, 2)
    doc["composite_pairs"] = m
    doc["max_abs_score_difference"] = float(np.max(np.abs(direct - scores[:m])))
    per_pair = doc["score_seconds"] / max(len(items), 1)
    doc["composite_over_encoded_per_pair"] = round((composite / max(m, 1)) / per_pair, 2)
    total = doc["parse_seconds"] + doc["views_seconds"] + doc["score_seconds"]
    doc["end_to_end_seconds"] = round(total, 2)
    doc["end_to_end_over_spacy"] = round(total / doc["spacy_pipe_seconds"], 2)
    doc["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    doc["load_after"] = list(os.getloadavg())
    report(doc, args.out)


if __name__ == "__main__":
    main()
