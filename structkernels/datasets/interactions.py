"""Labelled candidate interactions: the shipped Bio AMR dataset and your own files.

Each record holds a candidate's :class:`~structkernels.Path` (nonstationary kernels paper,
Table 1), its :class:`~structkernels.Tree` (Fig. 1(b), 1(c)) and a binary label, in the
**structkernels form** or the **PubMed45 form** (Garg et al., 2016) that docs/amr.md gives.
With no path :func:`load_interactions` loads the dataset shipped in ``structkernels/data/``
(built by ``datasets/build_bio_amr_interactions.py``; *distant* labels).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import warnings
import zlib
from collections.abc import Callable
from functools import partial
from pathlib import Path as FilePath
from typing import Any

import numpy as np

from structkernels.datasets.interaction_dataset import (
    SPLITS,
    InteractionDataset,
    PackedText,
    RecordList,
    SkippedRecord,
)
from structkernels.formats._collect import check_on_error
from structkernels.formats.arrays import (
    file_digest,
    pack_strings,
    read_arrays,
    unpack_strings,
    write_arrays,
)
from structkernels.formats.labels import InteractionFormatError
from structkernels.structures import Path, Tree, Vocabulary
from structkernels.structures.encoded import PathList, TreeList
from structkernels.utils import (
    MAX_RECORD_BYTES,
    MAX_RECORD_DEPTH,
    BadLine,
    iter_lines,
    loads_record,
    note_cache_write,
    one_line,
    release_free_memory,
    user_cache_dir,
)

__all__ = ["InteractionDataset", "InteractionFormatError", "SkippedRecord", "load_interactions",
           "split_of", "SHIPPED_DATASET"]

#: Where the shipped dataset lives: the package data folder ``structkernels/data``.
SHIPPED_DATASET = FilePath(os.fspath(importlib.resources.files("structkernels") / "data"))
_SHIPPED_FILE = "interactions.jsonl.gz"
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

    def result(self) -> tuple[PathList, TreeList]:
        pc, tc = self.pchunks, self.tchunks
        paths = PathList(self.pvocab, _joined([e.offsets for e in pc])[0],
                         _cat([e.edges for e in pc]), _cat([e.nodes for e in pc]))
        t_off, starts = _joined([e.tree_offsets for e in tc])
        child_index = [e.child_index.astype(np.int64) + k for e, k in zip(tc, starts, strict=False)]
        trees = TreeList(self.tvocab, t_off, _cat([e.labels for e in tc]),
                         _cat([e.edges for e in tc]), _joined([e.child_offsets for e in tc])[0],
                         _cat(child_index))
        return paths, trees


def _joined(offsets: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The offsets of chunks laid end to end (each chunk's from 0), and where each chunk starts."""
    starts = np.cumsum([0] + [int(o[-1]) for o in offsets], dtype=np.int64)
    parts = [o[1:] + k for o, k in zip(offsets, starts, strict=False)]
    return np.concatenate([np.zeros(1, np.int64), *parts]), starts


def _cat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, np.int64)


def _resolve(G, item: Any, what: str, gid: str) -> str:
    """A tuple item as a node variable of G (variable, else name, else concept)."""
    from structkernels.graphs.model import concept_label

    if not isinstance(item, str) or not item:
        raise ValueError(f"{what} must be a non-empty string, got {item!r}")
    if item in G:
        return item
    low = item.lower()
    tests = (("name", lambda d: d.get("name") is not None and d["name"].lower() == low),
             ("concept", lambda d: d["concept"].lower() == low
              or concept_label(d["concept"]).lower() == low))
    for kind, test in tests:
        found = [v for v, d in G.nodes(data=True) if test(d)]
        if len(found) == 1:
            return found[0]
        if found:
            raise ValueError(f"{what} {item!r} is ambiguous: nodes {found} of graph {gid!r} "
                             f"have that {kind}")
    raise ValueError(f"unknown node {item!r} ({what}): no variable, name or concept of graph "
                     f"{gid!r}")


def _structures_from_amr(record: dict, tuple_form: bool) -> tuple[Path, Tree]:
    # penman and networkx load only when a record holds an AMR to read
    from structkernels.formats.penman import parse_amr
    from structkernels.graphs.candidates import Candidate, CandidateExtractor

    text = record["amr"]
    if not isinstance(text, str):
        raise ValueError("'amr' must be PENMAN text (a string)")
    amr = parse_amr(text, graph_id=str(record.get("graph_id") or record.get("id") or "amr"))
    G, gid = amr.graph, amr.id
    if tuple_form:
        tup = record["interaction_tuple"]
        if not isinstance(tup, list) or len(tup) not in (3, 4):
            raise ValueError("'interaction_tuple' must be [type, catalyst, participant(, "
                             f"participant)], got {tup!r}")
        if tup[0] is None:
            raise ValueError("interaction node missing: the first item of 'interaction_tuple' "
                             "is null")
        inter = _resolve(G, tup[0], "interaction", gid)
        cat = None if tup[1] in (None, "") else _resolve(G, tup[1], "catalyst", gid)
        parts = tuple(_resolve(G, p, "participant", gid) for p in tup[2:])
    else:
        it = record.get("interaction")
        if not isinstance(it, dict):
            raise ValueError("a record with 'amr' needs an 'interaction' object or "
                             "'interaction_tuple'")
        if not it.get("node"):
            raise ValueError("interaction node missing: 'interaction' has no 'node'")
        inter = _resolve(G, it["node"], "interaction", gid)
        c = it.get("catalyst")
        cat = (None if c is None
               else _resolve(G, c["node"] if isinstance(c, dict) else c, "catalyst", gid))
        parts = tuple(_resolve(G, p["node"] if isinstance(p, dict) else p, "participant", gid)
                      for p in it.get("participants") or [])
    x = CandidateExtractor(amr)
    cand = Candidate(inter, cat, parts, gid)
    return x.path(cand), x.tree(cand)


def _parse_record(record: Any, lineno: int, build_tree: Callable[[Any], Tree]
                  ) -> tuple[dict, Path, Tree]:
    if not isinstance(record, dict):
        raise ValueError(f"a record is a JSON object, got {type(record).__name__}")
    tuple_form = "interaction_tuple" in record
    # the structures first: a record without them is reported for what it lacks most
    if "path" in record and "amr" not in record and not isinstance(record["path"], list):
        raise ValueError(f"'path' must be a list of [edge, node] pairs, got {record['path']!r}")
    if not ("path" in record and "tree" in record) and "amr" not in record:
        missing = [k for k in ("path", "tree") if k not in record]
        also = "" if "label" in record else ", and no 'label'"
        raise ValueError(f"record has no {' or '.join(repr(m) for m in missing)} (and no "
                         f"'amr'){also}")
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
    build_tree = partial(Tree.from_json, shared={})  # identical subtrees built once
    encoder = _Encoder()
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    # a compact record of the other half ends with this text (a nested key ends in "}}")
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
                bad = SkippedRecord(fname, lineno, rid, one_line(reason))
                if on_error == "raise":
                    raise InteractionFormatError(str(bad)) from None
                skipped.append(bad)
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
                build_tree = partial(Tree.from_json, shared={})
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


#: Version of the parsed form kept in the binary cache: bump it when parsing or the arrays
#: change.
CACHE_FORMAT = 1
CACHE_SPEC = {
    "labels": "i", "swapped": "b", "splits": "U",
    "p_offsets": "i", "p_edges": "i", "p_nodes": "i",
    "t_offsets": "i", "t_labels": "i", "t_edges": "i", "t_child_offsets": "i",
    "t_child_index": "i",
    "pv_data": "u", "pv_ends": "i", "tv_data": "u", "tv_ends": "i",
    "gid_data": "u", "gid_ends": "i", "gid_null": "b",
    "rec_data": "u", "rec_ends": "i", "skipped": "u",
}


def dataset_to_arrays(ds: InteractionDataset) -> dict[str, np.ndarray]:
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


def dataset_from_arrays(a: dict[str, np.ndarray], source: str) -> InteractionDataset:
    """An :class:`InteractionDataset` from :func:`dataset_to_arrays`' arrays, checked first (a
    copy that does not hold together raises ValueError)."""
    n, m, ends = a["labels"].size, a["t_labels"].size, a["rec_ends"]
    if not (a["swapped"].size == a["splits"].size == a["gid_null"].size == a["gid_ends"].size
            == ends.size == n):
        raise ValueError("column lengths differ")
    if a["p_edges"].size != a["p_nodes"].size or a["t_edges"].size != m:
        raise ValueError("path or tree arrays differ in length")
    pvocab = Vocabulary(unpack_strings(a["pv_data"], a["pv_ends"]))  # type: ignore[arg-type]
    tvocab = Vocabulary(unpack_strings(a["tv_data"], a["tv_ends"]))  # type: ignore[arg-type]
    for what, off, count, size in (("path", a["p_offsets"], n, a["p_nodes"].size),
                                   ("tree", a["t_offsets"], n, m),
                                   ("child", a["t_child_offsets"], m, a["t_child_index"].size)):
        if off.size != count + 1 or off[0] != 0 or off[-1] != size or np.any(np.diff(off) < 0):
            raise ValueError(f"bad {what} offsets")
    for what, ids, bound in (("path label", a["p_edges"], len(pvocab)),
                             ("path label", a["p_nodes"], len(pvocab)),
                             ("tree label", a["t_labels"], len(tvocab)),
                             ("tree label", a["t_edges"], len(tvocab)),
                             ("child", a["t_child_index"], m)):
        if ids.size and (ids.min() < 0 or ids.max() >= bound):
            raise ValueError(f"{what} out of range")
    if not np.isin(a["splits"], SPLITS).all():
        raise ValueError("bad split")
    if ends.size and (ends[0] < 0 or np.any(np.diff(ends) < 0)):
        raise ValueError("bad record offsets")
    starts = np.concatenate([np.zeros(1, np.int64), ends[:-1]]) if ends.size else ends
    records = RecordList._from_packed(PackedText(a["rec_data"].tobytes()), starts, ends)
    paths = PathList(pvocab, a["p_offsets"], a["p_edges"], a["p_nodes"])
    trees = TreeList(tvocab, a["t_offsets"], a["t_labels"], a["t_edges"], a["t_child_offsets"],
                     a["t_child_index"])
    gids = unpack_strings(a["gid_data"], a["gid_ends"], a["gid_null"])
    skipped = [SkippedRecord(source, int(ln), rid, str(why))  # the same bytes, this name
               for _, ln, rid, why in json.loads(a["skipped"].tobytes().decode("utf-8"))]
    columns = (a["labels"], a["swapped"], gids, a["splits"].astype("U5"))
    return InteractionDataset(records, paths, trees, source, skipped, _columns=columns)


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
        A JSON Lines file (plain or gzip'd) in a record form of the module docstring, or a
        folder holding ``interactions.jsonl.gz``.  None loads the shipped dataset.
    split : {"train", "test"}, optional
        Return only that half.
    on_error : {"raise", "skip"}
        ``"raise"``: a bad record (also a line not UTF-8, over a limit, ``NaN``, the end
        of a truncated gzip file) raises :class:`InteractionFormatError` naming the file,
        line and record id.  ``"skip"``: it is listed in :attr:`InteractionDataset.skipped`.
    max_depth, max_bytes : int
        Limits of one record (:func:`structkernels.utils.loads_record`).
    cache : bool or path or None, default None
        A binary copy of the parsed file (arrays, read without pickle) is kept in
        ``user_cache_dir("datasets")`` (None or True) or in the folder given, and read
        instead of parsing when the file's bytes, the options and the reader's version are
        the same.  ``False`` parses every time.

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
    check_on_error(on_error)
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
        [CACHE_FORMAT, digest, on_error, int(max_depth), int(max_bytes)]).encode()).hexdigest()
    target = folder / f"interactions-{key[:32]}.npz"
    arrays = read_arrays(target, CACHE_SPEC)
    if arrays is not None:
        try:
            return dataset_from_arrays(arrays, fname)
        except (ValueError, IndexError, UnicodeDecodeError, zlib.error):
            pass  # damaged or foreign: parse again and replace it
    ds = _parse_file(fname, None, on_error, max_depth, max_bytes)
    arrays = dataset_to_arrays(ds)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_arrays(target, arrays)
    except OSError as exc:
        warnings.warn(f"the binary copy of {fname} was not kept ({one_line(exc)}); "
                      "it is parsed again on every load", RuntimeWarning, stacklevel=3)
        return ds
    try:
        note_cache_write(folder, target.stat().st_size)  # one warning past the size limit
    except OSError:
        pass
    # the first load returns what every later load reads: the parse's objects go
    copy = dataset_from_arrays(arrays, fname)
    del ds, arrays
    release_free_memory()
    return copy
