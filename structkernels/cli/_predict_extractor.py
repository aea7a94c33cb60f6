"""``structkernels predict`` with a relation extractor: the options checked against the
model, the parsing child (started before the model is read), and the batches scored here or
on a dask cluster and written as they come."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path as FilePath
from typing import Any

from structkernels.cli import CommandError
from structkernels.cli._extractor import extractor_cache_dir
from structkernels.utils import one_line, open_output, read_head

#: Sentences per batch of a relation extractor's predict (``iter_relations``'s default; small
#: enough that parsing the next batch overlaps with scoring this one, and memory stays under
#: 1 GB with a BioInfer-sized model).
DEFAULT_BATCH_SIZE = 250


def _keep_torch_out(doc: Any) -> None:
    """Parse here without PyTorch when the model's pipeline does not need it (0.5 GB less;
    only in the command's own process: ``import torch`` fails there afterwards)."""
    from structkernels.relations.pipelines import keep_torch_out

    params = doc.get("params") if isinstance(doc, dict) else None
    pipeline = params.get("pipeline") if isinstance(params, dict) else None
    if isinstance(pipeline, str):
        keep_torch_out(pipeline)


def model_and_data(args: argparse.Namespace) -> tuple[str, list[str]]:
    """``(the model, the data paths)`` of a predict command line."""
    if args.model is not None:
        return args.model, list(args.inputs)
    if len(args.inputs) < 2:
        raise CommandError("give the model and the data: predict MODEL DATA, or "
                           "predict --model MODEL INPUT...")
    return args.inputs[0], list(args.inputs[1:])


def run_extractor(args: argparse.Namespace, doc: Any, model_path: str, inputs: list[str],
                   early: Any = None) -> int:
    """Score every entity pair of the relation corpora ``inputs`` with a relation extractor,
    batch by batch (:func:`structkernels.relations.iter_relations`); ``early``: the parsing
    child :func:`early_parser` started (used when the model's pipeline is its, else
    closed)."""
    try:
        checked = _checked_run(args, doc, model_path, inputs, early)
    except BaseException:
        if early is not None:
            early.abandon()
        raise
    return _run_checked(args, doc, model_path, inputs, *checked)


def _checked_run(args: argparse.Namespace, doc: Any, model_path: str, inputs: list[str],
                 early: Any) -> tuple[str, bool, Any, Any]:
    """The options checked against the model and the inputs: ``(the output format, whether
    the output is a stream, the parse cache, the parsing child to use or None)``."""
    if args.kernel is not None:
        raise CommandError(f"--kernel applies to train-npk models; {model_path} is a relation "
                           "extractor")
    from structkernels.utils import is_special_file

    for name in inputs:
        if not FilePath(name).exists():
            raise CommandError(f"no such file or folder: {name}")
    fmt = _output_format(args, inputs)
    resume = bool(getattr(args, "resume", False))
    stream = args.output == "-" or is_special_file(args.output)
    if resume and stream:
        raise CommandError("--resume needs an output file (-o FILE): standard output or a "
                           "stream cannot be taken up again")
    if resume and fmt not in ("jsonl", "pubtator"):
        raise CommandError(f"--resume applies to jsonl and pubtator output; {fmt} is written "
                           "whole at the end")
    tolerance = getattr(args, "tolerance", 0.0)
    if tolerance and getattr(args, "dask", None) is not None:
        raise CommandError("--tolerance applies to runs in this process; the --dask route "
                           "scores exactly")
    if getattr(args, "own_process", False) and getattr(args, "dask", None) is None:
        _keep_torch_out(doc)
    cache_dir = extractor_cache_dir(args, "predict")
    # spaCy loads in the child while the model does
    return fmt, stream, cache_dir, _warm_parser(args, doc, cache_dir, early)


def _run_checked(args: argparse.Namespace, doc: Any, model_path: str, inputs: list[str],
                 fmt: str, stream: bool, cache_dir: Any, background: Any) -> int:
    from structkernels.cli._resume import PartialOutput, run_identity
    from structkernels.extraction import RelationExtractor
    from structkernels.relations import iter_relations

    resume = bool(getattr(args, "resume", False))
    tolerance = getattr(args, "tolerance", 0.0)
    quiet = bool(getattr(args, "quiet", False))
    try:
        extractor = RelationExtractor.from_json(doc, source=model_path, cache_dir=cache_dir,
                                                n_jobs=args.n_jobs, progress=not quiet,
                                                n_process=getattr(args, "n_process", None),
                                                tolerance=tolerance)
    except BaseException:  # a model that does not load: its parses are not waited for
        if background is not None:
            background.abandon()
        raise
    threshold = getattr(args, "threshold", None)
    batch_size = getattr(args, "batch_size", DEFAULT_BATCH_SIZE)
    batches = iter_relations(inputs, batch_size=batch_size,
                             on_error="skip" if args.skip_bad else "raise")
    with _scorer(args, extractor, doc, model_path, cache_dir, threshold, background) as score:
        if stream:
            with open_output(args.output, stream_ok=True) as fh:
                state = _predict_batches(args, score, batches, fmt, fh, None)
        else:
            settings = {"batch_size": batch_size, "format": fmt, "threshold": threshold,
                        "skip_bad": bool(args.skip_bad)}
            if tolerance:  # the scores depend on it (a run without it keeps its identity)
                settings["tolerance"] = tolerance
            out = PartialOutput(args.output, run_identity(inputs, model_path, settings)
                                if resume else "", resume)
            try:
                state = _predict_batches(args, score, batches, fmt, None, out)
                if not state["sentences"]:
                    raise CommandError(f"{', '.join(inputs)}: no sentences")
                out.finish()
            except BaseException:
                out.abandon()
                raise
    if not state["sentences"]:
        raise CommandError(f"{', '.join(inputs)}: no sentences")
    cut = getattr(extractor, "threshold_", 0.0) if threshold is None else threshold
    message = (f"scored {state['pairs']} entity pairs of {state['sentences']} sentences with "
               f"{model_path} ({state['positives']} positive, threshold {cut:.4g})")
    tp, fp, fn = state["tp"], state["fp"], state["fn"]
    if state["pairs"] and state["labelled"] and (tp + fp + fn):
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * tp / (2 * tp + fp + fn)
        message += (f"; F1 {100 * f1:.1f} (precision {100 * precision:.1f}, "
                    f"recall {100 * recall:.1f})")
    print(message, file=sys.stderr)
    if tolerance:
        print(_approximation_line(extractor.approximation_), file=sys.stderr)
    return 0


def _approximation_line(a: dict[str, Any] | None) -> str:
    """The fast route's stated error, in words."""
    if a is None:
        return "exact scores"
    parts = [f"{v}: {s['references']} of {s['of']} reference structures, error on the "
             f"references {s['error_on_references']:.3g} (bound "
             f"{'n/a' if s['bound'] is None else format(s['bound'], '.3g')})"
             for v, s in a["views"].items()] or ["no view to reduce: exact scores"]
    return (f"fast route, tolerance {a['tolerance']:g}: {'; '.join(parts)}; "
            f"{a['checked']} pairs also scored exactly, largest difference "
            f"{a['observed_error']:.3g}")


def _parses_ahead(args: argparse.Namespace) -> bool:
    """Whether a parsing child may be used (``--parse-ahead``: on, or auto with two cores
    or more; not with ``--dask``)."""
    from structkernels.relations.parse import parse_ahead_pays

    mode = getattr(args, "parse_ahead", "auto")
    return (getattr(args, "dask", None) is None and mode != "off"
            and (mode == "on" or parse_ahead_pays()))


#: The format name an extractor file starts with (``structkernels.extraction.EXTRACTOR_FORMAT``,
#: not imported here: the parsing child starts before the extraction package loads).
EXTRACTOR_FORMAT_NAME = "structkernels-relation-extractor"


def names_an_extractor(path: str) -> bool:
    """Whether the first 4 kB of the file at ``path`` (gzip or not) name the extractor
    format: a guess, read without decoding the file, that only decides whether the parsing
    child starts before the model is read (the model is checked when it is read)."""
    return EXTRACTOR_FORMAT_NAME.encode("ascii") in read_head(path, 4096)


def early_parser(args: argparse.Namespace, model_path: str) -> Any:
    """The parsing child started before the model is read, spaCy's default pipeline loading
    there (the model's pipeline in most runs: :func:`_warm_parser` takes the child then,
    else closes it); None where no child may parse, where the model does not look like an
    extractor (:func:`names_an_extractor`), or where the cache folder has a problem (said
    once the model is read)."""
    if not _parses_ahead(args) or not names_an_extractor(model_path):
        return None
    from structkernels.relations.parse import DEFAULT_PIPELINE
    from structkernels.utils import cache_dir_problem, user_cache_dir

    if not args.no_cache and cache_dir_problem(args.cache_dir or user_cache_dir()) is not None:
        return None
    return _started(args, DEFAULT_PIPELINE, False if args.no_cache else args.cache_dir)


def _started(args: argparse.Namespace, pipeline: str, cache_dir: Any) -> Any:
    """A :class:`~structkernels.relations.parse.BackgroundParser` of ``pipeline``, the
    pipeline loading in its child."""
    from structkernels.relations.parse import BackgroundParser, DependencyParser

    background = BackgroundParser(DependencyParser(
        pipeline, cache_dir=cache_dir, progress=False, n_process=getattr(args, "n_process", None)))
    background.warm()
    return background


def _warm_parser(args: argparse.Namespace, doc: Any, cache_dir: Any, early: Any = None) -> Any:
    """The child that parses ahead (:func:`_parses_ahead`), its pipeline loading: ``early``
    when it has the model's pipeline and parse cache; None when there is none."""
    params = doc.get("params") if isinstance(doc, dict) else None
    pipeline = params.get("pipeline") if isinstance(params, dict) else None
    wanted = isinstance(pipeline, str) and _parses_ahead(args)
    if early is not None:
        if (wanted and early.parser.pipeline == pipeline
                and early.parser.cache_dir == cache_dir):
            return early
        early.abandon()
    if not wanted:
        return None
    return _started(args, pipeline, cache_dir)


@contextlib.contextmanager
def _scorer(args: argparse.Namespace, extractor: Any, doc: Any, model_path: str,
            cache_dir: Any, threshold: float | None, background: Any = None
            ) -> Iterator[Callable]:
    """``score(batches, done)``: ``(batch, rows, warning messages)`` per batch, in order
    (``rows`` None for the batches before ``done``, written before): here, or on the dask
    cluster ``--dask`` names (connected before any input is read, closed at the end)."""
    scheduler = getattr(args, "dask", None)
    if scheduler is None:
        try:
            yield lambda batches, done: _score_here(extractor, batches, done, threshold,
                                                    getattr(args, "parse_ahead", "auto"),
                                                    background)
        finally:
            if background is not None:
                background.close()
        return
    with contextlib.ExitStack() as stack:
        try:
            from structkernels.extraction.distributed import (
                SchedulerError,
                dask_client,
                scored_partitions,
            )

            client = stack.enter_context(dask_client(scheduler, timeout=args.dask_timeout))
        except ImportError as exc:
            raise CommandError(f"--dask: {one_line(exc)}") from None
        except SchedulerError as exc:
            raise CommandError(one_line(exc)) from None

        def score(batches: Any, done: int) -> Iterator[tuple[Any, Any, list[str]]]:
            for part in scored_partitions(doc, batches, client=client, threshold=threshold,
                                          cache_dir=cache_dir, n_jobs=args.n_jobs or 1,
                                          skip=done, source=model_path):
                yield part.batch, part.rows, part.warnings

        yield score


def _score_here(extractor: Any, batches: Any, done: int, threshold: float | None,
                parse_ahead: str = "auto", background: Any = None
                ) -> Iterator[tuple[Any, Any, list[str]]]:
    """Each batch parsed and scored in this process's stream
    (:func:`structkernels.extraction.stream.predict_stream`: the next batch parsed in a
    child while one is scored), as it is read; the batches before ``done`` read past."""
    import warnings

    from structkernels.extraction.stream import predict_stream

    batches = iter(batches)
    rest: list[Any] = []
    for batch in batches:
        if batch.index >= done:
            rest.append(batch)
            break
        yield batch, None, []
    stream = predict_stream(extractor, itertools.chain(rest, batches), threshold=threshold,
                            parse_ahead={"on": True, "off": False}.get(parse_ahead),
                            background=background)
    while True:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = next(stream, None)
        if got is None:
            return
        yield got[0], got[1], [one_line(w.message) for w in caught]


def _predict_batches(args: argparse.Namespace, score: Callable, batches: Any, fmt: str,
                     fh: Any, out: Any) -> dict[str, Any]:
    """Parse, score and write each batch as it comes; the run's counts.

    ``score(batches, done)`` gives each batch with its rows (:func:`_scorer`). ``fh``: a
    stream written and flushed per batch; else ``out``, a
    :class:`~structkernels.cli._resume.PartialOutput` each batch's text is committed to
    (batches it holds already, when resuming, are read past without parsing or scoring).
    """
    import io
    import time

    from structkernels.relations import PairWriter

    state: dict[str, Any] = {"batches": 0, "sentences": 0, "pairs": 0, "positives": 0,
                             "tp": 0, "fp": 0, "fn": 0, "skipped": 0, "labelled": True}
    if out is not None:
        state.update(out.open())
    done = state["batches"]
    quiet = bool(getattr(args, "quiet", False))
    if done and not quiet:
        print(f"structkernels predict: resuming after batch {done} ({state['sentences']:,} "
              f"sentences written to {out.partial})", file=sys.stderr)
    buffer = io.StringIO()
    writer = PairWriter(fh if fh is not None else buffer, fmt, [str(p) for p in args_inputs(args)])
    started = t0 = time.perf_counter()
    new_sentences = 0
    for batch, rows, messages in score(batches, done):
        if rows is None:
            writer.skip(batch)
            t0 = time.perf_counter()
            continue
        for rec in batch.skipped:
            print(f"structkernels predict: skipped {rec}", file=sys.stderr)
        for message in messages:
            print(f"structkernels predict: warning: {message}", file=sys.stderr)
        writer.write(batch, rows)
        _count(state, batch, rows)
        if out is not None:
            out.commit(buffer.getvalue(), state)
            buffer.seek(0)
            buffer.truncate()
        else:
            fh.flush()
        new_sentences += len(batch)
        if not quiet and len(batch):
            dt = time.perf_counter() - t0
            rate = new_sentences / max(time.perf_counter() - started, 1e-9)
            print(f"structkernels predict: batch {batch.index + 1}: {len(batch):,} sentences, "
                  f"{len(rows):,} pairs in {dt:.1f} s ({state['sentences']:,} sentences, "
                  f"{state['pairs']:,} pairs in all; {rate:,.1f} sentences/s)", file=sys.stderr)
        t0 = time.perf_counter()
    writer.finish()
    if out is not None:
        out.commit(buffer.getvalue(), state)
    else:
        fh.flush()
    return state


def args_inputs(args: argparse.Namespace) -> list[str]:
    """The data paths of a predict command line (without the model)."""
    return model_and_data(args)[1]


def _count(state: dict[str, Any], batch: Any, rows: list[dict[str, Any]]) -> None:
    """Add a batch's sentences, pairs, positives and (labelled) confusion counts."""
    state["batches"] = batch.index + 1
    state["sentences"] += len(batch)
    state["skipped"] += len(batch.skipped)
    state["pairs"] += len(rows)
    pred = [int(r["label"]) for r in rows]
    state["positives"] += sum(pred)
    pairs = batch.pairs() if rows else []
    if any(p.label is None for p in pairs):
        state["labelled"] = False
    if state["labelled"]:
        for p, y in zip(pairs, pred, strict=True):
            g = int(bool(p.label))
            state["tp"] += g and y
            state["fp"] += (not g) and y
            state["fn"] += g and not y


def _output_format(args: argparse.Namespace, inputs: list[str]) -> str:
    """The format ``--output-format`` names for these inputs, checked before any work."""
    from structkernels.formats.pairs import output_format

    try:
        return output_format(getattr(args, "output_format", "jsonl"), inputs)
    except ValueError as exc:
        raise CommandError(one_line(exc)) from None
