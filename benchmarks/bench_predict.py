"""Relation extraction on new text: predict against spaCy's own parse time, stage by stage.

Trains (or loads, ``--model``) the extractor on BioInfer-train, then scores ``--sentences``
sentences drawn with replacement from BioInfer-test, each under a new id (no parse
cache), and reports, in one run on the same texts:

- ``spacy_pipe_seconds``: spaCy's ``nlp.pipe`` alone (the pipeline, one process);
- ``parse_seconds``: the extractor's parser (entity boundaries, one tree per sentence);
- ``views_seconds``: the pairs' structure views;
- ``prepare_seconds``: the references prepared once per model (the linear views
  collapsed, the path references merged and encoded);
- ``score_seconds``: the kernel side with the references prepared
  (:class:`structkernels.extraction.scoring.ReferenceScorer`), and
  ``score_seconds_composite``: the same scores through the composite kernel's Gram
  (references encoded again for every batch), on the first ``--composite-pairs`` pairs,
  with the ratio per pair;
- ``end_to_end_over_spacy``: (parse + views + prepare + score) / spaCy's ``nlp.pipe``;
- ``fast``: for each ``--tolerance`` (the fast route: the path view against a reduced
  set of references, :class:`structkernels.extraction.scoring.ReferenceScorer`), the
  time to prepare it, the time to score the same pairs, the largest score difference
  from the exact route, its stated error, and its end to end over spaCy;
- ``f1``: F1 of the exact and of each fast route on the whole of BioInfer-test (each
  sentence once, its own ids), with the labels that differ from the exact route's;
- ``stream``: for each ``--stream`` batch size, the whole of predict's work timed from
  the loaded model to the last row (a fresh extractor, references prepared, batches parsed
  afresh and scored) without and with parsing the next batch in a child process while one
  is scored (:func:`structkernels.extraction.stream.predict_stream`), over ``nlp.pipe``'s
  time; with the child started before the clock (as ``structkernels predict`` starts it
  while the model is read), for the exact and each fast route, ``--repeats`` times, each
  beside an ``nlp.pipe`` run just before it; ``stream_summary``: those paired ratios'
  median and range;
- the peak resident memory of the process.

    python benchmarks/bench_predict.py --sentences 2000 --model /tmp/bioinfer.json.gz \
        --out benchmarks/results/predict_cost.json
"""

from __future__ import annotations

import argparse
import copy
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
from _report import report

from structkernels.extraction import RelationExtractor
from structkernels.extraction.stream import predict_stream
from structkernels.relations import read_relations
from structkernels.relations.corpus import RelationCorpus, Sentence
from structkernels.relations.parse import BackgroundParser
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


def _spacy_seconds(nlp: Any, texts: list[str]) -> float:
    t = time.perf_counter()
    for _ in nlp.pipe(texts, batch_size=128):
        pass
    return time.perf_counter() - t


def stream_runs(ex: RelationExtractor, corpus: RelationCorpus, args: argparse.Namespace,
                nlp: Any, spacy_seconds: float) -> list[dict]:
    """The whole of predict's work, timed from the loaded model to the last row: a fresh
    extractor from the model's JSON (the references prepared in the run), the batches
    parsed afresh (no cache) and scored, each run in a fresh process (as ``predict`` runs
    in its own).  Parsing:

    - ``"here"``: each batch parsed, then scored, in that process (spaCy loaded in the run);
    - ``"ahead"``: the next batch parsed in a child process while one is scored, the child
      started in the run (its start and pipeline load timed);
    - ``"ahead, child started"``: the same with the child started and its pipeline loaded
      before the clock starts, as ``structkernels predict`` starts it while the model is
      read, and as ``nlp.pipe``'s own figure starts from a loaded pipeline; run for the
      exact route and each fast route (``--tolerance``), ``--repeats`` times at the
      smallest batch size (once, exact, at the others), each run beside an ``nlp.pipe``
      run on the same texts just before it (``over_spacy_paired``).
    """
    model = ex.to_json()
    texts = [s.text for s in corpus]
    tolerances = [0.0] + [float(t) for t in args.tolerance.split(",") if t.strip()]
    runs = []
    sizes = [int(b) for b in args.stream.split(",")]
    for size in sizes:
        plans = [("here", 0.0, 1), ("ahead", 0.0, 1)]
        if size == min(sizes):  # the repeats at the smallest size (predict's default, 250)
            plans += [("ahead, child started", tol, args.repeats) for tol in tolerances]
        else:
            plans.append(("ahead, child started", 0.0, 1))
        for parsing, tol, repeats in plans:
            for _ in range(repeats):
                paired = _spacy_seconds(nlp, texts) if parsing.endswith("started") else None
                load = list(os.getloadavg())
                # a fresh process per run, as predict runs in its own: this one's heap (the
                # stages above, spaCy) is not the collector's to scan there
                with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
                    seconds, pairs = pool.submit(_stream_once, model, corpus, size, parsing,
                                                 tol, args.n_jobs).result()
                run = {"batch_size": size, "batches": -(-len(corpus) // size),
                       "parsing": parsing, "parse_ahead": parsing != "here", "tolerance": tol,
                       "pairs": pairs, "seconds": round(seconds, 2),
                       "over_spacy": round(seconds / spacy_seconds, 2), "load_before": load}
                if paired is not None:
                    run["spacy_pipe_seconds_paired"] = round(paired, 2)
                    run["over_spacy_paired"] = round(seconds / paired, 2)
                runs.append(run)
                print(run, file=sys.stderr)
    return runs


def _stream_once(model: dict, corpus: RelationCorpus, size: int, parsing: str, tol: float,
                 n_jobs: int | None) -> tuple[float, int]:
    """One stream run (:func:`stream_runs`) in the process it is called in: the seconds
    from the loaded model (and, ``"ahead, child started"``, the started child) to the last
    row, and the pairs scored."""
    batches = [RelationCorpus(corpus.sentences[i:i + size]) for i in range(0, len(corpus), size)]
    sx = RelationExtractor.from_json(model, cache_dir=False, n_jobs=n_jobs, progress=False,
                                     tolerance=tol)
    background = None
    if parsing.endswith("started"):
        background = BackgroundParser(sx.parser())
        background.warm().result()
    t = time.perf_counter()
    try:
        pairs = sum(len(rows) for _, rows in predict_stream(
            sx, batches, parse_ahead=parsing != "here", background=background))
    finally:
        if background is not None:
            background.close()
    return time.perf_counter() - t, pairs


def stream_summary(runs: list[dict]) -> list[dict]:
    """Per batch size and route, the paired ratios of the runs with the child started:
    median, lowest and highest."""
    out = []
    keys = sorted({(r["batch_size"], r["tolerance"]) for r in runs
                   if "over_spacy_paired" in r})
    for size, tol in keys:
        ratios = [r["over_spacy_paired"] for r in runs if r["batch_size"] == size
                  and r["tolerance"] == tol and "over_spacy_paired" in r]
        out.append({"batch_size": size, "tolerance": tol, "runs": len(ratios),
                    "over_spacy_median": round(float(np.median(ratios)), 2),
                    "over_spacy_range": [min(ratios), max(ratios)]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--model", default=None, help="a saved extractor (trained when absent)")
    ap.add_argument("--train", default=str(PPI / "BioInfer-train.xml"),
                    help="the training corpus when no --model is given")
    ap.add_argument("--composite-pairs", type=int, default=512)
    ap.add_argument("--tolerance", default="0.25,0.5",
                    help="fast routes to time, comma-separated (default: %(default)s; empty: none)")
    ap.add_argument("--stream", default="1000,250",
                    help="batch sizes of the end-to-end runs through predict_stream, "
                    "comma-separated (default: %(default)s; empty: none)")
    ap.add_argument("--repeats", type=int, default=5,
                    help="runs of each route with the child started (default: %(default)s)")
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
    doc["spacy_pipe_seconds"] = round(_spacy_seconds(nlp, texts), 2)
    t = time.perf_counter()
    parsed = parser.parse(list(corpus))
    doc["parse_seconds"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    items = pair_views(parsed, pairs, views=ex._model().views, blind=bool(ex.blind))
    doc["views_seconds"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    ex._reference_scorer()  # the references prepared: once per model
    doc["prepare_seconds"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    scores = ex._scores(items)
    doc["score_seconds"] = round(time.perf_counter() - t, 2)
    m = min(args.composite_pairs, len(items))
    t = time.perf_counter()
    direct = np.concatenate([
        np.asarray(ex.kernel_.gram(items[i:min(i + 256, m)], ex.references_,
                                      n_jobs=args.n_jobs))
        @ ex.weights_ + ex.intercept_ for i in range(0, m, 256)])
    composite = time.perf_counter() - t
    doc["score_seconds_composite"] = round(composite, 2)
    doc["composite_pairs"] = m
    doc["max_abs_score_difference"] = float(np.max(np.abs(direct - scores[:m])))
    per_pair = doc["score_seconds"] / max(len(items), 1)
    doc["composite_over_encoded_per_pair"] = round((composite / max(m, 1)) / per_pair, 2)
    total = (doc["parse_seconds"] + doc["views_seconds"] + doc["prepare_seconds"]
             + doc["score_seconds"])
    doc["end_to_end_seconds"] = round(total, 2)
    doc["end_to_end_over_spacy"] = round(total / doc["spacy_pipe_seconds"], 2)
    tolerances = [float(t) for t in args.tolerance.split(",") if t.strip()]
    fast_models = {}
    doc["fast"] = []
    for tol in tolerances:
        fx = RelationExtractor.from_json(ex.to_json(), cache_dir=False, n_jobs=args.n_jobs,
                                         progress=False, tolerance=tol)
        t = time.perf_counter()
        fx._reference_scorer()
        prepare = time.perf_counter() - t
        t = time.perf_counter()
        fast = fx._scores(items)
        seconds = time.perf_counter() - t
        fast_models[tol] = fx
        used = doc["parse_seconds"] + doc["views_seconds"] + prepare + seconds
        doc["fast"].append({
            "tolerance": tol, "prepare_seconds": round(prepare, 2),
            "score_seconds": round(seconds, 2),
            "max_abs_score_difference": float(np.max(np.abs(fast - scores))),
            "approximation": copy.deepcopy(fx.approximation_),  # before the F1 run adds to it
            "end_to_end_seconds": round(used, 2),
            "end_to_end_over_spacy": round(used / doc["spacy_pipe_seconds"], 2)})
    test = read_relations(PPI / "BioInfer-test.xml")
    y = np.asarray([int(p.label) for p in test.pairs()])
    test_items = ex.views(test)

    def f1(model: RelationExtractor) -> tuple[float, np.ndarray]:
        got = model._scores(test_items) > model.threshold_
        tp, fp = int((got & (y == 1)).sum()), int((got & (y == 0)).sum())
        fn = int((~got & (y == 1)).sum())
        return round(100 * 2 * tp / max(2 * tp + fp + fn, 1), 2), got

    exact_f1, exact_labels = f1(ex)
    doc["f1"] = {"pairs": len(y), "exact": exact_f1, "fast": []}
    for tol, fx in fast_models.items():
        value, labels = f1(fx)
        doc["f1"]["fast"].append({"tolerance": tol, "f1": value,
                                  "labels_changed": int((labels != exact_labels).sum())})
    if args.stream:
        doc["stream"] = stream_runs(ex, corpus, args, nlp, doc["spacy_pipe_seconds"])
        doc["stream_summary"] = stream_summary(doc["stream"])
    doc["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    doc["load_after"] = list(os.getloadavg())
    report(doc, args.out)


if __name__ == "__main__":
    main()
