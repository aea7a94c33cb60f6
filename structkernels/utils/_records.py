"""JSON records and text lines: one decoder for records, line iterators with limits.

Every reader of user records goes through these, so that hostile input (a record nested
200,000 levels deep, a line of a gigabyte, a gzip bomb, a truncated ``.gz``, a byte-order
mark, bytes that are not UTF-8) gives one line naming the file and the line, within bounded
memory, and never a ``RecursionError`` or a ``MemoryError``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from structkernels.utils._compressed import CHUNK, gzip_problem, open_binary
from structkernels.utils._errors import StructkernelsError

__all__ = ["record_label", "RecordError", "BadLine", "loads_record", "unique_keys", "iter_lines",
           "decode_lines", "split_lines", "one_line", "MAX_RECORD_DEPTH", "MAX_RECORD_BYTES",
           "check_header"]

#: Default nesting limit of one JSON record (arrays and objects).  Anything
#: ``json.dumps`` can write with Python's default recursion limit is shallower.
MAX_RECORD_DEPTH = 1000
#: Default size limit of one record (one line of a JSON Lines file), in bytes.
MAX_RECORD_BYTES = 64 << 20

_BOM = b"\xef\xbb\xbf"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class RecordError(StructkernelsError, ValueError):
    """A record or a file refused by a limit or not decodable: ``"<where>: <reason>"``,
    with the place ``where`` (``"file, line 3"``, or None) and ``reason`` as attributes."""

    def __init__(self, reason: str, where: str | None = None):
        self.reason, self.where = reason, where
        super().__init__(f"{where}: {reason}" if where else reason)


@dataclass(frozen=True)
class BadLine:
    """A line :func:`iter_lines` could not give as text: why, in one line."""

    reason: str


def one_line(value: Any, limit: int | None = None) -> str:
    """``str(value)`` on one line, for a message: any run of white space, line breaks and
    U+2028 included, becomes a space; ``limit`` cuts a long text, marking the cut ``...``.

    Examples
    --------
    >>> one_line("a\\nb\\u2028 c")
    'a b c'
    """
    text = str(value)
    if any(ch in text for ch in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        text = " ".join(text.split())
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 3, 0)] + "..."
    return text


def _json_depth(text: str) -> int:
    """The nesting depth of arrays and objects in a JSON text (brackets in strings do not
    count), without recursion."""
    opens = text.count("[") + text.count("{")
    if opens <= 1:
        return opens
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    import numpy as np  # only for records with nested brackets: keeps start-up light

    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int64)
    return int(np.cumsum(steps).max())


def _not_utf8(exc: UnicodeDecodeError, data: bytes) -> str:
    return f"{exc.reason}: byte 0x{data[exc.start:exc.start + 1].hex()} at column {exc.start + 1}"


def _refuse_constant(name: str) -> Any:
    raise RecordError(f"non-finite number {name} (only finite numbers are accepted)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise RecordError(f"number {text[:40]} overflows to infinity")
    return value


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` for :func:`json.loads`: the object as a dict, or
    :class:`RecordError` naming a key given twice (else the last value would win silently).

    Examples
    --------
    >>> import json
    >>> json.loads('{"a": 1, "a": 2}', object_pairs_hook=unique_keys)
    Traceback (most recent call last):
    ...
    structkernels.utils._records.RecordError: duplicate key 'a' in an object
    """
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise RecordError(f"duplicate key {one_line(repr(key), 80)} in an object")
    return obj


def loads_record(
    text: str | bytes,
    *,
    max_depth: int = MAX_RECORD_DEPTH,
    max_bytes: int = MAX_RECORD_BYTES,
    where: str | None = None,
) -> Any:
    """Decode one JSON record within a depth and a size limit.

    The depth is measured before decoding, without recursion, so any depth is refused
    cleanly.  Invalid JSON, too deep, too large, not UTF-8, ``NaN``/``Infinity``, a number
    that overflows or a key given twice raise one :class:`RecordError` line,
    ``"<where>: <reason>"``; never ``RecursionError`` or ``MemoryError``.

    Examples
    --------
    >>> loads_record('{"path": [[null, "bind"]]}')
    {'path': [[None, 'bind']]}
    >>> loads_record("[" * 5000 + "]" * 5000, where="x.jsonl, line 2")
    Traceback (most recent call last):
    ...
    structkernels.utils._records.RecordError: x.jsonl, line 2: record nested 5000 levels deep; at most max_depth=1000 are read
    """
    if isinstance(text, (bytes, bytearray)):
        if len(text) > max_bytes:
            raise RecordError(f"record of {len(text)} bytes; at most max_bytes={max_bytes}", where)
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(f"not UTF-8 text ({_not_utf8(exc, text)})", where) from None
    elif len(text) * 4 > max_bytes:
        size = len(text.encode("utf-8", errors="surrogatepass"))
        if size > max_bytes:
            raise RecordError(f"record of {size} bytes; at most max_bytes={max_bytes}", where)
    # no more opening brackets than max_depth: cannot be deeper (two C-speed counts)
    depth = 0 if text.count("[") + text.count("{") <= max_depth else _json_depth(text)
    if depth > max_depth:
        raise RecordError(
            f"record nested {depth} levels deep; at most max_depth={max_depth} are read", where
        )
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float,
                          object_pairs_hook=unique_keys)
    except RecordError as exc:
        raise RecordError(exc.reason, where) from None
    except json.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON ({exc.msg}, column {exc.colno})", where) from None
    except RecursionError:
        raise RecordError(f"record nested {depth or _json_depth(text)} levels deep: too deep for "
                          "the JSON decoder here; lower max_depth", where) from None
    except (ValueError, MemoryError) as exc:  # e.g. an integer of more than 4300 digits
        msg = " ".join(str(exc).split())[:200]
        raise RecordError(f"not a usable JSON record ({type(exc).__name__}: {msg})", where) from None


def iter_lines(
    path: str | os.PathLike,
    *,
    max_bytes: int = MAX_RECORD_BYTES,
) -> Iterator[tuple[int, str | BadLine]]:
    """``(line number, text or BadLine)`` of each line of a plain or gzip'd text file.

    Memory stays within about ``max_bytes`` whatever the file holds.  Lines end at
    ``\\n`` or ``\\r\\n`` only (a U+2028 inside a record is text); a UTF-8 byte-order
    mark at the start is dropped; lines of white space are left out.  A line
    that is not UTF-8 or longer than ``max_bytes`` (read past, never held) is a
    :class:`BadLine`; a truncated or corrupt gzip stream gives one last :class:`BadLine`
    numbered after the lines read before it.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = os.path.join(d, "x.jsonl")
    ...     _ = open(f, "wb").write(b'\\xef\\xbb\\xbf{"a": 1}\\n\\n{"b": "\\xe9"}\\n')
    ...     list(iter_lines(f))
    [(1, '{"a": 1}'), (3, BadLine(reason='not UTF-8 text (invalid continuation byte: byte 0xe9 at column 8)'))]
    """
    stream, raw = open_binary(path)
    lineno, in_long_line = 0, False
    try:
        while True:
            line = stream.readline(max_bytes + 2)
            if not line:
                return
            lineno += 1
            if lineno == 1 and line.startswith(_BOM):
                line = line[3:]
            if len(line) - line.endswith(b"\n") > max_bytes:
                size, in_long_line = len(line), True
                while not line.endswith(b"\n"):
                    line = stream.readline(CHUNK)
                    if not line:
                        break
                    size += len(line)
                in_long_line = False
                yield lineno, BadLine(f"line of {size} bytes; at most max_bytes={max_bytes} are read")
                continue
            if line.endswith(b"\n"):
                line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield lineno, BadLine(f"not UTF-8 text ({_not_utf8(exc, line)})")
                continue
            if not text.strip():
                continue
            yield lineno, text
    except (EOFError, OSError, zlib.error) as exc:  # raised only by reading the stream
        if raw is None:
            raise
        if in_long_line:
            yield lineno, BadLine(f"line longer than max_bytes={max_bytes} bytes")
        yield lineno + 1, BadLine(gzip_problem(exc))
    finally:
        stream.close()
        if raw is not None:
            raw.close()


def split_lines(text: str) -> list[str]:
    """Lines split at ``\\n``, ``\\r\\n`` or ``\\r`` only (as editors count them): unlike
    :meth:`str.splitlines`, U+2028, U+0085 and form feeds stay inside a line.

    Examples
    --------
    >>> split_lines("a\\u2028b\\r\\nc\\n")
    ['a\\u2028b', 'c']
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def decode_lines(data: bytes) -> tuple[list[str], dict[int, str]]:
    """Text lines of a file's bytes, and ``{line number: what is wrong}`` for lines not UTF-8.

    A line that is not UTF-8 is decoded with replacement characters (so the records around
    it, and its own id, can still be found) and reported.  A UTF-8 byte-order mark is
    dropped.  Lines end as in :func:`split_lines`.

    Examples
    --------
    >>> decode_lines(b"\\xef\\xbb\\xbfa\\ncaf\\xe9\\n")
    (['a', 'caf\\ufffd'], {2: 'unexpected end of data: byte 0xe9 at column 4'})
    """
    if data.startswith(_BOM):
        data = data[3:]
    with contextlib.suppress(UnicodeDecodeError):
        return split_lines(data.decode("utf-8")), {}
    lines: list[str] = []
    bad: dict[int, str] = {}
    # Latin-1 maps each byte to one character and back: the lines of the bytes, split alike
    raw = split_lines(data.decode("latin-1"))
    for i, ln in enumerate((t.encode("latin-1") for t in raw), 1):
        try:
            lines.append(ln.decode("utf-8"))
        except UnicodeDecodeError as exc:
            bad[i] = _not_utf8(exc, ln)
            lines.append(ln.decode("utf-8", errors="replace"))
    return lines, bad


def record_label(rid: Any) -> str:
    """`` (record <id>)`` for a message, on one line; empty without an id.

    Examples
    --------
    >>> record_label("s1") + "|" + record_label(None)
    ' (record s1)|'
    """
    if rid is None:
        return ""
    text = rid if isinstance(rid, str) else json.dumps(rid, ensure_ascii=False)
    return f" (record {one_line(text, 120)})"


def check_header(
    doc: Any,
    *,
    name: str,
    format: str,
    versions: tuple[int, ...],
    what: str,
    error: type[Exception] = ValueError,
) -> int:
    """Check a data file's ``"format"`` and ``"version"``; returns the version.

    A document of another format, or a version this release does not read, raises
    ``error`` with one line naming the file ``name``.

    Examples
    --------
    >>> check_header({"format": "f", "version": 3}, name="m.json", format="f",
    ...              versions=(1, 2), what="model")
    Traceback (most recent call last):
    ...
    ValueError: m.json: model version 3 is not supported (this release reads 1, 2)
    """
    if not isinstance(doc, dict) or doc.get("format") != format:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise error(f"{name}: not a {what} file (format {format!r} expected, got {got!r})")
    version = doc.get("version")
    if isinstance(version, bool) or version not in versions:
        raise error(f"{name}: {what} version {version!r} is not supported (this release reads "
                    f"{', '.join(map(str, versions))})")
    return int(version)
