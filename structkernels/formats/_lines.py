"""The lines of a text file read one at a time, as :func:`structkernels.utils.decode_lines`
gives them from the whole file: for the readers that stream (PubTator)."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator

from structkernels.utils import MAX_RECORD_BYTES, open_binary

_BOM = b"\xef\xbb\xbf"
_REST = ": the rest of the file is lost"


class LineStream:
    """The decoded lines of ``file``, one at a time: ``not_utf8`` (line -> why) names those
    read so far that are not UTF-8 (given with replacement characters) or over ``max_bytes``
    (given empty), ``lost`` why the rest of a gzip'd file is lost, ``count`` the lines given."""

    def __init__(self, file: str | os.PathLike, max_bytes: int = MAX_RECORD_BYTES):
        self.file = os.fspath(file)
        self.max_bytes = max_bytes
        self.not_utf8: dict[int, str] = {}
        self.lost: str | None = None
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        stream, raw = open_binary(self.file)
        try:
            yield from self._lines(stream, raw is not None)
        finally:
            stream.close()
            if raw is not None:
                raw.close()

    def _read(self, stream, gz: bool, size: int) -> bytes | None:
        try:
            return stream.readline(size)
        except (EOFError, OSError, zlib.error) as exc:
            if not gz:
                raise
            self.lost = ("the gzip data ends early (truncated file)" if isinstance(exc, EOFError)
                         else f"corrupt gzip data ({' '.join(str(exc).split())[:160]})") + _REST
            return None

    def _lines(self, stream, gz: bool) -> Iterator[str]:
        first = True
        while True:
            line = self._read(stream, gz, self.max_bytes + 2)
            if not line:
                return
            if first and line.startswith(_BOM):
                line = line[3:]
            first = False
            if len(line) > self.max_bytes + 1 and not line.endswith(b"\n"):
                size = len(line)
                while line and not line.endswith(b"\n"):
                    line = self._read(stream, gz, 1 << 20)
                    size += len(line or b"")
                self.count += 1
                self.not_utf8[self.count] = (f"line of {size} bytes; at most "
                                             f"{self.max_bytes} are read")
                yield ""
                if line is None:
                    return
                continue
            ended = line.endswith(b"\n")
            body = line[:-2] if line.endswith(b"\r\n") else line[:-1] if ended else line
            parts = body.split(b"\r")
            if not ended and len(parts) > 1 and parts[-1] == b"":
                parts.pop()  # a last line ended by a lone carriage return
            for part in parts:
                self.count += 1
                try:
                    yield part.decode("utf-8")
                except UnicodeDecodeError as exc:
                    byte = part[exc.start:exc.start + 1].hex()
                    self.not_utf8[self.count] = (f"{exc.reason}: byte 0x{byte} at column "
                                                 f"{exc.start + 1}")
                    yield part.decode("utf-8", errors="replace")
