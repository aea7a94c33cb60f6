"""Reading a whole file with a bound on what it may become in memory, strictly.

A gzip file of a few kilobytes can decompress to gigabytes (a "gzip bomb").
:func:`read_bounded` reads a file, plain or gzip-compressed (recognised by its
first two bytes), in chunks and stops as soon as the content would exceed
``max_bytes``: memory stays within ``max_bytes`` plus one chunk whatever the
file holds.
"""

from __future__ import annotations

import os

from structkernels.utils._limits import _read_content, _TooLarge

__all__ = ["InputTooLargeError", "CorruptInputError", "read_bounded"]

_LOST = ": the rest of the file is lost"


class InputTooLargeError(ValueError):
    """A file whose content (decompressed) exceeds the allowed size; the message names it."""


class CorruptInputError(ValueError):
    """A compressed file that cannot be decompressed; the message names it."""


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
    # the strict form of read_partial: what it would keep of a damaged file is an error here
    try:
        data, lost = _read_content(name, max_bytes)
    except _TooLarge as exc:
        what = "decompresses to more" if exc.decompressed else "larger"
        raise InputTooLargeError(f"{name}: {what} than {max_bytes} bytes (the limit); refused") from None
    if lost is not None:
        raise CorruptInputError(f"{name}: {lost.removesuffix(_LOST)}")
    return data
