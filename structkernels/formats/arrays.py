"""Compact binary copies of parsed datasets: named NumPy arrays in one ``.npz`` file, read
without pickle and checked (anything unexpected reads as None: the source is parsed again);
strings as one UTF-8 buffer with the end offset of each."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from structkernels.utils import atomic_open

__all__ = ["file_digest", "pack_strings", "unpack_strings", "write_arrays", "read_arrays",
           "arrays_to_bytes", "arrays_from_bytes"]


def file_digest(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def pack_strings(items: Sequence[str | None], *, compress: bool = False) -> dict[str, np.ndarray]:
    """``{"data": uint8, "ends": int64, "null": bool}`` for a list of strings (None allowed)."""
    enc = [b"" if s is None else s.encode("utf-8") for s in items]
    ends = np.cumsum(np.fromiter((len(b) for b in enc), dtype=np.int64, count=len(enc)))
    blob = b"".join(enc)
    if compress:
        blob = zlib.compress(blob, 6)
    return {
        "data": np.frombuffer(blob, dtype=np.uint8),
        "ends": ends.astype(np.int64),
        "null": np.fromiter((s is None for s in items), dtype=bool, count=len(items)),
    }


def unpack_strings(data: np.ndarray, ends: np.ndarray, null: np.ndarray | None = None, *,
                   compressed: bool = False) -> list[str | None]:
    """The strings of :func:`pack_strings`."""
    blob = data.tobytes()
    if compressed:
        blob = zlib.decompress(blob)
    if len(ends) and int(ends[-1]) != len(blob):
        raise ValueError("string buffer and offsets disagree")
    text = blob.decode("utf-8")
    starts = [0, *ends[:-1].tolist()]
    if text.isascii():  # byte offsets are character offsets
        out: list[str | None] = [text[a:b] for a, b in zip(starts, ends.tolist(), strict=True)]
    else:
        out = [blob[a:b].decode("utf-8") for a, b in zip(starts, ends.tolist(), strict=True)]
    if null is not None:
        for i in np.flatnonzero(null).tolist():
            out[i] = None
    return out


def _check_plain(arrays: Mapping[str, np.ndarray]) -> None:
    for name, a in arrays.items():
        if a.dtype == object:
            raise TypeError(f"array {name!r} has dtype object (could only be read with pickle)")


def write_arrays(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """Write named arrays to ``path`` (``.npz``, uncompressed) through a temporary file."""
    _check_plain(arrays)
    with atomic_open(path, "wb", follow_links=False) as fh:
        np.savez(fh, **arrays)


def arrays_to_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """The bytes :func:`write_arrays` writes (for a checked cache entry's content)."""
    _check_plain(arrays)
    with io.BytesIO() as fh:
        np.savez(fh, **arrays)
        return fh.getvalue()


def arrays_from_bytes(data: bytes) -> dict[str, np.ndarray] | None:
    """The named arrays of :func:`arrays_to_bytes`, read without pickle; None when they
    are not such arrays."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {name: z[name] for name in z.files}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return None


def read_arrays(path: str | os.PathLike, spec: Mapping[str, str]) -> dict[str, np.ndarray] | None:
    """The arrays named in ``spec`` (name -> dtype kind: ``"i"``, ``"u"``, ``"b"``, ``"U"``),
    each one-dimensional; None when the file is missing, damaged or not of that form."""
    p = Path(os.fspath(path))
    if not p.is_file():
        return None
    try:
        with np.load(p, allow_pickle=False) as z:
            if set(z.files) != set(spec):
                return None
            out = {name: z[name] for name in spec}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return None
    if any(out[name].ndim != 1 or out[name].dtype.kind != kind for name, kind in spec.items()):
        return None
    return out
