"""Reading and writing structures as JSON Lines.

One record per line.  A record is either a bare JSON value or an object with
exactly one of these keys (other keys such as ``id`` or ``label`` are kept
aside):

- ``"vector"``: a list of floats (vector kernels); a bare list of numbers is
  read the same way;
- ``"path"``: a :class:`~structkernels.structures.Path` as ``[[edge, node], ...]``;
- ``"tree"``: a :class:`~structkernels.structures.Tree` as ``{"label", "children"}``;
- ``"pair"``: a re-writing ``[[source tokens], [target tokens]]`` (string
  re-writing kernels).

Errors name the file and line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from structkernels.structures import Path, StructureError, Tree

__all__ = ["read_structures", "StructureFile", "InputError", "decode_structure"]


class InputError(ValueError):
    """Bad input, with the file and line where it was found."""


def decode_structure(record: Any) -> tuple[str, Any]:
    """``(kind, structure)`` of one decoded JSON record."""
    if isinstance(record, list) and all(isinstance(v, (int, float)) for v in record):
        return "vector", record
    if not isinstance(record, dict):
        raise StructureError(
            "a record is a list of numbers or an object with one of "
            "'vector', 'path', 'tree', 'pair'"
        )
    kinds = [k for k in ("vector", "path", "tree", "pair") if k in record]
    if len(kinds) != 1:
        raise StructureError(
            f"a record needs exactly one of 'vector', 'path', 'tree', 'pair'; found {kinds or 'none'}"
        )
    kind = kinds[0]
    value = record[kind]
    if kind == "vector":
        if not isinstance(value, list) or not all(isinstance(v, (int, float)) for v in value):
            raise StructureError("'vector' must be a list of numbers")
        return kind, value
    if kind == "path":
        return kind, Path.from_json(value)
    if kind == "tree":
        return kind, Tree.from_json(value)
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(side, list) and all(isinstance(t, str) for t in side) for side in value)
    ):
        raise StructureError("'pair' must be [[source tokens], [target tokens]]")
    return kind, (tuple(value[0]), tuple(value[1]))


@dataclass
class StructureFile:
    """Structures read from a JSON Lines file."""

    kind: str
    structures: Any
    records: list[dict] = field(default_factory=list)


def _iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                yield lineno, line


def read_structures(path: str | os.PathLike) -> StructureFile:
    """Read a JSON Lines file of structures of one kind.

    Vectors come back as a 2-D float array, the others as lists.
    """
    kind = None
    items: list[Any] = []
    records: list[dict] = []
    for lineno, line in _iter_lines(path):
        where = f"{os.fspath(path)}, line {lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg})") from None
        try:
            k, value = decode_structure(record)
        except StructureError as exc:
            rid = record.get("id") if isinstance(record, dict) else None
            raise InputError(f"{where}{f' (record {rid})' if rid is not None else ''}: {exc}") from None
        if kind is None:
            kind = k
        elif k != kind:
            raise InputError(f"{where}: a {k} record in a file of {kind} records")
        items.append(value)
        records.append(record if isinstance(record, dict) else {})
    if kind is None:
        raise InputError(f"{os.fspath(path)}: no records (empty file)")
    if kind == "vector":
        lengths = {len(v) for v in items}
        if len(lengths) != 1:
            raise InputError(f"{os.fspath(path)}: vectors of different lengths {sorted(lengths)}")
        return StructureFile(kind, np.asarray(items, dtype=np.float64), records)
    return StructureFile(kind, items, records)
