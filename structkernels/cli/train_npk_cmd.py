"""``structkernels train-npk``: learn σ (Algorithm 1) and compare PK with NPK, the main job
of the nonstationary kernels paper (Garg et al. 2018, Sec. 6-7,
:func:`structkernels.experiments.npk_job.main_job`).  The model file holds everything
``structkernels predict model.json DATA`` needs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path as FilePath
from typing import Any

import numpy as np

from structkernels.cli import CommandError
from structkernels.cli._common import writes_files
from structkernels.neighbors.settings import MAIN_JOB
from structkernels.utils import dumps_finite


class _ConstructorDefault:
    """An option's default that is the default of ``param`` of the class ``owner``
    (``"module:Class"``), read only when needed (``--help``, the run):
    building the parser loads no estimator."""

    def __init__(self, owner: str, param: str):
        self.owner, self.param = owner, param

    @property
    def value(self) -> Any:
        import inspect
        import pkgutil

        return inspect.signature(pkgutil.resolve_name(self.owner)).parameters[self.param].default

    def __str__(self) -> str:
        return str(self.value)


_LEARNER = "structkernels.npk.learner:NonstationaryLearner"
_CLASSIFIER = "structkernels.neighbors.classifier:KernelKNNClassifier"
_PATH_KERNEL = "structkernels.kernels.path:PathKernel"

#: The options' defaults: the main job's configuration
#: (:data:`structkernels.neighbors.settings.MAIN_JOB`) and, for what it does not name, the
#: constructors' own (``NonstationaryLearner``, ``KernelKNNClassifier``, ``PathKernel``).
DEFAULTS: dict[str, Any] = {
    **{key: _ConstructorDefault(_LEARNER, key) for key in (
        "alpha", "k", "n_iter", "objective_sample", "top_fraction", "sampling")},
    **MAIN_JOB["learner"],  # beta, objective
    "lam": _ConstructorDefault(_PATH_KERNEL, "lam"),
    **MAIN_JOB["kernel_params"],  # node_mismatch
    **{key: _ConstructorDefault(_CLASSIFIER, key) for key in (
        "n_neighbors", "weights", "threshold")},
    **{key: MAIN_JOB["classifier"][key] for key in ("hashing", "n_tables", "probe", "n_probes")},
    **MAIN_JOB["evaluation"],  # table_train, table_test, seeds, random_state
}


#: The options after DATA and --out, in --help order: ``(flag, kind, help)``; a kind is a
#: type, a list of choices, ``bool`` (a flag), a metavar or a dict of keywords.  An option
#: in :data:`DEFAULTS` takes its default from there, and --help states it.
_OPTIONS: tuple[tuple[str, Any, str], ...] = (
    ("--alpha", int, "trials per label (α)"),
    ("--beta", int, "inducing points per trial (β)"),
    ("--k", int, "neighbours in the global k-NN graph"),
    ("--n-iter", int, "passes over the labels"),
    ("--objective", ["knn-ap", "loss1"],
     "what decides each label's σ: the k-NN classifier's leave-one-out average precision on "
     "a training sample (knn-ap), or Loss Function 1 on sampled neighbourhoods (loss1, the "
     "paper's Algorithm 1)"),
    ("--objective-sample", int, "with --objective knn-ap: training structures in the sample"),
    ("--sampling", ["neighbourhood", "random"],
     "Algorithm 1's local neighbourhoods or the pure-random baseline"),
    ("--hashing", ["random-knn", "klsh", "none"],
     "kernel hashing for the k-NN graphs and the classifier"),
    ("--n-bits", int, "hash bits H (default: ceil(log2 N / 2))"),
    ("--lam", float, "path kernel decay λ"),
    ("--node-mismatch", float,
     "partial credit of two tuples with equal edges and different nodes (0 = the paper's "
     "indicator) (default: %(default)s, chosen on the training half)"),
    ("--labels", None, "comma-separated edge labels to learn (default: the most frequent "
     "ones, --top-fraction of them)"),
    ("--top-fraction", float, "without --labels: the share of the distinct edge labels, most "
     "frequent first, whose σ is learned"),
    ("--n-neighbors", int, "k of the classifier"),
    ("--weights", ["uniform", "similarity"], "k-NN votes: majority or weighted by similarity"),
    ("--threshold", None,
     "k-NN decision: 'auto' (F1-best threshold on the training half's leave-one-out scores), "
     "'majority', or a number in [0, 1]"),
    ("--n-tables", int, "hash tables of the classifier"),
    ("--probe", {"type": int, "choices": [0, 1]},
     "1: queries also search the Hamming-1 buckets; 0: their own bucket only"),
    ("--n-probes", int, "with --probe 1: Hamming-1 buckets searched per table, across each "
     "query's least firm bits (0: all of them)"),
    ("--table-train", int, "training sub-sample of the baselines table (per seed)"),
    ("--table-test", int, "test sub-sample of the baselines table (per seed)"),
    ("--seeds", int, "seeds of the baselines table"),
    ("--no-table", bool, "skip the baselines table"),
    ("--max-train", int, "learn σ on a random sub-sample of this many training structures "
     "(default: all of them)"),
    ("--n-jobs", int, "parallel workers of the learner, the classifier and the baselines "
     "table (default: the cores this process may use)"),
    ("--random-state", int, "seed of every random choice (sampling, hashing, sub-samples); "
     "the baselines table uses the seeds RANDOM_STATE .. RANDOM_STATE + SEEDS - 1"),
    ("--plot", "FILE.png", "plot what decided σ per label (default: no plot)"),
    ("--plot-eval", "FILE.png", "plot the NPK classifier's confusion matrix and "
     "precision-recall curve on the test half (default: no plot)"),
    ("--skip-bad", bool,
     "leave out malformed records (each one is reported on stderr) instead of stopping"),
    ("--graphs", "DIR", "train on your own graphs: the folder of graph files (DOT, CoNLL-U, "
     "PENMAN ...) that the --graph-labels records name"),
    ("--graph-labels", "FILE.json", "PubMed45-format labels (records with path, "
     "interaction_tuple, label) over --graphs; label 2 (roles swapped) is a negative"),
    ("--json", bool, "print the summary as JSON"),
    ("--no-progress", bool, "hide the progress bar"),
)


def _keywords(kind: Any) -> dict[str, Any]:
    """The ``add_argument`` keywords of an :data:`_OPTIONS` kind (not a flag)."""
    if isinstance(kind, type):
        return {"type": kind}
    if isinstance(kind, list):
        return {"choices": kind}
    if isinstance(kind, str):
        return {"metavar": kind}
    return kind or {}


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("train-npk", help="learn the nonstationary path kernel's σ and compare "
                       "PK with NPK", description="Learn σ of the nonstationary path kernel "
                       "(Algorithm 1 of Garg et al. 2018) on the training half of DATA (default: "
                       "the shipped Bio-AMR interaction candidates), then evaluate PK and NPK "
                       "with the hashed k-NN classifier on the other half.")
    p.add_argument("data", nargs="?", default=None, help="JSON Lines interaction records "
                   "(default: the shipped Bio-AMR dataset)")
    p.add_argument("--out", "-o", required=True, help="model file to write (gzip'd JSON; read "
                   "it with structkernels.load_model)")
    for flag, kind, text in _OPTIONS:
        if kind is bool:
            p.add_argument(flag, action="store_true", help=text)
            continue
        key = flag[2:].replace("-", "_")
        if key in DEFAULTS and "(default:" not in text:
            text += " (default: %(default)s)"
        p.add_argument(flag, default=DEFAULTS.get(key), help=text, **_keywords(kind))
    p.set_defaults(func=writes_files(run, "--out", "--plot", "--plot-eval", inputs=_inputs))
    return p


def _inputs(args: argparse.Namespace) -> list[str | None]:
    """Every file and folder ``train-npk`` reads (the output rule's inputs)."""
    if args.data is None and args.graphs is None and args.graph_labels is None:
        from structkernels.datasets.interactions import SHIPPED_DATASET

        return [os.fspath(SHIPPED_DATASET)]  # the shipped dataset is an input too
    # --graphs is read only with its --graph-labels (without them the run stops, saying so)
    graphs = args.graphs if args.graph_labels is not None else None
    return [args.data, graphs, args.graph_labels]


def _load(data: str | None, skip_bad: bool = False):
    from structkernels.datasets import load_interactions

    if data is not None and not FilePath(data).exists():
        raise CommandError(f"no such file: {data}")
    ds = load_interactions(data, on_error="skip" if skip_bad else "raise")
    for rec in getattr(ds, "skipped", []):
        print(f"structkernels train-npk: skipped {rec}", file=sys.stderr)
    if getattr(ds, "skipped", None):
        print(f"structkernels train-npk: skipped {len(ds.skipped)} record(s)", file=sys.stderr)
    return ds


def parse_threshold(value: Any) -> Any:
    """``--threshold``: 'auto', 'majority' (None) or a number in [0, 1]."""
    if value in (None, "majority"):
        return None
    if value == "auto":
        return "auto"
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise CommandError(f"--threshold must be 'auto', 'majority' or a number, got {value!r}"
                           ) from None
    if not 0.0 <= t <= 1.0:
        raise CommandError(f"--threshold must lie in [0, 1], got {value!r}")
    return t


def _n_probes(args: argparse.Namespace) -> int | None:
    """``--n-probes`` as the classifier takes it: None (all Hamming-1 buckets) for 0 or
    without ``--probe 1``."""
    if args.n_probes is not None and args.n_probes < 0:
        raise CommandError(f"--n-probes must be >= 0, got {args.n_probes}")
    return args.n_probes if args.n_probes and args.probe else None


def classifier_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :class:`KernelKNNClassifier` shared by PK and NPK ("normalize":
    the learner's, once fitted)."""
    hashed = args.hashing != "none"
    return {
        "n_neighbors": args.n_neighbors, "hashing": args.hashing if hashed else None,
        "n_bits": args.n_bits if hashed else None, "n_tables": args.n_tables if hashed else 1,
        "probe": args.probe if hashed else 0, "n_probes": _n_probes(args) if hashed else None,
        "weights": args.weights, "threshold": parse_threshold(args.threshold),
        "normalize": None, "n_jobs": args.n_jobs, "random_state": args.random_state,
    }


def run(args: argparse.Namespace) -> int:
    from structkernels.experiments.npk_job import format_summary, load_graph_labels, main_job
    from structkernels.experiments.relations import describe_sigma
    from structkernels.kernels.names import as_kernel
    from structkernels.npk.files import save_model

    t_start = time.perf_counter()
    for key, value in vars(args).items():  # the constructors' defaults, read now
        if isinstance(value, _ConstructorDefault):
            setattr(args, key, value.value)
    if args.max_train is not None and args.max_train < 2:
        raise CommandError(f"--max-train must be at least 2, got {args.max_train}")
    pk_params: dict[str, Any] = {"lam": args.lam}
    if args.node_mismatch:
        pk_params["node_mismatch"] = args.node_mismatch
    try:  # the path kernel's own checks (--lam, --node-mismatch), before any work
        as_kernel("path", **pk_params).validate_params()
    except (TypeError, ValueError) as exc:
        raise CommandError(f"--lam/--node-mismatch: {exc}") from None
    parse_threshold(args.threshold)
    if args.plot or args.plot_eval:  # fail before the work, not after it
        from structkernels.experiments.plotting import plot_evaluation, plot_sigma_losses, pyplot

        try:
            pyplot()
        except ImportError as exc:
            raise CommandError(str(exc)) from None
    if args.graphs is not None or args.graph_labels is not None:  # a user's graphs and labels
        if args.graph_labels is None:
            raise CommandError("--graphs needs --graph-labels FILE.json (the labelled "
                               "interaction tuples)")
        if args.data is not None:
            raise CommandError("give either DATA or --graphs/--graph-labels, not both")
        ds = load_graph_labels(args.graph_labels, args.graphs, skip_bad=args.skip_bad,
                               log=lambda line: print(f"structkernels train-npk: {line}",
                                                      file=sys.stderr))
        args.data = (f"{args.graph_labels} over "
                     f"{args.graphs or FilePath(args.graph_labels).parent}")
    else:
        ds = _load(args.data, args.skip_bad)
    train, test = ds.split("train"), ds.split("test")
    if len(train.paths) < 2 or len(test.paths) < 1:
        raise CommandError(
            f"{args.data or 'the shipped dataset'}: the train/test split has "
            f"{len(train.paths)}/{len(test.paths)} structures; need at least 2/1"
        )
    learn_set = train
    if args.max_train is not None and args.max_train < len(train.paths):
        rng = np.random.RandomState(args.random_state)
        learn_set = train.subset(np.sort(rng.choice(len(train.paths), args.max_train, replace=False)))
    labels = None if args.labels is None else [s.strip() for s in args.labels.split(",") if s.strip()]
    learner_params = {
        "labels": labels, "top_fraction": args.top_fraction, "alpha": args.alpha,
        "beta": args.beta, "k": args.k, "n_iter": args.n_iter, "sampling": args.sampling,
        "hashing": None if args.hashing == "none" else args.hashing, "n_bits": args.n_bits,
        "objective": args.objective, "objective_sample": args.objective_sample,
        "n_neighbors": args.n_neighbors, "n_jobs": args.n_jobs,
        "random_state": args.random_state, "progress": False if args.no_progress else None,
    }
    options = {k: getattr(args, k) for k in (  # the summary's settings
        "alpha", "beta", "k", "n_iter", "sampling", "hashing", "n_bits", "lam", "node_mismatch",
        "n_neighbors", "weights", "threshold", "n_tables", "probe", "n_probes", "objective",
        "objective_sample", "random_state", "max_train")}
    options["n_probes"] = _n_probes(args)
    table = None
    if not args.no_table and args.seeds > 0:
        table = {"n_train": args.table_train, "n_test": args.table_test,
                 "seeds": range(args.random_state, args.random_state + args.seeds)}
    settings = classifier_settings(args)
    job = main_job(train, test, learn_set, pk_params=pk_params, learner_params=learner_params,
                   settings=settings, table=table,
                   data=args.data or "shipped Bio-AMR interactions", options=options,
                   started=t_start)
    out = FilePath(args.out)
    save_model(out, job["model"])
    if args.plot:
        plot_sigma_losses(job["learner"], args.plot)
    if args.plot_eval:
        y_test = np.asarray(test.labels)
        plot_evaluation(y_test, job["pred"], job["score"], args.plot_eval,
                        title=f"NPK, k-NN classifier, test half ({len(y_test):,} candidates)")
    if args.json:
        print(dumps_finite(job["summary"], what="the summary", indent=1))
        return 0
    sys.stdout.write(format_summary(job["summary"], out, args.plot))
    cut = job["classifier"].threshold_
    how = " (F1-best on the training half's leave-one-out scores)" if args.threshold == "auto" \
        else ""
    for line in (f"learned σ (lowest first): {describe_sigma({'sigma': job['learner'].sigma_})}",
                 "k-NN threshold: " + ("majority vote" if cut is None else f"{cut:.4g}{how}"),
                 f"next: structkernels predict {out} CANDIDATES.jsonl -o labels.jsonl"):
        print(line)
    return 0
