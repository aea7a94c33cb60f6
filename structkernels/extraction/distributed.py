"""Relation extraction on a dask cluster: the input in partitions, the model sent once.

The dask route of :func:`~structkernels.extraction.prediction.predict` (``backend="dask"``,
``structkernels predict --dask``).  Each batch of sentences read on the client is one task
(a partition), ``window`` of them in flight; the model goes to every worker once as its
checked JSON document (never a pickle of a user's file) and each worker process rebuilds
the extractor from it once, its spaCy pipeline parsing in one process (the workers are the
parallelism).  A worker runs one partition at a time (the extractor and spaCy are not
thread-safe): start workers with one thread each.  Needs the ``distributed`` extra.
"""

from __future__ import annotations

import contextlib
import io
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

from structkernels.engine.parallel import connect_dask, dask_cluster, dask_worker_address, n_workers
from structkernels.extraction._trained import TrainedExtractor
from structkernels.extraction.files import read_extractor_document
from structkernels.extraction.stream import pair_counts
from structkernels.relations import PairWriter, RelationBatch
from structkernels.utils import StructkernelsError, atomic_open, one_line, optional_module

__all__ = ["written_partitions", "scored_partitions", "ScoredPartition", "dask_client",
           "parse_scheduler", "SchedulerError", "PART_FORMATS", "DEFAULT_CONNECT_TIMEOUT"]

#: The output formats :func:`written_partitions` writes one file per partition in (BioC is one
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
    """One partition of :func:`scored_partitions`: its ``rows`` (None when passed over), the
    messages of the ``warnings`` scoring it raised, the ``worker`` and ``seconds`` there."""

    batch: RelationBatch
    rows: list[dict[str, Any]] | None
    warnings: list[str]
    worker: str | None
    seconds: float


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
            return "local", n_workers(None)
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
    """A TCP connection to the scheduler's port first: a clear error at once, instead of the
    client's retries and noise."""
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
    """A dask client on the scheduler ``scheduler`` names (:func:`parse_scheduler`: a
    cluster of N one-thread worker processes started for ``local:N``; an address tried for
    ``timeout`` seconds), closed with the cluster it started when the block ends.

    Raises
    ------
    SchedulerError
        A malformed name, or no scheduler answering at the address.
    ImportError
        dask.distributed is not installed.

    Examples
    --------
    >>> with dask_client("local:2") as client:  # doctest: +SKIP
    ...     parts = list(scored_partitions("lll.json.gz", batches, client=client))
    """
    kind, value = parse_scheduler(scheduler)
    optional_module("distributed", _HINT)
    if kind == "local":
        with dask_cluster(value) as client:
            yield client
        return
    _reach(value, timeout)
    try:
        client = connect_dask(value, timeout)
    except (OSError, TimeoutError) as exc:
        raise SchedulerError(f"--dask {value}: cannot connect to the dask scheduler "
                             f"({one_line(exc)})") from None
    with client:
        yield client


_models: dict[str, tuple[TrainedExtractor, threading.Lock]] = {}
_models_lock = threading.Lock()


def _worker_extractor(doc: Any, plan: tuple) -> tuple[TrainedExtractor, threading.Lock]:
    """The run's extractor in this worker process, built from ``doc`` once."""
    token, source, cache_dir, n_jobs, _ = plan
    with _models_lock:
        kept = _models.get(token)
        if kept is None:
            ex = TrainedExtractor.from_json(doc, source=source, cache_dir=cache_dir,
                                            n_jobs=n_jobs, progress=False, n_process=1)
            kept = _models[token] = (ex, threading.Lock())
            while len(_models) > _KEEP:
                _models.pop(next(iter(_models)))
        return kept


def _score(doc: Any, plan: tuple, batch: RelationBatch) -> tuple[list, list[str], str, float]:
    """Parse and score one partition: ``(rows, warning messages, worker, seconds)``."""
    threshold = plan[4]
    ex, lock = _worker_extractor(doc, plan)
    t0 = time.perf_counter()
    with lock, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = ex.predict_pairs(batch, threshold)
    return (rows, [one_line(w.message) for w in caught], dask_worker_address(),
            time.perf_counter() - t0)


def _part_job(doc: Any, plan: tuple, batch: RelationBatch, part: tuple
              ) -> tuple[dict[str, Any], list[str], str, float]:
    """Worker: one partition scored and written to its own file ``part`` (``(path, format,
    input paths, end of the previous partition)``), atomically; its counts."""
    path, fmt, paths, before = part
    rows, messages, who, seconds = _score(doc, plan, batch)
    with atomic_open(path, "w", encoding="utf-8", follow_links=False) as fh:
        writer = PairWriter(fh, fmt, paths)
        if fmt == "pubtator" and tuple(before) > (0, 0):
            writer.skip(RelationBatch(end=tuple(before)))
        writer.write(batch, rows)
    return pair_counts(batch, rows), messages, who, seconds


def _model_document(model: Any, source: str | None) -> tuple[Any, str]:
    """The checked JSON document of ``model`` (an extractor, a document, or a file) and the
    name errors give it."""
    if isinstance(model, TrainedExtractor):
        doc, name = model.to_json(), source or "the extractor"
    elif isinstance(model, Mapping):
        doc, name = dict(model), source or "the extractor"
    elif isinstance(model, (str, os.PathLike)):
        name = source or os.fspath(model)
        doc = read_extractor_document(model)
    else:
        raise TypeError(f"model must be a RelationExtractor, its document or its file, got "
                        f"{type(model).__name__}")
    TrainedExtractor.from_json(doc, source=name, progress=False)  # every field, here first
    return doc, name


def _client(client: Any) -> Any:
    distributed = optional_module("distributed", _HINT)
    if client is not None:
        return client
    try:
        return distributed.get_client()
    except ValueError:
        raise ValueError("the dask route needs a dask client: start one first "
                         "(a dask.distributed client) or pass client=") from None


def _in_order(client: Any, doc: Any, settings: tuple, batches: Iterable[RelationBatch],
              task: Callable[[RelationBatch], tuple], window: int | None, skip: int
              ) -> Iterator[tuple[RelationBatch, Any]]:
    """``(batch, result)`` in input order, ``doc`` sent to every worker once, a batch one task
    (``task(batch)``: its function, the arguments after the document, plan and batch, its key's
    prefix), ``window`` in flight; ``result`` None for a batch passed over (``index < skip``)
    or empty."""
    if window is None:
        window = 2 * max(1, sum(client.nthreads().values()))
    window = max(1, int(window))
    [doc_future] = client.scatter([doc], broadcast=True, hash=False)
    plan = (uuid.uuid4().hex, *settings)
    pending: deque = deque()

    def first() -> tuple[RelationBatch, Any]:
        batch, fut = pending.popleft()
        return batch, None if fut is None else fut.result()

    try:
        for batch in batches:
            fut = None
            if batch.index >= skip and len(batch):
                func, args, prefix = task(batch)
                fut = client.submit(func, doc_future, plan, batch, *args, pure=False,
                                    key=f"{prefix}-{batch.index}-{plan[0]}")
            pending.append((batch, fut))
            while pending and (len(pending) > window or pending[0][1] is None):
                yield first()
        while pending:
            yield first()
    finally:
        # stopped early (an error, Ctrl-C, a consumer that left): the rest dropped; the
        # document released
        with contextlib.suppress(Exception):
            client.cancel([f for _, f in pending if f is not None] + [doc_future])


def scored_partitions(model: Any, batches: Iterable[RelationBatch], *, client: Any = None,
                      threshold: float | None = None, cache_dir: Any = None, n_jobs: int = 1,
                      window: int | None = None, skip: int = 0, source: str | None = None
                      ) -> Iterator[ScoredPartition]:
    """Every batch parsed and scored on a dask cluster, given back in input order.

    The model goes to each worker once; a batch is one task (a partition).  ``model``: a
    fitted extractor, its document or its file; ``client``: default, the current client;
    ``threshold``, ``cache_dir``, ``n_jobs`` (kernel threads of a task), ``window``
    (partitions in flight) as :func:`~structkernels.extraction.prediction.predict` takes
    them; batches with ``index < skip`` are given back with ``rows`` None; ``source``: the
    model's name in errors.

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
    for batch, result in _in_order(client, doc, (name, cache_dir, n_jobs, threshold), batches,
                                   lambda batch: (_score, (), "sk-predict"), window, skip):
        if result is None:
            yield ScoredPartition(batch, None if batch.index < skip else [], [], None, 0.0)
        else:
            yield ScoredPartition(batch, *result)


def written_partitions(model: Any, batches: Iterable[RelationBatch], folder: str | os.PathLike,
                       fmt: str, paths: list[str], files: list[str], *, client: Any = None,
                       threshold: float | None = None, cache_dir: Any = None,
                       n_jobs: int = 1, window: int | None = None, source: str | None = None
                       ) -> Iterator[tuple[RelationBatch, dict[str, Any], Any, float]]:
    """Every batch parsed, scored and written by a worker to a file of its own in
    ``folder`` (``part-00000.jsonl``, ...; part files of an earlier run there are removed
    first): ``(batch, its counts, the worker, seconds)`` in input order; each file's name
    is appended to ``files``.  Concatenated in order, the part files are the merged output
    (``fmt``: jsonl or pubtator; PubTator writes the input's documents back, the inputs
    ``paths`` read again by the workers)."""
    if fmt not in PART_FORMATS:
        raise ValueError(f"{fmt} output is one document: it is written merged (merge=True); "
                         f"one file per partition takes {' or '.join(PART_FORMATS)}")
    client = _client(client)
    doc, name = _model_document(model, source)
    ext, folder = PART_FORMATS[fmt], Path(os.fspath(folder))
    folder.mkdir(parents=True, exist_ok=True)
    for old in [p for p in folder.iterdir() if _PART.match(p.name) and p.suffix == ext]:
        old.unlink()  # part files of an earlier run (only names this module writes)
    state = {"before": (0, 0)}

    def part_path() -> Path:
        files.append(str(folder / f"part-{len(files):05d}{ext}"))
        return Path(files[-1])

    def task(batch: RelationBatch) -> tuple:
        part = (str(part_path()), fmt, paths, state["before"])
        state["before"] = tuple(batch.end)
        return _part_job, (part,), "sk-predict-part"

    last = None
    for batch, result in _in_order(client, doc, (name, cache_dir, n_jobs, threshold), batches,
                                   task, window, 0):
        last = batch
        if result is None:  # no sentences
            yield batch, pair_counts(batch, []), None, 0.0
        else:
            yield batch, result[0], *result[2:]
    if fmt == "pubtator" and last is not None:
        # documents after the last partition's (none with sentences): a last part file
        buffer = io.StringIO()
        writer = PairWriter(buffer, fmt, paths)
        if state["before"] > (0, 0):
            writer.skip(RelationBatch(end=state["before"]))
        writer.finish()
        if buffer.getvalue():
            with atomic_open(part_path(), "w", encoding="utf-8", follow_links=False) as fh:
                fh.write(buffer.getvalue())
