"""Relation extraction from files to a file: :func:`predict`, what ``structkernels predict``
runs with a relation extractor.

The route is chosen here, from ``backend``: this process parses and scores each batch, or a
child process parses the next batches while one is scored
(:func:`~structkernels.extraction.stream.predict_stream`), or a dask cluster does both
(:mod:`~structkernels.extraction.distributed`).  Every route writes the same bytes.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from structkernels.extraction.resume import COUNTS, PartialOutput, PredictError, run_identity
from structkernels.formats.batches import DEFAULT_BATCH_SIZE
from structkernels.utils import (
    cache_dir_problem,
    one_line,
    open_output,
    read_head,
    read_once,
    usable_cache_dir,
    user_cache_dir,
)

__all__ = ["predict", "PredictError", "early_parser", "names_an_extractor", "run_summary",
           "BACKENDS"]

#: The routes :func:`predict` takes: ``auto`` (parse ahead where the process may use two
#: cores or more), ``in-process``, ``parse-ahead``, ``dask`` (with a scheduler).
BACKENDS = ("auto", "in-process", "parse-ahead", "dask")
#: The format name an extractor file starts with (``EXTRACTOR_FORMAT``, not imported here:
#: the parsing child starts before the extractor's modules load).
EXTRACTOR_FORMAT_NAME = "structkernels-relation-extractor"


def _parses_ahead(backend: str) -> bool:
    """Whether a parsing child may be used: ``parse-ahead``, or ``auto`` with two cores."""
    from structkernels.relations.parse import parse_ahead_pays

    return backend == "parse-ahead" or (backend == "auto" and parse_ahead_pays())


def names_an_extractor(path: str) -> bool:
    """Whether the first 4 kB of the file at ``path`` (gzip or not) name the extractor
    format: a guess, read without decoding the file, that only decides whether the parsing
    child starts before the model is read (the model is checked when it is read)."""
    return EXTRACTOR_FORMAT_NAME.encode("ascii") in read_head(path, 4096)


def early_parser(model: str, *, backend: str = "auto", cache_dir: Any = None,
                 n_process: int | None = None) -> Any:
    """The parsing child started before the model is read, spaCy's default pipeline loading
    there (:func:`predict` takes it when that is the model's, else closes it); None where no
    child may parse, the model does not look like an extractor, or the cache folder has a
    problem.  ``cache_dir``: False for no cache."""
    if not _parses_ahead(backend) or not names_an_extractor(model):
        return None
    from structkernels.relations.parse import DEFAULT_PIPELINE

    if cache_dir is not False and cache_dir_problem(cache_dir or user_cache_dir()) is not None:
        return None
    return _started(DEFAULT_PIPELINE, cache_dir, n_process)


def _started(pipeline: str, cache_dir: Any, n_process: int | None) -> Any:
    """A :class:`~structkernels.relations.parse.BackgroundParser` of ``pipeline``, the
    pipeline loading in its child."""
    from structkernels.relations.parse import BackgroundParser, DependencyParser

    background = BackgroundParser(DependencyParser(
        pipeline, cache_dir=cache_dir, progress=False, n_process=n_process))
    background.warm()
    return background


def _pipeline_of(doc: Any) -> Any:
    params = doc.get("params") if isinstance(doc, dict) else None
    return params.get("pipeline") if isinstance(params, dict) else None


def _warm_parser(doc: Any, cache_dir: Any, early: Any, backend: str,
                 n_process: int | None) -> Any:
    """The child that parses ahead, its pipeline loading: ``early`` when it has the model's
    pipeline and parse cache; None when no child may parse."""
    pipeline = _pipeline_of(doc)
    wanted = isinstance(pipeline, str) and _parses_ahead(backend)
    if early is not None:
        if (wanted and early.parser.pipeline == pipeline
                and early.parser.cache_dir == cache_dir):
            return early
        early.abandon()
    if not wanted:
        return None
    return _started(pipeline, cache_dir, n_process)


def predict(
    inputs: list[str],
    output: str,
    model: Any,
    *,
    backend: str = "auto",
    resume: bool = False,
    scheduler: str | None = None,
    client: Any = None,
    parts: bool = False,
    window: int | None = None,
    timeout: float = 10.0,
    source: str | None = None,
    output_format: str = "jsonl",
    threshold: float | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_error: str = "raise",
    cache_dir: Any = None,
    n_jobs: int | None = None,
    n_process: int | None = None,
    tolerance: float = 0.0,
    parser: Any = None,
    own_process: bool = False,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Score every entity pair of the relation corpora ``inputs`` with a relation extractor
    and write them to ``output``, batch by batch.

    Parameters
    ----------
    inputs : list of paths
        Relation corpora (:func:`~structkernels.relations.iter_relations`).
    output : path or "-"
        The output file (written as ``OUT.partial``, renamed when complete), or a stream
        (``"-"``: standard output; a FIFO or device), written and flushed per batch.
    model : path, dict or RelationExtractor
        The extractor's file, its document (read from ``source``), or a fitted extractor.
    backend : {"auto", "in-process", "parse-ahead", "dask"}
        The route (see the module's notes); ``"dask"`` runs on ``client`` or on
        ``scheduler`` (an address or ``local:N``, waited for ``timeout`` seconds),
        ``window`` partitions in flight (default: twice the cluster's threads).
    parts : bool
        With ``"dask"``: ``output`` is a folder where each worker writes the batches it
        scores, one file each (jsonl or pubtator); the names are in ``files``.
    resume : bool
        Keep the partial output of a run that stops and take up one stopped so (jsonl or
        pubtator output files only).
    output_format, threshold, batch_size, on_error, n_jobs, n_process, tolerance
        As ``structkernels predict`` takes them (``--output-format`` ...).
    cache_dir : path, None or False
        The parse cache (None: the default folder; False: none).
    parser : BackgroundParser, optional
        A child started by :func:`early_parser`; taken over (used or closed).
    own_process : bool
        This process is the command's own: spaCy may be kept from importing PyTorch.
    progress : bool
        Bars, and one line per batch through ``log``.
    log : callable, optional
        Gets each line said along the way (batches, skipped records, warnings).

    Returns
    -------
    dict
        The run's counts (``sentences``, ``pairs``, ``positives``, ``skipped`` records,
        ``tp``, ``fp``, ``fn``, ``labelled``), ``f1`` (None unless every pair is labelled),
        ``partitions`` (batches with sentences), ``workers`` (per dask worker its
        ``partitions``, ``sentences`` and ``seconds``), ``files``, ``seconds``,
        ``threshold`` and ``approximation`` (``tolerance`` above 0).

    Examples
    --------
    >>> info = predict(["LLL-test.xml"], "pairs.jsonl", "lll.json.gz")  # doctest: +SKIP
    >>> info["pairs"]  # doctest: +SKIP
    61
    """
    started = time.perf_counter()
    inputs = [os.fspath(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike))
                                     else inputs)]
    try:
        if parts and (backend != "dask" or resume):
            raise ValueError("one file per partition (parts=True) is the dask route's, "
                             "without resume")
        checked = _check(inputs, output, model, backend, resume, output_format, tolerance,
                         own_process, cache_dir, log, parser, n_process)
    except BaseException:
        if parser is not None:
            parser.abandon()
        raise
    doc, fmt, stream, cache_dir, background = checked
    from structkernels.extraction._trained import TrainedExtractor
    from structkernels.relations import iter_relations

    name = source or (os.fspath(model) if isinstance(model, (str, os.PathLike))
                      else "the extractor")
    try:
        extractor = TrainedExtractor.from_json(doc, source=name, cache_dir=cache_dir,
                                               n_jobs=n_jobs, progress=progress,
                                               n_process=n_process, tolerance=tolerance)
    except BaseException:  # a model that does not load: its parses are not waited for
        if background is not None:
            background.abandon()
        raise
    batches = iter_relations(inputs, batch_size=batch_size, on_error=on_error)
    run = _Run(inputs, fmt, progress, log)
    with _scorer(backend, scheduler, client, timeout, extractor, doc, name, cache_dir,
                 threshold, n_jobs, window, background) as score:
        if parts:
            state = run.write_parts(score, batches, output)
        elif stream:
            run.output = "standard output" if output == "-" else output
            with open_output(output, stream_ok=True) as fh:
                state = run.write(score, batches, fh, None)
        else:
            settings = {"batch_size": batch_size, "format": fmt, "threshold": threshold,
                        "skip_bad": on_error == "skip"}
            if tolerance:  # the scores depend on it (a run without it keeps its identity)
                settings["tolerance"] = tolerance
            out = PartialOutput(output, run_identity(inputs, name, settings)
                                if resume else None, resume)
            try:
                state = run.write(score, batches, None, out)
                if not state["sentences"]:
                    raise PredictError(f"{', '.join(inputs)}: no sentences")
                out.finish()
            except BaseException:
                out.abandon()
                raise
    if not state["sentences"]:
        raise PredictError(f"{', '.join(inputs)}: no sentences")
    tp, fp, fn = state["tp"], state["fp"], state["fn"]
    state["f1"] = (2 * tp / (2 * tp + fp + fn) if state["pairs"] and state["labelled"]
                   and tp + fp + fn else None)
    state["seconds"] = time.perf_counter() - started
    state["threshold"] = getattr(extractor, "threshold_", 0.0) if threshold is None else threshold
    state["approximation"] = extractor.approximation_ if tolerance else False
    return state


def _check(inputs: list[str], output: str, model: Any, backend: str, resume: bool, fmt: str,
           tolerance: float, own_process: bool, cache_dir: Any, log: Any, early: Any,
           n_process: int | None) -> tuple[Any, str, bool, Any, Any]:
    """The options checked against the model and the inputs: ``(the model's document, the
    output format, whether the output is a stream, the parse cache, the parsing child to use
    or None)``."""
    from structkernels.formats.pairs import output_format

    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    for name in inputs:
        if not Path(name).exists():
            raise PredictError(f"no such file or folder: {name}")
    for name in inputs if resume else ():
        if read_once(name):
            raise PredictError(f"{name}: --resume needs input files: a pipe or device cannot "
                               "be read again to check it")
    try:
        fmt = output_format(fmt, inputs)
    except ValueError as exc:
        raise PredictError(one_line(exc)) from None
    stream = output == "-" or read_once(output)
    if resume and stream:
        raise PredictError("--resume needs an output file (-o FILE): standard output or a "
                           "stream cannot be taken up again")
    if resume and fmt not in ("jsonl", "pubtator"):
        raise PredictError(f"--resume applies to jsonl and pubtator output; {fmt} is written "
                           "whole at the end")
    if tolerance and backend == "dask":
        raise PredictError("--tolerance applies to runs in this process; the --dask route "
                           "scores exactly")
    if isinstance(model, (str, os.PathLike)):
        from structkernels.extraction.files import read_extractor_document

        doc = read_extractor_document(model)
    else:  # a document, or a fitted extractor
        doc = model.to_json() if hasattr(model, "to_json") else model
    if own_process and backend != "dask" and isinstance(_pipeline_of(doc), str):
        from structkernels.relations.pipelines import keep_torch_out

        keep_torch_out(_pipeline_of(doc))
    cache_dir = usable_cache_dir(cache_dir, log or (lambda line: None))
    # spaCy loads in the child while the model does
    if backend == "dask":
        if early is not None:
            early.abandon()
        return doc, fmt, stream, cache_dir, None
    return doc, fmt, stream, cache_dir, _warm_parser(doc, cache_dir, early, backend, n_process)


@contextlib.contextmanager
def _scorer(backend: str, scheduler: str | None, client: Any, timeout: float, extractor: Any,
            doc: Any, source: str, cache_dir: Any, threshold: float | None,
            n_jobs: int | None, window: int | None, background: Any = None
            ) -> Iterator[Callable]:
    """``score(batches, done, parts=None)``: ``(batch, rows, warning messages, worker,
    seconds)`` per batch, in order (``rows`` None before ``done``), here or on a dask
    cluster (connected before any input is read); with ``parts`` the workers write each
    batch (``rows``: its counts)."""
    if backend != "dask":
        mode = {"parse-ahead": True, "in-process": False}.get(backend)
        try:
            yield lambda batches, done: _score_here(extractor, batches, done, threshold,
                                                    mode, background)
        finally:
            if background is not None:
                background.close()
        return
    from structkernels.extraction import distributed as dd

    with contextlib.ExitStack() as stack:
        try:
            if client is None:
                client = stack.enter_context(dd.dask_client(scheduler, timeout=timeout))
        except ImportError as exc:
            raise PredictError(f"--dask: {one_line(exc)}") from None
        except dd.SchedulerError as exc:
            raise PredictError(one_line(exc)) from None
        common = {"client": client, "threshold": threshold, "cache_dir": cache_dir,
                  "n_jobs": n_jobs or 1, "window": window, "source": source}

        def score(batches: Any, done: int, parts: tuple | None = None) -> Iterator[tuple]:
            if parts is None:
                return dd.scored_partitions(doc, batches, skip=done, **common)
            return ((batch, counts, [], who, seconds) for batch, counts, who, seconds
                    in dd.written_partitions(doc, batches, *parts, **common))

        yield score


def _score_here(extractor: Any, batches: Any, done: int, threshold: float | None,
                parse_ahead: bool | None, background: Any = None
                ) -> Iterator[tuple[Any, Any, list[str]]]:
    """Each batch parsed and scored in this process's stream
    (:func:`~structkernels.extraction.stream.predict_stream`), as it is read; the batches
    before ``done`` read past."""
    from structkernels.extraction.stream import predict_stream

    batches = iter(batches)
    rest: list[Any] = []
    for batch in batches:
        if batch.index >= done:
            rest.append(batch)
            break
        yield batch, None, [], None, 0.0
    stream = predict_stream(extractor, itertools.chain(rest, batches), threshold=threshold,
                            parse_ahead=parse_ahead, background=background)
    while True:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = next(stream, None)
        if got is None:
            return
        yield got[0], got[1], [one_line(w.message) for w in caught], None, 0.0


class _Run:
    """Writing the scored batches as they come, with their counts and lines."""

    def __init__(self, inputs: list[str], fmt: str, progress: bool, log: Any):
        self.inputs, self.fmt, self.progress = inputs, fmt, progress
        self.log = log or (lambda line: None)
        self.output = "the output"  # a stream's name, in its write errors
        self.state: dict[str, Any] = {**dict.fromkeys(COUNTS, 0), "labelled": True,
                                      "partitions": 0, "workers": {}, "files": []}

    def _add(self, batch: Any, counts: dict[str, Any], messages: list[str], who: Any,
             seconds: float) -> None:
        """A batch's skipped records and warnings said; its counts
        (:func:`~structkernels.extraction.stream.pair_counts`), the confusion counts only
        while every pair so far was labelled, added."""
        state = self.state
        for rec in batch.skipped:
            self.log(f"skipped {rec}")
        for message in messages:
            self.log(f"warning: {message}")
        state["batches"] = batch.index + 1
        state["skipped"] += len(batch.skipped)
        for k in ("sentences", "pairs", "positives"):
            state[k] += counts[k]
        state["labelled"] = state["labelled"] and counts["labelled"]
        if state["labelled"]:
            for k in ("tp", "fp", "fn"):
                state[k] += counts[k]
        if len(batch):
            self.state["partitions"] += 1
        if who is not None:
            w = self.state["workers"].setdefault(who, {"partitions": 0, "sentences": 0,
                                                       "seconds": 0.0})
            w["partitions"] += 1
            w["sentences"] += len(batch)
            w["seconds"] += seconds

    @contextlib.contextmanager
    def _to_stream(self) -> Iterator[None]:
        """A stream's write error (no file named: an input's names its own) as one line
        naming the output."""
        try:
            yield
        except OSError as exc:
            if exc.filename is not None or not exc.strerror:
                raise
            raise PredictError(f"{self.output}: cannot write: {one_line(exc.strerror)}"
                               ) from None

    def write_parts(self, score: Callable, batches: Any, folder: Any) -> dict[str, Any]:
        """Each batch written by the worker that scores it, to a file of its own."""
        for batch, counts, messages, who, seconds in score(
                batches, 0, (folder, self.fmt, self.inputs, self.state["files"])):
            self._add(batch, counts, messages, who, seconds)
        return self.state

    def write(self, score: Callable, batches: Any, fh: Any, out: Any) -> dict[str, Any]:
        """Parse, score and write each batch; the run's counts.  ``fh``: a stream written
        and flushed per batch; else ``out``, a :class:`PartialOutput` each batch's text is
        committed to (batches it holds already are read past without parsing or scoring)."""
        from structkernels.extraction.stream import pair_counts
        from structkernels.relations import PairWriter

        state = self.state
        if out is not None:
            state.update(out.open())
        done = state["batches"]
        if done and self.progress:
            self.log(f"resuming after batch {done} ({state['sentences']:,} sentences written "
                     f"to {out.partial})")
        buffer = io.StringIO()
        writer = PairWriter(fh if fh is not None else buffer, self.fmt,
                            [str(p) for p in self.inputs])
        started = t0 = time.perf_counter()
        new_sentences = 0

        def emit(step: Callable[..., None], *args: Any) -> None:
            """``step(*args)`` (a write) committed to ``out``, or flushed to the stream ``fh``."""
            if out is None:
                with self._to_stream():
                    step(*args)
                    fh.flush()
                return
            step(*args)
            out.commit(buffer.getvalue(), state)
            buffer.seek(0)
            buffer.truncate()

        for batch, rows, messages, who, seconds in score(batches, done):
            if rows is None:
                writer.skip(batch)
                t0 = time.perf_counter()
                continue
            self._add(batch, pair_counts(batch, rows), messages, who, seconds)
            emit(writer.write, batch, rows)
            new_sentences += len(batch)
            if self.progress and len(batch):
                dt = time.perf_counter() - t0
                rate = new_sentences / max(time.perf_counter() - started, 1e-9)
                self.log(f"batch {batch.index + 1}: {len(batch):,} sentences, {len(rows):,} "
                         f"pairs in {dt:.1f} s ({state['sentences']:,} sentences, "
                         f"{state['pairs']:,} pairs in all; {rate:,.1f} sentences/s)")
            t0 = time.perf_counter()
        emit(writer.finish)
        return state


def run_summary(state: dict[str, Any], model: str) -> list[str]:
    """The lines that close a run of :func:`predict`: its counts, F1 when the pairs are
    labelled, and the fast route's stated error."""
    message = (f"scored {state['pairs']} entity pairs of {state['sentences']} sentences with "
               f"{model} ({state['positives']} positive, threshold {state['threshold']:.4g})")
    tp, fp, fn, f1 = state["tp"], state["fp"], state["fn"], state["f1"]
    if f1 is not None:
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        message += (f"; F1 {100 * f1:.1f} (precision {100 * precision:.1f}, "
                    f"recall {100 * recall:.1f})")
    a = state.get("approximation", False)
    if a is False:
        return [message]
    if a is None:
        return [message, "exact scores"]
    parts = [f"{v}: {s['references']} of {s['of']} reference structures, error on the "
             f"references {s['error_on_references']:.3g} (bound "
             f"{'n/a' if s['bound'] is None else format(s['bound'], '.3g')})"
             for v, s in a["views"].items()] or ["no view to reduce: exact scores"]
    return [message, f"fast route, tolerance {a['tolerance']:g}: {'; '.join(parts)}; "
            f"{a['checked']} pairs also scored exactly, largest difference "
            f"{a['observed_error']:.3g}"]
