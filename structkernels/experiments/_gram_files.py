"""An evaluation's Gram matrices in files, read a fold at a time.

A relation evaluation needs, for every model and fold, the training rows of its Gram
(``K[tr][:, tr]``, in float64 for the SVM) and the test rows (``K[te][:, tr]``).  Holding
every structure view's whole Gram in memory costs ``8 n²`` bytes each: on BioInfer
(9,666 pairs) 0.75 GB per view, several GB for an evaluation.  Here each view's
normalised Gram is computed into a ``.npy`` file by the engine (which writes its blocks
without mapping the file), stored as float32 (half the disk; the sum of the views and
everything after it is float64), and a fold's slices are gathered by reading the file in
bands of rows (:func:`fold_slices`): the process holds the slices and one band, never the
matrix, and the file's pages stay in the page cache, not in the process.

float32 keeps 24 bits of each normalised value (in ``[-1, 1]`` for a PSD kernel): a
relative error of at most ``2**-24`` (6e-8) per entry.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from structkernels.utils import atomic_open

__all__ = ["GramFile", "fold_slices", "store_float32", "BAND_BYTES"]

#: Bytes of one band of rows read at a time.
BAND_BYTES = 32 << 20


def _header(path: Path) -> tuple[tuple[int, ...], np.dtype, int]:
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        if fortran:
            raise ValueError(f"{path}: a Fortran-ordered array, not a Gram file")
        return tuple(shape), np.dtype(dtype), fh.tell()


class GramFile:
    """A square float matrix in a ``.npy`` file, read in bands of rows without mapping it.

    Parameters
    ----------
    path : path-like
        A C-ordered ``(n, n)`` float32 or float64 ``.npy`` file.
    temporary : bool, default False
        :meth:`remove` deletes the file (one computed for one fold).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "K.npy"
    >>> np.save(f, np.arange(9, dtype=np.float32).reshape(3, 3))
    >>> GramFile(f).to_array()[2].tolist()
    [6.0, 7.0, 8.0]
    """

    def __init__(self, path: str | os.PathLike, temporary: bool = False):
        self.path = Path(path)
        shape, dtype, self.offset = _header(self.path)
        if len(shape) != 2 or shape[0] != shape[1] or dtype not in (np.float32, np.float64):
            raise ValueError(f"{self.path}: a {dtype} array of shape {shape}, not a square "
                             "float Gram")
        self.n = int(shape[0])
        self.dtype = dtype
        self.temporary = temporary

    @property
    def nbytes(self) -> int:
        """The matrix's bytes in the file."""
        return self.n * self.n * self.dtype.itemsize

    def bands(self, band_bytes: int = BAND_BYTES):
        """``(r0, rows)`` for consecutive bands of rows ``rows = K[r0:r0 + h]``."""
        h = max(1, band_bytes // max(1, self.n * self.dtype.itemsize))
        with open(self.path, "rb") as fh:
            for r0 in range(0, self.n, h):
                r1 = min(self.n, r0 + h)
                fh.seek(self.offset + r0 * self.n * self.dtype.itemsize)
                block = np.fromfile(fh, dtype=self.dtype, count=(r1 - r0) * self.n)
                if block.size != (r1 - r0) * self.n:
                    raise ValueError(f"{self.path}: the file ends inside row {r0 + block.size // self.n}")
                yield r0, block.reshape(r1 - r0, self.n)

    def all_finite(self) -> bool:
        """Whether every value is finite (one pass over the file)."""
        return all(np.isfinite(rows).all() for _, rows in self.bands())

    def to_array(self) -> np.ndarray:
        """The whole matrix in memory, float64."""
        out = np.empty((self.n, self.n), dtype=np.float64)
        for r0, rows in self.bands():
            out[r0:r0 + len(rows)] = rows
        return out

    def remove(self) -> None:
        """Delete the file when it is temporary."""
        if self.temporary:
            self.path.unlink(missing_ok=True)


def store_float32(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Write the float64 ``.npy`` Gram ``source`` to ``target`` as float32, a band at a
    time, atomically (``target`` appears complete or not at all)."""
    src = GramFile(source)
    with atomic_open(target, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
                 "fortran_order": False, "shape": (src.n, src.n)})
        for _, rows in src.bands():
            fh.write(np.ascontiguousarray(rows, dtype=np.float32).tobytes())


def fold_slices(files: Sequence[GramFile], train: np.ndarray, test: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(K[train][:, train], K[test][:, train])`` of ``K`` the sum of the files' matrices,
    in float64, added in the order given; each file is read once, a band of rows at a time.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> np.save(d / "a.npy", np.eye(3, dtype=np.float32))
    >>> np.save(d / "b.npy", np.ones((3, 3), dtype=np.float32))
    >>> K_tr, K_te = fold_slices([GramFile(d / "a.npy"), GramFile(d / "b.npy")],
    ...                          np.array([2, 0]), np.array([1]))
    >>> K_tr.tolist(), K_te.tolist()
    ([[2.0, 1.0], [1.0, 2.0]], [[1.0, 1.0]])
    """
    train = np.asarray(train, dtype=np.intp)
    test = np.asarray(test, dtype=np.intp)
    if not files:
        raise ValueError("fold_slices needs at least one Gram file")
    n = files[0].n
    for f in files:
        if f.n != n:
            raise ValueError(f"{f.path}: a Gram over {f.n} items where {n} were expected")
    out = (np.zeros((len(train), len(train))), np.zeros((len(test), len(train))))
    wanted = [(rows, np.argsort(rows, kind="stable")) for rows in (train, test)]
    for f in files:
        for r0, block in f.bands():
            r1 = r0 + len(block)
            for K, (rows, order) in zip(out, wanted, strict=True):
                srt = rows[order]
                a, b = np.searchsorted(srt, r0), np.searchsorted(srt, r1)
                if a == b:
                    continue
                K[order[a:b]] += block[np.ix_(srt[a:b] - r0, train)]
    return out
