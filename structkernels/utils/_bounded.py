"""Reading a whole file with a bound on what it may become in memory.

A gzip file of a few kilobytes can decompress to gigabytes (a "gzip bomb").
:func:`read_bounded` reads a file, plain or gzip-compressed (recognised by its
first two bytes), in chunks and stops as soon as the content would exceed
``max_bytes``: memory stays within ``max_bytes`` plus one chunk whatever the
file holds.
"""

from __future__ import annotations

import os
import zlib

__all__ = ["InputTooLargeError", "CorruptInputError", "read_bounded", "GZIP_MAGIC"]

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


class InputTooLargeError(ValueError):
    """A file whose content (decompressed) exceeds the allowed size; the message names it."""


class CorruptInputError(ValueError):
    """A compressed file that cannot be decompressed; the message names it."""


def _gunzip_bounded(fh, name: str, max_bytes: int, first: bytes) -> bytes:
    out = bytearray()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending = first
    while True:
        if not pending:
            pending = fh.read(_CHUNK)
            if not pending:
                break
        buf, pending = pending, b""
        while buf:
            # room >= 1 always: max_length=0 would mean "no limit" to zlib
            piece = d.decompress(buf, max_bytes + 1 - len(out))
            out += piece
            if len(out) > max_bytes:
                raise InputTooLargeError(
                    f"{name}: decompresses to more than {max_bytes} bytes (the limit); refused"
                )
            buf = d.unconsumed_tail
            if d.eof:
                rest = d.unused_data + buf + fh.read(2)
                if rest[:2] == GZIP_MAGIC:  # another gzip member follows
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    pending, buf = rest, b""
                    break
                while rest:  # only zero padding may follow the last member (as gzip allows)
                    if rest.strip(b"\0"):
                        raise CorruptInputError(f"{name}: corrupt gzip data (bytes after the end)")
                    rest = fh.read(_CHUNK)
                return bytes(out)
    if not d.eof:
        raise CorruptInputError(f"{name}: corrupt gzip data (truncated: the stream does not end)")
    return bytes(out)


def read_bounded(path: str | os.PathLike, max_bytes: int) -> bytes:
    """The content of ``path``, gunzipped when it starts with the gzip magic bytes.

    Parameters
    ----------
    path : path-like
    max_bytes : int
        The most bytes the content may have (after decompression).

    Raises
    ------
    InputTooLargeError
        The content exceeds ``max_bytes`` (found while reading: at most
        ``max_bytes`` plus one chunk is ever held).
    CorruptInputError
        Broken gzip data.
    OSError
        The file cannot be read.

    Examples
    --------
    >>> import gzip, tempfile, pathlib
    >>> from structkernels.utils import read_bounded, InputTooLargeError
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "bomb.gz"
    >>> _ = f.write_bytes(gzip.compress(b"0" * 10_000_000))
    >>> len(f.read_bytes()) < 20_000
    True
    >>> try:
    ...     read_bounded(f, max_bytes=1_000_000)
    ... except InputTooLargeError as exc:
    ...     print(str(exc).split(": ", 1)[1])
    decompresses to more than 1000000 bytes (the limit); refused
    """
    name = os.fspath(path)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
    with open(name, "rb") as fh:
        first = fh.read(_CHUNK)
        if first[:2] == GZIP_MAGIC:
            try:
                return _gunzip_bounded(fh, name, max_bytes, first)
            except zlib.error as exc:
                raise CorruptInputError(f"{name}: corrupt gzip data ({exc})") from None
        out = bytearray(first)
        while len(out) <= max_bytes:
            chunk = fh.read(min(_CHUNK, max_bytes + 1 - len(out)))
            if not chunk:
                break
            out += chunk
        if len(out) > max_bytes:
            raise InputTooLargeError(f"{name}: larger than {max_bytes} bytes (the limit); refused")
        return bytes(out)
