"""The interaction dataset in memory (:class:`InteractionDataset`): encoded paths and trees,
NumPy columns, and records as compact JSON text (:class:`RecordList`)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from structkernels.structures import Path, Tree
from structkernels.structures.encoded import PathList, TreeList
from structkernels.utils import one_line, record_label

__all__ = ["InteractionDataset", "RecordList", "SkippedRecord"]

SPLITS = ("train", "test")


@dataclass(frozen=True)
class SkippedRecord:
    """A record left out with ``on_error="skip"``."""

    file: str
    line: int
    record_id: Any
    reason: str

    def __str__(self) -> str:
        return f"{self.file}, line {self.line}{record_label(self.record_id)}: {one_line(self.reason)}"


class PackedText:
    """Records' UTF-8 text in one buffer, zlib-compressed until first read."""

    __slots__ = ("_packed", "_blob")

    def __init__(self, packed: bytes):
        self._packed: bytes | None = packed
        self._blob: bytes | None = None

    def blob(self) -> bytes:
        if self._blob is None:
            assert self._packed is not None
            self._blob = zlib.decompress(self._packed)
            self._packed = None
        return self._blob


class RecordList(Sequence):
    """Records stored as compact JSON text, one string per record.

    Strings are not tracked by Python's garbage collector; ``records[i]`` decodes a fresh
    ``dict``; slices and integer arrays give a :class:`RecordList`.  Read from the binary
    cache, the text stays compressed until a record is first read.

    Examples
    --------
    >>> r = RecordList.from_dicts([{"id": "a", "label": 1}])
    >>> r[0], len(r)
    ({'id': 'a', 'label': 1}, 1)
    """

    __slots__ = ("_text", "_packed", "_starts", "_ends")

    def __init__(self, text: Sequence[str]):
        self._text: list[str] | None = list(text)
        self._packed: PackedText | None = None
        self._starts = self._ends = np.zeros(0, np.int64)

    @classmethod
    def _from_packed(cls, packed: PackedText, starts: np.ndarray, ends: np.ndarray) -> RecordList:
        self = cls.__new__(cls)
        self._text, self._packed, self._starts, self._ends = None, packed, starts, ends
        return self

    @classmethod
    def from_dicts(cls, records: Iterable[dict]) -> RecordList:
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        return cls([dumps(r) for r in records])

    def _str(self, i: int) -> str:
        if self._text is not None:
            return self._text[i]
        assert self._packed is not None
        return self._packed.blob()[int(self._starts[i]):int(self._ends[i])].decode("utf-8")

    def texts(self) -> list[str]:
        """The records' compact JSON text."""
        return [self._str(i) for i in range(len(self))]

    def __len__(self) -> int:
        return len(self._text) if self._text is not None else len(self._starts)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, (int, np.integer)):
            n = len(self)
            if not -n <= i < n:
                raise IndexError("record index out of range")
            return json.loads(self._str(int(i) % n))
        if self._text is not None:
            if isinstance(i, slice):
                return RecordList(self._text[i])
            return RecordList([self._text[j] for j in np.asarray(i, dtype=np.int64).tolist()])
        assert self._packed is not None
        idx = np.arange(len(self))[i] if isinstance(i, slice) else np.asarray(i, dtype=np.int64)
        return RecordList._from_packed(self._packed, self._starts[idx], self._ends[idx])

    def __iter__(self):
        return (json.loads(self._str(i)) for i in range(len(self)))

    def __repr__(self) -> str:
        return f"<RecordList of {len(self)} records>"


def _encoded(items: Sequence, cls: type[PathList] | type[TreeList]) -> Any:
    """``items`` as a ``cls`` (PathList or TreeList) of arrays only."""
    return items if isinstance(items, cls) else cls.encode(list(items)).arrays_only()


class InteractionDataset:
    """Candidate interactions with their paths, trees and labels.

    Paths and trees are encoded integer arrays, which the kernels take as they are, and
    records compact JSON strings: a large dataset holds a handful of Python containers.

    Attributes
    ----------
    paths : PathList (a sequence of Path)
    trees : TreeList (a sequence of Tree)
    labels : numpy.ndarray of int64
        1 positive, 0 negative.
    records : RecordList (a sequence of dict)
        The records as read (label 2 of the PubMed45 form already 0 with ``swapped``
        true; every record has a ``split``).
    swapped : numpy.ndarray of bool
        Role-swapped negatives.
    source : str or None
        The file read.
    skipped : list of SkippedRecord
        Records left out with ``on_error="skip"``.

    Examples
    --------
    >>> from structkernels.datasets import load_interactions
    >>> data = load_interactions(split="train")  # doctest: +SKIP
    >>> len(data.paths) == len(data.labels) == len(data)  # doctest: +SKIP
    True
    """

    def __init__(self, records: Sequence[dict], paths: Sequence[Path], trees: Sequence[Tree],
                 source: str | None = None, skipped: Iterable[SkippedRecord] = (), *,
                 _columns: tuple | None = None):
        if not (len(records) == len(paths) == len(trees)):
            raise ValueError("records, paths and trees must have the same length")
        self.records = records if isinstance(records, RecordList) else RecordList.from_dicts(records)
        self.paths = _encoded(paths, PathList)
        self.trees = _encoded(trees, TreeList)
        if _columns is None:
            recs = records if not isinstance(records, RecordList) else list(records)
            _columns = (
                np.fromiter((int(r["label"]) for r in recs), dtype=np.int64, count=len(recs)),
                np.fromiter((bool(r.get("swapped", False)) for r in recs), dtype=bool,
                            count=len(recs)),
                [r.get("graph_id") for r in recs],
                np.array([r.get("split") or "" for r in recs], dtype="U5"),
            )
        self.labels, self.swapped, self._graph_ids, self._splits = _columns
        self.source = source
        self.skipped = list(skipped)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        pos = int(self.labels.sum())
        return (f"InteractionDataset({len(self)} records, {pos} positive, "
                f"{len(self) - pos} negative, source={self.source!r})")

    @property
    def graph_ids(self) -> list[str | None]:
        return list(self._graph_ids)

    def subset(self, indices: Iterable[int] | np.ndarray) -> InteractionDataset:
        """The records at ``indices`` (integer positions or a boolean mask), in that order."""
        idx = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise ValueError(f"boolean mask of length {idx.shape} for {len(self)} records")
            idx = np.flatnonzero(idx)
        elif idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"indices must be integers or a boolean mask, got {idx.dtype}")
        n = len(self)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"index out of range for {n} records")
        idx = np.where(idx < 0, idx + n, idx).astype(np.int64)
        gids = [self._graph_ids[i] for i in idx.tolist()]
        return InteractionDataset(
            self.records[idx], self.paths[idx], self.trees[idx], self.source, self.skipped,
            _columns=(self.labels[idx], self.swapped[idx], gids, self._splits[idx]),
        )

    def split(self, name: str) -> InteractionDataset:
        """The ``"train"`` or ``"test"`` half."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return self.subset(np.flatnonzero(self._splits == name))
