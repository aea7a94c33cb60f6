"""``structkernels predict``: label new candidates with a saved model.

Two kinds of model file, told apart by their ``"format"``:

- a model of ``train-npk``: it holds the learned σ, the classifier settings and
  the training structures; the k-NN classifier under the nonstationary path
  kernel is rebuilt from it and each record of DATA (JSON Lines of candidates)
  gets one JSON line::

      {"id": ..., "label": 1, "score": 0.75}

  ``score`` is the share of the positive class among the neighbours;
- a relation extractor (:class:`structkernels.extraction.RelationExtractor`,
  saved with ``save``): the inputs are relation corpora (interaction XML, BRAT,
  JSON Lines of ``{"text", "entities"}``), parsed with the extractor's spaCy
  pipeline, and each candidate pair gets one JSON line::

      {"sentence": ..., "pair": ..., "e1": ..., "e2": ..., "e1_text": ..., "e2_text": ...,
       "score": 0.42, "probability": 0.71, "label": 1}

  ``label`` is 1 when the score is above the model's threshold (``--threshold`` overrides
  it); ``probability`` is there when the model has a calibration (version 3 files).

When the inputs carry labels, F1 (precision, recall) is printed on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path as FilePath
from typing import Any

import numpy as np

from structkernels.cli import CommandError
from structkernels.cli._common import cache_options, writes_files
from structkernels.cli._extractor import finite_float
from structkernels.cli._predict_extractor import (  # noqa: F401  (DEFAULT_BATCH_SIZE re-exported)
    DEFAULT_BATCH_SIZE,
    early_parser,
    model_and_data,
    run_extractor,
)
from structkernels.npk.files import MODEL_FORMAT  # noqa: F401  (re-exported)
from structkernels.utils import (
    BadLine,
    RecordError,
    iter_lines,
    loads_record,
    one_line,
    open_output,
    record_label,
)


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "predict",
        help="label new candidates with a train-npk model or a relation extractor (JSON Lines out)",
        description=(
            "Label new candidates with a saved model, one JSON line each. A train-npk model "
            "labels the candidates of one JSON Lines file: "
            '{"id": ..., "label": 0 or 1, "score": share of positive neighbours}. A relation '
            "extractor (RelationExtractor.save) scores every entity pair of relation corpora "
            "(interaction XML, BRAT, JSON Lines of text and entity offsets), parsing them with "
            'its spaCy pipeline: {"sentence", "pair", "e1", "e2", "e1_text", "e2_text", '
            '"score", "label"}. When the inputs carry labels, F1 (precision, recall) is '
            "printed on stderr."
        ),
    )
    p.add_argument(
        "inputs", nargs="+", metavar="INPUT",
        help="without --model: MODEL then DATA (the model file first); with --model: the "
        "data. DATA of a train-npk model: one JSON Lines file of interaction records or "
        "records with a 'path' ([[edge, node], ...]); of a relation extractor: relation "
        "corpora (.xml, .jsonl, .json, optionally .gz; a BRAT .txt/.ann file or folder)",
    )
    p.add_argument(
        "--model", metavar="M",
        help="the model file: a relation extractor or a model written by train-npk (its "
        "format is read from the file); every INPUT is then data",
    )
    p.add_argument(
        "-o", "--output", default="-",
        help="JSON Lines output file; - is standard output (default: %(default)s); never "
        "an input, a file inside an input folder or a BRAT sibling of an input (a FIFO or "
        "a device is written as a stream)",
    )
    p.add_argument(
        "--output-format", default="jsonl",
        choices=["jsonl", "pubtator", "bioc-xml", "bioc-json", "same"],
        help="relation extractors: write the pairs as JSON Lines, or back into PubTator or "
        "BioC input with the positive pairs as its relations, same: the inputs' format "
        "(default: %(default)s); see docs/relations.md",
    )
    p.add_argument(
        "--kernel", choices=["npk", "pk"],
        help="train-npk models: classify with the learned σ (npk) or the stationary path "
        "kernel (pk) (default: npk)",
    )
    p.add_argument(
        "--skip-bad", action="store_true",
        help="leave out malformed records (each one is reported on stderr) instead of stopping",
    )
    p.add_argument(
        "--n-jobs", type=int, default=None,
        help="parallel workers of the kernel evaluations, 1 per partition with --dask "
        "(default: the cores this process may use)",
    )
    p.add_argument(
        "--cache-dir",
        help="relation extractors: where parses are cached (default: $STRUCTKERNELS_CACHE, "
        "else $XDG_CACHE_HOME/structkernels or ~/.cache/structkernels); entries are checked "
        "when read",
    )
    p.add_argument(
        "--no-cache", action="store_true",
        help="read and write no cache (parses, compiled kernels): nothing is written but -o",
    )
    p.add_argument(
        "--threshold", type=finite_float, default=None, metavar="X",
        help="relation extractors: label a pair 1 when its score is above X (default: the "
        "threshold saved in the model, 0 for models of version 1 or 2)",
    )
    p.add_argument(
        "--batch-size", type=_positive_int, default=DEFAULT_BATCH_SIZE, metavar="N",
        help="relation extractors: sentences read, parsed, scored and written at a time "
        "(memory holds one batch; JSON Lines and PubTator are read as they go, the other "
        "formats a file at a time; a PubTator document is never split) (default: %(default)s)",
    )
    p.add_argument(
        "--parse-ahead", choices=("auto", "on", "off"), default="auto",
        help="relation extractors: parse the next batch in a child process while one is "
        "scored here (the two overlap: a run costs about the longer of the two; the child "
        "loads spaCy while the model loads); auto: when the process may use two cores or "
        "more; off: parse each batch here, then score it (default: %(default)s)",
    )
    p.add_argument(
        "--resume", action="store_true",
        help="relation extractors: keep OUT.partial and OUT.partial.progress when the run "
        "stops, and take up a run stopped so from its last complete batch (the same inputs, "
        "model, --batch-size, --output-format, --threshold and --skip-bad, else refused); "
        "needs -o FILE and jsonl or pubtator output. Without it an old partial output is "
        "replaced",
    )
    p.add_argument(
        "--n-process", type=_positive_int, default=None, metavar="N",
        help="relation extractors: processes of spaCy's parser, used for batches with at "
        "least 500 sentences to parse (not in the cache) (default: the cores this process "
        "may use)",
    )
    p.add_argument(
        "--dask", metavar="SCHEDULER", default=None,
        help="relation extractors: parse and score the batches (partitions) on a dask "
        "cluster: a scheduler's address (tcp://HOST:PORT, or HOST:PORT), or local:N to start "
        "N worker processes of one thread on this machine; the model goes to each worker "
        "once, the output is the bytes of a run without it (default: none, this process "
        "parses and scores); needs the distributed extra",
    )
    p.add_argument(
        "--dask-timeout", type=finite_float, default=10.0, metavar="S",
        help="seconds to wait for the --dask scheduler (default: %(default)s)",
    )
    p.add_argument(
        "--tolerance", type=_tolerance, default=0.0, metavar="T",
        help="relation extractors: 0 scores exactly; above 0, the fast route: the path view "
        "is scored against a reduced set of reference paths whose score error on every "
        "reference pair is at most T (the bag and all-paths graph views stay exact); the "
        "error reached is printed on stderr, with a warning when pairs checked exactly "
        "along the way show more (default: %(default)s, exact); not with --dask",
    )
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


def read_model(path: str) -> dict[str, Any]:
    """The model dict of a train-npk file, checked (:mod:`structkernels.npk.model`)."""
    from structkernels.npk.files import read_model as _read_model

    return _read_model(path)


def read_candidates(path: str, skip_bad: bool = False) -> tuple[list, list, np.ndarray | None]:
    """``(paths, ids, labels or None)`` of a JSON Lines file of candidates.

    Records with a ``"path"`` (``[[edge, node], ...]``; labels optional) are
    read directly; records in another form of
    :func:`structkernels.datasets.load_interactions` (an ``amr`` with an
    ``interaction`` or ``interaction_tuple``) go through it.  Errors name the
    file, line and record id; with ``skip_bad`` each bad record is reported on
    stderr and left out.
    """
    from structkernels.formats.structures import path_from_record
    from structkernels.structures import Path, StructureError

    if not FilePath(path).exists():
        raise CommandError(f"no such file: {path}")
    records: list[dict] = []
    paths: list[Path] = []
    skipped: list[str] = []

    # lines through the shared bounded reader (gzip, byte-order mark, one line each)
    for lineno, line in iter_lines(path):
        try:
            if isinstance(line, BadLine):
                raise RecordError(line.reason)
            record = loads_record(line)  # depth and size limits: never a RecursionError
            if not isinstance(record, dict):
                raise CommandError(f"{path}, line {lineno}: a record must be a JSON object")
            if "path" not in record:
                if "amr" in record or "interaction_tuple" in record:  # the loader's forms
                    return _read_with_loader(path, skip_bad)
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
        except RecordError as exc:
            message = f"{path}, line {lineno}: {exc.reason}"
            if not skip_bad:
                raise CommandError(message) from None
            skipped.append(message)
        except CommandError as exc:
            if not skip_bad:
                raise
            skipped.append(str(exc))
    for message in skipped:
        print(f"structkernels predict: skipped {message}", file=sys.stderr)
    if skipped:
        print(f"structkernels predict: skipped {len(skipped)} record(s)", file=sys.stderr)
    if not records:
        raise CommandError(f"{path}: no records (empty file)")
    labels = np.asarray([int(r["label"]) for r in records]) if _all_labelled(records) else None
    return paths, [_record_id(r, i) for i, r in enumerate(records)], labels


def _read_with_loader(path: str, skip_bad: bool) -> tuple[list, list, np.ndarray | None]:
    from structkernels.datasets import load_interactions

    ds = load_interactions(path, on_error="skip" if skip_bad else "raise")
    for rec in getattr(ds, "skipped", []):
        print(f"structkernels predict: skipped {rec}", file=sys.stderr)
    records = list(ds.records)
    labels = np.asarray(ds.labels) if _all_labelled(records) else None
    return list(ds.paths), [_record_id(r, i) for i, r in enumerate(records)], labels


def _all_labelled(records: list) -> bool:
    return bool(records) and all(
        isinstance(r, dict) and r.get("label") in (0, 1, True, False) for r in records
    )


def _record_id(record: Any, i: int) -> Any:
    if isinstance(record, dict):
        return record.get("id", i)
    return getattr(record, "id", i)


def build_classifier(model: dict[str, Any], use: str = "npk", n_jobs: int | None = None, *,
                     source: str = "the model file"):
    """The fitted k-NN classifier the model describes.

    Kernel parameters the kernel does not take (or of the wrong type) and
    classifier settings the classifier does not know are the file's fault: a
    :class:`CommandError` naming ``source``.
    """
    import inspect

    from structkernels.kernels.names import kernels
    from structkernels.neighbors.classifier import KernelKNNClassifier
    from structkernels.structures import Path

    params = dict(model["kernel_params"])
    if use == "pk":
        params.pop("sigma", None)
    name = model.get("kernel", "path")
    try:
        kernels.get(name)(**params).validate_params()
    except TypeError as exc:
        raise CommandError(f"{source}: the model's kernel_params do not suit kernel {name!r}: "
                           f"{one_line(exc)}") from None
    settings = dict(model["classifier"])
    known = set(inspect.signature(KernelKNNClassifier).parameters) - {
        "kernel", "kernel_params", "n_jobs"}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise CommandError(f"{source}: the model's classifier settings hold unknown keys "
                           f"{', '.join(repr(k) for k in unknown)}")
    train = model["train"]
    try:
        X = [Path.from_json(p) for p in train["paths"]]
    except ValueError as exc:
        raise CommandError(f"model training structure is malformed: {exc}") from None
    y = np.asarray(train["labels"], dtype=np.int64)
    clf = KernelKNNClassifier(kernel=model.get("kernel", "path"), kernel_params=params,
                              n_jobs=n_jobs, **settings)
    return clf.fit(X, y)


def _write_lines(output: str, lines) -> None:
    # standard output, a FIFO or device as a stream, or a file written under a temporary
    # name and renamed when complete
    with open_output(output, stream_ok=True) as fh:
        for line in lines:
            fh.write(line + "\n")


def run(args: argparse.Namespace) -> int:
    with cache_options(args):
        return _predict(args)


def _predict(args: argparse.Namespace) -> int:
    model_path, inputs = model_and_data(args)  # the output rule ran on them (writes_files)
    # the parsing child first: spaCy loads there while this process imports and reads the model
    early = early_parser(args, model_path)
    try:
        from structkernels.extraction import EXTRACTOR_FORMAT
        from structkernels.extraction.files import read_model_document

        doc = read_model_document(model_path)  # an extractor within MAX_EXTRACTOR_BYTES
        if isinstance(doc, dict) and doc.get("format") == EXTRACTOR_FORMAT:
            handed, early = early, None
            return run_extractor(args, doc, model_path, inputs, handed)
    finally:
        if early is not None:
            early.abandon()
    from structkernels.npk.files import validate_model

    if getattr(args, "threshold", None) is not None:
        raise CommandError(f"--threshold applies to relation extractors; {model_path} is a "
                           "train-npk model")
    if getattr(args, "resume", False):
        raise CommandError(f"--resume applies to relation extractors; {model_path} is a "
                           "train-npk model")
    if getattr(args, "dask", None) is not None:
        raise CommandError(f"--dask applies to relation extractors; {model_path} is a "
                           "train-npk model")
    if len(inputs) != 1:
        raise CommandError(f"a train-npk model labels one DATA file; {len(inputs)} given")
    return _run_npk(args, validate_model(doc, model_path), model_path, inputs[0])


def _run_npk(args: argparse.Namespace, model: dict[str, Any], model_path: str, data: str) -> int:
    from structkernels.neighbors.classifier import positive_class_scores

    use = args.kernel or "npk"
    paths, ids, labels = read_candidates(data, args.skip_bad)
    clf = build_classifier(model, use, args.n_jobs, source=model_path)
    proba = clf.predict_proba(paths)
    classes = list(clf.classes_)
    pos = classes.index(1) if 1 in classes else None
    score = proba[:, pos] if pos is not None else np.zeros(len(paths))
    pred = clf.classes_[np.argmax(proba, axis=1)]
    _write_lines(args.output, (
        json.dumps({"id": rid, "label": int(p), "score": round(float(s), 6)})
        for rid, p, s in zip(ids, pred, score, strict=False)
    ))
    message = (
        f"labelled {len(paths)} candidates with {use.upper()} "
        f"({int(np.sum(pred == 1))} positive), {clf.n_evaluations_:,} kernel evaluations"
    )
    if labels is not None:
        s = positive_class_scores(labels, pred)
        message += (
            f"; F1 {100 * s['f1']:.1f} (precision {100 * s['precision']:.1f}, "
            f"recall {100 * s['recall']:.1f})"
        )
    print(message, file=sys.stderr)
    return 0
