"""``structkernels paraphrase``: classify re-writings with a string re-writing kernel.

Reads a training and a test corpus (MSRP TSV, PASCAL RTE XML or GLUE RTE TSV,
detected from the file), tokenises (lower-casing and Snowball stemming by
default), computes the per-window Gram matrices of the chosen SRK once
(cached with ``--cache``), forms ``K̂_1 + ... + K̂_kmax`` (plus the PR
features' kernel with ``--pr``), trains ``SVC(kernel="precomputed", C=1)``
and prints the test accuracy and F1.

Example::

    structkernels paraphrase --train msr_paraphrase_train.txt \\
        --test msr_paraphrase_test.txt --kernel kb-srk --kmax 4 --pr --n-jobs 2
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

from structkernels.cli import CommandError
from structkernels.registry import kernel as make_kernel

SRK_NAMES = ("kb-srk", "ps-srk", "pw-srk")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "paraphrase",
        help="paraphrase / entailment classification with a string re-writing kernel",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("--train", required=True, help="training corpus (MSRP/GLUE TSV or RTE XML)")
    p.add_argument("--test", required=True, help="test corpus (same formats)")
    p.add_argument("--kernel", default="kb-srk", choices=SRK_NAMES)
    p.add_argument("--kmax", type=int, default=4, help="sum of normalised K_1..K_kmax")
    p.add_argument("--lam", type=float, default=1.0, help="wildcard weight in (0, 1]")
    p.add_argument("--pr", action="store_true", help="add the unigram precision/recall kernel")
    p.add_argument("--C", type=float, default=1.0, help="SVC regularisation (default 1)")
    p.add_argument("--no-lowercase", action="store_true")
    p.add_argument("--no-stem", action="store_true")
    p.add_argument("--lenient", action="store_true", help="skip malformed records (reported)")
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--cache", help="directory caching the per-window Gram matrices")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--predictions", help="write test predictions (one label per line)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.svm import SVC

    from structkernels.kernel import ZeroSelfSimilarityWarning
    from structkernels.kernels._srk_common import SRKBase, srk_gram_stack, sum_normalized
    from structkernels.text.loaders import load_rewritings
    from structkernels.text.pr import pr_features
    from structkernels.text.tokenize import TextPipeline

    if args.kmax < 1:
        raise CommandError(f"--kmax must be >= 1, got {args.kmax}")
    t0 = time.perf_counter()
    train = load_rewritings(args.train, strict=not args.lenient)
    test = load_rewritings(args.test, strict=not args.lenient)
    for c in (train, test):
        for path, line, reason in c.skipped:
            print(f"skipped {path}:{line}: {reason}")
    if len(train) == 0 or len(test) == 0:
        raise CommandError("the training and the test corpus need at least one re-writing each")
    if (train.labels < 0).any():
        raise CommandError(f"{args.train}: the training corpus is unlabelled")
    if len(np.unique(train.labels)) < 2:
        raise CommandError(f"{args.train}: the training corpus has a single class")
    pipe = TextPipeline(lowercase=not args.no_lowercase, stem=not args.no_stem)
    Xtr, Xte = train.tokenized(pipe), test.tokenized(pipe)
    kern = make_kernel(args.kernel, k=1, kmax=args.kmax, lam=args.lam)
    if not isinstance(kern, SRKBase):
        raise CommandError(f"--kernel {args.kernel} is not a string re-writing kernel")
    S_tr, d_tr, _ = srk_gram_stack(kern, Xtr, n_jobs=args.n_jobs, cache_dir=args.cache)
    S_te, d_te, _ = srk_gram_stack(kern, Xte, Xtr, n_jobs=args.n_jobs, cache_dir=args.cache)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroSelfSimilarityWarning)
        K_tr = sum_normalized(S_tr, d_tr, d_tr)
        K_te = sum_normalized(S_te, d_te, d_tr)
    if args.pr:
        f_tr, f_te = pr_features(Xtr), pr_features(Xte)
        K_tr = K_tr + f_tr @ f_tr.T
        K_te = K_te + f_te @ f_tr.T
    clf = SVC(kernel="precomputed", C=args.C).fit(K_tr, train.labels)
    pred = clf.predict(K_te)
    result = {
        "kernel": args.kernel, "kmax": args.kmax, "lam": args.lam, "pr": bool(args.pr),
        "n_train": len(train), "n_test": len(test), "seconds": round(time.perf_counter() - t0, 2),
    }
    if (test.labels >= 0).all():
        result["accuracy"] = round(100 * accuracy_score(test.labels, pred), 2)
        result["f1"] = round(100 * f1_score(test.labels, pred), 2)
    if args.predictions:
        with open(args.predictions, "w") as fh:
            fh.writelines(f"{int(p)}\n" for p in pred)
    if args.json:
        print(json.dumps(result))
    else:
        desc = f"{args.kernel} kmax={args.kmax}" + (" + PR" if args.pr else "")
        if "accuracy" in result:
            print(f"{desc}: accuracy {result['accuracy']:.2f}%  F1 {result['f1']:.2f}%  "
                  f"(train {len(train)}, test {len(test)}, {result['seconds']:.1f} s)")
        else:
            print(f"{desc}: test corpus unlabelled; {len(pred)} predictions "
                  f"({result['seconds']:.1f} s)")
    return 0
