"""The PubMed45 labels file (a JSON array or JSON Lines) read into records, and the error a bad
interaction or labels file raises (:class:`InteractionFormatError`)."""

from __future__ import annotations

import json
import os
from typing import Any

from structkernels.utils import (
    MAX_FILE_BYTES,
    BadLine,
    RecordError,
    StructkernelsError,
    decode_lines,
    iter_lines,
    loads_record,
    read_partial,
)

__all__ = ["InteractionFormatError", "read_label_records"]


class InteractionFormatError(StructkernelsError, ValueError):
    """A bad interaction record: names the file, the line and the record id."""


def read_label_records(path: str | os.PathLike) -> list[tuple[str, dict[str, Any]]]:
    """``(where, record)`` pairs of a JSON array file or a JSON Lines file, ``where`` the line
    the record starts on (``"line N"``), each record through
    :func:`structkernels.utils.loads_record`.  A bad JSON Lines line is a
    :class:`~structkernels.utils.BadLine` record; a fault in a JSON array is an
    :class:`InteractionFormatError` naming the file and the line."""
    file = os.fspath(path)
    with open(file, "rb") as fh:
        head = fh.read(1 << 16)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    stripped = head.lstrip()
    if not stripped and len(head) < (1 << 16) - 3:
        raise InteractionFormatError(f"{file}: empty labels file")
    if stripped[:1] == b"[":
        try:
            return _array_records(file)
        except InteractionFormatError:
            if not _first_line_is_a_record(file):
                raise
            # a JSON Lines file whose first record is bad: read it line by line below
    out: list[tuple[str, Any]] = []
    for lineno, line in iter_lines(file):
        if isinstance(line, BadLine):
            out.append((f"line {lineno}", BadLine(line.reason)))
            continue
        try:
            out.append((f"line {lineno}", loads_record(line)))
        except RecordError as exc:
            out.append((f"line {lineno}", BadLine(exc.reason)))
    if not out:
        raise InteractionFormatError(f"{file}: empty labels file")
    return out


def _first_line_is_a_record(file: str) -> bool:
    """Whether the first non-blank line holds a JSON value of its own (or one refused only by
    a limit, or a line not UTF-8) and another line follows: then the file is JSON Lines whose
    first record is bad, not one JSON array spread over lines."""
    lines = iter_lines(file)
    first = next(lines, None)
    if first is None or next(lines, None) is None:
        return False  # one line: a one-line JSON array
    if isinstance(first[1], BadLine):
        return True
    try:
        loads_record(first[1])
    except RecordError as exc:
        return not exc.reason.startswith("not valid JSON")
    return True


def _array_records(file: str) -> list[tuple[str, Any]]:
    try:
        data, lost = read_partial(file, max_bytes=MAX_FILE_BYTES)
    except RecordError as exc:
        raise InteractionFormatError(str(exc)) from None
    if lost is not None:
        raise InteractionFormatError(f"{file}: {lost}")
    lines, bad = decode_lines(data)
    if bad:
        first = min(bad)
        raise InteractionFormatError(f"{file}, line {first}: not UTF-8 text ({bad[first]})")
    text = "\n".join(lines)
    try:
        obj = loads_record(text, max_bytes=MAX_FILE_BYTES)
    except RecordError as exc:
        line = ""
        try:
            json.loads(text)
        except json.JSONDecodeError as jexc:
            line = f", line {jexc.lineno}"
        except (ValueError, RecursionError):
            pass
        raise InteractionFormatError(f"{file}{line}: {exc.reason}") from None
    if not isinstance(obj, list):
        raise InteractionFormatError(f"{file}: a labels file is a JSON array or JSON Lines")
    # the line where each element starts: decode the elements one by one
    dec, pos, out = json.JSONDecoder(), text.index("[") + 1, []
    for rec in obj:
        while text[pos] in " \t\r\n,":
            pos += 1
        _, end = dec.raw_decode(text, pos)
        out.append((f"line {text.count(chr(10), 0, pos) + 1}", rec))
        pos = end
    return out
