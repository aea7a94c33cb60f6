"""Reading plain or gzip'd files within bounds: the one bounded gunzip of the package."""

from __future__ import annotations

import gzip
import io
import os
import zlib

from structkernels.utils._atomic import file_kind
from structkernels.utils._errors import StructkernelsError

__all__: list[str] = []

_GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20


class _Replay(io.RawIOBase):
    """An input that can be read only once (a pipe): the bytes read from it already, then
    the rest of it."""

    def __init__(self, head: bytes, fh):
        self.head, self.fh = head, fh

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.head:
            n = min(len(b), len(self.head))
            b[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.fh.read1(len(b))
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self.fh.close()
        super().close()


# a pipe's first bytes, read to tell its format, and the pipe: the next open replays them
_HELD: dict[str, tuple[bytes, io.BufferedReader]] = {}


def read_once(path: str | os.PathLike) -> bool:
    """Whether ``path`` (followed through links, never opened) cannot be opened again to
    read the same bytes: a FIFO, a device or a socket (``/dev/stdin`` on a pipe).

    Examples
    --------
    >>> from structkernels.utils import read_once
    >>> read_once("/dev/null"), read_once(__file__)
    (True, False)
    """
    return file_kind(path) not in ("missing", "file", "folder")


def peek(path: str | os.PathLike, size: int) -> bytes:
    """The first ``size`` raw bytes of ``path``; for an input read once, kept (with the
    open input) for the next :func:`open_plain` of the same path, which replays them."""
    name = os.fspath(path)
    if name not in _HELD and not read_once(name):
        with open(name, "rb") as fh:
            return fh.read(size)
    head, fh = _HELD.pop(name, None) or (b"", open(name, "rb"))  # noqa: SIM115 - kept open
    if len(head) < size:
        try:
            head += fh.read(size - len(head))
        except BaseException:
            fh.close()
            raise
    _HELD[name] = (head, fh)
    return head[:size]


def open_plain(path: str | os.PathLike) -> tuple[io.BufferedReader, bytes]:
    """``path`` opened for reading bytes, and its first two bytes (not consumed): an
    input read once (a pipe) replays what :func:`peek` read of it, and is opened once."""
    name = os.fspath(path)
    held = _HELD.pop(name, None)
    fh = io.BufferedReader(_Replay(*held)) if held else open(name, "rb")  # noqa: SIM115
    try:
        magic = fh.read(2)
        if fh.seekable():
            fh.seek(0)
        else:
            fh = io.BufferedReader(_Replay(magic, fh))
    except BaseException:
        fh.close()
        raise
    return fh, magic


def open_binary(path: str | os.PathLike):
    """The file opened for reading bytes, decompressed if it starts with the gzip magic."""
    fh, magic = open_plain(path)
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
    """:func:`~structkernels.utils.read_partial` without the message: :class:`TooLarge` past
    the bound (several gzip members, zero padding after the last, output never past
    ``max_bytes`` plus one)."""
    fh, head = open_plain(path)
    with fh:
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
