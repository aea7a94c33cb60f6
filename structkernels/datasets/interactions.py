"""Labelled candidate interactions: the shipped Bio AMR dataset and your own files.

:func:`load_interactions` reads JSON Lines (optionally gzip'd) of candidate
biomolecular interactions, each with its :class:`~structkernels.Path`
(nonstationary kernels paper, Table 1), its :class:`~structkernels.Tree`
(Fig. 1(b), 1(c)) and a binary label.  With no path it loads the dataset
shipped as package data in ``structkernels/data/`` (built from the Bio AMR corpus
by ``datasets/build_bio_amr_interactions.py``, provenance in
``datasets/bio-amr-interactions/README.md``; its labels are *distant* labels,
see that folder's README and :mod:`structkernels.amr.labels`).

Record forms (one JSON object per line; blank lines are ignored)
----------------------------------------------------------------
**structkernels form** (what the shipped file holds)::

    {"id": "a_pmid_2094_2929.7#3", "graph_id": "a_pmid_2094_2929.7",
     "sentence": "...",
     "interaction": {"type": "phosphorylate-01", "node": "p",
                     "catalyst": {"node": "e", "concept": "enzyme", "name": "Akt"},
                     "participants": [{"node": "p2", "concept": "protein", "name": "GSK3"}]},
     "path": [["ARG0", "enzyme"], [null, "phosphorylate"], [null, "phosphorylate"],
              ["ARG1", "protein"]],
     "tree": {"label": "phosphorylate", "children": [["ARG0", {...}], ["ARG1", {...}]]},
     "label": 1, "swapped": false, "split": "train"}

``label`` is 1 (positive) or 0 (negative); ``swapped`` (optional, default
false) flags a negative whose catalyst and participant roles are exchanged;
``split`` (optional) is ``"train"`` or ``"test"``.  Only ``path``, ``tree``
and ``label`` are required; a record may instead give ``amr`` (the PENMAN text
of its graph) and ``interaction`` (with node variables), and the path and tree
are extracted (:mod:`structkernels.graphs.candidates`).

**PubMed45 form** (Garg et al., 2016)::

    {"id": "pm45-17", "interaction_tuple": ["bind-01", "Sos", "Ras", "GTP"],
     "label": 2, "amr": "(h / have-03 ...)"}

``interaction_tuple`` is ``[type, catalyst, participant]`` or ``[type,
catalyst, participant, participant]`` (catalyst ``null`` when none); each item
is resolved in the record's ``amr`` as a node variable, else as the unique
node with that name (``:name``, case-insensitive), else as the unique node
with that concept (with or without its sense number).  An unknown or
ambiguous item, or a missing interaction node, is an error naming the line.
``label`` is 0 (negative), 1 (positive) or 2 (roles swapped: loaded as
label 0 with ``swapped`` true).  ``path`` and ``tree`` may be given instead
of ``amr``.

A record without ``split`` is put in ``"train"`` or ``"test"`` by
:func:`split_of` of its ``graph_id`` (else its ``id``, else its line), so no
graph is in both halves.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import warnings
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Any

import numpy as np

from structkernels.datasets._binary import (
    file_digest,
    pack_strings,
    read_arrays,
    unpack_strings,
    write_arrays,
)
from structkernels.structures import Path, Tree, Vocabulary
from structkernels.structures.encoded import PathList, TreeList
from structkernels.utils import (
    MAX_RECORD_BYTES,
    MAX_RECORD_DEPTH,
    BadLine,
    StructkernelsError,
    iter_lines,
    loads_record,
    one_line,
    record_label,
    release_free_memory,
    user_cache_dir,
)

__all__ = [
    "InteractionDataset",
    "InteractionFormatError",
    "SkippedRecord",
    "load_interactions",
    "split_of",
    "SHIPPED_DATASET",
]

#: Where the shipped dataset lives: the package data folder ``structkernels/data``
#: (inside an installed wheel too), found through :mod:`importlib.resources`.
SHIPPED_DATASET = FilePath(os.fspath(importlib.resources.files("structkernels") / "data"))
_SHIPPED_FILE = "interactions.jsonl.gz"
SPLITS = ("train", "test")
#: records parsed into Python objects before they are encoded into arrays
_CHUNK = 2048


def split_of(key: str) -> str:
    """``"train"`` or ``"test"`` by the parity of the last byte of SHA-256(``key``).

    Examples
    --------
    >>> from structkernels.datasets import split_of
    >>> split_of("a_pmid_2094_2929.7") in ("train", "test")
    True
    """
    return "train" if hashlib.sha256(key.encode("utf-8")).digest()[-1] % 2 == 0 else "test"


class InteractionFormatError(StructkernelsError, ValueError):
    """A bad interaction record: names the file, the line and the record id."""


@dataclass(frozen=True)
class SkippedRecord:
    """A record left out with ``on_error="skip"``."""

    file: str
    line: int
    record_id: Any
    reason: str

    def __str__(self) -> str:
        return f"{self.file}, line {self.line}{record_label(self.record_id)}: {one_line(self.reason)}"


class _PackedText:
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

    Strings are not tracked by Python's garbage collector, so a large dataset
    adds almost nothing to a collection's work; ``records[i]`` decodes that
    record into a fresh ``dict`` (changing it does not change the dataset).
    Slices and integer arrays give a :class:`RecordList`.  Read from the
    binary cache of :func:`load_interactions`, the text stays compressed
    until a record is first read.

    Examples
    --------
    >>> r = RecordList.from_dicts([{"id": "a", "label": 1}])
    >>> r[0], len(r)
    ({'id': 'a', 'label': 1}, 1)
    """

    __slots__ = ("_text", "_packed", "_starts", "_ends")

    def __init__(self, text: Sequence[str]):
        self._text: list[str] | None = list(text)
        self._packed: _PackedText | None = None
        self._starts = self._ends = np.zeros(0, np.int64)

    @classmethod
    def _from_packed(cls, packed: _PackedText, starts: np.ndarray, ends: np.ndarray) -> RecordList:
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
        if self._text is not None:
            return list(self._text)
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


def _as_path_list(paths: Sequence[Path]):
    if isinstance(paths, PathList):
        return paths
    pl = PathList.encode(list(paths))
    return PathList(pl.vocab, pl.offsets, pl.edges, pl.nodes)  # arrays only


def _as_tree_list(trees: Sequence[Tree]):
    if isinstance(trees, TreeList):
        return trees
    tl = TreeList.encode(list(trees))
    return TreeList(tl.vocab, tl.tree_offsets, tl.labels, tl.edges, tl.child_offsets,
                    tl.child_index)  # arrays only


class _Encoder:
    """Encodes paths and trees chunk by chunk into arrays sharing one vocabulary each."""

    def __init__(self) -> None:
        self.pvocab = Vocabulary()
        self.tvocab = Vocabulary()
        self.pchunks: list = []
        self.tchunks: list = []

    def add(self, paths: list[Path], trees: list[Tree]) -> None:
        if paths:
            self.pchunks.append(self.pvocab.encode_paths(paths))
            self.tchunks.append(self.tvocab.encode_trees(trees))

    def result(self):
        pc, tc = self.pchunks, self.tchunks
        p_off = [np.zeros(1, np.int64)]
        shift = 0
        for e in pc:
            p_off.append(e.offsets[1:] + shift)
            shift += int(e.offsets[-1])
        cat = (lambda xs, dt: np.concatenate(xs).astype(dt)) if pc else (
            lambda xs, dt: np.zeros(0, dt))
        paths = PathList(self.pvocab, np.concatenate(p_off),
                         cat([e.edges for e in pc], np.int64), cat([e.nodes for e in pc], np.int64))
        t_off, c_off, c_idx = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)], []
        nshift = cshift = 0
        for e in tc:
            t_off.append(e.tree_offsets[1:] + nshift)
            c_off.append(e.child_offsets[1:] + cshift)
            c_idx.append(e.child_index.astype(np.int64) + nshift)
            nshift += int(e.tree_offsets[-1])
            cshift += int(e.child_offsets[-1])
        trees = TreeList(self.tvocab, np.concatenate(t_off), cat([e.labels for e in tc], np.int64),
                         cat([e.edges for e in tc], np.int64), np.concatenate(c_off),
                         cat(c_idx, np.int64) if c_idx else np.zeros(0, np.int64))
        return paths, trees


class InteractionDataset:
    """Candidate interactions with their paths, trees and labels.

    Storage is array-backed: paths and trees are encoded integer arrays
    (:class:`~structkernels.structures.encoded.PathList`,
    :class:`~structkernels.structures.encoded.TreeList`; items are rebuilt as
    :class:`~structkernels.Path` / :class:`~structkernels.Tree` on access) and
    records are compact JSON strings (:class:`RecordList`), so a dataset of
    tens of thousands of records holds a handful of Python containers and
    adds nothing measurable to garbage-collector pauses.  The kernels take
    the encoded lists as they are (no re-encoding).

    Attributes
    ----------
    paths : PathList (a sequence of Path)
    trees : TreeList (a sequence of Tree)
    labels : numpy.ndarray of int64
        1 positive, 0 negative.
    records : RecordList (a sequence of dict)
        The records as read (label 2 of the PubMed45 form is already 0 with
        ``swapped`` true; every record has a ``split``); each access decodes
        a fresh dict.
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

    def __init__(
        self,
        records: Sequence[dict],
        paths: Sequence[Path],
        trees: Sequence[Tree],
        source: str | None = None,
        skipped: Iterable[SkippedRecord] = (),
        *,
        _columns: tuple | None = None,
    ):
        if not (len(records) == len(paths) == len(trees)):
            raise ValueError("records, paths and trees must have the same length")
        self.records = records if isinstance(records, RecordList) else RecordList.from_dicts(records)
        self.paths = _as_path_list(paths)
        self.trees = _as_tree_list(trees)
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
        return (
            f"InteractionDataset({len(self)} records, {pos} positive, "
            f"{len(self) - pos} negative, source={self.source!r})"
        )

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


class _TreeBuilder:
    """``Tree.from_json`` with shared subtrees (identical subtrees built once)."""

    def __init__(self) -> None:
        self._cache: dict[tuple, Tree] = {}

    def __call__(self, obj: Any) -> Tree:
        return Tree.from_json(obj, shared=self._cache)


def _resolve(G, item: Any, what: str, gid: str) -> str:
    """A tuple item as a node variable of G (variable, else name, else concept)."""
    if not isinstance(item, str) or not item:
        raise ValueError(f"{what} must be a non-empty string, got {item!r}")
    if item in G:
        return item
    low = item.lower()
    by_name = [v for v, n in G.nodes(data="name") if n is not None and n.lower() == low]
    if len(by_name) == 1:
        return by_name[0]
    if len(by_name) > 1:
        raise ValueError(
            f"{what} {item!r} is ambiguous: nodes {by_name} of graph {gid!r} have that name"
        )
    from structkernels.graphs.model import concept_label

    by_concept = [
        v for v, c in G.nodes(data="concept") if c.lower() == low or concept_label(c).lower() == low
    ]
    if len(by_concept) == 1:
        return by_concept[0]
    if len(by_concept) > 1:
        raise ValueError(
            f"{what} {item!r} is ambiguous: nodes {by_concept} of graph {gid!r} have that concept"
        )
    raise ValueError(
        f"unknown node {item!r} ({what}): no variable, name or concept of graph {gid!r}"
    )


def _structures_from_amr(record: dict, tuple_form: bool) -> tuple[Path, Tree]:
    # penman and networkx load only when a record holds an AMR to read
    from structkernels.graphs.candidates import Candidate, CandidateExtractor
    from structkernels.graphs.penman import parse_amr

    text = record["amr"]
    if not isinstance(text, str):
        raise ValueError("'amr' must be PENMAN text (a string)")
    amr = parse_amr(text, graph_id=str(record.get("graph_id") or record.get("id") or "amr"))
    G, gid = amr.graph, amr.id
    if tuple_form:
        tup = record["interaction_tuple"]
        if not isinstance(tup, list) or len(tup) not in (3, 4):
            raise ValueError(
                "'interaction_tuple' must be [type, catalyst, participant(, participant)], "
                f"got {tup!r}"
            )
        if tup[0] is None:
            raise ValueError(
                "interaction node missing: the first item of 'interaction_tuple' is null"
            )
        inter = _resolve(G, tup[0], "interaction", gid)
        cat = None if tup[1] in (None, "") else _resolve(G, tup[1], "catalyst", gid)
        parts = tuple(_resolve(G, p, "participant", gid) for p in tup[2:])
    else:
        it = record.get("interaction")
        if not isinstance(it, dict):
            raise ValueError(
                "a record with 'amr' needs an 'interaction' object or 'interaction_tuple'"
            )
        if not it.get("node"):
            raise ValueError("interaction node missing: 'interaction' has no 'node'")
        inter = _resolve(G, it["node"], "interaction", gid)
        c = it.get("catalyst")
        cat = (
            None
            if c is None
            else _resolve(G, c["node"] if isinstance(c, dict) else c, "catalyst", gid)
        )
        ps = it.get("participants") or []
        parts = tuple(
            _resolve(G, p["node"] if isinstance(p, dict) else p, "participant", gid) for p in ps
        )
    x = CandidateExtractor(amr)
    cand = Candidate(inter, cat, parts, gid)
    return x.path(cand), x.tree(cand)


def _parse_record(record: Any, lineno: int, build_tree: _TreeBuilder) -> tuple[dict, Path, Tree]:
    if not isinstance(record, dict):
        raise ValueError(f"a record is a JSON object, got {type(record).__name__}")
    tuple_form = "interaction_tuple" in record
    # the structures first: a record without them is reported for what it lacks most
    if "path" in record and "amr" not in record and not isinstance(record["path"], list):
        raise ValueError(f"'path' must be a list of [edge, node] pairs, got {record['path']!r}")
    if not ("path" in record and "tree" in record) and "amr" not in record:
        missing = [k for k in ("path", "tree") if k not in record]
        also = "" if "label" in record else ", and no 'label'"
        raise ValueError(
            f"record has no {' or '.join(repr(m) for m in missing)} (and no 'amr'){also}"
        )
    if "label" not in record:
        raise ValueError("record has no 'label'")
    label = record["label"]
    allowed = (0, 1, 2) if tuple_form else (0, 1)
    if isinstance(label, bool) and not tuple_form:
        label = int(label)
    if isinstance(label, bool) or not isinstance(label, int) or label not in allowed:
        form = "PubMed45 form: 0, 1 or 2 (roles swapped)" if tuple_form else "0 or 1"
        raise ValueError(f"label must be {form}, got {record['label']!r}")
    rec = dict(record)
    if label == 2:
        rec["label"], rec["swapped"] = 0, True
    else:
        rec["label"] = label
        rec.setdefault("swapped", False)
    if "path" in record and "tree" in record:
        if not isinstance(record["path"], list):
            raise ValueError(f"'path' must be a list of [edge, node] pairs, got {record['path']!r}")
        path = Path.from_json(record["path"])
        tree = build_tree(record["tree"])
    else:  # an 'amr' (checked above)
        path, tree = _structures_from_amr(record, tuple_form)
        rec["path"], rec["tree"] = path.to_json(), tree.to_json()
    if len(path) == 0:
        raise ValueError("empty path")
    split = rec.get("split")
    if split is None:
        key = rec.get("graph_id") or rec.get("id") or f"line {lineno}"
        rec["split"] = split_of(str(key))
    elif split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return rec, path, tree


def load_interactions(
    path: str | os.PathLike | None = None,
    split: str | None = None,
    on_error: str = "raise",
    *,
    max_depth: int = MAX_RECORD_DEPTH,
    max_bytes: int = MAX_RECORD_BYTES,
    cache: bool | str | os.PathLike | None = None,
) -> InteractionDataset:
    """Load labelled candidate interactions.

    Parameters
    ----------
    path : path, optional
        A JSON Lines file (plain or gzip'd) in the structkernels or PubMed45
        record form (module docstring), or a folder holding
        ``interactions.jsonl.gz``.  None loads the shipped Bio AMR dataset.
    split : {"train", "test"}, optional
        Return only that half (split by graph id; no graph in both).
    on_error : {"raise", "skip"}
        ``"raise"``: a bad record raises :class:`InteractionFormatError`
        naming the file, line and record id.  ``"skip"``: it is left out and
        listed in :attr:`InteractionDataset.skipped`.  A bad record is also
        a line that is not UTF-8, a record nested deeper than ``max_depth``
        or longer than ``max_bytes``, ``NaN``/``Infinity``, and the end of a
        truncated gzip file (every record before it is kept).
    max_depth, max_bytes : int
        Limits of one record (:func:`structkernels.utils.loads_record`).
    cache : bool or path or None, default None
        A compact binary copy of the parsed file (integer arrays of the
        encoded paths and trees, the vocabularies, the labels, and the
        records' text compressed until first read) is kept in
        ``user_cache_dir("datasets")`` (None or True;
        :func:`structkernels.utils.user_cache_dir`) or in the folder given, and
        read instead of parsing when the file's bytes, ``on_error``, the limits
        and the reader's version are the same: the shipped dataset loads in
        well under a second after the first time.  ``False`` parses every time.
        The copy is written atomically and read without pickle; a damaged or
        foreign copy is ignored and replaced.

    Returns
    -------
    InteractionDataset

    Examples
    --------
    >>> from structkernels.datasets import load_interactions
    >>> data = load_interactions()  # doctest: +SKIP
    >>> train, test = data.split("train"), data.split("test")  # doctest: +SKIP
    >>> set(train.graph_ids).isdisjoint(test.graph_ids)  # doctest: +SKIP
    True
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS} or None, got {split!r}")
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if path is None:
        file = SHIPPED_DATASET / _SHIPPED_FILE
        if not file.is_file():
            raise FileNotFoundError(
                f"the shipped interaction dataset is not at {file} (package data of "
                "structkernels); reinstall structkernels, or build it with "
                "`python datasets/build_bio_amr_interactions.py` in a checkout"
            )
    else:
        file = FilePath(os.fspath(path))
        if file.is_dir():
            file = file / _SHIPPED_FILE
        if not file.is_file():
            raise FileNotFoundError(f"no interaction file at {file}")
    fname = os.fspath(file)
    folder = _cache_folder(cache)
    if folder is not None:
        ds = _load_cached(fname, folder, on_error, max_depth, max_bytes)
        return ds if split is None else ds.split(split)
    return _parse_file(fname, split, on_error, max_depth, max_bytes)


def _parse_file(fname: str, split: str | None, on_error: str, max_depth: int,
                max_bytes: int) -> InteractionDataset:
    """Parse an interaction file (the work :func:`load_interactions` caches)."""
    records: list[str] = []
    paths: list[Path] = []
    trees: list[Tree] = []
    labels: list[int] = []
    swapped: list[bool] = []
    graph_ids: list[str | None] = []
    splits: list[str] = []
    skipped: list[SkippedRecord] = []
    build_tree = _TreeBuilder()
    encoder = _Encoder()
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    # a compact record whose last top-level key is the split of the other half ends with
    # this text (a nested "split" key would end in "}}", one inside a string is escaped)
    other = None if split is None else f'"split":"{"test" if split == "train" else "train"}"}}'
    try:
        for lineno, line in iter_lines(fname, max_bytes=max_bytes):
            if other is not None and isinstance(line, str) and line.rstrip().endswith(other):
                tail = line.rstrip()[: -len(other)]
                if tail.endswith((",", "{")):
                    continue  # fast path: a compact record of the other half
            rid = None
            try:
                if isinstance(line, BadLine):
                    raise ValueError(line.reason)
                obj = loads_record(line, max_depth=max_depth, max_bytes=max_bytes)
                rid = obj.get("id") if isinstance(obj, dict) else None
                rec, p, t = _parse_record(obj, lineno, build_tree)
            except (ValueError, KeyError, TypeError) as exc:
                reason = str(exc) if not isinstance(exc, KeyError) else f"missing key {exc}"
                reason = one_line(reason)
                if on_error == "raise":
                    raise InteractionFormatError(f"{fname}, line {lineno}{record_label(rid)}: {reason}") from None
                skipped.append(SkippedRecord(fname, lineno, rid, reason))
                continue
            if split is not None and rec["split"] != split:
                continue
            records.append(dumps(rec))
            labels.append(int(rec["label"]))
            swapped.append(bool(rec.get("swapped", False)))
            graph_ids.append(rec.get("graph_id"))
            splits.append(rec["split"])
            paths.append(p)
            trees.append(t)
            if len(paths) == _CHUNK:
                # encode and drop the Python objects: the dataset keeps arrays
                encoder.add(paths, trees)
                paths, trees = [], []
                build_tree = _TreeBuilder()
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise InteractionFormatError(f"{fname}: cannot read ({one_line(exc)})") from None
    if not records and not skipped and split is None:
        raise InteractionFormatError(f"{fname}: no records (empty file)")
    encoder.add(paths, trees)
    del paths, trees, build_tree
    P, T = encoder.result()
    columns = (np.asarray(labels, dtype=np.int64), np.asarray(swapped, dtype=bool), graph_ids,
               np.array(splits, dtype="U5"))
    return InteractionDataset(RecordList(records), P, T, fname, skipped, _columns=columns)


#: Version of the parsed form kept in the binary cache: bump it when parsing or the
#: arrays change, so that older copies are parsed again.
_CACHE_FORMAT = 1
_CACHE_SPEC = {
    "labels": "i", "swapped": "b", "splits": "U",
    "p_offsets": "i", "p_edges": "i", "p_nodes": "i",
    "t_offsets": "i", "t_labels": "i", "t_edges": "i", "t_child_offsets": "i",
    "t_child_index": "i",
    "pv_data": "u", "pv_ends": "i", "tv_data": "u", "tv_ends": "i",
    "gid_data": "u", "gid_ends": "i", "gid_null": "b",
    "rec_data": "u", "rec_ends": "i", "skipped": "u",
}


def _cache_folder(cache: bool | str | os.PathLike | None) -> FilePath | None:
    if cache is None or cache is True:
        return FilePath(user_cache_dir("datasets"))
    if cache is False:
        return None
    if isinstance(cache, (str, os.PathLike)):
        return FilePath(os.fspath(cache))
    raise TypeError(f"cache must be a bool, a folder or None, got {type(cache).__name__}")


def _load_cached(fname: str, folder: FilePath, on_error: str, max_depth: int,
                 max_bytes: int) -> InteractionDataset:
    """The parsed file from its binary copy in ``folder``, made on first use."""
    try:
        digest = file_digest(fname)
    except OSError as exc:
        raise InteractionFormatError(f"{fname}: cannot read ({one_line(exc)})") from None
    key = hashlib.sha256(json.dumps(
        [_CACHE_FORMAT, digest, on_error, int(max_depth), int(max_bytes)]).encode()).hexdigest()
    target = folder / f"interactions-{key[:32]}.npz"
    arrays = read_arrays(target, _CACHE_SPEC)
    if arrays is not None:
        try:
            return _from_arrays(arrays, fname)
        except (ValueError, IndexError, UnicodeDecodeError, zlib.error):
            pass  # damaged or foreign: parse again and replace it
    ds = _parse_file(fname, None, on_error, max_depth, max_bytes)
    arrays = _to_arrays(ds)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_arrays(target, arrays)
    except OSError as exc:
        warnings.warn(f"the binary copy of {fname} was not kept ({one_line(exc)}); "
                      "it is parsed again on every load", RuntimeWarning, stacklevel=3)
        return ds
    # the first load returns what every later load reads (the copy's arrays), and the
    # parse's objects go: the process keeps about the memory of a later load, not the
    # parse's peak
    copy = _from_arrays(arrays, fname)
    del ds, arrays
    release_free_memory()
    return copy


def _to_arrays(ds: InteractionDataset) -> dict[str, np.ndarray]:
    P, T = ds.paths, ds.trees
    gid = pack_strings(ds.graph_ids)
    pv = pack_strings(P.vocab.labels[1:])
    tv = pack_strings(T.vocab.labels[1:])
    rec = pack_strings(ds.records.texts(), compress=True)
    skipped = json.dumps([[r.file, r.line, r.record_id, r.reason] for r in ds.skipped],
                         ensure_ascii=False).encode("utf-8")
    return {
        "labels": ds.labels.astype(np.int64), "swapped": ds.swapped.astype(bool),
        "splits": np.asarray(ds._splits, dtype="U5"),
        "p_offsets": P.offsets, "p_edges": P.edges, "p_nodes": P.nodes,
        "t_offsets": T.tree_offsets, "t_labels": T.labels, "t_edges": T.edges,
        "t_child_offsets": T.child_offsets, "t_child_index": T.child_index,
        "pv_data": pv["data"], "pv_ends": pv["ends"], "tv_data": tv["data"],
        "tv_ends": tv["ends"], "gid_data": gid["data"], "gid_ends": gid["ends"],
        "gid_null": gid["null"], "rec_data": rec["data"], "rec_ends": rec["ends"],
        "skipped": np.frombuffer(skipped, dtype=np.uint8),
    }


def _check_offsets(off: np.ndarray, n: int | None, size: int, what: str) -> None:
    if off.size == 0 or off[0] != 0 or off[-1] != size or (n is not None and off.size != n + 1):
        raise ValueError(f"bad {what} offsets")
    if off.size > 1 and np.any(np.diff(off) < 0):
        raise ValueError(f"bad {what} offsets")


def _check_ids(ids: np.ndarray, bound: int, what: str) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= bound):
        raise ValueError(f"{what} out of range")


def _from_arrays(a: dict[str, np.ndarray], source: str) -> InteractionDataset:
    """An :class:`InteractionDataset` from :func:`_to_arrays`' arrays, checked first (a
    copy that does not hold together raises ValueError)."""
    n = a["labels"].size
    if not (a["swapped"].size == a["splits"].size == a["gid_null"].size == a["gid_ends"].size
            == a["rec_ends"].size == n):
        raise ValueError("column lengths differ")
    pvocab = Vocabulary(unpack_strings(a["pv_data"], a["pv_ends"]))  # type: ignore[arg-type]
    tvocab = Vocabulary(unpack_strings(a["tv_data"], a["tv_ends"]))  # type: ignore[arg-type]
    _check_offsets(a["p_offsets"], n, a["p_nodes"].size, "path")
    if a["p_edges"].size != a["p_nodes"].size:
        raise ValueError("path arrays differ in length")
    _check_ids(a["p_edges"], len(pvocab), "path label")
    _check_ids(a["p_nodes"], len(pvocab), "path label")
    m = a["t_labels"].size
    _check_offsets(a["t_offsets"], n, m, "tree")
    if a["t_edges"].size != m:
        raise ValueError("tree arrays differ in length")
    _check_offsets(a["t_child_offsets"], m, a["t_child_index"].size, "child")
    _check_ids(a["t_labels"], len(tvocab), "tree label")
    _check_ids(a["t_edges"], len(tvocab), "tree label")
    _check_ids(a["t_child_index"], m, "child")
    if not np.isin(a["splits"], SPLITS).all():
        raise ValueError("bad split")
    ends = a["rec_ends"]
    if ends.size and (ends[0] < 0 or np.any(np.diff(ends) < 0)):
        raise ValueError("bad record offsets")
    starts = np.concatenate([np.zeros(1, np.int64), ends[:-1]]) if ends.size else ends
    records = RecordList._from_packed(_PackedText(a["rec_data"].tobytes()), starts, ends)
    paths = PathList(pvocab, a["p_offsets"], a["p_edges"], a["p_nodes"])
    trees = TreeList(tvocab, a["t_offsets"], a["t_labels"], a["t_edges"], a["t_child_offsets"],
                     a["t_child_index"])
    gids = unpack_strings(a["gid_data"], a["gid_ends"], a["gid_null"])
    skipped = [SkippedRecord(source, int(ln), rid, str(why))  # the same bytes, this name
               for _, ln, rid, why in json.loads(a["skipped"].tobytes().decode("utf-8"))]
    columns = (a["labels"], a["swapped"], gids, a["splits"].astype("U5"))
    return InteractionDataset(records, paths, trees, source, skipped, _columns=columns)
