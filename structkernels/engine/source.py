"""Kernel access: the one way structkernels reads kernel values outside a whole Gram matrix.

A :class:`KernelSource` owns the checked input, the diagonal (computed once), the
normalisation (a normalised kernel's values are the inner kernel's, scaled by its inner
diagonal), the finiteness check, the count of evaluations and the cache key;
:class:`PrecomputedSource` serves the same from a user's Gram.  A source never asks what
class a kernel is: fast paths stay behind the kernel's own methods.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.engine._keys import content_hash, kernel_key
from structkernels.engine.checks import (
    PROBE_SIZE,
    NonFiniteKernelValueError,
    check_gram_sample,
    check_kernel_values,
    normalize_gram,
    validation_level,
)
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
    X, Y : sequence
        The structures; ``Y=None``: one set (symmetric blocks).
    checked : bool, default=False
        ``X`` and ``Y`` are already the kernel's checked input (``check_input``).
    diag_x, diag_y : array or None
        Self-similarities known already (of the inner kernel of a normalised one).
    dtype : np.float64 or np.float32, default np.float64
        Arithmetic of columns, tiles, cross blocks and :meth:`full` (blocks are cast).
    n_jobs : int or None, default 1
        Workers of :meth:`full` (the Gram engine).

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
                 checked: bool = False, diag_x: Any = None, diag_y: Any = None,
                 dtype: Any = np.float64, n_jobs: int | None = 1):
        self.kernel = kernel
        self.X = X if checked else kernel.check_input(X)
        self.Y = None if Y is None else (Y if checked else kernel.check_input(Y))
        self.n = len(self.X)
        self.names = ("X", "X") if Y is None else ("X", "Y")
        self.dtype = np.dtype(dtype).type
        self.n_jobs = n_jobs
        #: the inner kernel of a normalised one (its diagonal scales every block), or None
        self.inner = kernel.kernel if getattr(kernel, "cosine_normalizes", False) else None
        self._columns_of: tuple | None = None
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

    task_cost = staticmethod(block_cost)

    def key(self) -> dict:
        """A cache key that changes whenever a value may: the kernel (class, all parameters,
        code versions; :func:`~structkernels.engine._keys.kernel_key`) and the data."""
        data = content_hash(self.X if self.Y is None else (self.X, self.Y))
        return {**kernel_key(self.kernel), "data": data}

    def _side(self, side: str) -> Sequence:
        return self.X if side == "x" or self.Y is None else self.Y

    def raw_diagonal(self, side: str = "x", *, known: bool = False) -> np.ndarray | None:
        """Self-similarities of ``X`` (``side="y"``: of ``Y``) under the kernel, or under the
        inner kernel when it is normalised (the normalisation's scales), computed once;
        ``known=True``: None when not computed yet."""
        key = "x" if side == "x" or self.Y is None else "y"
        d = self._diag[key]
        if d is None and not known:
            S = self._side(key)
            k = self.kernel if self.inner is None else self.inner
            d = self.check(np.asarray(k.diag_block(S), dtype=np.float64), diagonal=True,
                           kernel=k, names=self.names)
            self.count(len(S))
            self._diag[key] = d
        return d

    def diagonal(self, side: str = "x") -> np.ndarray:
        """Self-similarities ``k(x, x)`` of ``X`` (``side="y"``: of ``Y``), computed once
        (a normalised kernel's: 1, or 0 where the inner one is <= 0)."""
        d = self.raw_diagonal(side)
        return d if self.inner is None else (d > 0).astype(np.float64)

    def block(self, rows: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """Raw kernel values ``k(X[rows[i]], Y[cols[j]])`` (``cols=None``: the symmetric
        block of ``rows``), a NaN or infinite one refused naming the pair."""
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
        """``k(X[rows[q]], Y[cols[q]])`` for each ``q``, as the Gram engine's blocks give them
        (within one set, give ``rows[q] < cols[q]`` for exactly a fresh Gram's values): in
        chunks of :data:`PAIR_CHUNK` through ``paired_values``, else row by row; in threads
        with ``n_jobs != 1`` when the kernel releases the GIL."""
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

    # ---------------------------------------------- columns, tiles, cross blocks (dtype)
    def check(self, values: Any, *, kernel: Any = None, **where: Any) -> Any:
        """``values``, refused naming the pair if one is NaN or infinite (in this dtype);
        ``where``: :func:`~structkernels.engine.checks.check_kernel_values`'s keywords."""
        try:
            if not np.isfinite(values).all():
                check_kernel_values(kernel or self.kernel, values, **where)
        except NonFiniteKernelValueError as exc:
            if self.dtype is np.float32 and np.isinf(exc.value):
                raise NonFiniteKernelValueError(
                    f"{str(exc).split('; ')[0]} in float32 (beyond 3.4e38); use "
                    "dtype=np.float64 or scale the input down", exc.index, exc.value) from None
            raise
        return values

    def values(self, A: Sequence, B: Sequence, da: Any = None, db: Any = None, *,
               symmetric: bool = False, offsets: tuple[int, int] = (0, 0), cols: Any = None,
               names: tuple[str, str] = ("X", "X")) -> np.ndarray:
        """Kernel values between checked structures ``A`` and ``B`` in this source's dtype,
        uncounted; a normalised kernel's are the inner kernel's normalised by the inner
        diagonals ``da`` and ``db`` (computed, and counted, when None)."""
        k = self.kernel if self.inner is None else self.inner
        K = k.gram_block_symmetric(A) if symmetric else k.gram_block(A, B)
        if self.inner is None:
            return np.asarray(K, dtype=self.dtype)
        K = np.asarray(K, dtype=np.float64)
        # the raw values first: an overflow there is the kernel's, not the normalisation's
        self.check(K, offsets=offsets, cols=cols, names=names, kernel=k)
        if da is None:
            da = np.asarray(k.diag_block(A), dtype=np.float64)
            self.count(len(A))
        if db is None:
            db = np.asarray(k.diag_block(B), dtype=np.float64)
            self.count(len(B))
        return np.asarray(normalize_gram(K, da, db), dtype=self.dtype)

    def column_function(self) -> Any:
        """The kernel's ``idx -> K[:, idx]`` over ``X`` (:meth:`Kernel.column_function`), once."""
        if self._columns_of is None:
            self._columns_of = (self.kernel.column_function(self.X),)
        return self._columns_of[0]

    def columns(self, idx: Sequence[int]) -> np.ndarray:
        """``K[:, idx]`` of ``X`` (one kernel evaluation per entry)."""
        idx = np.asarray(idx, dtype=np.intp)
        columns_of = self.column_function()
        if columns_of is not None:
            cols = np.asarray(columns_of(idx), dtype=self.dtype)
        else:
            d = None if self.inner is None else self.raw_diagonal()
            cols = self.values(self.X, take(self.X, idx), d, None if d is None else d[idx],
                               cols=idx)
        self.count(cols.size)
        return self.check(cols, cols=idx, names=self.names)

    def tile(self, a: tuple[int, int], b: tuple[int, int]) -> np.ndarray:
        """``K[a0:a1, b0:b1]`` of ``X``; a diagonal tile (``a == b``) through
        ``gram_block_symmetric``.  The first diagonal tile, computed anyway, gives the
        symmetry and PSD probe of kernels validated in full (``Kernel.output_validation``)."""
        sym = a == b
        Xa = self.X[a[0] : a[1]]
        Xb = Xa if sym else self.X[b[0] : b[1]]
        at = (a[0], b[0])
        d = None if self.inner is None else self.raw_diagonal()
        da, db = (None, None) if d is None else (d[a[0] : a[1]], d[b[0] : b[1]])
        block = self.values(Xa, Xb, da, db, symmetric=sym, offsets=at)
        m = a[1] - a[0]
        self.count(m * (m + 1) // 2 if sym else block.size)
        self.check(block, offsets=at, names=self.names)
        if sym and a[0] == 0 and validation_level(self.kernel) == "full":
            t = min(m, PROBE_SIZE)
            check_gram_sample(self.kernel, np.asarray(block[:t, :t], dtype=np.float64))
        return block

    def full(self) -> np.ndarray:
        """The Gram matrix of ``X`` through the Gram engine (``n_jobs``), in this dtype."""
        K, info = self.kernel.gram(self.X, n_jobs=self.n_jobs, return_info=True)
        self.count(info.n_evaluations)
        return self.check(np.asarray(K, dtype=self.dtype), names=self.names)  # float32 casts

    def cross(self, X_new: Sequence, idx: Sequence[int] | None = None, *,
              checked: bool = False) -> np.ndarray:
        """``k(X_new[i], X[j])`` for new structures against all (or the ``idx``) of ``X``."""
        Xn = X_new if checked else self.kernel.check_input(X_new)
        ref = self.X if idx is None else take(self.X, idx)
        names = ("X_new", "X")
        d = None if self.inner is None else self.raw_diagonal()
        d = d if d is None or idx is None else d[np.asarray(idx, dtype=np.intp)]
        block = self.values(Xn, ref, None, d, cols=idx, names=names)
        self.count(block.size)
        return self.check(block, cols=idx, names=names)


def check_precomputed_gram(K: Any, *, n_cols: int | None = None, label: str = "the train Gram matrix",
                           owner: str | None = None, dtype: Any = np.float64) -> np.ndarray:
    """A user's precomputed Gram matrix, checked: dense, 2-D, finite; square when ``n_cols`` is
    None (a training Gram), else a cross Gram with ``n_cols`` columns.  One error line names
    the owner, the matrix (``label``) and the problem.

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

    ``K`` is the square Gram matrix of one set (checked by :func:`check_precomputed_gram`,
    named by ``label``); new structures come as cross Gram matrices (named by
    ``cross_label``).  No kernel evaluations are made.

    Examples
    --------
    >>> src = PrecomputedSource([[4.0, 2.0], [2.0, 9.0]])
    >>> src.diagonal().tolist(), src.block([0], [1]).tolist(), src.cross([[1.0, 3.0]], [1])
    ([4.0, 9.0], [[2.0]], array([[3.]]))
    """

    precomputed = True
    releases_gil = True
    n_evaluations = 0
    inner = None

    def __init__(self, K: Any, *, label: str = "the train Gram matrix", owner: str | None = None,
                 dtype: Any = np.float64, checked: bool = False,
                 cross_label: str = "the cross Gram matrix"):
        self.dtype = np.dtype(dtype).type
        self.K = K if checked else check_precomputed_gram(K, label=label, owner=owner, dtype=dtype)
        self.n = self.K.shape[0]
        self.owner, self.cross_label = owner, cross_label

    task_cost = staticmethod(block_cost)

    def diagonal(self, side: str = "x") -> np.ndarray:
        return np.diag(self.K).copy()

    def block(self, rows: Any, cols: Any = None) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.intp)
        cols = rows if cols is None else np.asarray(cols, dtype=np.intp)
        return self.K[np.ix_(rows, cols)]

    def pairs(self, rows: Any, cols: Any, *, n_jobs: int | None = 1) -> np.ndarray:
        return self.K[np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)]

    def columns(self, idx: Sequence[int]) -> np.ndarray:
        return self.K[:, np.asarray(idx, dtype=np.intp)]

    def tile(self, a: tuple[int, int], b: tuple[int, int]) -> np.ndarray:
        return self.K[a[0] : a[1], b[0] : b[1]]

    def full(self) -> np.ndarray:
        return self.K

    def cross(self, K_new: Any, idx: Sequence[int] | None = None) -> np.ndarray:
        """The user's cross Gram ``K_new`` (new structures x the ``n`` of ``K``), checked;
        its ``idx`` columns only when given."""
        K_new = check_precomputed_gram(K_new, n_cols=self.n, label=self.cross_label,
                                       owner=self.owner, dtype=self.dtype)
        return K_new if idx is None else K_new[:, np.asarray(idx, dtype=np.intp)]

    def key(self) -> dict:
        return {"precomputed": content_hash(self.K)}
