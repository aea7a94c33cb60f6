"""What the relation readers share: strict or lenient reading (:class:`Reading`), the problem
of a record, a JSON value's kind for messages, ids unique across files."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from structkernels.relations.corpus import (
    RelationCorpus,
    RelationFormatError,
    Sentence,
    SkippedRecord,
    same_span_pairs,
    sentence_limits_problem,
)
from structkernels.utils import (
    MAX_FILE_BYTES,
    RecordError,
    StructkernelsError,
    check_int,
    read_partial,
)

ON_ERROR = ("raise", "skip")


def check_on_error(on_error: Any) -> bool:
    """Whether ``on_error`` asks for strict reading; anything but :data:`ON_ERROR` is refused."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    return on_error == "raise"


class RecordProblem(StructkernelsError, ValueError):
    """A problem of the record (or document) being read, its reason and line: raised inside
    a reader and turned there into its format's error or skipped record."""

    def __init__(self, reason: str, line: int | None = None):
        super().__init__(reason)
        self.reason, self.line = reason, line


def json_kind(value: Any) -> str:
    """What a decoded JSON value is, for a message (``"an object"``, ``"null"``...)."""
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def unreadable(exc: OSError) -> str:
    """The reason a file could not be read, in one line."""
    return f"cannot read the file ({exc.strerror or type(exc).__name__})"


def as_paths(paths: Any) -> list[str]:
    """One path or an iterable of paths, as a list of strings."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        return [os.fsdecode(paths)]
    try:
        out = [os.fsdecode(p) for p in paths]
    except TypeError:
        raise TypeError(f"expected a path or a list of paths, got {type(paths).__name__}") from None
    if not out:
        raise ValueError("no files given")
    return out


def where(file: str, line: int | None) -> str:
    return f"{file}:{line}" if line else file


class Reading:
    """The sentences, skipped records and files of one corpus being read, strict or lenient
    (:meth:`fail`); a sentence over ``max_entities`` entities or ``max_pairs`` candidate pairs
    (None: the model's limits) is a bad record."""

    def __init__(self, on_error: str, max_entities: int | None = None,
                 max_pairs: int | None = None):
        self.strict = check_on_error(on_error)
        for name, value in (("max_entities", max_entities), ("max_pairs", max_pairs)):
            check_int(value, name, 0, allow_none=True)
        self.max_entities, self.max_pairs = max_entities, max_pairs
        self.sentences: list[Sentence] = []
        self.skipped: list[SkippedRecord] = []
        self.files: list[str] = []
        self.sentence_at: dict[str, tuple[str, int | None]] = {}
        self.document_at: dict[str, tuple[str, int | None]] = {}

    def fail(self, reason: str, file: str | None, line: int | None, record: str | None) -> None:
        """A bad record: raise (strict) or list it as skipped (lenient)."""
        if self.strict:
            raise RelationFormatError(reason, file, line, record)
        self.drop(reason, file, line, record)

    def drop(self, reason: str, file: str | None, line: int | None, record: str | None) -> None:
        """List a record left out in both modes (it cannot be a candidate)."""
        self.skipped.append(SkippedRecord(file, line, record, RelationFormatError(reason).reason))

    def cut_short(self, exc: RelationFormatError) -> None:
        """A problem that ends a file: raise it (strict), or list it keeping what was read."""
        if self.strict:
            raise exc
        reason = exc.reason
        if not reason.endswith("is lost"):
            reason += "; the rest of the file is not read"
        self.drop(reason, exc.file, exc.line, exc.record)

    def document_problem(self, doc: str, file: str, line: int | None, *, once: bool) -> str | None:
        """Why ``doc`` cannot be a document of ``file`` (read in another file; with ``once``,
        met before in the same file too), else None after registering it."""
        first = self.document_at.get(doc)
        if first is None:
            self.document_at[doc] = (file, line)
            return None
        if first[0] != file or once:
            return f"duplicate document id {doc}: also at {where(*first)}"
        return None

    def add(self, sentence: Sentence) -> bool:
        """Keep ``sentence`` unless its id (or, from another file, its document id) was read."""
        file = sentence.file or ""
        problem = sentence_limits_problem(sentence, self.max_entities, self.max_pairs)
        if problem:
            self.fail(problem, sentence.file, sentence.line, sentence.id)
            return False
        first = self.sentence_at.get(sentence.id)
        if first is not None:
            self.fail(f"duplicate sentence id: also at {where(*first)}", sentence.file,
                      sentence.line, sentence.id)
            return False
        problem = self.document_problem(sentence.document, file, sentence.line, once=False)
        if problem:
            self.fail(problem, sentence.file, sentence.line, sentence.id)
            return False
        self.sentence_at[sentence.id] = (file, sentence.line)
        self.sentences.append(sentence)
        if not sentence.labelled:  # pairs left out of Sentence.pairs: listed
            for reason in same_span_pairs(sentence):
                self.drop(reason, sentence.file, sentence.line, sentence.id)
        return True

    def sentence(self, sid: str, text: str, doc: str, entities: Any, interactions: Any,
                 labelled: bool, file: str | None, line: int | None) -> None:
        """:meth:`add` a new :class:`Sentence`; one the model refuses is a bad record."""
        try:
            sentence = Sentence(sid, text, doc, tuple(entities), tuple(interactions), labelled,
                                file, line)
        except ValueError as exc:
            self.fail(str(exc), file, line, sid)
            return
        self.add(sentence)

    def read_bytes(self, file: str) -> tuple[bytes, str | None] | None:
        """The content of ``file`` within :data:`MAX_FILE_BYTES` (gunzipped) and what was lost;
        None (listed) in lenient mode when it cannot be read."""
        try:
            return read_partial(file, max_bytes=MAX_FILE_BYTES)
        except RecordError as exc:
            self.fail(exc.reason, file, None, None)
        except OSError as exc:
            self.cannot_read(exc, file)
        return None

    def cannot_read(self, exc: OSError, file: str) -> None:
        """A file that cannot be read: raise ``exc`` (strict) or list it (lenient)."""
        if self.strict:
            raise exc
        self.fail(unreadable(exc), file, None, None)

    def corpus(self) -> RelationCorpus:
        return RelationCorpus(self.sentences, self.skipped, self.files)


def read_corpus(files: Any, read_one: Callable[[Any, Reading], Any], on_error: str,
                max_entities: int | None, max_pairs: int | None,
                paths: Callable[[Any], Iterable[Any]] = as_paths) -> RelationCorpus:
    """One corpus of ``read_one(item, reading)`` for each item of ``paths(files)``."""
    reading = Reading(on_error, max_entities, max_pairs)
    for item in paths(files):
        read_one(item, reading)
    return reading.corpus()


def stem(file: str) -> str:
    """A file's name without its folder, ``.gz`` and last suffix (``a/x.jsonl.gz`` -> ``x``)."""
    name = os.path.basename(file)
    if name.endswith(".gz"):
        name = name[:-3]
    root, _ = os.path.splitext(name)
    return root or name
