"""Training and saving a relation extractor: what ``train-extractor`` and ``evaluate
--save-model`` share (one function, so both save the same model)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any

from structkernels.cli import CommandError
from structkernels.formats.relations import RELATION_FORMATS
from structkernels.relations.decision import THRESHOLD_RULES

__all__ = ["CORPUS_FORMATS", "extractor_cache_dir", "finite_float", "parse_threshold",
           "train_and_save"]

#: The corpus formats the commands read (:data:`~structkernels.formats.relations.RELATION_FORMATS`),
#: as their --help names them.
CORPUS_FORMATS = (f"{', '.join(RELATION_FORMATS)}; each file's format is told by its name and "
                  "content")


def parse_threshold(text: str) -> str | float:
    """``--threshold``: one of :data:`~structkernels.relations.decision.THRESHOLD_RULES` or a
    finite number (argparse ``type``).

    Examples
    --------
    >>> parse_threshold("prevalence"), parse_threshold("0.25")
    ('prevalence', 0.25)
    """
    if text in THRESHOLD_RULES:
        return text
    try:
        return finite_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected {', '.join(THRESHOLD_RULES)} or a finite number, got {text!r}") from None


def finite_float(text: str) -> float:
    """A finite number (argparse ``type``).

    Examples
    --------
    >>> finite_float("1e-3")
    0.001
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def extractor_cache_dir(args: argparse.Namespace, command: str) -> Any:
    """The parse cache the extractor uses: False with ``--no-cache`` or when the folder
    cannot be written (said on stderr), else ``--cache-dir`` (None: the default)."""
    from structkernels.utils import usable_cache_dir

    return usable_cache_dir(False if args.no_cache else args.cache_dir,
                            lambda line: print(f"structkernels {command}: {line}",
                                               file=sys.stderr))


#: The σ objectives ``--sigma-objective`` offers (:data:`structkernels.npk.gradient.SIGMA_OBJECTIVES`).
SIGMA_OBJECTIVES = ("loss1", "knn-ap", "svm", "alignment")
DEFAULT_SIGMA_OBJECTIVE = "svm"
SIGMA_OBJECTIVE_HELP = (
    "how σ of the NPK models is learned on each training set: 'loss1' (Algorithm 1 of Garg et "
    "al.: binary σ by a k-NN loss), 'knn-ap' (binary, k-NN average precision), 'svm' or "
    "'alignment' (σ in [0, 1] and λ by exact gradient of the SVM's dual objective or of "
    "kernel-target alignment, inside the sum of views; steps chosen on held-out training "
    "documents) (default: %(default)s)")


def add_learning_options(p: argparse.ArgumentParser, seeded: str) -> None:
    """``--sigma-objective``, ``--n-jobs`` and ``--random-state`` (the seed of ``seeded``):
    the options of the commands that train the NPK models."""
    p.add_argument("--sigma-objective", choices=list(SIGMA_OBJECTIVES),
                   default=DEFAULT_SIGMA_OBJECTIVE, help=SIGMA_OBJECTIVE_HELP)
    p.add_argument("--n-jobs", type=int, default=None,
                   help="workers (default: the cores this process may use)")
    p.add_argument("--random-state", type=int, default=0,
                   help=f"seed of {seeded} (default: %(default)s)")


def train_and_save(args: argparse.Namespace, corpus: Any, output: str, *, command: str,
                   cache_dir: Any, log: Callable[[str], None],
                   threshold: str | float = "inner-cv",
                   calibration: str | None = "platt") -> Any:
    """Train the extractor (the ``NPK SVM`` row of ``evaluate``) on ``corpus`` with the
    command's options (``--pipeline``, ``--no-blind``, ``--C``, ``--n-jobs``,
    ``--random-state``, ``--quiet``) and save it to ``output``; the row, its views and the
    threshold chosen are said on stderr."""
    from structkernels.experiments.relations import describe_sigma
    from structkernels.extraction import RelationExtractor, describe_model

    pairs = corpus.pairs()  # some: read_corpus refused a corpus without
    if any(p.label is None for p in pairs):
        raise CommandError("training needs labelled sentences (gold interactions)")
    extractor = RelationExtractor(
        args.pipeline, cache_dir=cache_dir, blind=not args.no_blind, C=args.C,
        n_jobs=args.n_jobs, random_state=args.random_state, progress=not args.quiet,
        threshold=threshold, calibration=calibration,
        sigma_params={"objective": getattr(args, "sigma_objective", DEFAULT_SIGMA_OBJECTIVE)},
    )
    what = describe_model()
    log(f"training the {what} on {len(pairs)} pairs "
        f"({sum(bool(p.label) for p in pairs)} positive)")
    extractor.fit(corpus)
    extractor.save(output)
    rule = getattr(extractor, "decision_", None)
    if rule is None:  # a stand-in without a decision
        print(f"structkernels {command}: saved the {what} to {output}", file=sys.stderr,
              flush=True)
        return extractor
    how = {"inner-cv": "chosen by grouped 3-fold inner CV for F1",
           "prevalence": "chosen by grouped 3-fold inner CV to match the training prevalence",
           "zero": "the SVM's sign", "fixed": "given"}[rule.rule]
    detail = (f"; inner-CV F1 {100 * rule.inner_f1:.1f}" if rule.inner_f1 is not None else "")
    if rule.fallback:
        detail += f"; no inner CV ({rule.fallback}): threshold 0"
    calib = f", {rule.calibration} probabilities" if rule.calibration else ""
    if cache_dir is not False:  # the first predict finds the references prepared
        type(extractor).load(output, cache_dir=cache_dir, progress=False,
                             n_jobs=args.n_jobs).prepare()
    lam = extractor.kernel_params_.get("path", {}).get("lam")
    learned = describe_sigma({"sigma": extractor.sigma_, **({} if lam is None else {"lam": lam})})
    for line in (f"saved the {what} to {output}: {len(extractor.references_)} reference pairs",
                 f"learned σ (lowest first): {learned}",
                 f"threshold {rule.threshold:.4g} ({how}{detail}){calib}",
                 f"next: structkernels predict {output} CORPUS... -o pairs.jsonl"):
        print(f"structkernels {command}: {line}", file=sys.stderr, flush=True)
    return extractor
