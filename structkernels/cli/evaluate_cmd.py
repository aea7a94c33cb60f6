"""``structkernels evaluate``: relation extraction evaluated as the BioNLP literature does,
every model on the same document-level folds or on ``--train``/``--test``
(:func:`structkernels.experiments.relations.evaluate_corpora`)."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from structkernels.cli import CommandError
from structkernels.cli._common import cache_options, read_corpus, stderr_log, writes_files
from structkernels.cli._extractor import (
    CORPUS_FORMATS,
    add_learning_options,
    extractor_cache_dir,
    finite_float,
    train_and_save,
)
from structkernels.relations.decision import THRESHOLD_RULES
from structkernels.utils import atomic_open, dumps_finite, one_line

#: The files ``--plot DIR`` writes
#: (:func:`~structkernels.experiments.plotting.plot_relation_curves`).
PLOT_FILES = ("pr.png", "roc.png")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "evaluate",
        help="evaluate relation extraction models on annotated corpora (cross-validation "
        "or train/test)",
        description=(
            f"Read annotated relation corpora ({CORPUS_FORMATS}), parse them with spaCy, "
            "and evaluate every model on the same splits: document-level cross-validation "
            "over the files taken together (--cv), or --train ... --test ... (held-out or "
            "cross-corpus). Precision, recall and F1 of the positive class in percent, pooled "
            "over folds, with the per-fold F1 spread, ROC AUC, and the share of pairs "
            "predicted positive beside the gold share. Needs the parse extra: pip install "
            "'structkernels[parse]'."
        ),
    )
    p.add_argument("files", nargs="*", metavar="CORPUS",
                   help="corpus files (together one corpus) for cross-validation")
    p.add_argument("--train", nargs="+", metavar="CORPUS", default=None,
                   help="training corpus files (with --test)")
    p.add_argument("--test", nargs="+", metavar="CORPUS", default=None,
                   help="test corpus files (with --train)")
    p.add_argument("--cv", type=int, default=10,
                   help="folds of the document-level cross-validation (default: %(default)s)")
    p.add_argument("--models", default=None, metavar="NAMES",
                   help="comma-separated models (default: all but 'NPK chosen'; see --list-models)")
    p.add_argument("--list-models", action="store_true", help="list the models and exit")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--pipeline", default="en_core_web_sm",
                   help="installed spaCy pipeline (default: %(default)s)")
    p.add_argument("--cache-dir", default=None,
                   help="the cache folder of parses, Grams and σ (default: $STRUCTKERNELS_CACHE, "
                   "else $XDG_CACHE_HOME/structkernels or ~/.cache/structkernels); entries are "
                   "checked when read; `structkernels cache` shows and clears it, "
                   "$STRUCTKERNELS_CACHE_LIMIT (default 4G) bounds it with a warning")
    p.add_argument("--n-process", type=int, default=1,
                   help="processes of spaCy's nlp.pipe (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true",
                   help="read and write no cache (parses, the σ of each split, the σ-free "
                   "Grams, compiled kernels): everything is computed again and nothing is "
                   "written but the outputs asked for")
    p.add_argument("--no-blind", action="store_true",
                   help="keep entity words in the structures (default: PROT1, PROT2, PROT)")
    p.add_argument("--C", type=_c_value, default=1.0, metavar="C",
                   help="the SVMs' C, or 'auto': chosen on each training fold from 0.1, 1, 10 "
                   "by grouped 3-fold inner cross-validation for F1 (default: %(default)s)")
    p.add_argument("--scores", default=None, metavar="FILE",
                   help="write every pair's score under every model, with its fold, gold "
                   "label, document and entities, as tab-separated values")
    p.add_argument("--plot", default=None, metavar="DIR",
                   help="write precision-recall and ROC curves of every model (pr.png, "
                   "roc.png) into DIR (needs the plot extra: matplotlib)")
    p.add_argument("--threshold-rule", choices=THRESHOLD_RULES, default="inner-cv",
                   help="the SVM rows' decision threshold, chosen on each training fold: "
                   "inner-cv for F1 on the margins of a grouped 3-fold inner cross-validation, "
                   "prevalence to label as many of those positive as the fold holds, zero the "
                   "SVM's sign (default: %(default)s); --json gives them under 'thresholds'")
    add_learning_options(p, "the folds, σ learner and forests")
    p.add_argument("--save-model", default=None, metavar="PATH",
                   help="also train the NPK SVM model (path + context + all-paths graph; as "
                   "'structkernels train-extractor' does) on all training data (the corpus, or "
                   "--train) and save it for 'structkernels predict --model PATH'; never an "
                   "input, a file inside an input folder or a BRAT sibling of an input")
    p.add_argument("--skip-bad", action="store_true",
                   help="leave out malformed sentences (each reported on stderr)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.set_defaults(func=writes_files(
        run, "--save-model", "--scores", folders={"--plot": PLOT_FILES},
        inputs=lambda a: [*(a.files or []), *(a.train or []), *(a.test or [])]))


def _c_value(text: str) -> float | str:
    if text == "auto":
        return text
    try:
        value = finite_float(text)
    except argparse.ArgumentTypeError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0 or 'auto', got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    with cache_options(args):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from structkernels.experiments.relations import (
        DEFAULT_MODELS,
        MODELS,
        check_models,
        evaluate_corpora,
        format_table,
    )

    if args.list_models:
        for name in MODELS:
            print(name if name in DEFAULT_MODELS else f"{name}  (only when named in --models)")
        return 0
    if args.train or args.test:
        if not (args.train and args.test):
            raise CommandError("--train and --test go together")
        if args.files:
            raise CommandError("give corpus files either as arguments (--cv) or with "
                               "--train/--test, not both")
    elif not args.files:
        raise CommandError("no corpus: give CORPUS files (cross-validation) or --train and --test")
    if args.cv < 2:
        raise CommandError(f"--cv must be at least 2, got {args.cv}")
    if args.plot:  # before any work, not after the whole evaluation
        from structkernels.experiments.plotting import plot_relation_curves, pyplot

        try:
            pyplot()
        except ImportError as exc:
            raise CommandError(f"--plot {args.plot}: {one_line(exc)}") from None
    models = list(DEFAULT_MODELS)
    if args.models is not None:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        if not models:
            raise CommandError(f"--models {args.models!r} names no model; give one or more of: "
                               f"{', '.join(MODELS)} (comma-separated)")
        models = check_models(models)  # each once; an unknown name: one line naming them

    from structkernels.relations.parse import DependencyParser
    from structkernels.relations.pipelines import check_pipeline, keep_torch_out

    progress = not args.quiet
    log = stderr_log(args)
    train = read_corpus(args.train or args.files, args.skip_bad, "evaluate")
    test = read_corpus(args.test, args.skip_bad, "evaluate") if args.test else None
    if args.n_process < 1:
        raise CommandError(f"--n-process must be at least 1, got {args.n_process}")
    check_pipeline(args.pipeline, "--pipeline", allow_default=True)  # before spacy.load
    if getattr(args, "own_process", False) and args.save_model:
        keep_torch_out(args.pipeline)  # the model is trained here: spaCy without PyTorch
    from structkernels.utils import user_cache_dir

    cache = extractor_cache_dir(args, "evaluate")
    args.no_cache = cache is False
    cache = None if cache is False else (cache or user_cache_dir())
    parser = DependencyParser(args.pipeline, cache_dir=False if args.no_cache else args.cache_dir,
                              n_process=args.n_process, progress=progress)
    result = evaluate_corpora(
        train, test, cv=args.cv, models=models, parser=parser, blind=not args.no_blind,
        C=args.C, sigma_params={"objective": args.sigma_objective}, n_jobs=args.n_jobs,
        random_state=args.random_state, progress=progress, log=log, cache_dir=cache,
        threshold=args.threshold_rule, parse_in_child=True,
        return_scores=bool(args.scores or args.plot))
    pair_scores = result.pop("pair_scores", None)
    if pair_scores is not None:
        pairs = train.pairs() + (test.pairs() if test is not None else [])
        if args.scores:
            _write_scores(args.scores, pairs, pair_scores, list(result["models"]))
            log(f"wrote the scores of {len(pairs)} pairs to {args.scores}")
        if args.plot:
            tested = pair_scores["fold"] >= 0
            gold = np.array([int(p.label) for p in pairs])[tested]
            files = plot_relation_curves(
                gold, {m: pair_scores[m][tested] for m in result["models"]}, args.plot,
                title=f"{len(gold)} pairs, {result['folds']} split(s)")
            log(f"wrote {', '.join(str(f) for f in files)}")
    if args.save_model:
        train_and_save(args, train, args.save_model, command="evaluate",
                       cache_dir=False if args.no_cache else args.cache_dir, log=log,
                       threshold=args.threshold_rule, calibration="platt")
    if args.json:
        sys.stdout.write(dumps_finite(result, what="the evaluation", indent=1) + "\n")
    else:
        print(format_table(result))
    return 0


def _cell(text: str) -> str:
    return " ".join(str(text).split())  # a tab or newline in an id cannot break a row


def _write_scores(path: str, pairs: list, pair_scores: dict, models: list[str]) -> None:
    """``--scores``: one tab-separated row per pair (its split, gold label, document,
    sentence, entities and every model's score; fold -1: a training pair of a held-out
    split, never tested), written atomically."""
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write("\t".join(["pair", "fold", "label", "document", "sentence", "e1", "e2",
                            "e1_text", "e2_text", *models]) + "\n")
        for i, p in enumerate(pairs):
            fold = int(pair_scores["fold"][i])
            row = [p.id, str(fold), str(int(p.label)), p.sentence.document, p.sentence.id,
                   p.e1.id, p.e2.id, p.e1.text, p.e2.text]
            row += [f"{float(pair_scores[m][i]):.6g}" if fold >= 0 else "" for m in models]
            fh.write("\t".join(_cell(c) for c in row) + "\n")
