"""Reading a whole file with a bound on what it may become in memory (a few kilobytes of
gzip can decompress to gigabytes), and a ``.npy`` file of numbers only."""

from __future__ import annotations

import os
import zlib
from typing import Any

from structkernels.utils._compressed import TooLarge, open_binary, peek, read_content, read_once
from structkernels.utils._errors import StructkernelsError
from structkernels.utils._records import RecordError

__all__ = ["InputTooLargeError", "CorruptInputError", "read_bounded", "read_partial",
           "read_head", "MAX_FILE_BYTES", "open_binary", "read_once", "NpyFormatError",
           "read_npy", "read_npy_header"]

#: Default size limit of a whole file read at once (after decompression), in bytes.
MAX_FILE_BYTES = 1 << 30

_LOST = ": the rest of the file is lost"


class InputTooLargeError(StructkernelsError, ValueError):
    """A file whose content (decompressed) exceeds the allowed size; the message names it."""


class CorruptInputError(StructkernelsError, ValueError):
    """A compressed file that cannot be decompressed; the message names it."""


def read_bounded(path: str | os.PathLike, max_bytes: int) -> bytes:
    """The content of ``path``, gunzipped when it starts with the gzip magic bytes: the
    strict form of :func:`read_partial`.

    Content past ``max_bytes`` (found while reading:
    at most ``max_bytes`` plus one chunk is ever held) is an :class:`InputTooLargeError`,
    broken gzip data a :class:`CorruptInputError`.

    Examples
    --------
    >>> import gzip, tempfile, pathlib
    >>> from structkernels.utils import read_bounded, InputTooLargeError
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "bomb.gz"
    >>> _ = f.write_bytes(gzip.compress(b"0" * 10_000_000))  # a small file, a large content
    >>> try:
    ...     read_bounded(f, max_bytes=1_000_000)
    ... except InputTooLargeError as exc:
    ...     print(str(exc).split(": ", 1)[1])
    decompresses to more than 1000000 bytes (the limit); refused
    """
    name = os.fspath(path)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
    try:
        data, lost = read_content(name, max_bytes)
    except TooLarge as exc:
        what = "decompresses to more" if exc.decompressed else "larger"
        raise InputTooLargeError(f"{name}: {what} than {max_bytes} bytes (the limit); refused") from None
    if lost is not None:
        raise CorruptInputError(f"{name}: {lost.removesuffix(_LOST)}")
    return data


def read_partial(
    path: str | os.PathLike, *, max_bytes: int = MAX_FILE_BYTES
) -> tuple[bytes, str | None]:
    """The bytes of a file (gunzipped when it starts with the gzip magic), and what was lost.

    For a truncated or corrupt gzip file: what decompressed before the damage and why the
    rest is lost; else the content and None.  Content past ``max_bytes`` (a gzip bomb) is a
    :class:`RecordError` naming the file.

    Examples
    --------
    >>> import gzip, tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = os.path.join(d, "x.gz")
    ...     _ = open(f, "wb").write(gzip.compress(b"line 1\\nline 2\\n" * 1000)[:-30])
    ...     data, lost = read_partial(f)
    >>> data.startswith(b"line 1"), lost
    (True, 'the gzip data ends early (truncated file): the rest of the file is lost')
    """
    try:
        return read_content(path, max_bytes)
    except TooLarge as exc:
        what = " after decompression" if exc.decompressed else ""
        raise RecordError(f"more than max_bytes={max_bytes} bytes{what}", os.fspath(path)) from None


def read_head(path: str | os.PathLike, size: int = 1 << 16) -> bytes:
    """The first ``size`` bytes of a file's content, gunzipped when it starts with the gzip
    magic, to tell formats apart; ``b""`` when they cannot be read (the full read then says
    why).

    The bytes read here of an input read only once (a named pipe) are given first to
    the next reader that opens it.

    Examples
    --------
    >>> import gzip, tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = os.path.join(d, "x.json.gz")
    ...     _ = open(f, "wb").write(gzip.compress(b'{"format": "x"}' + b" " * 10000))
    ...     read_head(f, 15), read_head(d)
    (b'{"format": "x"}', b'')
    """
    try:
        if read_once(path):
            head = peek(path, size)
            if head[:2] != b"\x1f\x8b":
                return head
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, size)
        stream, raw = open_binary(path)
        try:
            return stream.read(size)
        finally:
            stream.close()
            if raw is not None:
                raw.close()
    except (OSError, EOFError, zlib.error):
        return b""


class NpyFormatError(StructkernelsError, ValueError):
    """A ``.npy`` file that cannot be read as a numeric array; the message names the file."""


def read_npy_header(fh: Any, name: str) -> tuple[tuple[int, ...], bool, Any]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` file open in ``fh`` (binary, at
    its start), which is left at the first byte of the data; never unpickles.  Not a
    ``.npy`` file: an :class:`NpyFormatError` naming ``name``.

    Examples
    --------
    >>> import io, numpy as np
    >>> buf = io.BytesIO()
    >>> np.save(buf, np.zeros((2, 3), dtype=np.float32))
    >>> _ = buf.seek(0)
    >>> read_npy_header(buf, "buf")
    ((2, 3), False, dtype('float32'))
    """
    import numpy as np

    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(fh)
        return np.lib.format.read_array_header_2_0(fh)
    except (ValueError, EOFError, SyntaxError, TypeError) as exc:
        raise NpyFormatError(f"{name}: not a .npy array file ({exc})") from None


def read_npy(path: str | os.PathLike, *, max_bytes: int | None = None) -> Any:
    """The numeric array in the ``.npy`` file ``path``, read without pickle.

    The header is checked before anything is allocated: the dtype must be numeric, and the
    size the shape claims must be what the file holds (a huge claim in a small file is
    refused at once instead of running out of memory) and at most ``max_bytes``; else an
    :class:`NpyFormatError` naming the file.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "x.npy"
    >>> np.save(f, np.eye(2))
    >>> read_npy(f).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    import numpy as np

    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            shape, fortran, dtype = read_npy_header(fh, name)
            if dtype.hasobject or dtype.kind not in "biuf":
                raise NpyFormatError(f"{name}: holds a {dtype} array; only numeric arrays are "
                                     "read (never pickle)")
            claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
            held = os.fstat(fh.fileno()).st_size - fh.tell()
            if claimed != held:
                raise NpyFormatError(f"{name}: the header claims shape {shape} ({claimed} bytes) "
                                     f"but the file holds {held} bytes of data")
            if max_bytes is not None and claimed > max_bytes:
                raise NpyFormatError(f"{name}: {claimed} bytes, above max_bytes={max_bytes}")
            data = np.fromfile(fh, dtype=dtype, count=int(np.prod(shape, dtype=object)))
    except OSError as exc:
        raise NpyFormatError(f"{name}: cannot read ({exc.strerror or exc})") from None
    return data.reshape(shape, order="F" if fortran else "C")
