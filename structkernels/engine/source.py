"""Kernel access: the one way structkernels reads kernel values outside a whole Gram matrix.

A :class:`KernelSource` owns, for one kernel over one or two sets of structures: the
checked input, the diagonal (computed once, cached), the normalisation scales, the
finiteness check that names the pair, the count of kernel evaluations and the cache key.
Consumers (k-NN graphs, σ trials and losses, SRK stacks, the relation evaluation, the
HSIC plugin) ask it for blocks (:meth:`KernelSource.block`), scattered pairs
(:meth:`KernelSource.pairs`) or the diagonal, and run many blocks through
:func:`structkernels.engine.parallel.map_blocks`.  A :class:`PrecomputedSource` serves
the same questions from a Gram matrix given by the user, checked once by
:func:`check_precomputed_gram`, the one validator of precomputed Grams.

Kernel-specific fast paths stay behind the kernel's own methods (``gram_block``,
``gram_block_symmetric``, ``diag_block``, ``paired_values``); a source never asks what
class a kernel is.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.engine._keys import content_hash, kernel_key
from structkernels.engine.checks import check_kernel_values, diagonal_scales
from structkernels.engine.parallel import map_tasks, n_workers, releases_gil
from structkernels.structures import PathList, take
from structkernels.utils import check_finite

__all__ = ["KernelSource", "PrecomputedSource", "check_precomputed_gram"]

#: Pairs per call of a kernel's ``paired_values`` (keeps each call's label tables small).
PAIR_CHUNK = 8192


def block_cost(task: tuple) -> int:
    """Kernel evaluations of a task ``(rows, cols, ...)``: ``n (n + 1) / 2`` when ``cols`` is
    None (a symmetric block), else ``len(rows) * len(cols)``.

    Examples
    --------
    >>> block_cost((range(3), None)), block_cost((range(3), range(2)))
    (6, 6)
    """
    rows, cols = task[0], task[1]
    n = len(rows)
    return n * (n + 1) // 2 if cols is None else n * len(cols)


class KernelSource:
    """Kernel values of ``kernel`` over ``X`` (and ``Y``), checked, counted and keyed.

    Parameters
    ----------
    kernel : Kernel
        A kernel object (``gram_block``, ``gram_block_symmetric``, ``diag_block``,
        ``check_input``).
    X, Y : sequence
        The structures; ``Y=None``: one set (symmetric blocks, ``names`` ``("X", "X")``).
    checked : bool, default=False
        ``X`` and ``Y`` are already the kernel's checked input (``check_input``).
    diag_x, diag_y : array or None
        Self-similarities known already (they are then not computed again).

    Attributes
    ----------
    n_evaluations : int
        Kernel evaluations made through this source in this process.

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import kernel
    >>> src = KernelSource(kernel("linear"), np.array([[1.0], [2.0], [3.0]]))
    >>> src.block(np.array([0, 2]), None).tolist(), src.pairs([0], [2]).tolist()
    ([[1.0, 3.0], [3.0, 9.0]], [3.0])
    >>> src.n_evaluations
    4
    """

    precomputed = False

    def __init__(self, kernel: Any, X: Sequence, Y: Sequence | None = None, *,
                 checked: bool = False, diag_x: Any = None, diag_y: Any = None):
        self.kernel = kernel
        self.X = X if checked else kernel.check_input(X)
        self.Y = None if Y is None else (Y if checked else kernel.check_input(Y))
        self.names = ("X", "X") if Y is None else ("X", "Y")
        self._diag = {"x": None if diag_x is None else np.asarray(diag_x, dtype=np.float64),
                      "y": None if diag_y is None else np.asarray(diag_y, dtype=np.float64)}
        self._count = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ facts
    @property
    def symmetric(self) -> bool:
        """One set of structures (``Y`` is ``X``)."""
        return self.Y is None

    @property
    def releases_gil(self) -> bool:
        """Whether the kernel's blocks run in compiled code without the GIL (threads)."""
        return releases_gil(self.kernel)

    @property
    def n_evaluations(self) -> int:
        return self._count

    def count(self, n: int) -> None:
        """Add ``n`` evaluations made on this source's behalf (thread-safe)."""
        with self._lock:
            self._count += int(n)

    @staticmethod
    def task_cost(task: tuple) -> int:
        """Evaluations of a block task (:func:`block_cost`)."""
        return block_cost(task)

    def key(self) -> dict:
        """A cache key that changes whenever a value may: the kernel (class, all parameters,
        code versions; :func:`~structkernels.engine._keys.kernel_key`) and the data."""
        data = content_hash(self.X if self.Y is None else (self.X, self.Y))
        return {**kernel_key(self.kernel), "data": data}

    # ------------------------------------------------------------------ values
    def _side(self, side: str) -> Sequence:
        return self.X if side == "x" or self.Y is None else self.Y

    def diagonal(self, side: str = "x") -> np.ndarray:
        """Self-similarities ``k(x, x)`` of ``X`` (``side="y"``: of ``Y``), computed once."""
        key = "x" if side == "x" or self.Y is None else "y"
        d = self._diag[key]
        if d is None:
            S = self._side(key)
            d = np.asarray(self.kernel.diag_block(S), dtype=np.float64)
            check_kernel_values(self.kernel, d, diagonal=True, names=self.names)
            self.count(len(S))
            self._diag[key] = d
        return d

    def scales(self, side: str = "x") -> np.ndarray:
        """Normalisation scales ``1 / sqrt(k(x, x))`` (0 where it is <= 0)."""
        return diagonal_scales(self.diagonal(side))

    def block(self, rows: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """Raw kernel values ``k(X[rows[i]], Y[cols[j]])``; ``cols=None``: the symmetric
        block of ``rows`` in ``X`` (the kernel's ``gram_block_symmetric``).

        A NaN or infinite value is refused naming the pair by its positions in the data.
        """
        kernel = self.kernel
        Xr = kernel.check_input(take(self.X, rows))  # as the Gram engine does: kept if encoded
        if cols is None:
            S = np.asarray(kernel.gram_block_symmetric(Xr), dtype=np.float64)
            shape = (len(Xr), len(Xr))
            n = len(Xr) * (len(Xr) + 1) // 2
        else:
            Xc = kernel.check_input(take(self._side("y"), cols))
            S = np.asarray(kernel.gram_block(Xr, Xc), dtype=np.float64)
            shape = (len(Xr), len(Xc))
            n = S.size
        if S.shape != shape:
            raise ValueError(f"a kernel block has shape {S.shape}, expected {shape}")
        check_kernel_values(kernel, S, rows=rows, cols=cols if cols is not None else rows,
                            names=self.names)
        self.count(n)
        return S

    def pairs(self, rows: Any, cols: Any, *, n_jobs: int | None = 1) -> np.ndarray:
        """``k(X[rows[q]], Y[cols[q]])`` for each ``q``, as the Gram engine's blocks give them.

        A kernel with a paired mode (``paired_values``, e.g. the path kernel's compiled
        diagonal mode) takes the pairs in chunks of :data:`PAIR_CHUNK`; the others go
        row by row through ``gram_block``.  With ``n_jobs != 1`` chunks run in threads
        when the kernel's blocks release the GIL; a value does not depend on its chunk.
        For pairs within one set, give ``rows[q] < cols[q]`` (the upper triangle's
        orientation) to get exactly the values of a fresh Gram matrix.
        """
        kernel = self.kernel
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        order = np.lexsort((cols, rows))
        r, c = rows[order], cols[order]
        heads, starts = np.unique(r, return_index=True)
        ends = np.append(starts[1:], len(r))
        X, Y = self.X, self._side("y")
        paired = kernel.paired_values if getattr(kernel, "paired_mode", False) else None
        if paired is not None:
            if isinstance(X, PathList):
                X = X.arrays_only()  # no Path objects carried along
            if isinstance(Y, PathList):
                Y = Y.arrays_only() if Y is not self.X else X
        names = self.names

        def run(chunk: tuple[int, int]) -> np.ndarray:
            lo, hi = chunk
            if paired is not None:
                vals = np.asarray(paired(take(X, r[lo:hi]), take(Y, c[lo:hi])), dtype=np.float64)
                check_kernel_values(kernel, vals, rows=r[lo:hi], cols=c[lo:hi], names=names)
                return vals
            # lo, hi index rows (`heads`) here; their pairs are starts[lo] .. ends[hi - 1]
            out = np.empty(ends[hi - 1] - starts[lo], dtype=np.float64)
            for h in range(lo, hi):
                a, b = starts[h], ends[h]
                block = np.asarray(kernel.gram_block(take(X, r[a : a + 1]), take(Y, c[a:b])),
                                   dtype=np.float64)
                check_kernel_values(kernel, block, rows=r[a : a + 1], cols=c[a:b], names=names)
                out[a - starts[lo] : b - starts[lo]] = block[0]
            return out

        units = len(r) if paired is not None else len(heads)
        workers = n_workers(n_jobs)
        threads = workers > 1 and self.releases_gil
        if paired is not None:
            n_chunks = max(1, -(-units // PAIR_CHUNK))
            if threads and units >= 4096:
                n_chunks = max(n_chunks, 2 * workers)
        elif not threads or len(r) < 4096:
            n_chunks = 1
        else:
            n_chunks = 4 * workers
        bounds = np.linspace(0, units, n_chunks + 1).astype(np.int64)
        chunks = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
        parts = list(map_tasks(run, chunks, n_jobs=n_jobs if threads else 1))
        vals = np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)
        self.count(len(vals))
        out = np.empty(len(rows), dtype=np.float64)
        out[order] = vals
        return out


def check_precomputed_gram(K: Any, *, n_cols: int | None = None, label: str = "the train Gram matrix",
                           owner: str | None = None, dtype: Any = np.float64) -> np.ndarray:
    """A user's precomputed Gram matrix, checked: dense, 2-D, finite; square when ``n_cols`` is
    None (a training Gram), else a cross Gram with ``n_cols`` columns (new structures
    against ``n_cols`` training structures).  The one validator of precomputed Grams: one
    error line names the owner, the matrix (``label``) and the problem.

    Examples
    --------
    >>> check_precomputed_gram([[1.0, 0.5], [0.5, 1.0]]).shape
    (2, 2)
    >>> check_precomputed_gram([[1.0, 0.5]], n_cols=3)
    Traceback (most recent call last):
    ...
    ValueError: kernel='precomputed': the train Gram matrix needs 3 columns (one per training structure): a cross Gram matrix of shape (n_new, 3), got shape (1, 2)
    """
    prefix = f"{owner}: " if owner else ""
    if hasattr(K, "tocsr") and hasattr(K, "nnz"):  # a scipy sparse matrix or array
        raise TypeError(f"{prefix}kernel='precomputed' takes dense Gram matrices, not sparse "
                        "ones (sparse Gram matrices are not supported)")
    K = np.asarray(K, dtype=dtype)
    if K.ndim != 2:
        raise ValueError(f"{prefix}kernel='precomputed' expects {label} as a 2-D Gram matrix, "
                         f"got shape {K.shape}")
    if n_cols is None and K.shape[0] != K.shape[1]:
        raise ValueError(f"{prefix}kernel='precomputed': {label} must be a square Gram matrix, "
                         f"got shape {K.shape}")
    if n_cols is not None and K.shape[1] != n_cols:
        raise ValueError(
            f"{prefix}kernel='precomputed': {label} needs {n_cols} columns (one per training "
            f"structure): a cross Gram matrix of shape (n_new, {n_cols}), got shape {K.shape}"
        )
    check_finite(K, f"{prefix}{label}", ("row", "column"),
                 hint="a kernel value must be a finite number")
    return K


class PrecomputedSource:
    """The questions of :class:`KernelSource` answered from a precomputed Gram matrix.

    ``K`` is the square Gram matrix of one set (checked by :func:`check_precomputed_gram`);
    no kernel evaluations are made.

    Examples
    --------
    >>> src = PrecomputedSource([[4.0, 2.0], [2.0, 9.0]])
    >>> src.diagonal().tolist(), src.block([0], [1]).tolist()
    ([4.0, 9.0], [[2.0]])
    """

    precomputed = True
    releases_gil = True
    symmetric = True
    n_evaluations = 0

    def __init__(self, K: Any, *, label: str = "the train Gram matrix", owner: str | None = None,
                 dtype: Any = np.float64, checked: bool = False):
        self.K = K if checked else check_precomputed_gram(K, label=label, owner=owner, dtype=dtype)
        self.n = self.K.shape[0]

    task_cost = staticmethod(block_cost)

    def diagonal(self, side: str = "x") -> np.ndarray:
        return np.diag(self.K).copy()

    def scales(self, side: str = "x") -> np.ndarray:
        return diagonal_scales(self.diagonal())

    def block(self, rows: Any, cols: Any = None) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.intp)
        cols = rows if cols is None else np.asarray(cols, dtype=np.intp)
        return self.K[np.ix_(rows, cols)]

    def pairs(self, rows: Any, cols: Any, *, n_jobs: int | None = 1) -> np.ndarray:
        return self.K[np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)]

    def key(self) -> dict:
        return {"precomputed": content_hash(self.K)}
