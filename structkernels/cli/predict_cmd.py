"""``structkernels predict``: label new candidates with a saved model, a train-npk model
(k-NN under the nonstationary path kernel) or a relation extractor
(:func:`structkernels.extraction.predict`), each kind with its own options."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from structkernels.cli import CommandError
from structkernels.cli._common import cache_options, writes_files
from structkernels.cli._extractor import CORPUS_FORMATS, finite_float
from structkernels.formats.batches import DEFAULT_BATCH_SIZE
from structkernels.formats.relations import RELATION_FORMATS
from structkernels.utils import (
    BadLine,
    RecordError,
    dumps_finite,
    iter_lines,
    loads_record,
    one_line,
    open_output,
    record_label,
)


def add_parser(sub) -> argparse.ArgumentParser:
    extractors = "relation extractors:"
    p = sub.add_parser(
        "predict", help="label new candidates with a train-npk model or a relation extractor "
        "(JSON Lines out)",
        description="Label new candidates with a saved model, one JSON line each. A train-npk "
        'model labels the candidates of one JSON Lines file: {"id": ..., "label": 0 or 1, '
        '"score": share of positive neighbours}. A relation extractor (RelationExtractor.save) '
        f"scores every entity pair of relation corpora ({CORPUS_FORMATS}), parsing them with "
        'its spaCy pipeline: {"sentence", "pair", "e1", "e2", "e1_text", "e2_text", "score", '
        '"label"}. When the inputs carry labels, F1 (precision, recall) and the share of '
        "pairs predicted positive beside the gold share are printed on stderr.")
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="without --model: MODEL then DATA (the model file first); with "
                   "--model: the data. DATA of a train-npk model: one JSON Lines file of "
                   "interaction records or records with a 'path' ([[edge, node], ...]); of a "
                   f"relation extractor: relation corpora ({', '.join(RELATION_FORMATS)}; "
                   "optionally .gz; BRAT: a .txt/.ann file or folder)")
    p.add_argument("--model", metavar="M", help="the model file: a relation extractor or a "
                   "model written by train-npk (its format is read from the file); every INPUT "
                   "is then data")
    p.add_argument("-o", "--output", default="-", help="JSON Lines output file; - is standard "
                   "output (default: %(default)s); never an input, a file inside an input "
                   "folder or a BRAT sibling of an input (a FIFO or a device is written as a "
                   "stream)")
    p.add_argument("--output-format", default="jsonl",
                   choices=["jsonl", "pubtator", "bioc-xml", "bioc-json", "same"],
                   help=f"{extractors} write the pairs as JSON Lines, or back into PubTator or "
                   "BioC input with the positive pairs as its relations, same: the inputs' "
                   "format (default: %(default)s); see docs/relations.md")
    p.add_argument("--kernel", choices=["npk", "pk"], help="train-npk models: classify with "
                   "the learned σ (npk) or the stationary path kernel (pk) (default: npk)")
    p.add_argument("--skip-bad", action="store_true", help="leave out malformed records (each "
                   "one is reported on stderr) instead of stopping")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel workers of the kernel "
                   "evaluations, 1 per partition with --dask (default: the cores this process "
                   "may use)")
    p.add_argument("--cache-dir", help=f"{extractors} where parses are cached (default: "
                   "$STRUCTKERNELS_CACHE, else $XDG_CACHE_HOME/structkernels or "
                   "~/.cache/structkernels); entries are checked when read")
    p.add_argument("--no-cache", action="store_true", help="read and write no cache (parses, "
                   "compiled kernels): nothing is written but -o")
    p.add_argument("--threshold", type=finite_float, default=None, metavar="X",
                   help=f"{extractors} label a pair 1 when its score is above X (default: the "
                   "threshold saved in the model, 0 for models of version 1 or 2)")
    p.add_argument("--batch-size", type=_positive_int, default=DEFAULT_BATCH_SIZE, metavar="N",
                   help=f"{extractors} sentences read, parsed, scored and written at a time "
                   "(memory holds one batch; JSON Lines and PubTator are read as they go, the "
                   "other formats a file at a time; a PubTator document is never split) "
                   "(default: %(default)s)")
    p.add_argument("--parse-ahead", choices=("auto", "on", "off"), default="auto",
                   help=f"{extractors} parse the next batch in a child process while one is "
                   "scored here (the two overlap: a run costs about the longer of the two; the "
                   "child loads spaCy while the model loads); auto: when the process may use "
                   "two cores or more; off: parse each batch here, then score it "
                   "(default: %(default)s)")
    p.add_argument("--resume", action="store_true", help=f"{extractors} keep OUT.partial and "
                   "OUT.partial.progress when the run stops, and take up a run stopped so from "
                   "its last complete batch (the same inputs, model, --batch-size, "
                   "--output-format, --threshold and --skip-bad, else refused); needs -o FILE "
                   "and jsonl or pubtator output. Without it an old partial output is replaced")
    p.add_argument("--n-process", type=_positive_int, default=None, metavar="N",
                   help=f"{extractors} processes of spaCy's parser, used for batches with at "
                   "least 500 sentences to parse (not in the cache) (default: the cores this "
                   "process may use)")
    p.add_argument("--dask", metavar="SCHEDULER", default=None, help=f"{extractors} parse and "
                   "score the batches (partitions) on a dask cluster: a scheduler's address "
                   "(tcp://HOST:PORT, or HOST:PORT), or local:N to start N worker processes of "
                   "one thread on this machine; the model goes to each worker once, the output "
                   "is the bytes of a run without it (default: none, this process parses and "
                   "scores); needs the distributed extra")
    p.add_argument("--dask-timeout", type=finite_float, default=10.0, metavar="S",
                   help="seconds to wait for the --dask scheduler (default: %(default)s)")
    p.add_argument("--tolerance", type=_tolerance, default=0.0, metavar="T",
                   help=f"{extractors} 0 scores exactly; above 0, the fast route: the path "
                   "view is scored against a reduced set of reference paths whose score error "
                   "on every reference pair is at most T (the bag and all-paths graph views "
                   "stay exact); the error reached is printed on stderr, with a warning when "
                   "pairs checked exactly along the way show more (default: %(default)s, "
                   "exact); not with --dask")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress on stderr (bars, and one line per batch)")
    p.set_defaults(func=writes_files(run, "--output", streams=("--output",),
                                     inputs=lambda a: [a.model, *a.inputs]))
    return p


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _tolerance(text: str) -> float:
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def read_candidates(path: str, skip_bad: bool, log: Callable[[str], None]
                    ) -> tuple[list, list, np.ndarray | None]:
    """``(paths, ids, labels or None)`` of a JSON Lines file of candidates: records with a
    ``"path"`` (``[[edge, node], ...]``), or in another form of
    :func:`structkernels.datasets.load_interactions`, read by it.  Errors name the file, line
    and record id; with ``skip_bad`` each bad record is said through ``log`` and left out."""
    from structkernels.experiments.npk_job import record_id
    from structkernels.formats.structures import path_from_record
    from structkernels.structures import Path, StructureError

    records: list[dict] = []
    paths: list[Path] = []
    skipped: list[str] = []

    for lineno, line in iter_lines(path):
        try:
            if isinstance(line, BadLine):
                raise RecordError(line.reason)
            record = loads_record(line)  # depth and size limits: never a RecursionError
            if not isinstance(record, dict):
                raise CommandError(f"{path}, line {lineno}: a record must be a JSON object")
            if "path" not in record:
                if "amr" in record or "interaction_tuple" in record:  # the loader's forms
                    return _read_with_loader(path, skip_bad, log)
                raise CommandError(
                    f"{path}, line {lineno}: a candidate record needs a 'path' (or an 'amr' "
                    "with an 'interaction' or 'interaction_tuple')"
                )
            where = f"{path}, line {lineno}{record_label(record.get('id'))}"
            try:
                structure = path_from_record(record["path"])
            except StructureError as exc:
                raise CommandError(f"{where}: {one_line(exc)}") from None
            if len(structure) == 0:
                raise CommandError(f"{where}: empty path")
            paths.append(structure)
            records.append(record)
        except (RecordError, CommandError) as exc:
            if isinstance(exc, RecordError):  # a line that is not a JSON record
                exc = CommandError(f"{path}, line {lineno}: {exc.reason}")
            if not skip_bad:
                raise exc from None
            skipped.append(str(exc))
    for message in skipped:
        log(f"skipped {message}")
    if skipped:
        log(f"skipped {len(skipped)} record(s)")
    if not records:
        raise CommandError(f"{path}: no records (empty file)")
    labels = np.asarray([int(r["label"]) for r in records]) if _all_labelled(records) else None
    return paths, [record_id(r, i) for i, r in enumerate(records)], labels


def _read_with_loader(path: str, skip_bad: bool, log: Callable[[str], None]
                      ) -> tuple[list, list, np.ndarray | None]:
    from structkernels.datasets import load_interactions
    from structkernels.experiments.npk_job import record_id

    ds = load_interactions(path, on_error="skip" if skip_bad else "raise")
    for rec in getattr(ds, "skipped", []):
        log(f"skipped {rec}")
    records = list(ds.records)
    labels = np.asarray(ds.labels) if _all_labelled(records) else None
    return list(ds.paths), [record_id(r, i) for i, r in enumerate(records)], labels


def _all_labelled(records: list) -> bool:
    return bool(records) and all(
        isinstance(r, dict) and r.get("label") in (0, 1, True, False) for r in records
    )


def run(args: argparse.Namespace) -> int:
    with cache_options(args):
        return _predict(args)


def model_and_data(args: argparse.Namespace) -> tuple[str, list[str]]:
    """``(the model, the data paths)`` of a predict command line."""
    if args.model is not None:
        return args.model, list(args.inputs)
    if len(args.inputs) < 2:
        raise CommandError("give the model and the data: predict MODEL DATA, or "
                           "predict --model MODEL INPUT...")
    return args.inputs[0], list(args.inputs[1:])


#: The options of each model kind, refused with the other (``--kernel``'s default is None).
EXTRACTOR_ONLY = {"--threshold": "threshold", "--resume": "resume", "--dask": "dask"}
NPK_ONLY = {"--kernel": "kernel"}


def _refuse(args: argparse.Namespace, options: dict[str, str], model: str, kind: str) -> None:
    """A :class:`CommandError` for the first of ``options`` given (the other model kind's)."""
    for option, dest in options.items():
        if getattr(args, dest) is not None and getattr(args, dest) is not False:
            applies = "train-npk models" if kind == "a relation extractor" else \
                "relation extractors"
            raise CommandError(f"{option} applies to {applies}; {model} is {kind}")


def _log(line: str) -> None:
    print(f"structkernels predict: {line}", file=sys.stderr)


def _predict(args: argparse.Namespace) -> int:
    from structkernels.extraction.prediction import early_parser

    model_path, inputs = model_and_data(args)  # the output rule ran on them (writes_files)
    backend = "dask" if args.dask is not None else {
        "on": "parse-ahead", "off": "in-process"}.get(args.parse_ahead, "auto")
    cache_dir = False if args.no_cache else args.cache_dir
    # the parsing child first: spaCy loads there while this process imports and reads the model
    early = early_parser(model_path, backend=backend, cache_dir=cache_dir,
                         n_process=args.n_process)
    try:
        from structkernels.extraction.files import EXTRACTOR_FORMAT, read_model_document

        doc = read_model_document(model_path)  # an extractor within MAX_EXTRACTOR_BYTES
        extractor = isinstance(doc, dict) and doc.get("format") == EXTRACTOR_FORMAT
        if extractor:
            _refuse(args, NPK_ONLY, model_path, "a relation extractor")
        else:
            _refuse(args, EXTRACTOR_ONLY, model_path, "a train-npk model")
    except BaseException:
        if early is not None:
            early.abandon()
        raise
    if not extractor:
        if early is not None:
            early.abandon()
        from structkernels.npk.files import validate_model

        if len(inputs) != 1:
            raise CommandError(f"a train-npk model labels one DATA file; {len(inputs)} given")
        return _run_npk(args, validate_model(doc, model_path), inputs[0])
    from structkernels.extraction.prediction import predict, run_summary

    state = predict(inputs, args.output, doc, backend=backend, resume=args.resume,
                    scheduler=args.dask, timeout=args.dask_timeout, source=model_path,
                    output_format=args.output_format, threshold=args.threshold,
                    batch_size=args.batch_size, on_error="skip" if args.skip_bad else "raise",
                    cache_dir=cache_dir, n_jobs=args.n_jobs, n_process=args.n_process,
                    tolerance=args.tolerance, parser=early, own_process=args.own_process,
                    progress=not args.quiet, log=_log)
    for line in run_summary(state, model_path):
        print(line, file=sys.stderr)
    if state["pairs"] and state["labelled"]:
        print(_rates(state["positives"], state["tp"] + state["fn"], state["pairs"]),
              file=sys.stderr)
    return 0


def _rates(predicted: int, gold: int, n: int) -> str:
    """The share of pairs predicted positive beside the gold share (labelled input)."""
    return (f"predicted positive: {predicted} of {n} ({100 * predicted / n:.1f}%); "
            f"gold positive: {gold} ({100 * gold / n:.1f}%)")


def _run_npk(args: argparse.Namespace, model: dict[str, Any], data: str) -> int:
    from structkernels.experiments.npk_job import label_candidates
    from structkernels.neighbors.classifier import positive_class_scores

    use = args.kernel or "npk"
    paths, ids, labels = read_candidates(data, args.skip_bad, log=_log)
    pred, score, evaluations = label_candidates(model, paths, use=use, n_jobs=args.n_jobs)
    # standard output, a FIFO or device as a stream, or a file renamed when complete
    with open_output(args.output, stream_ok=True) as fh:
        fh.writelines(dumps_finite({"id": rid, "label": int(p), "score": round(float(s), 6)},
                                   what=f"candidate {rid}")
                      + "\n" for rid, p, s in zip(ids, pred, score, strict=False))
    message = (f"labelled {len(paths)} candidates with {use.upper()} "
               f"({int(np.sum(pred == 1))} positive), {evaluations:,} kernel evaluations")
    if labels is not None:
        s = positive_class_scores(labels, pred)
        message += (f"; F1 {100 * s['f1']:.1f} (precision {100 * s['precision']:.1f}, "
                    f"recall {100 * s['recall']:.1f}); "
                    + _rates(int(np.sum(pred == 1)), int(np.sum(labels == 1)), len(paths)))
    print(message, file=sys.stderr)
    return 0
