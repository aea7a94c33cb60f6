"""Reading relation corpora in batches of sentences, without holding the whole input
(:func:`iter_relations`): JSON Lines a line at a time, PubTator a document at a time, the
other formats a file at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from structkernels.formats._collect import Reading
from structkernels.formats.jsonl import iter_jsonl_file
from structkernels.formats.pubtator import iter_pubtator_file
from structkernels.formats.relations import read_file, with_formats
from structkernels.relations.corpus import RelationCorpus, Sentence
from structkernels.utils import check_int

__all__ = ["iter_relations", "RelationBatch", "STREAMING_FORMATS", "DEFAULT_BATCH_SIZE"]

#: The formats :func:`iter_relations` reads a record at a time (the others: a file at a time).
STREAMING_FORMATS = ("jsonl", "pubtator")
#: Sentences per batch of :func:`iter_relations` by default.
DEFAULT_BATCH_SIZE = 250


class RelationBatch(RelationCorpus):
    """One batch of :func:`iter_relations`: a :class:`RelationCorpus` and where it lies.

    Attributes
    ----------
    index : int
        The batch's number, from 0.
    start : int
        Sentences of the stream before this batch.
    end : (int, int)
        Where reading stood when the batch ended: the index of the input path, and the
        records (lines, documents or sentences) of that path read.
    paths : list of str
        The stream's input paths.
    """

    def __init__(self, sentences=(), skipped=(), files=(), *, index: int = 0, start: int = 0,
                 end: tuple[int, int] = (0, 0), paths: list[str] | None = None):
        super().__init__(sentences, skipped, files)
        self.index, self.start, self.end = index, start, end
        self.paths = list(paths or [])

    def __repr__(self) -> str:
        return (f"RelationBatch(#{self.index}, {len(self)} sentences from sentence {self.start}, "
                f"{len(self.skipped)} skipped, end {self.end})")


class _Cutter:
    """Sentences in, batches out: at most ``size`` sentences, a step never split."""

    def __init__(self, reading: Reading, size: int, paths: list[str]):
        self.reading, self.size, self.paths = reading, size, paths
        self.buf: list[Sentence] = []
        self.pos = (0, 0)
        self.index = self.start = 0

    def emit(self) -> RelationBatch:
        sents, self.buf = self.buf, []
        skipped, self.reading.skipped = self.reading.skipped, []
        files = list(dict.fromkeys(s.file for s in sents if s.file))
        batch = RelationBatch(sents, skipped, files, index=self.index, start=self.start,
                              end=self.pos, paths=self.paths)
        self.index += 1
        self.start += len(sents)
        return batch

    def step(self, pos: tuple[int, int], sents: list[Sentence]) -> Iterator[RelationBatch]:
        if self.buf and len(self.buf) + len(sents) > self.size:
            yield self.emit()
        self.buf += sents
        self.pos = pos
        if len(self.buf) >= self.size:
            yield self.emit()

    def taken(self) -> list[Sentence]:
        """The sentences the reading added since the last call."""
        new, self.reading.sentences = self.reading.sentences, []
        return new


def iter_relations(paths: Any, *, batch_size: int = DEFAULT_BATCH_SIZE, on_error: str = "raise",
                   max_entities: int | None = None, max_pairs: int | None = None
                   ) -> Iterator[RelationBatch]:
    """The sentences of relation corpora in batches, read as they are needed.

    Parameters
    ----------
    paths, on_error, max_entities, max_pairs
        As :func:`~structkernels.relations.read_relations`; skipped records come with the
        batch read when they were met.
    batch_size : int, default :data:`DEFAULT_BATCH_SIZE`
        The most sentences a batch holds (a PubTator document is never split: one holding
        more sentences is a batch of its own).

    Yields
    ------
    RelationBatch
        Together, the sentences of ``read_relations(paths)`` in order; a last batch without
        sentences carries records skipped after the last sentence.

    Raises
    ------
    RelationFormatError
        In strict mode, when the bad record is reached (the batches before it were given).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = pathlib.Path(d, "x.jsonl")
    ...     _ = path.write_text("".join(json.dumps({"id": f"s{i}", "text": "A B", "entities": []})
    ...                                 + "\\n" for i in range(5)))
    ...     [[s.id for s in batch] for batch in iter_relations(path, batch_size=2)]
    [['s0', 's1'], ['s2', 's3'], ['s4']]
    """
    check_int(batch_size, "batch_size", 1)
    reading = Reading(on_error, max_entities, max_pairs)
    typed = with_formats(paths)
    cut = _Cutter(reading, batch_size, [path for path, _ in typed])
    for i, (path, kind) in enumerate(typed):
        if kind in STREAMING_FORMATS:
            steps = (iter_jsonl_file if kind == "jsonl" else iter_pubtator_file)(path, reading)
            for n in steps:  # lines or documents
                yield from cut.step((i, n), cut.taken())
        else:
            read_file(path, kind, reading)
            for k, s in enumerate(cut.taken(), 1):
                yield from cut.step((i, k), [s])
    if cut.buf or reading.skipped:
        yield cut.emit()
