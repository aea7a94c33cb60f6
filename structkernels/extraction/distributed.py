"""Relation extraction on a dask cluster: the input in partitions, the model sent once.

:func:`predict_dask` is ``structkernels predict`` (a relation extractor) across machines:

* the input is read on the client as ``predict`` reads it, in batches of sentences
  (:func:`~structkernels.relations.iter_relations`): each batch is a **partition**, one
  task; memory on the client holds the partitions in flight (``window``), whatever the
  input's size;
* the model goes to every worker **once** (``client.scatter(..., broadcast=True)``) as
  its checked JSON document (what :meth:`RelationExtractor.to_json` gives, or the file
  read by the bounded JSON reader: never a pickle of a user's file); each worker process
  rebuilds the extractor from it once (:meth:`RelationExtractor.from_json`, every field
  checked) and keeps it for the run's later partitions, its spaCy pipeline loaded once,
  parsing in one process (``n_process=1``: the cluster's workers are the parallelism);
* a task parses and scores its partition
  (:meth:`~structkernels.relations.RelationExtractor.predict_pairs`) and returns its rows
  (``merge=True``: the client writes them in input order, the bytes a local run writes)
  or writes them itself to one file per partition (``merge=False``, atomically; on a
  cluster the output folder, and for PubTator the inputs, must be on a file system the
  workers share): the part files, concatenated in order, are the merged file.

A worker process runs one partition at a time (its tasks share one extractor and spaCy
pipeline, which are not thread-safe): start workers with one thread each and more worker
processes, and give the kernel threads with ``n_jobs``.  Needs the ``distributed`` extra
(``pip install "structkernels[distributed]"``).

Example (``benchmarks/bench_predict_dask.py`` measures it at 1 and 2 workers)::

    from dask.distributed import Client, LocalCluster
    from structkernels.extraction.distributed import predict_dask
    client = Client(LocalCluster(n_workers=2, threads_per_worker=1))
    info = predict_dask("lll.json.gz", ["LLL-test.xml"], "pairs.jsonl", client=client)
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import socket
import threading
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from structkernels.extraction.extractor import RelationExtractor
from structkernels.extraction.files import read_extractor_document
from structkernels.formats.batches import DEFAULT_BATCH_SIZE
from structkernels.formats.pairs import output_format as resolve_output_format
from structkernels.relations import PairWriter, RelationBatch, iter_relations
from structkernels.utils import (
    StructkernelsError,
    atomic_open,
    effective_n_jobs,
    one_line,
    open_output,
    optional_module,
    tqdm,
)

__all__ = ["predict_dask", "scored_partitions", "ScoredPartition", "dask_client",
           "parse_scheduler", "SchedulerError", "PART_FORMATS", "DEFAULT_CONNECT_TIMEOUT"]

#: The output formats :func:`predict_dask` writes one file per partition in (BioC is one
#: XML or JSON tree: merged only).
PART_FORMATS = {"jsonl": ".jsonl", "pubtator": ".pubtator"}
#: Seconds :func:`dask_client` waits for a scheduler.
DEFAULT_CONNECT_TIMEOUT = 10.0
_HINT = ('the dask route needs dask.distributed: pip install "structkernels[distributed]"')
#: extractors a worker process keeps (one per run: the oldest goes when a new run starts)
_KEEP = 2
_PART = re.compile(r"^part-\d{5,}\.(jsonl|pubtator)$")


class SchedulerError(StructkernelsError, OSError):
    """A dask scheduler that cannot be used: a malformed address, or none answering there."""


class ScoredPartition(NamedTuple):
    """One partition of :func:`scored_partitions`, in input order.

    ``rows`` are :meth:`~structkernels.relations.RelationExtractor.predict_pairs`'s (None
    for a partition passed over, ``index < skip``); ``warnings`` the messages of the
    warnings scoring it raised; ``worker`` the address of the worker that scored it and
    ``seconds`` its time there (parsing and scoring).
    """

    batch: RelationBatch
    rows: list[dict[str, Any]] | None
    warnings: list[str]
    worker: str | None
    seconds: float


# ------------------------------------------------------------------ the scheduler
def parse_scheduler(spec: str) -> tuple[str, Any]:
    """What ``--dask SCHEDULER`` names: ``("local", n_workers)`` or ``("address", url)``.

    ``local:N`` is a cluster of N worker processes on this machine (``local``: one per
    core this process may use); anything else is a scheduler's address, ``tcp://HOST:PORT``
    (``HOST:PORT`` means ``tcp://HOST:PORT``; ``tls://``, ``inproc://`` and the other
    protocols of dask are passed as they are).

    Raises
    ------
    SchedulerError
        A malformed ``local:N`` or an address without a port.

    Examples
    --------
    >>> parse_scheduler("local:2"), parse_scheduler("10.0.0.5:8786")
    (('local', 2), ('address', 'tcp://10.0.0.5:8786'))
    """
    text = str(spec).strip()
    if text == "local" or text.startswith("local:"):
        if text == "local":
            return "local", effective_n_jobs(None)
        count = text[len("local:"):]
        if not count.isdigit() or int(count) < 1:
            raise SchedulerError(f"--dask {spec}: local:N needs a number of workers N >= 1")
        return "local", int(count)
    address = text if "://" in text else f"tcp://{text}"
    scheme, _, where = address.partition("://")
    if scheme in ("tcp", "tls"):
        host, _, port = where.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise SchedulerError(f"--dask {spec}: not a scheduler address (tcp://HOST:PORT, "
                                 "HOST:PORT or local:N)")
    return "address", address


def _reach(address: str, timeout: float) -> None:
    """A TCP connection to the scheduler's port, before dask's client tries (a clear error
    at once, instead of the client's retries and its noise when it gives up)."""
    scheme, _, where = address.partition("://")
    if scheme not in ("tcp", "tls"):
        return
    host, _, port = where.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise SchedulerError(f"--dask {address}: no dask scheduler answers there "
                             f"({one_line(exc) or type(exc).__name__})") from None


@contextlib.contextmanager
def dask_client(scheduler: str, *, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> Iterator[Any]:
    """A dask client on the scheduler ``scheduler`` names (:func:`parse_scheduler`), closed
    (with the cluster it started, for ``local:N``) when the block ends.

    ``local:N`` starts a :class:`~distributed.LocalCluster` of N worker processes, one
    thread each, without a dashboard, its log below errors silenced.  An address is tried for ``timeout`` seconds.

    Raises
    ------
    SchedulerError
        A malformed name, or no scheduler answering at the address.
    ImportError
        dask.distributed is not installed.

    Examples
    --------
    >>> with dask_client("local:2") as client:  # doctest: +SKIP
    ...     info = predict_dask("lll.json.gz", ["LLL-test.xml"], "pairs.jsonl", client=client)
    """
    kind, value = parse_scheduler(scheduler)
    distributed = optional_module("distributed", _HINT)
    if kind == "local":
        with distributed.LocalCluster(n_workers=value, threads_per_worker=1, processes=True,
                                      dashboard_address=None,
                                      silence_logs=logging.ERROR) as cluster, \
                distributed.Client(cluster) as client:
            yield client
        return
    _reach(value, timeout)
    try:
        client = distributed.Client(value, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise SchedulerError(f"--dask {value}: cannot connect to the dask scheduler "
                             f"({one_line(exc)})") from None
    with client:
        yield client


# ------------------------------------------------------------------ in the workers
_models: dict[str, tuple[RelationExtractor, threading.Lock]] = {}
_models_lock = threading.Lock()


def _worker_extractor(doc: Any, plan: tuple) -> tuple[RelationExtractor, threading.Lock]:
    """The run's extractor in this worker process, built from ``doc`` once."""
    token, source, cache_dir, n_jobs, _ = plan
    with _models_lock:
        kept = _models.get(token)
        if kept is None:
            ex = RelationExtractor.from_json(doc, source=source, cache_dir=cache_dir,
                                             n_jobs=n_jobs, progress=False, n_process=1)
            kept = _models[token] = (ex, threading.Lock())
            while len(_models) > _KEEP:
                _models.pop(next(iter(_models)))
        return kept


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:  # pragma: no cover - run outside a worker
        return "local"


def _score(doc: Any, plan: tuple, batch: RelationBatch) -> tuple[list, list[str], str, float]:
    """Parse and score one partition: ``(rows, warning messages, worker, seconds)``."""
    threshold = plan[4]
    ex, lock = _worker_extractor(doc, plan)
    t0 = time.perf_counter()
    with lock, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = (ex.predict_pairs(batch) if threshold is None
                else ex.predict_pairs(batch, threshold=threshold))
    return (rows, [one_line(w.message) for w in caught], _worker_address(),
            time.perf_counter() - t0)


def _score_job(doc: Any, plan: tuple, batch: RelationBatch) -> tuple[list, list[str], str, float]:
    """Worker: one partition's rows."""
    return _score(doc, plan, batch)


def _part_job(doc: Any, plan: tuple, batch: RelationBatch, part: tuple
              ) -> tuple[dict[str, Any], list[str], str, float]:
    """Worker: one partition scored and written to its own file, atomically; its counts.

    ``part`` is ``(path, format, input paths, end of the previous partition)``: PubTator
    output passes over the input's documents before this partition, then writes those it
    ends (their relations the partition's pairs).
    """
    path, fmt, paths, before = part
    rows, messages, who, seconds = _score(doc, plan, batch)
    with atomic_open(path, "w", encoding="utf-8") as fh:
        writer = PairWriter(fh, fmt, paths)
        if fmt == "pubtator" and tuple(before) > (0, 0):
            writer.skip(RelationBatch(end=tuple(before)))
        writer.write(batch, rows)
    return _tally(batch, rows), messages, who, seconds


# ------------------------------------------------------------------ in the client
def _tally(batch: RelationBatch, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A partition's pairs, positives and, when every pair has a gold label, its
    confusion counts."""
    pred = [int(r["label"]) for r in rows]
    out = {"sentences": len(batch), "pairs": len(rows), "positives": sum(pred),
           "tp": 0, "fp": 0, "fn": 0, "labelled": True}
    pairs = batch.pairs() if rows else []
    if any(p.label is None for p in pairs):
        out["labelled"] = False
        return out
    for p, y in zip(pairs, pred, strict=True):
        g = int(bool(p.label))
        out["tp"] += g and y
        out["fp"] += (not g) and y
        out["fn"] += g and not y
    return out


def _model_document(model: Any, source: str | None) -> tuple[Any, str]:
    """The checked JSON document of ``model`` (an extractor, a decoded document, or a
    file read by the bounded JSON reader) and the name errors give it."""
    if isinstance(model, RelationExtractor):
        doc, name = model.to_json(), source or "the extractor"
    elif isinstance(model, Mapping):
        doc, name = dict(model), source or "the extractor"
    elif isinstance(model, (str, os.PathLike)):
        name = source or os.fspath(model)
        doc = read_extractor_document(model)
    else:
        raise TypeError(f"model must be a RelationExtractor, its document or its file, got "
                        f"{type(model).__name__}")
    RelationExtractor.from_json(doc, source=name, progress=False)  # every field, here first
    return doc, name


def _client(client: Any) -> Any:
    distributed = optional_module("distributed", _HINT)
    if client is not None:
        return client
    try:
        return distributed.get_client()
    except ValueError:
        raise ValueError("the dask route needs a dask client: start one first "
                         "(dask.distributed.Client(...)) or pass client=") from None


def _in_order(client: Any, batches: Iterable[RelationBatch], submit: Callable[[Any], Any],
              window: int | None, skip: int) -> Iterator[tuple[RelationBatch, Any]]:
    """``(batch, result)`` in input order, at most ``window`` partitions in flight;
    ``result`` None for a batch passed over (``index < skip``) or without sentences."""
    if window is None:
        window = 2 * max(1, sum(client.nthreads().values()))
    window = max(1, int(window))
    pending: deque = deque()

    def first() -> tuple[RelationBatch, Any]:
        batch, fut = pending.popleft()
        return batch, None if fut is None else fut.result()

    try:
        for batch in batches:
            fut = None if batch.index < skip or not len(batch) else submit(batch)
            pending.append((batch, fut))
            while pending and (len(pending) > window or pending[0][1] is None):
                yield first()
        while pending:
            yield first()
    finally:
        futures = [f for _, f in pending if f is not None]
        if futures:  # stopped early (an error, Ctrl-C, a consumer that left): drop the rest
            with contextlib.suppress(Exception):
                client.cancel(futures)


def scored_partitions(model: Any, batches: Iterable[RelationBatch], *, client: Any = None,
                      threshold: float | None = None, cache_dir: Any = None, n_jobs: int = 1,
                      window: int | None = None, skip: int = 0, source: str | None = None
                      ) -> Iterator[ScoredPartition]:
    """Every batch parsed and scored on a dask cluster, given back in input order.

    The model goes to each worker once; a batch is one task (a partition).  What
    ``structkernels predict --dask`` writes its output from, batch by batch.

    Parameters
    ----------
    model : RelationExtractor, dict or path
        A fitted extractor, its document (:meth:`RelationExtractor.to_json`), or its file.
    batches : iterable of RelationBatch
        :func:`~structkernels.relations.iter_relations`'s.
    client : dask.distributed.Client, optional
        Default: the current client (``distributed.get_client()``).
    threshold : float, optional
        As :meth:`RelationExtractor.predict_pairs` (default: the model's).
    cache_dir : path, None or False
        The workers' parse cache (None: each machine's default; False: none).
    n_jobs : int, default 1
        Kernel threads of a task.
    window : int, optional
        Partitions in flight (sent and not yet given back); default twice the cluster's
        threads.
    skip : int, default 0
        Batches with ``index < skip`` are passed over (given back with ``rows`` None).
    source : str, optional
        The model's name in errors.

    Yields
    ------
    ScoredPartition

    Examples
    --------
    >>> from structkernels.relations import iter_relations  # doctest: +SKIP
    >>> for part in scored_partitions("lll.json.gz", iter_relations("LLL-test.xml"),
    ...                               client=client):  # doctest: +SKIP
    ...     print(part.batch.index, len(part.rows), part.worker)
    0 61 tcp://127.0.0.1:40123
    """
    client = _client(client)
    doc, name = _model_document(model, source)
    token = uuid.uuid4().hex
    plan = (token, name, cache_dir, n_jobs, threshold)
    [doc_future] = client.scatter([doc], broadcast=True, hash=False)

    def submit(batch: RelationBatch) -> Any:
        return client.submit(_score_job, doc_future, plan, batch, pure=False,
                             key=f"sk-predict-{batch.index}-{token}")

    try:
        for batch, result in _in_order(client, batches, submit, window, skip):
            if result is None:
                rows = None if batch.index < skip else []
                yield ScoredPartition(batch, rows, [], None, 0.0)
            else:
                rows, messages, who, seconds = result
                yield ScoredPartition(batch, rows, messages, who, seconds)
    finally:
        with contextlib.suppress(Exception):
            client.cancel([doc_future])


def _part_files(folder: Path, ext: str) -> list[Path]:
    """Part files of an earlier run in ``folder`` (only names this module writes)."""
    return sorted(p for p in folder.iterdir() if _PART.match(p.name) and p.suffix == ext)


def predict_dask(
    model: Any,
    inputs: Any,
    output: str | os.PathLike,
    *,
    client: Any = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    merge: bool = True,
    output_format: str = "jsonl",
    threshold: float | None = None,
    on_error: str = "raise",
    cache_dir: Any = None,
    n_jobs: int = 1,
    window: int | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Score every entity pair of relation corpora with an extractor on a dask cluster.

    Parameters
    ----------
    model : RelationExtractor, dict or path
        A fitted extractor, its document, or its file (read by the bounded JSON reader).
    inputs : path or list of paths
        Relation corpora, as :func:`~structkernels.relations.read_relations` takes them.
    output : path or "-"
        ``merge=True``: the output file (written atomically; ``"-"``: standard output),
        the bytes ``structkernels predict`` writes for the same inputs.  ``merge=False``:
        a folder that gets ``part-00000.jsonl``, ``part-00001.jsonl``, ... (``.pubtator``
        for PubTator output), one per partition, each written atomically by the worker
        that scored it; part files of an earlier run there are removed first.
    client : dask.distributed.Client, optional
        Default: the current client.
    batch_size : int, default :data:`~structkernels.formats.batches.DEFAULT_BATCH_SIZE`
        Sentences per partition (``predict --batch-size``).
    merge : bool, default True
        One merged file, or one file per partition.
    output_format : {"jsonl", "pubtator", "bioc-xml", "bioc-json", "same"}
        As ``predict --output-format``; one file per partition takes jsonl or pubtator.
    threshold : float, optional
        A pair is labelled 1 when its score is above it (default: the model's).
    on_error : {"raise", "skip"}
        Malformed input records: stop, or leave them out (listed in ``info["skipped"]``).
    cache_dir : path, None or False
        The workers' parse cache (None: each machine's default; False: none).
    n_jobs : int, default 1
        Kernel threads of a task.
    window : int, optional
        Partitions in flight (default: twice the cluster's threads).
    progress : bool, optional
        A bar over partitions (default: on a terminal).

    Returns
    -------
    dict
        ``sentences``, ``pairs``, ``positives``, ``partitions``, ``skipped`` (messages),
        ``seconds``, ``files`` (the part files, ``merge=False``), ``f1`` (when every
        pair has a gold label, else None) and ``workers``: per worker address its
        ``partitions``, ``sentences`` and ``seconds``.

    Examples
    --------
    >>> from dask.distributed import Client, LocalCluster  # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> info = predict_dask("lll.json.gz", ["LLL-test.xml"], "pairs.jsonl",
    ...                     client=client, batch_size=20)  # doctest: +SKIP
    >>> info["pairs"]  # doctest: +SKIP
    61
    """
    t_start = time.perf_counter()
    paths = [os.fspath(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike))
                                    else inputs)]
    fmt = resolve_output_format(output_format, paths)
    if not merge and fmt not in PART_FORMATS:
        raise ValueError(f"{fmt} output is one document: it is written merged (merge=True); "
                         f"one file per partition takes {' or '.join(PART_FORMATS)}")
    client = _client(client)
    doc, name = _model_document(model, None)
    batches = iter_relations(paths, batch_size=batch_size, on_error=on_error)
    info: dict[str, Any] = {"sentences": 0, "pairs": 0, "positives": 0, "partitions": 0,
                            "skipped": [], "files": [], "workers": {}}
    counts = {"tp": 0, "fp": 0, "fn": 0, "labelled": True}

    def add(batch: RelationBatch, tally: dict[str, Any] | None, who: str | None,
            seconds: float) -> None:
        info["skipped"] += [str(r) for r in batch.skipped]
        if tally is None:
            return
        info["partitions"] += 1
        for k in ("sentences", "pairs", "positives"):
            info[k] += tally[k]
        if tally["pairs"]:
            counts["labelled"] = counts["labelled"] and tally["labelled"]
            for k in ("tp", "fp", "fn"):
                counts[k] += tally[k]
        if who is not None:
            w = info["workers"].setdefault(who, {"partitions": 0, "sentences": 0,
                                                 "seconds": 0.0})
            w["partitions"] += 1
            w["sentences"] += tally["sentences"]
            w["seconds"] += seconds

    bar = tqdm(unit="partition", desc="predict (dask)", disable=progress is False)
    with bar:
        if merge:
            with open_output(output, stream_ok=True) as fh:
                writer = PairWriter(fh, fmt, paths)
                for part in scored_partitions(doc, batches, client=client, threshold=threshold,
                                              cache_dir=cache_dir, n_jobs=n_jobs,
                                              window=window, source=name):
                    writer.write(part.batch, part.rows)
                    add(part.batch, _tally(part.batch, part.rows) if len(part.batch) else None,
                        part.worker, part.seconds)
                    bar.update(1)
                writer.finish()
        else:
            _partitioned(client, doc, name, batches, Path(os.fspath(output)), fmt, paths,
                         (threshold, cache_dir, n_jobs, window), add, info, bar)
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    info["f1"] = (2 * tp / (2 * tp + fp + fn) if info["pairs"] and counts["labelled"]
                  and tp + fp + fn else None)
    info["seconds"] = time.perf_counter() - t_start
    return info


def _partitioned(client: Any, doc: Any, name: str, batches: Iterable[RelationBatch],
                 folder: Path, fmt: str, paths: list[str], settings: tuple,
                 add: Callable, info: dict[str, Any], bar: Any) -> None:
    """:func:`predict_dask` with one file per partition, written by the workers."""
    threshold, cache_dir, n_jobs, window = settings
    ext = PART_FORMATS[fmt]
    folder.mkdir(parents=True, exist_ok=True)
    for old in _part_files(folder, ext):
        old.unlink()
    token = uuid.uuid4().hex
    plan = (token, name, cache_dir, n_jobs, threshold)
    [doc_future] = client.scatter([doc], broadcast=True, hash=False)
    state = {"before": (0, 0), "k": 0}

    def submit(batch: RelationBatch) -> Any:
        path = folder / f"part-{state['k']:05d}{ext}"
        state["k"] += 1
        info["files"].append(str(path))
        part = (str(path), fmt, paths, state["before"])
        state["before"] = tuple(batch.end)
        return client.submit(_part_job, doc_future, plan, batch, part, pure=False,
                             key=f"sk-predict-part-{batch.index}-{token}")

    last = None
    try:
        for batch, result in _in_order(client, batches, submit, window, 0):
            last = batch
            if result is None:
                add(batch, None, None, 0.0)
                continue
            tally, _messages, who, seconds = result
            add(batch, tally, who, seconds)
            bar.update(1)
    finally:
        with contextlib.suppress(Exception):
            client.cancel([doc_future])
    if fmt == "pubtator" and last is not None:
        # documents after the last partition's (none with sentences): a last part file
        buffer = io.StringIO()
        writer = PairWriter(buffer, fmt, paths)
        if state["before"] > (0, 0):
            writer.skip(RelationBatch(end=state["before"]))
        writer.finish()
        if buffer.getvalue():
            path = folder / f"part-{state['k']:05d}{ext}"
            with atomic_open(path, "w", encoding="utf-8") as fh:
                fh.write(buffer.getvalue())
            info["files"].append(str(path))
