"""Reading and writing structures as JSON Lines.

One record per line (README, the command line): a bare list of numbers, or an object with
exactly one of ``"vector"``, ``"path"``, ``"tree"``, ``"pair"`` (a re-writing), or of the
record keys of the ``structkernels.readers`` plugins; other keys (``id``, ``label``) are
kept aside.  A kernel with a ``read_record(record)`` method reads every record itself.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from structkernels.registry import PluginWarning, readers
from structkernels.structures.path import Path, StructureError
from structkernels.structures.tree import Tree
from structkernels.utils import (
    MAX_RECORD_BYTES,
    MAX_RECORD_DEPTH,
    BadLine,
    RecordError,
    StructkernelsError,
    iter_lines,
    loads_record,
    one_line,
    record_label,
)

__all__ = ["read_structures", "read_record", "StructureFile", "InputError", "decode_structure",
           "path_from_record", "tree_from_record"]

BUILTIN_KINDS = ("vector", "path", "tree", "pair")


class InputError(StructkernelsError, ValueError):
    """Bad input, with the file and line where it was found."""


def decode_structure(record: Any, kernel: Any = None) -> tuple[str, Any]:
    """``(kind, structure)`` of one decoded JSON record.

    A ``kernel`` with a ``read_record`` method reads the record itself; otherwise the
    built-in kinds and then the ``structkernels.readers`` plugins are tried.
    """
    reader = getattr(kernel, "read_record", None)
    if callable(reader):
        return type(kernel).__name__, reader(record)
    if isinstance(record, list) and all(_is_number(v) for v in record):
        return "vector", record
    plugin_kinds = _plugin_kinds()
    known = ", ".join(repr(k) for k in (*BUILTIN_KINDS, *plugin_kinds))
    if not isinstance(record, dict):
        raise StructureError(f"a record is a list of numbers or an object with one of {known}")
    kinds = [k for k in BUILTIN_KINDS if k in record]
    if not kinds:  # a built-in key always means the built-in kind: plugins come after
        kinds = [k for k in plugin_kinds if k in record]
    if len(kinds) != 1:
        raise StructureError(f"a record needs exactly one of {known}; found {kinds or 'none'}")
    kind, value = kinds[0], record[kinds[0]]
    if kind not in BUILTIN_KINDS:
        try:
            return kind, readers.get(kind)(value)
        except ImportError as exc:
            raise StructureError(str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise StructureError(f"record reader {kind!r}: {exc}") from None
    if kind == "vector":
        if not isinstance(value, list) or not all(_is_number(v) for v in value):
            raise StructureError("'vector' must be a list of numbers (true/false are not numbers)")
        return kind, value
    if kind == "path":
        return kind, path_from_record(value)
    if kind == "tree":
        return kind, tree_from_record(value)
    if not (isinstance(value, list) and len(value) == 2 and all(
            isinstance(side, list) and all(isinstance(t, str) for t in side) for side in value)):
        raise StructureError("'pair' must be [[source tokens], [target tokens]]")
    return kind, (tuple(value[0]), tuple(value[1]))


def path_from_record(value: Any) -> Path:
    """The :class:`Path` of a record's ``"path"`` value: a list of ``[edge, node]`` pairs (or
    JSON text of one); anything else is refused as not such a list, never as bad JSON.

    Examples
    --------
    >>> path_from_record([[None, "bind"], ["ARG0", "Ras"]])
    Path([(None, 'bind'), ('ARG0', 'Ras')])
    """
    return _from_json(Path, value, list, "'path' must be a list of [edge, node] pairs")


def tree_from_record(value: Any) -> Tree:
    """The :class:`Tree` of a record's ``"tree"`` value (an object with a ``"label"``, or
    JSON text of one); anything else is refused as not such an object."""
    return _from_json(Tree, value, dict, "'tree' must be an object with a 'label'")


def _from_json(cls: type, value: Any, form: type, what: str) -> Any:
    """``cls.from_json(value)``; a value that is not a ``form`` (nor JSON text of one) is
    refused saying what it must be, never as a JSON syntax error."""
    try:
        return cls.from_json(value)
    except StructureError:
        if isinstance(value, form):
            raise  # the error inside the structure names the bad part
        raise StructureError(f"{what}, got {one_line(repr(value), 80)}") from None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _plugin_kinds() -> list[str]:
    """Record keys read by ``structkernels.readers`` plugins; one named like a built-in kind
    never replaces it (warned about, keyed ``"<distribution>:<name>"``)."""
    table = readers.entry_points()
    kinds = []
    for name in readers.names():
        if name not in BUILTIN_KINDS:
            kinds.append(name)
            continue
        ep = table.get(name)
        dist = getattr(getattr(ep, "dist", None), "name", None) if ep is not None else None
        if dist is None:  # registered in-process under a built-in name: never used
            warnings.warn(f"record reader {name!r} has the name of a built-in record kind and "
                          "is never used", PluginWarning, stacklevel=4)
            continue
        warnings.warn(
            f"record reader plugin {ep.value} ({dist}) is named like the built-in record "
            f"kind {name!r}, which keeps the name; the plugin reads only records keyed "
            f"{dist}:{name}", PluginWarning, stacklevel=4)
        kinds.append(f"{dist}:{name}")
    return kinds


def read_record(record: Any, kernel: Any = None) -> Any:
    """The structure of one JSON Lines record (already decoded from JSON).

    Examples
    --------
    >>> from structkernels.formats.structures import read_record
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


def read_structures(
    path: str | os.PathLike,
    kernel: Any = None,
    *,
    max_depth: int = MAX_RECORD_DEPTH,
    max_bytes: int = MAX_RECORD_BYTES,
    field: str | None = None,
) -> StructureFile:
    """Read a JSON Lines file of structures of one kind.

    Vectors come back as a 2-D float array, the others as lists.  With ``field``
    (``"path"``, ``"tree"``, a reader's key), only that key of each record is read, so
    records holding several structures can be read.  Every record goes through
    :func:`structkernels.utils.loads_record` (``max_depth``, ``max_bytes``); the file may
    be gzip'd.

    Raises
    ------
    InputError
        One line: ``"<file>, line <n> (record <id>): <reason>"``.
    OSError
        The file cannot be read.
    """
    kind = None
    items: list[Any] = []
    records: list[dict] = []
    name = os.fspath(path)
    for lineno, line in iter_lines(path, max_bytes=max_bytes):
        where = f"{name}, line {lineno}"
        if isinstance(line, BadLine):
            raise InputError(f"{where}: {line.reason}")
        try:
            record = loads_record(line, max_depth=max_depth, max_bytes=max_bytes)
        except RecordError as exc:
            raise InputError(f"{where}: {exc.reason}") from None
        if field is not None:
            if not isinstance(record, dict) or field not in record:
                raise InputError(f"{where}: the record has no {field!r}")
            record = {"id": record.get("id"), field: record[field]}
        try:
            k, value = decode_structure(record, kernel)
        except StructureError as exc:
            rid = record.get("id") if isinstance(record, dict) else None
            raise InputError(f"{where}{record_label(rid)}: {one_line(exc)}") from None
        if kind is None:
            kind = k
        elif k != kind:
            raise InputError(f"{where}: a {k} record in a file of {kind} records")
        items.append(value)
        records.append(record if isinstance(record, dict) else {})
    if kind is None:
        raise InputError(f"{name}: no records (empty file)")
    if kind == "vector":
        lengths = {len(v) for v in items}
        if len(lengths) != 1:
            raise InputError(f"{name}: vectors of different lengths {sorted(lengths)}")
        return StructureFile(kind, np.asarray(items, dtype=np.float64), records)
    return StructureFile(kind, items, records)
