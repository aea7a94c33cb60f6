"""Reading a ``.npy`` file somebody gave you: numbers only, size checked before allocation."""

from __future__ import annotations

import os
from typing import Any

from structkernels.utils._errors import StructkernelsError

__all__ = ["NpyFormatError", "read_npy", "read_npy_header"]


class NpyFormatError(StructkernelsError, ValueError):
    """A ``.npy`` file that cannot be read as a numeric array; the message names the file."""


def read_npy_header(fh: Any, name: str) -> tuple[tuple[int, ...], bool, Any]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` file open in ``fh`` (binary, at
    its start), which is left at the first byte of the data; never unpickles.

    Raises
    ------
    NpyFormatError
        One line naming ``name``: not a ``.npy`` array file.

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
    refused at once instead of running out of memory).  ``max_bytes`` bounds the size.

    Raises
    ------
    NpyFormatError
        One line naming the file: not a ``.npy`` file, a pickle or object
        array, a size the file does not hold, or above ``max_bytes``.

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
