"""Batches of new text through a relation extractor, the next batch parsed while one is scored.

:func:`predict_stream` parses in a child process
(:class:`~structkernels.relations.parse.BackgroundParser`) ahead of the structure views and
the kernel side, which run here, so that a run costs about the longer of the two instead of
their sum; both go :data:`CHUNK` sentences at a time, :data:`AHEAD` chunks parsed ahead.  The
rows are :meth:`RelationExtractor.predict_pairs
<structkernels.extraction.RelationExtractor.predict_pairs>`'s batch by batch, however the
sentences were parsed and a batch was split: a pair's score is its own.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import Any

from structkernels.extraction._trained import TrainedExtractor
from structkernels.relations.corpus import RelationCorpus
from structkernels.relations.parse import BackgroundParser, parse_ahead_pays
from structkernels.utils import long_lived

__all__ = ["predict_stream", "pair_counts"]

#: Sentences parsed and scored at a time when parsing ahead (a larger batch is split; its
#: rows are given together).
CHUNK = 250
#: Chunks parsed ahead of the one being scored.
AHEAD = 2


def _to_parse(batch: RelationCorpus) -> list[Any]:
    """The sentences of a batch that have pairs (those :meth:`RelationExtractor.views`
    parses)."""
    return [s for s in batch.sentences if len(s.entities) > 1]


def _chunks(batches: Iterable[RelationCorpus]
            ) -> Iterator[tuple[RelationCorpus, RelationCorpus, bool]]:
    """``(batch, chunk, the batch's last chunk?)``: each batch as chunks of :data:`CHUNK`
    sentences (a batch of no more, an empty one too: itself), read as they are asked for."""
    for batch in batches:
        if len(batch) <= CHUNK:
            yield batch, batch, True
            continue
        starts = range(0, len(batch), CHUNK)
        for i in starts:
            yield batch, RelationCorpus(batch.sentences[i:i + CHUNK]), i == starts[-1]


def pair_counts(batch: RelationCorpus, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A batch's sentences, pairs, positives and, when every pair has a gold label, its
    confusion counts (``labelled`` False, and no confusion counts, else)."""
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


def _rows(extractor: TrainedExtractor, batch: RelationCorpus, threshold: float | None,
          parsed: list[Any] | None) -> list[dict[str, Any]]:
    """``extractor.predict_pairs`` of a batch (nothing for an empty one), given only what
    is set."""
    if not len(batch):
        return []
    kwargs: dict[str, Any] = {}
    if threshold is not None:
        kwargs["threshold"] = threshold
    if parsed is not None:
        kwargs["parsed"] = parsed
    return extractor.predict_pairs(batch, **kwargs)


def predict_stream(
    extractor: TrainedExtractor,
    batches: Iterable[RelationCorpus],
    *,
    threshold: float | None = None,
    parse_ahead: bool | None = None,
    background: BackgroundParser | None = None,
) -> Iterator[tuple[RelationCorpus, list[dict[str, Any]]]]:
    """Each batch with its scored pairs (``extractor.predict_pairs(batch, threshold)``),
    in order, as the batches are read.

    Parameters
    ----------
    extractor : RelationExtractor
    batches : iterable of RelationCorpus
        The batches (:func:`~structkernels.relations.iter_relations`); an error reading one
        is raised after the batches before it are given.
    threshold : float, optional
        As :meth:`RelationExtractor.predict_pairs` takes it.
    parse_ahead : bool or None, default None
        Parse the next chunks in a child process while one is scored; None: when there is
        more than one batch or :data:`CHUNK` sentences and the process may use two cores.
    background : BackgroundParser, optional
        The child to parse ahead with (whatever ``parse_ahead`` says), started and closed by
        the caller; its pipeline must be the extractor's.

    Yields
    ------
    (batch, rows)

    Examples
    --------
    >>> from structkernels.relations import iter_relations
    >>> rows = [r for _, batch_rows in predict_stream(  # doctest: +SKIP
    ...     RelationExtractor.load("lll.extractor.json.gz"),
    ...     iter_relations("datasets/ppi/LLL-test.xml", batch_size=20)) for r in batch_rows]
    """
    if background is not None and background.parser.pipeline != extractor.pipeline:
        raise ValueError(f"the background parser's pipeline {background.parser.pipeline!r} "
                         f"is not the extractor's {extractor.pipeline!r}")
    failure: list[Exception] = []
    reader = _until_failure(batches, failure)
    head = list(islice(reader, 2))
    if background is None and parse_ahead is None:
        parse_ahead = ((len(head) > 1 or (len(head) == 1 and len(head[0]) > CHUNK))
                       and parse_ahead_pays())
    if background is None and not parse_ahead:
        with long_lived():  # the model out of the collector's scans
            for batch in chain(head, reader):
                yield batch, _rows(extractor, batch, threshold, None)
    elif head:
        yield from _parsed_ahead(extractor, chain(head, reader), threshold, background)
    if failure:
        raise failure[0]


def _until_failure(batches: Iterable[RelationCorpus], failure: list[Exception]
                   ) -> Iterator[RelationCorpus]:
    """The batches; an error reading one kept in ``failure`` (raised once the batches before
    it are given)."""
    try:
        yield from batches
    except Exception as exc:
        failure.append(exc)


def _parsed_ahead(extractor: TrainedExtractor, batches: Iterator[RelationCorpus],
                  threshold: float | None, background: BackgroundParser | None
                  ) -> Iterator[tuple[RelationCorpus, list[dict[str, Any]]]]:
    """:func:`predict_stream`'s batches parsed in a child, :data:`AHEAD` chunks ahead."""
    with contextlib.ExitStack() as stack:
        if background is None:
            background = stack.enter_context(BackgroundParser(extractor.parser()))
        parser: BackgroundParser = background
        todo = _chunks(batches)
        # the chunks sent to the child: (batch, chunk, the batch's last chunk?, call)
        sent: deque[tuple[RelationCorpus, RelationCorpus, bool, Any]] = deque()

        def send(n: int) -> None:
            """Keep ``n`` chunks with the child, reading batches as needed."""
            while len(sent) < n and (item := next(todo, None)) is not None:
                batch, chunk, last = item
                sent.append((batch, chunk, last, parser.submit(_to_parse(chunk))))

        # the child loads the pipeline and parses the first chunks while the references are
        # prepared here
        send(1)
        info = background.submit_pipeline_info()
        send(AHEAD + 1)
        extractor.prepare()
        extractor.check_pipeline(info.result())
        stack.enter_context(long_lived())  # the model, prepared, out of the collector's scans
        rows: list[dict[str, Any]] = []
        while sent:
            batch, chunk, last, call = sent.popleft()
            parsed = call.result()
            send(AHEAD)  # parsed while this is scored
            rows += _rows(extractor, chunk, threshold, parsed)
            if last:
                yield batch, rows
                rows = []
