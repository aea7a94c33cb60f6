"""``structkernels paraphrase``: classify re-writings with a string re-writing kernel
(:func:`structkernels.experiments.paraphrase.classify_rewritings`).

Example (kb-SRK, PR and the pair trees, every setting chosen by 5-fold cross-validation on
the training file)::

    structkernels paraphrase --train msr_paraphrase_train.txt \\
        --test msr_paraphrase_test.txt --n-jobs 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from structkernels.cli import CommandError
from structkernels.cli._common import writes_files
from structkernels.experiments.paraphrase import (
    C_GRID,
    PR_WEIGHTS,
    TREE_WEIGHTS,
    classify_rewritings,
)
from structkernels.kernels.names import kernel as make_kernel

SRK_NAMES = ("kb-srk", "ps-srk", "pw-srk")

DESCRIPTION = (
    "Reads a training and a test corpus (MSRP TSV, PASCAL RTE XML or GLUE RTE TSV, detected "
    "from the file), tokenises (lower-casing and Snowball stemming by default), computes the "
    "per-window Gram matrices of the chosen SRK once (cached with --cache), forms "
    "K_1 + ... + K_k of the normalised matrices plus the PR features' kernel and the pair "
    "tree kernel (the two sides' dependency trees, aligned words marked) times weights, "
    "chooses k, the weights and the SVM's C by cross-validation on the training set "
    "(--cv, 5 folds by default; --cv 0 takes --kmax, --pr and --C as given), trains an SVM "
    "on the precomputed kernel and prints the choice and the test accuracy and F1."
)


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "paraphrase",
        help="paraphrase / entailment classification with a string re-writing kernel",
        description=DESCRIPTION,
    )
    p.add_argument("--train", required=True, action="append", metavar="FILE",
                   help="training corpus (MSRP/GLUE TSV or RTE XML); repeat to train on several "
                   "files")
    p.add_argument("--test", required=True, help="test corpus (same formats)")
    p.add_argument("--kernel", default="kb-srk", choices=SRK_NAMES,
                   help="string re-writing kernel (default: %(default)s)")
    p.add_argument("--kmax", type=int, default=4, help="the kernel sums the normalised "
                   "K_1 .. K_k, k up to kmax chosen by CV (with --cv 0: k = kmax) "
                   "(default: %(default)s)")
    p.add_argument("--lam", type=float, default=1.0,
                   help="wildcard weight in (0, 1] (default: %(default)s)")
    p.add_argument("--pr", action="store_true", help="with --cv 0: add the unigram "
                   "precision/recall kernel (with CV its weight is chosen from "
                   f"{', '.join(f'{w:g}' for w in PR_WEIGHTS)})")
    p.add_argument("--tfkld", action="store_true",
                   help="add the normalised TF-KLD kernel (Ji & Eisenstein 2013), fitted on the "
                   "training set; with --cv, TF-KLD on/off is chosen by CV too")
    p.add_argument("--no-trees", dest="trees", action="store_false",
                   help="leave out the pair tree kernel (each side's dependency tree with the "
                   "aligned words marked, parsed by spaCy's English pipeline: pip install "
                   "'structkernels[parse]'), in the sum by default with its weight chosen by CV "
                   f"from {', '.join(f'{w:g}' for w in TREE_WEIGHTS)} (1 with --cv 0)")
    p.add_argument("--C", type=float, default=None, help="SVM regularisation C (default: "
                   f"chosen by CV from {', '.join(f'{c:g}' for c in C_GRID)}; 1 with --cv 0)")
    p.add_argument("--no-lowercase", action="store_true", help="keep the tokens' case")
    p.add_argument("--no-stem", action="store_true", help="do not Snowball-stem the tokens")
    p.add_argument("--lenient", action="store_true", help="skip malformed records (reported)")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel workers computing the "
                   "Gram matrices (default: the cores this process may use)")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="folder caching the per-window Gram matrices (default: no cache)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--predictions", default=None, metavar="FILE", help="write the test "
                   "predictions, one label per line (default: not written)")
    p.add_argument("--cv", type=int, default=5, metavar="K", help="folds of the cross-"
                   "validation on the training set choosing k, the PR weight, C (and TF-KLD on/off "
                   "with --tfkld); 0: the settings given (default: %(default)s)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="use a random subset of N training and N test pairs")
    p.add_argument("--random-state", type=int, default=0,
                   help="seed of --limit and of the --cv folds (default: %(default)s)")
    p.set_defaults(func=writes_files(run, "--predictions", inputs=lambda a: [*a.train, a.test]))
    return p


def run(args: argparse.Namespace) -> int:
    from structkernels.datasets.rewriting import load_rewritings
    from structkernels.kernels.srk.common import SRKBase
    from structkernels.utils import atomic_open, dumps_finite

    if args.kmax < 1:
        raise CommandError(f"--kmax must be >= 1, got {args.kmax}")
    if args.cv < 0 or args.cv == 1:
        raise CommandError(f"--cv must be 0 (no CV) or >= 2 folds, got {args.cv}")
    if args.C is not None and not args.C > 0:
        raise CommandError(f"--C must be > 0, got {args.C}")
    if args.limit is not None and args.limit < 2:
        raise CommandError(f"--limit must be >= 2, got {args.limit}")
    progress = False if getattr(args, "quiet", False) else None
    t0 = time.perf_counter()
    train = load_rewritings(args.train[0], strict=not args.lenient)
    for path in args.train[1:]:
        train = train + load_rewritings(path, strict=not args.lenient)
    test = load_rewritings(args.test, strict=not args.lenient)
    for c in (train, test):
        for path, line, reason in c.skipped:
            print(f"skipped {path}:{line}: {reason}")
    if args.limit is not None:
        rng = np.random.default_rng(args.random_state)
        train, test = (
            _subset(c, np.sort(rng.choice(len(c), args.limit, replace=False)))
            if len(c) > args.limit else c
            for c in (train, test)
        )
    if len(train) == 0 or len(test) == 0:
        raise CommandError("the training and the test corpus need at least one re-writing each")
    if (train.labels < 0).any():
        raise CommandError(f"{', '.join(args.train)}: the training corpus is unlabelled")
    if len(np.unique(train.labels)) < 2:
        raise CommandError(f"{', '.join(args.train)}: the training corpus has a single class")
    nlp = None
    if args.trees:  # before any Gram: a missing parser is said at once
        from structkernels.relations.parse import load_pipeline

        try:
            nlp = load_pipeline()
        except (ImportError, ValueError) as exc:
            raise CommandError(f"the pair trees (in the sum by default): {exc}; or leave "
                               "them out with --no-trees") from None
    kern = make_kernel(args.kernel, k=1, kmax=args.kmax, lam=args.lam)
    if not isinstance(kern, SRKBase):
        raise CommandError(f"--kernel {args.kernel} is not a string re-writing kernel")
    result, pred = classify_rewritings(
        train, test, kern, kmax=args.kmax, lam=args.lam, pr=bool(args.pr), tfkld=bool(args.tfkld),
        trees=bool(args.trees), nlp=nlp,
        cv=args.cv or None, C=args.C,
        lowercase=not args.no_lowercase, stem=not args.no_stem, n_jobs=args.n_jobs,
        cache=args.cache, progress=progress, random_state=args.random_state,
        name=args.kernel, started=t0)
    cv_result = result.get("cv")
    if args.predictions:
        with atomic_open(args.predictions) as fh:  # temporary name, renamed when complete
            fh.writelines(f"{int(p)}\n" for p in pred)
    if args.json:
        print(dumps_finite(result, what="the result"))
        return 0
    if cv_result is not None and "skipped" in cv_result:
        print(f"no cross-validation: {cv_result['skipped']}")
    elif cv_result is not None:
        rows = cv_result["settings"]
        print(f"{cv_result['folds']}-fold CV on the training set ({len(train)} pairs, "
              f"{len(rows)} settings; the best {min(10, len(rows))}):")
        print(f"{'k':>2}  {'PR weight':>9}  {'trees':>5}  {'TF-KLD':<6}  {'C':>5}  "
              f"{'CV accuracy (%)':>15}  {'± std (%)':>9}")
        chosen = cv_result["chosen"]
        for r in sorted(rows, key=lambda r: -r["cv_accuracy_pct"])[:10]:
            mark = "  <- chosen" if all(r[k] == v for k, v in chosen.items()) else ""
            print(f"{r['kmax']:>2}  {r['pr']:>9g}  {r['trees']:>5g}  "
                  f"{'yes' if r['tfkld'] else 'no':<6}  "
                  f"{r['C']:>5g}  {r['cv_accuracy_pct']:>15.2f}  {r['cv_std_pct']:>9.2f}{mark}")
    desc = (f"{args.kernel} k=1..{result['kmax']}"
            + (f" + {result['pr']:g} PR" if result["pr"] else "")
            + (f" + {result['trees']:g} pair trees" if result["trees"] else "")
            + (" + TF-KLD" if result["tfkld"] else "") + f", C = {result['C']:g}")
    if "accuracy" in result:
        print(f"{desc}: accuracy {result['accuracy']:.2f} %  F1 {result['f1']:.2f} %  "
              f"(train {len(train)} pairs, test {len(test)} pairs, {result['seconds']:.1f} s)")
    else:
        print(f"{desc}: test corpus unlabelled; {len(pred)} predictions "
              f"({result['seconds']:.1f} s)")
    return 0


def _subset(corpus, idx: np.ndarray):
    """The re-writings of ``corpus`` at positions ``idx``."""
    from dataclasses import replace

    pick = idx.tolist()
    return replace(
        corpus, sources=[corpus.sources[i] for i in pick], targets=[corpus.targets[i] for i in pick],
        labels=np.asarray(corpus.labels)[idx], ids=[corpus.ids[i] for i in pick],
    )
