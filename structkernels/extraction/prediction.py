"""Relation extraction from files to a file: :func:`predict`, what ``structkernels predict``
runs with a relation extractor.

The route is chosen here, from ``backend``: this process parses and scores each batch;
or a child process parses the next batches while one is scored here
(:func:`~structkernels.extraction.stream.predict_stream`; ``"auto"`` where the process
may use two cores or more); or a dask cluster parses and scores the batches
(:func:`~structkernels.extraction.distributed.scored_partitions`).  Every route writes
the same bytes.  The parsing child may be started before the model is read
(:func:`early_parser`: spaCy loads there while the model does) and handed to
:func:`predict`.

Resumable output (:class:`PartialOutput`): ``OUT`` is written as ``OUT.partial`` beside
it; after each batch the batch's bytes are appended and flushed to disk, then
``OUT.partial.progress`` (small JSON, written atomically, with its own checksum) records
the batches done, the bytes they hold and their SHA-256, the run's counts and what the
output depends on (:func:`run_identity`: the SHA-256 of each input's content and of the
model file's, the settings that change the bytes written).  When the last batch is
written the partial file is renamed to ``OUT`` and the progress file removed.  Stopped
(Ctrl-C, an error), a run without ``resume`` removes both files; with ``resume`` it keeps
them, and the next run with ``resume`` checks every hash (a mismatch: one line naming the
file), truncates the partial file to the recorded bytes (a
batch half written is dropped) and goes on after the recorded batches.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import json
import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from structkernels.formats.batches import DEFAULT_BATCH_SIZE
from structkernels.utils import (
    RecordError,
    StructkernelsError,
    atomic_open,
    cache_dir_problem,
    destination,
    is_special_file,
    loads_record,
    move_into_place,
    one_line,
    open_output,
    open_side_file,
    read_head,
    user_cache_dir,
)

__all__ = ["predict", "PredictError", "PartialOutput", "run_identity", "early_parser",
           "names_an_extractor", "usable_cache_dir", "run_summary", "BACKENDS",
           "DEFAULT_BATCH_SIZE"]

#: The routes :func:`predict` takes: ``auto`` (parse ahead where the process may use two
#: cores or more), ``in-process``, ``parse-ahead``, ``dask`` (with a scheduler).
BACKENDS = ("auto", "in-process", "parse-ahead", "dask")
#: The format name an extractor file starts with (``EXTRACTOR_FORMAT``, not imported here:
#: the parsing child starts before the extractor's modules load).
EXTRACTOR_FORMAT_NAME = "structkernels-relation-extractor"
PROGRESS_FORMAT = "structkernels-predict-progress"
PROGRESS_VERSION = 2
_COUNTS = ("batches", "sentences", "pairs", "positives", "bytes", "tp", "fp", "fn", "skipped")


class PredictError(StructkernelsError, ValueError):
    """A run that cannot go on as asked: an option that does not suit the model or the
    output, a missing input, a partial output that cannot be taken up."""


def usable_cache_dir(cache_dir: Any, warn: Callable[[str], None]) -> Any:
    """The parse cache to use: False for ``False`` or a folder that cannot be written (said
    through ``warn``), else ``cache_dir`` (None: the default folder)."""
    if cache_dir is False:
        return False
    where = cache_dir or user_cache_dir()
    problem = cache_dir_problem(where)
    if problem is not None:
        warn(f"warning: {where}: the cache folder cannot be written ({one_line(problem)}); "
             "caching is off for this run")
        return False
    return cache_dir


# ------------------------------------------------------------------ the parsing child
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
    there (the model's pipeline in most runs: :func:`predict` takes the child then, else
    closes it); None where no child may parse, where the model does not look like an
    extractor (:func:`names_an_extractor`), or where the cache folder has a problem (said
    once the model is read).  ``cache_dir``: False for no cache."""
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


# ------------------------------------------------------------------ resumable output
def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _checksum(doc: dict[str, Any]) -> str:
    """The SHA-256 of a progress document without its ``check`` (a damaged file is seen)."""
    body = {k: v for k, v in doc.items() if k != "check"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def run_identity(inputs: list[str], model: str, settings: dict[str, Any]) -> dict[str, Any]:
    """What a run's output depends on: ``inputs``, each input file's path and the SHA-256 of
    its content (a folder: each file under it), ``model``, the SHA-256 of the model file's
    content, and ``settings``."""
    files: list[Any] = []
    for name in inputs:
        found = [name]
        if os.path.isdir(name):
            found = []
            for root, dirs, names in os.walk(name):
                dirs.sort()
                found += [os.path.join(root, f) for f in sorted(names)]
        files += [[os.path.abspath(f), _file_sha256(f)] for f in found]
    return {"inputs": files, "model": [os.path.abspath(model), _file_sha256(model)],
            "settings": json.loads(json.dumps(settings, sort_keys=True, default=str))}


class PartialOutput:
    """``OUT.partial`` and ``OUT.partial.progress`` of one run (see the module's notes).

    ``identity`` is :func:`run_identity`'s (with ``resume``; else None).  Every write error
    is a :class:`PredictError` naming ``OUT`` (and the side file written)."""

    def __init__(self, output: str, identity: dict[str, Any] | None, resume: bool):
        self.final = destination(output)
        self.partial = self.final.with_name(self.final.name + ".partial")
        self.progress = self.final.with_name(self.final.name + ".partial.progress")
        self.identity, self.resume = identity or {}, resume
        self.state = dict.fromkeys(_COUNTS, 0)
        self.fd = -1
        self.digest = hashlib.sha256()  # of the bytes committed to the partial file

    def _failed(self, exc: OSError, side: Path) -> PredictError:
        why = one_line(exc.strerror if exc.strerror and not exc.filename else exc)
        which = "its progress file" if side == self.progress else "the partial output"
        return PredictError(f"{self.final}: cannot write: {why} ({which} {side})")

    def _read_progress(self) -> dict[str, Any]:
        again = "; run without --resume to start again"

        def bad(why: str) -> PredictError:
            return PredictError(f"{self.progress}: {why}; remove it (and {self.partial.name}) "
                                "or run without --resume to start again")

        try:
            doc = loads_record(self.progress.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, RecordError) as exc:
            raise bad(f"cannot read the progress file ({one_line(exc)})") from None
        if not isinstance(doc, dict) or doc.get("format") != PROGRESS_FORMAT:
            raise bad("not a progress file of structkernels predict")
        if doc.get("version") != PROGRESS_VERSION:
            raise bad(f"a progress file of version {one_line(doc.get('version'), 20)} (an "
                      "older structkernels: its run cannot be checked)")
        if doc.get("check") != _checksum(doc):
            raise bad("the progress file is damaged (its checksum differs)")
        state = doc.get("state")
        if not isinstance(state, dict) or any(
                not isinstance(state.get(k), int) or isinstance(state.get(k), bool)
                or state[k] < 0 for k in _COUNTS):
            raise bad("the progress file's counts are malformed")
        mine = self.identity
        if doc.get("model") != mine["model"]:
            raise PredictError(f"{mine['model'][0]}: cannot resume {self.partial}: written "
                               f"with another model or the model file changed{again}")
        if doc.get("settings") != mine["settings"]:
            raise PredictError(f"{self.partial}: cannot resume: it was written with other "
                               "settings (--batch-size, --output-format, --threshold, "
                               f"--skip-bad, --tolerance){again}")
        old = doc.get("inputs")
        if not isinstance(old, list) or [f[:1] for f in old] != [f[:1] for f in mine["inputs"]]:
            raise PredictError(f"{self.partial}: cannot resume: it was written from other "
                               f"inputs{again}")
        for was, now in zip(old, mine["inputs"], strict=True):
            if was != now:
                raise PredictError(f"{now[0]}: cannot resume {self.partial}: this input "
                                   f"changed since the partial output was written{again}")
        doc["labelled"] = bool(doc.get("labelled", True))
        return doc

    def _take_up(self, fd: int, doc: dict[str, Any]) -> None:
        """The partial file's first recorded bytes checked against their SHA-256."""
        size = self.state["bytes"]
        if os.fstat(fd).st_size < size:
            raise PredictError(f"{self.partial}: cannot resume: the partial output is shorter "
                               "than its progress file records; run without --resume to "
                               "start again")
        with open(self.partial, "rb") as fh:
            if not os.path.samestat(os.fstat(fh.fileno()), os.fstat(fd)):
                raise PredictError(f"{self.partial}: cannot resume: the file changed while "
                                   "opened; run without --resume to start again")
            left = size
            while left:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    break
                self.digest.update(chunk)
                left -= len(chunk)
        if self.digest.hexdigest() != doc.get("output"):
            raise PredictError(f"{self.partial}: cannot resume: its bytes differ from those "
                               "its progress file records (damaged or edited); run without "
                               "--resume to start again")

    def open(self) -> dict[str, Any]:
        """Start (or, resuming, take up) the partial file; the run's state so far."""
        labelled = True
        if self.resume and os.path.lexists(self.progress):
            doc = self._read_progress()
            self.state = {k: doc["state"][k] for k in _COUNTS}
            labelled = doc["labelled"]
            if not os.path.lexists(self.partial):
                raise PredictError(f"{self.partial}: cannot resume: the partial output is "
                                   "missing; run without --resume to start again")
            try:
                fd = open_side_file(self.partial, append=True)
            except OSError as exc:
                raise self._failed(exc, self.partial) from None
            try:
                self._take_up(fd, doc)
                os.ftruncate(fd, self.state["bytes"])
            except BaseException as exc:
                os.close(fd)
                if isinstance(exc, OSError):
                    raise self._failed(exc, self.partial) from None
                raise
            self.fd = fd
        else:
            with contextlib.suppress(OSError):  # a stale one no longer describes the file
                self.progress.unlink()
            try:  # an old file or stale link replaced
                self.fd = open_side_file(self.partial)
            except OSError as exc:
                raise self._failed(exc, self.partial) from None
        return {**self.state, "labelled": labelled}

    def commit(self, text: str, state: dict[str, Any]) -> None:
        """Append one batch's text, flush it to disk, then record the progress."""
        data = text.encode("utf-8")
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view):]
            os.fsync(self.fd)
            size = os.fstat(self.fd).st_size
        except OSError as exc:
            raise self._failed(exc, self.partial) from None
        self.digest.update(data)
        self.state = {k: int(state[k]) for k in _COUNTS if k != "bytes"}
        self.state["bytes"] = size
        if self.resume:
            doc = {"format": PROGRESS_FORMAT, "version": PROGRESS_VERSION, **self.identity,
                   "output": self.digest.hexdigest(),
                   "labelled": bool(state.get("labelled", True)), "state": self.state}
            doc["check"] = _checksum(doc)
            try:
                with atomic_open(self.progress, follow_links=False) as fh:
                    fh.write(json.dumps(doc) + "\n")
            except OSError as exc:
                raise self._failed(exc, self.progress) from None

    def finish(self) -> None:
        """Rename the complete partial file to the output; remove the progress file."""
        os.close(self.fd)
        self.fd = -1
        try:
            move_into_place(self.partial, self.final)
        except OSError as exc:
            raise self._failed(exc, self.partial) from None
        if self.resume:
            with contextlib.suppress(OSError):
                self.progress.unlink()

    def abandon(self) -> None:
        """A run stopped: keep both files when resuming, else remove the partial file."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if not self.resume:
            with contextlib.suppress(OSError):
                self.partial.unlink()


# ------------------------------------------------------------------ the run
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
        The route (see the module's notes); ``"dask"`` runs on ``client`` (a dask client)
        or on ``scheduler`` (an address or ``local:N``,
        :func:`~structkernels.extraction.distributed.dask_client`, waited for ``timeout``
        seconds), ``window`` partitions in flight (default: twice the cluster's threads).
    parts : bool
        With ``"dask"``: ``output`` is a folder where each worker writes the batches it
        scores, one file each (:func:`~structkernels.extraction.distributed.written_partitions`:
        ``part-00000.jsonl``, ...; jsonl or pubtator); the names are in ``files``.
    resume : bool
        Keep the partial output of a run that stops and take up one stopped so (an output
        file in jsonl or pubtator only).
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
    from structkernels.extraction import RelationExtractor
    from structkernels.relations import iter_relations

    name = source or (os.fspath(model) if isinstance(model, (str, os.PathLike))
                      else "the extractor")
    try:
        extractor = RelationExtractor.from_json(doc, source=name, cache_dir=cache_dir,
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
    try:
        fmt = output_format(fmt, inputs)
    except ValueError as exc:
        raise PredictError(one_line(exc)) from None
    stream = output == "-" or is_special_file(output)
    if resume and stream:
        raise PredictError("--resume needs an output file (-o FILE): standard output or a "
                           "stream cannot be taken up again")
    if resume and any(is_special_file(name) for name in inputs):
        raise PredictError("--resume needs input files: a pipe or device cannot be read again "
                           "to check it")
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
    seconds)`` per batch, in order (``rows`` None for the batches before ``done``, written
    before): here, or on the dask cluster of ``client`` or ``scheduler`` (connected before
    any input is read, closed at the end).  With ``parts`` (the folder, the format, the
    inputs and a list of file names), the workers write each batch (``rows``: its counts)."""
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
            if parts is not None:
                for batch, counts, who, seconds in dd.written_partitions(doc, batches, *parts,
                                                                        **common):
                    yield batch, counts, [], who, seconds
                return
            for part in dd.scored_partitions(doc, batches, skip=done, **common):
                yield part.batch, part.rows, part.warnings, part.worker, part.seconds

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
        self.state: dict[str, Any] = {**dict.fromkeys(_COUNTS, 0), "labelled": True,
                                      "partitions": 0, "workers": {}, "files": []}

    def _add(self, batch: Any, counts: dict[str, Any], messages: list[str], who: Any,
             seconds: float) -> None:
        """A batch's skipped records and warnings said, its counts added."""
        from structkernels.extraction.stream import add_counts

        for rec in batch.skipped:
            self.log(f"skipped {rec}")
        for message in messages:
            self.log(f"warning: {message}")
        add_counts(self.state, batch, counts)
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
            if counts is None:
                counts = {**dict.fromkeys(("pairs", "positives", "tp", "fp", "fn"), 0),
                          "sentences": len(batch), "labelled": True}
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
        for batch, rows, messages, who, seconds in score(batches, done):
            if rows is None:
                writer.skip(batch)
                t0 = time.perf_counter()
                continue
            self._add(batch, pair_counts(batch, rows), messages, who, seconds)
            if out is not None:
                writer.write(batch, rows)
                out.commit(buffer.getvalue(), state)
                buffer.seek(0)
                buffer.truncate()
            else:
                with self._to_stream():
                    writer.write(batch, rows)
                    fh.flush()
            new_sentences += len(batch)
            if self.progress and len(batch):
                dt = time.perf_counter() - t0
                rate = new_sentences / max(time.perf_counter() - started, 1e-9)
                self.log(f"batch {batch.index + 1}: {len(batch):,} sentences, {len(rows):,} "
                         f"pairs in {dt:.1f} s ({state['sentences']:,} sentences, "
                         f"{state['pairs']:,} pairs in all; {rate:,.1f} sentences/s)")
            t0 = time.perf_counter()
        if out is not None:
            writer.finish()
            out.commit(buffer.getvalue(), state)
        else:
            with self._to_stream():
                writer.finish()
                fh.flush()
        return state


def run_summary(state: dict[str, Any], model: str) -> list[str]:
    """The lines that close a run of :func:`predict`: its counts, F1 when the pairs are
    labelled, and the fast route's stated error."""
    message = (f"scored {state['pairs']} entity pairs of {state['sentences']} sentences with "
               f"{model} ({state['positives']} positive, threshold {state['threshold']:.4g})")
    tp, fp, fn = state["tp"], state["fp"], state["fn"]
    if state["pairs"] and state["labelled"] and (tp + fp + fn):
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * tp / (2 * tp + fp + fn)
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
