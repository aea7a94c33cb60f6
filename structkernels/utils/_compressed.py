"""Reading plain or gzip'd files within bounds: the one bounded gunzip of the package.

A file is gzip'd when it starts with the gzip magic bytes.  :func:`open_binary`
opens one for streaming (the record readers of :mod:`._records` read its lines);
:func:`read_content` reads a whole one and never holds more than the bound plus
one chunk, however much a "gzip bomb" would decompress to; a truncated or
corrupt stream is reported in one line by :func:`gzip_problem`.  The public
faces are :func:`structkernels.utils.read_bounded` (strict) and
:func:`structkernels.utils.read_partial` (keeps what decompressed before damage).

Nothing here imports another package of structkernels.
"""

from __future__ import annotations

import gzip
import os
import zlib

from structkernels.utils._errors import StructkernelsError

__all__: list[str] = []

_GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20


def open_binary(path: str | os.PathLike):
    """The file opened for reading bytes, decompressed if it starts with the gzip magic."""
    fh = open(path, "rb")  # noqa: SIM115 - returned to the caller
    try:
        magic = fh.read(2)
        fh.seek(0)
    except BaseException:
        fh.close()
        raise
    if magic == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=fh, mode="rb"), fh
    return fh, None


def gzip_problem(exc: BaseException) -> str:
    rest = ": the rest of the file is lost"
    if isinstance(exc, EOFError):
        return f"the gzip data ends early (truncated file){rest}"
    return f"corrupt gzip data ({' '.join(str(exc).split())[:160]}){rest}"


class TooLarge(StructkernelsError):
    """The content exceeds the bound; ``decompressed``: found while gunzipping."""

    def __init__(self, decompressed: bool):
        super().__init__()
        self.decompressed = decompressed


def read_content(path: str | os.PathLike, max_bytes: int) -> tuple[bytes, str | None]:
    """:func:`~structkernels.utils.read_partial` without the message: raises :class:`TooLarge` past the bound.

    The one bounded gunzip of the package (several members, zero padding after
    the last, output never past ``max_bytes`` plus one); the strict
    :func:`structkernels.utils.read_bounded` uses it too.
    """
    with open(path, "rb") as fh:
        head = fh.read(2)
        fh.seek(0)
        if head != _GZIP_MAGIC:
            data = fh.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise TooLarge(decompressed=False)
            return data, None
        out = bytearray()
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        buf = b""
        while True:
            if not buf:
                buf = fh.read(CHUNK)
                if not buf:
                    break
            try:  # one chunk of output at a time: nothing held twice past the bound
                out += d.decompress(buf, min(CHUNK, max_bytes + 1 - len(out)))
            except zlib.error as exc:
                return bytes(out), gzip_problem(exc)
            if len(out) > max_bytes:
                raise TooLarge(decompressed=True)
            buf = d.unconsumed_tail
            if d.eof:
                rest = d.unused_data + buf
                while len(rest) < 2:
                    more = fh.read(CHUNK)
                    if not more:
                        break
                    rest += more
                if rest[:2] == _GZIP_MAGIC:  # another gzip member
                    d, buf = zlib.decompressobj(16 + zlib.MAX_WBITS), rest
                    continue
                while rest:  # only zero padding may follow the last member
                    if rest.strip(b"\0"):
                        return bytes(out), "corrupt gzip data (bytes after the end)"
                    rest = fh.read(CHUNK)
                return bytes(out), None
        if not d.eof:
            return bytes(out), gzip_problem(EOFError())
        return bytes(out), None
