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

Other record kinds come from plugins, in two ways:

- an entry point in the group ``structkernels.readers``: its name is the
  record key (``text`` for ``{"text": "..."}``), its object a function taking
  the key's value and returning the structure (see the example plugin);
- a kernel method ``read_record(record)``: when the kernel given to
  :func:`read_structures` has one, it reads every record.

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

__all__ = ["read_structures", "read_record", "StructureFile", "InputError", "decode_structure"]

BUILTIN_KINDS = ("vector", "path", "tree", "pair")


class InputError(ValueError):
    """Bad input, with the file and line where it was found."""


def decode_structure(record: Any, kernel: Any = None) -> tuple[str, Any]:
    """``(kind, structure)`` of one decoded JSON record.

    A ``kernel`` with a ``read_record`` method reads the record itself;
    otherwise the built-in kinds and then the ``structkernels.readers`` plugins
    are tried, by the record's keys.
    """
    reader = getattr(kernel, "read_record", None)
    if callable(reader):
        return type(kernel).__name__, reader(record)
    if isinstance(record, list) and all(isinstance(v, (int, float)) for v in record):
        return "vector", record
    plugin_kinds = _plugin_kinds()
    known = ", ".join(repr(k) for k in (*BUILTIN_KINDS, *plugin_kinds))
    if not isinstance(record, dict):
        raise StructureError(f"a record is a list of numbers or an object with one of {known}")
    kinds = [k for k in BUILTIN_KINDS if k in record]
    kinds += [k for k in plugin_kinds if k in record and k not in kinds]
    if len(kinds) != 1:
        raise StructureError(
            f"a record needs exactly one of {known}; found {kinds or 'none'}"
        )
    if kinds[0] not in BUILTIN_KINDS:
        from structkernels.registry import readers

        try:
            return kinds[0], readers.get(kinds[0])(record[kinds[0]])
        except ImportError as exc:
            raise StructureError(str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise StructureError(f"record reader {kinds[0]!r}: {exc}") from None
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


def _plugin_kinds() -> list[str]:
    from structkernels.registry import readers

    return [name for name in readers.names() if name not in BUILTIN_KINDS]


def read_record(record: Any, kernel: Any = None) -> Any:
    """The structure of one JSON Lines record (already decoded from JSON).

    Examples
    --------
    >>> from structkernels.io import read_record
    >>> read_record({"path": [[None, "bind-01"], ["ARG1", "protein"]]})
    Path([(None, 'bind-01'), ('ARG1', 'protein')])
    """
    return decode_structure(record, kernel)[1]


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


def read_structures(path: str | os.PathLike, kernel: Any = None) -> StructureFile:
    """Read a JSON Lines file of structures of one kind.

    Vectors come back as a 2-D float array, the others as lists.  With a
    ``kernel`` that has a ``read_record`` method, that method reads each record.
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
            k, value = decode_structure(record, kernel)
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
