"""Reading interaction records: one record of either form, and a whole file of them.

The forms are :mod:`structkernels.datasets.interactions`'s; a record gives a
:class:`~structkernels.Path` and a :class:`~structkernels.Tree` (read, or extracted from its
AMR), and a file (:func:`_parse_file`) is encoded chunk by chunk.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from structkernels.datasets.interaction_dataset import (
    SPLITS,
    InteractionDataset,
    RecordList,
    SkippedRecord,
)
from structkernels.formats.labels import InteractionFormatError
from structkernels.structures import Path, Tree, Vocabulary
from structkernels.structures.encoded import PathList, TreeList
from structkernels.utils import BadLine, iter_lines, loads_record, one_line, record_label

__all__ = ["split_of"]

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
        raise ValueError(f"{what} {item!r} is ambiguous: nodes {by_name} of graph {gid!r} "
                         "have that name")
    from structkernels.graphs.model import concept_label

    by_concept = [v for v, c in G.nodes(data="concept")
                  if c.lower() == low or concept_label(c).lower() == low]
    if len(by_concept) == 1:
        return by_concept[0]
    if len(by_concept) > 1:
        raise ValueError(f"{what} {item!r} is ambiguous: nodes {by_concept} of graph {gid!r} "
                         "have that concept")
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
