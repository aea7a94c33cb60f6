"""The blocks of a Gram matrix: cutting, computing, placing and writing them."""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Sequence
from itertools import product
from typing import Any, Protocol

import numpy as np

from structkernels.engine.checks import check_kernel_values, normalize_block
from structkernels.utils import njit

__all__ = ["BlockKernel", "FileMatrix", "block_ranges", "block_tasks", "compute_blocks",
           "count_evals", "default_block_size", "guided_chunks", "largest_first", "one_block",
           "task_evals", "write_block", "write_block_file"]


class BlockKernel(Protocol):
    """What the engine needs of a kernel; :class:`structkernels.Kernel` has it all (one with
    ``cosine_normalizes`` is computed as its inner ``kernel``'s Gram, then normalised)."""

    def validate_params(self) -> None: ...

    def check_input(self, X: Any) -> Sequence: ...

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray: ...

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray: ...

    def diag_block(self, X: Sequence) -> np.ndarray: ...

    def get_params(self, deep: bool = True) -> dict[str, Any]: ...


def block_ranges(n: int, block_size: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``range(n)`` in blocks of ``block_size``."""
    return [(s, min(s + block_size, n)) for s in range(0, n, block_size)]


def default_block_size(n: int, m: int) -> int:
    """Blocks of 32 .. 512 rows, about 32 of them over the matrix; never from ``n_jobs``, so
    that a kernel whose values depend on the block gives the same bits with any ``n_jobs``."""
    target = int(np.sqrt(n * m / 32)) if n and m else 1
    return int(min(512, max(32, target)))


def block_tasks(n: int, m: int, block_size: int, symmetric: bool):
    for (r0, r1), (c0, c1) in product(block_ranges(n, block_size), block_ranges(m, block_size)):
        if not symmetric or c0 >= r0:
            yield r0, r1, c0, c1


def one_block(kernel: BlockKernel, task, X, Y, symmetric: bool) -> np.ndarray:
    """One block of kernel values, refused (naming the pair) if any is NaN or infinite."""
    r0, r1, c0, c1 = task
    if symmetric and r0 == c0:
        block = kernel.gram_block_symmetric(X[r0:r1])
    else:
        block = kernel.gram_block(X[r0:r1], (X if symmetric else Y)[c0:c1])
    block = np.asarray(block, dtype=np.float64)
    check_kernel_values(kernel, block, offsets=(r0, c0), names=("X", "X" if symmetric else "Y"))
    return block


@njit(cache=True, nogil=True)
def place_block(out, block, r0, c0, mirror, diagonal):  # pragma: no cover - compiled
    """Copy ``block`` to ``out[r0:, c0:]``; its mirror too (transposed, or the upper triangle
    of a diagonal block onto its lower one).  GIL-free: threads place their own blocks."""
    bn, bm = block.shape
    for i in range(bn):
        for j in range(bm):
            out[r0 + i, c0 + j] = block[i, j]
    if diagonal:
        for j in range(bm):
            for i in range(j):
                out[r0 + j, c0 + i] = block[i, j]
    elif mirror:
        place_transposed(out[c0:c0 + bm, r0:r0 + bn], block)


def _shaped(block: np.ndarray, task) -> np.ndarray:
    """``block`` as C-ordered float64, refused unless of the task's shape."""
    r0, r1, c0, c1 = task
    block = np.ascontiguousarray(block, dtype=np.float64)
    if block.shape != (r1 - r0, c1 - c0):
        raise ValueError(f"a kernel block has shape {block.shape}, expected {(r1 - r0, c1 - c0)}")
    return block


def write_block(out, task, block: np.ndarray, symmetric: bool) -> None:
    """Place a block (and its mirror): the lower triangle is an exact copy of the upper."""
    r0, r1, c0, c1 = task
    block = _shaped(block, task)
    place_block(np.asarray(out), block, r0, c0, symmetric and r0 != c0, symmetric and r0 == c0)


@njit(cache=True, nogil=True)
def place_transposed(out, block):  # pragma: no cover - compiled
    """``out[j, i] = block[i, j]`` in tiles of 32 x 32 (``out`` may be a strided view)."""
    bn, bm = block.shape
    t = 32
    for j0 in range(0, bm, t):
        j1 = min(bm, j0 + t)
        for i0 in range(0, bn, t):
            i1 = min(bn, i0 + t)
            for j in range(j0, j1):
                for i in range(i0, i1):
                    out[j, i] = block[i, j]


class FileMatrix:
    """A C-ordered float64 matrix in the file ``path`` (element ``[0, 0]`` at byte
    ``offset``), written a block at a time with ``pwrite``: nothing maps the file, so the
    process holds only the blocks in hand.  Threads may share one (disjoint blocks)."""

    def __init__(self, path: str | os.PathLike, offset: int, shape: tuple[int, int]):
        self.path = os.fspath(path)
        self.offset = int(offset)
        self.shape = (int(shape[0]), int(shape[1]))
        self._fd = os.open(self.path, os.O_RDWR)

    @staticmethod
    def layout_of(array: Any) -> tuple[str, int, tuple[int, int]] | None:
        """``(path, offset, shape)`` of the file behind ``array`` when it is a whole writable
        float64 ``numpy.memmap`` of two dimensions in C order, else None."""
        if not isinstance(array, np.memmap) or array.filename is None:
            return None
        whole = isinstance(array.base, mmap.mmap)  # a slice's base is the map it was cut from
        if (not whole or array.mode not in ("r+", "w+") or array.ndim != 2
                or array.dtype != np.float64 or not array.flags.c_contiguous):
            return None
        return array.filename, int(array.offset), (int(array.shape[0]), int(array.shape[1]))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> FileMatrix:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _at(self, r: int, c: int) -> int:
        return self.offset + 8 * (r * self.shape[1] + c)

    def write(self, r0: int, c0: int, rows: np.ndarray) -> None:
        """``K[r0:r0 + h, c0:c0 + w] = rows`` (a C-ordered float64 array of shape ``(h, w)``)."""
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        h, w = rows.shape
        if c0 == 0 and w == self.shape[1]:
            pwrite_all(self._fd, rows, self._at(r0, 0))  # whole rows: one stretch of the file
            return
        for i in range(h):
            pwrite_all(self._fd, rows[i], self._at(r0 + i, c0))


def pwrite_all(fd: int, data: np.ndarray, pos: int) -> None:
    view = memoryview(data).cast("B")
    while view:
        k = os.pwrite(fd, view, pos)
        view, pos = view[k:], pos + k


def write_block_file(fm: FileMatrix, task, block: np.ndarray, symmetric: bool) -> None:
    """:func:`write_block` into a file: the block's rows, then its mirror's (the transpose
    formed in memory first), each row one ``pwrite``."""
    r0, r1, c0, c1 = task
    block = _shaped(block, task)
    if symmetric and r0 == c0:
        full = np.empty_like(block)
        place_block(full, block, 0, 0, False, True)  # the upper triangle mirrored, exactly
        fm.write(r0, c0, full)
        return
    fm.write(r0, c0, block)
    if symmetric:
        mirror = np.empty((c1 - c0, r1 - r0), dtype=np.float64)
        place_transposed(mirror, block)
        fm.write(c0, r0, mirror)


def compute_blocks(kernel: BlockKernel, X, Y, tasks, symmetric: bool, file: tuple | None = None,
                   scales=None) -> list:
    """Run a chunk of block tasks (in a worker process or on dask).  With ``file`` (``(path,
    offset, shape)``) each block, normalised by ``scales``, is written there and only its
    coordinates (and a diagonal block's raw diagonal) come back."""
    out = []
    with (contextlib.nullcontext() if file is None else FileMatrix(*file)) as target:
        for task in tasks:
            block = one_block(kernel, task, X, Y, symmetric)
            if target is not None:
                block, d = normalize_block(block, (task[0], task[2]), scales)
                write_block_file(target, task, block, symmetric)
                out.append((*task, None, d))
            else:
                out.append((*task, block, None))
    return out


def count_evals(n: int, m: int, symmetric: bool) -> int:
    return n * (n + 1) // 2 if symmetric else n * m


def task_evals(task, symmetric: bool) -> int:
    r0, r1, c0, c1 = task
    return count_evals(r1 - r0, c1 - c0, symmetric and r0 == c0)


def largest_first(tasks, symmetric: bool) -> list:
    """``tasks`` sorted by evaluations, largest first (stable), so that workers finish
    together; a block is placed by its coordinates, so the order changes no value."""
    return sorted(tasks, key=lambda t: -task_evals(t, symmetric))


def guided_chunks(tasks: list, n_workers: int, symmetric: bool) -> list[list]:
    """``tasks`` (blocks, largest first) cut into chunks by guided self-scheduling: each
    takes ``1 / (2 workers)`` of the evaluations left (at least one block), so the chunks
    shrink and the workers finish together, with a few tasks per worker, not one per block."""
    weights = [task_evals(t, symmetric) for t in tasks]
    left = float(sum(weights))
    chunks, i = [], 0
    while i < len(tasks):
        share = left / (2 * max(1, n_workers))
        j, held = i, 0.0
        while j < len(tasks) and held < share:
            held += weights[j]
            j += 1
        chunks.append(tasks[i:j])
        left -= held
        i = j
    return chunks
