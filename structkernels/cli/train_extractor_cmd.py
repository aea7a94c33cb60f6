"""``structkernels train-extractor``: train :class:`structkernels.extraction.RelationExtractor`
(the ``NPK SVM`` row of ``evaluate``) on annotated corpora and save it for ``predict``."""

from __future__ import annotations

import argparse

from structkernels.cli import CommandError
from structkernels.cli._common import cache_options, read_corpus, stderr_log, writes_files
from structkernels.cli._extractor import (
    CORPUS_FORMATS,
    add_learning_options,
    extractor_cache_dir,
    parse_threshold,
    train_and_save,
)
from structkernels.relations.decision import THRESHOLD_RULES


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "train-extractor",
        help="train the relation extractor (the NPK SVM model) on annotated corpora",
        description=(
            f"Train the relation extractor on annotated relation corpora ({CORPUS_FORMATS}; "
            "together one corpus) and save it for "
            "'structkernels predict': the NPK SVM model of 'structkernels evaluate' (path + "
            "context + all-paths graph, σ learned, an SVM), its decision threshold and "
            "calibration chosen by grouped inner cross-validation on the training pairs. "
            "Needs the parse extra: pip install 'structkernels[parse]'."
        ),
    )
    p.add_argument("files", nargs="+", metavar="CORPUS", help="annotated corpus files or folders")
    p.add_argument("-o", "--output", required=True, metavar="MODEL",
                   help="the model file (JSON; gzip'd when the name ends in .gz), written "
                   "atomically; never an input, a file inside an input folder or a BRAT "
                   "sibling of an input")
    p.add_argument("--pipeline", default="en_core_web_sm",
                   help="installed spaCy pipeline (default: %(default)s)")
    p.add_argument("--cache-dir", default=None,
                   help="cache folder of parses (default: $STRUCTKERNELS_CACHE or "
                   "~/.cache/structkernels); entries are checked when read")
    p.add_argument("--no-cache", action="store_true",
                   help="read and write no cache (parses, compiled kernels): nothing is "
                   "written but the model")
    p.add_argument("--no-blind", action="store_true",
                   help="keep entity words in the structures (default: PROT1, PROT2, PROT)")
    p.add_argument("--C", type=float, default=1.0, help="the SVM's C (default: %(default)s)")
    p.add_argument("--threshold", type=parse_threshold, default="inner-cv",
                   metavar="{" + ",".join((*THRESHOLD_RULES, "NUMBER")) + "}",
                   help="decision threshold, from the margins of a grouped 3-fold inner "
                   "cross-validation on the training pairs: inner-cv the best for F1, "
                   "prevalence the one labelling as many pairs positive as the training pairs "
                   "hold; zero is the SVM's sign, a number is taken as given "
                   "(default: %(default)s)")
    p.add_argument("--calibration", choices=["platt", "isotonic", "none"], default="platt",
                   help="probabilities fitted on the inner folds' scores (default: %(default)s)")
    add_learning_options(p, "the σ learner and the inner folds")
    p.add_argument("--skip-bad", action="store_true",
                   help="leave out malformed sentences (each reported on stderr)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.set_defaults(func=writes_files(run, "--output", inputs=lambda a: list(a.files)))
    return p


def run(args: argparse.Namespace) -> int:
    with cache_options(args):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from structkernels.relations.pipelines import check_pipeline, keep_torch_out

    if not args.C > 0 or args.C == float("inf"):
        raise CommandError(f"--C must be a finite number > 0, got {args.C}")
    if args.n_jobs == 0:
        raise CommandError("--n-jobs must not be 0")
    for name in args.files:
        if not Path(name).exists():
            raise CommandError(f"no such file or folder: {name}")
    check_pipeline(args.pipeline, "--pipeline", allow_default=True)  # before spacy.load
    if getattr(args, "own_process", False):
        keep_torch_out(args.pipeline)  # spaCy without PyTorch where the pipeline allows
    corpus = read_corpus(args.files, args.skip_bad, "train on")
    train_and_save(args, corpus, args.output, command="train-extractor",
                   cache_dir=extractor_cache_dir(args, "train-extractor"), log=stderr_log(args),
                   threshold=args.threshold,
                   calibration=None if args.calibration == "none" else args.calibration)
    return 0
