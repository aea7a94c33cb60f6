"""The binary copy of a parsed interaction file: an :class:`InteractionDataset` as arrays.

Private module: :func:`structkernels.datasets.load_interactions` keeps a parsed file as
the arrays of :func:`dataset_to_arrays` (written and read without pickle by
:mod:`structkernels.formats.arrays`) and rebuilds the dataset with :func:`dataset_from_arrays`,
which first checks that the arrays hold together.
"""

from __future__ import annotations

import json

import numpy as np

from structkernels.datasets.interaction_dataset import (
    SPLITS,
    InteractionDataset,
    PackedText,
    RecordList,
    SkippedRecord,
)
from structkernels.formats.arrays import pack_strings, unpack_strings
from structkernels.structures import Vocabulary
from structkernels.structures.encoded import PathList, TreeList

#: Version of the parsed form kept in the binary cache: bump it when parsing or the
#: arrays change, so that older copies are parsed again.
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


def _check_offsets(off: np.ndarray, n: int | None, size: int, what: str) -> None:
    if off.size == 0 or off[0] != 0 or off[-1] != size or (n is not None and off.size != n + 1):
        raise ValueError(f"bad {what} offsets")
    if off.size > 1 and np.any(np.diff(off) < 0):
        raise ValueError(f"bad {what} offsets")


def _check_ids(ids: np.ndarray, bound: int, what: str) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= bound):
        raise ValueError(f"{what} out of range")


def dataset_from_arrays(a: dict[str, np.ndarray], source: str) -> InteractionDataset:
    """An :class:`InteractionDataset` from :func:`dataset_to_arrays`' arrays, checked first (a
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
    records = RecordList._from_packed(PackedText(a["rec_data"].tobytes()), starts, ends)
    paths = PathList(pvocab, a["p_offsets"], a["p_edges"], a["p_nodes"])
    trees = TreeList(tvocab, a["t_offsets"], a["t_labels"], a["t_edges"], a["t_child_offsets"],
                     a["t_child_index"])
    gids = unpack_strings(a["gid_data"], a["gid_ends"], a["gid_null"])
    skipped = [SkippedRecord(source, int(ln), rid, str(why))  # the same bytes, this name
               for _, ln, rid, why in json.loads(a["skipped"].tobytes().decode("utf-8"))]
    columns = (a["labels"], a["swapped"], gids, a["splits"].astype("U5"))
    return InteractionDataset(records, paths, trees, source, skipped, _columns=columns)
