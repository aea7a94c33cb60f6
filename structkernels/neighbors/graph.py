"""Kernel k-nearest-neighbour graphs, exact (blocks of the upper triangle, each reduced to its
top ``k`` at once: memory ``O(block**2 + n k)``) and hashed (Garg et al. 2018, Sec. 4.2: the
kernel evaluated only inside buckets, about ``n ** 1.5`` evaluations).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from structkernels.engine.checks import (
    diagonal_scales,
    normalization_scales,
    probe_when_asked,
)
from structkernels.engine.gram import block_ranges
from structkernels.engine.parallel import map_blocks
from structkernels.engine.source import KernelSource
from structkernels.kernels.base import Kernel, Normalized
from structkernels.kernels.names import as_kernel
from structkernels.neighbors.hashing import KernelLSH, RandomKNNHash, as_structures
from structkernels.neighbors.topk import topk_lines
from structkernels.utils import N_JOBS, Interval, validate_params

__all__ = ["knn_graph", "KNNGraph", "exact_knn_graph", "HASHINGS"]

#: Hash family names accepted by ``hashing=``.
HASHINGS = {"random-knn": RandomKNNHash, "klsh": KernelLSH}


@dataclass
class KNNGraph:
    """A k-nearest-neighbour graph.

    Attributes
    ----------
    indices : ndarray of int64, shape (n, k)
        Neighbours of each row, most similar first; -1 where fewer than ``k`` were found.
    similarities : ndarray of float64, shape (n, k)
        Their kernel values, descending per row; ``-inf`` where missing.
    n_evaluations : int
        Kernel evaluations made, hashing included.
    buckets : list of dict or None
        Per hash table, ``code -> member indices`` (None for the exact graph).
    seconds : float
        Wall time of the construction.
    hashers : list
        The fitted hashers, one per table (empty for the exact graph).

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import knn_graph
    >>> X = np.array([[0.0], [0.1], [1.0], [1.2]])
    >>> g = knn_graph(X, "rbf", k=1)
    >>> g.indices.ravel().tolist()
    [1, 0, 3, 2]
    >>> [r.tolist() for r in g.reverse()]
    [[1], [0], [3], [2]]
    """

    indices: np.ndarray
    similarities: np.ndarray
    n_evaluations: int
    buckets: list[dict[int, np.ndarray]] | None = None
    seconds: float = 0.0
    hashers: list = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.indices.shape[0])

    @property
    def k(self) -> int:
        return int(self.indices.shape[1])

    def neighbors(self, i: int) -> np.ndarray:
        """Neighbours of row ``i`` (most similar first), without the -1 padding."""
        row = self.indices[i]
        return row[row >= 0]

    def reverse(self) -> list[np.ndarray]:
        """For each point, the points having it among their ``k`` neighbours (sorted)."""
        rows = np.repeat(np.arange(self.n, dtype=np.int64), self.k)
        cols = self.indices.ravel()
        ok = cols >= 0
        rows, cols = rows[ok], cols[ok]
        order = np.lexsort((rows, cols))
        rows, cols = rows[order], cols[order]
        bounds = np.searchsorted(cols, np.arange(self.n + 1))
        return [rows[bounds[i] : bounds[i + 1]] for i in range(self.n)]


def line_topk(S: np.ndarray, k: int, line_ids: np.ndarray | None = None,
              other_ids: np.ndarray | None = None, *, transpose: bool = False,
              mask_self: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` largest entries of each row (column if ``transpose``) of ``S`` as ``(line ids,
    other ids, values)`` (ids default to positions): :func:`topk_lines` unscaled, ties to the
    smaller position, ``-inf``/NaN never chosen."""
    S = np.ascontiguousarray(S, dtype=np.float64)
    n_lines, n_other = S.shape[::-1] if transpose else S.shape
    if line_ids is None:
        line_ids = np.arange(n_lines, dtype=np.int64)
    if other_ids is None:
        other_ids = np.arange(n_other, dtype=np.int64)
    return topk_lines(S, line_ids, other_ids, k, transpose, mask_self, _NO_SCALE, _NO_SCALE,
                      False, False)


def merge_topk(
    n: int, k: int, rows: np.ndarray, cols: np.ndarray, sims: np.ndarray, exclude_self: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per-row top ``k`` of candidate triplets: de-duplicated, descending, ties to smaller col."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    sims = np.asarray(sims, dtype=np.float64)
    keep = ~np.isnan(sims)
    if exclude_self:
        keep &= rows != cols
    rows, cols, sims = rows[keep], cols[keep], sims[keep]
    # drop repeated (row, col) pairs (the same pair met in several tables/blocks);
    # of repeats (k(x, y) and k(y, x) may differ in the last bit) keep the largest,
    # so the result does not depend on the order in which workers returned them
    order = np.lexsort((-sims, cols, rows))
    rows, cols, sims = rows[order], cols[order], sims[order]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    rows, cols, sims = rows[first], cols[first], sims[first]
    order = np.lexsort((cols, -sims, rows))
    rows, cols, sims = rows[order], cols[order], sims[order]
    start = np.searchsorted(rows, np.arange(n))
    rank = np.arange(len(rows)) - start[rows]
    top = rank < k
    indices = np.full((n, k), -1, dtype=np.int64)
    similarities = np.full((n, k), -np.inf, dtype=np.float64)
    indices[rows[top], rank[top]] = cols[top]
    similarities[rows[top], rank[top]] = sims[top]
    return indices, similarities


def prepare_kernel(kernel: Any, kernel_params: dict | None = None,
                   normalize: bool | str = False) -> tuple[Kernel, bool]:
    """The base kernel and whether to normalise: a :class:`Normalized` kernel is unwrapped and
    normalised whatever ``normalize`` says; ``normalize="auto"`` normalises kernels whose
    values grow with the structures' size (``Kernel.grows_with_size``)."""
    kern = as_kernel(kernel, **(kernel_params or {}))
    base, norm = (kern.kernel, True) if isinstance(kern, Normalized) else (kern, False)
    if isinstance(normalize, str):
        return base, norm or bool(getattr(base, "grows_with_size", False))
    return base, norm or bool(normalize)


def top_candidates(kernel: Kernel, X: Sequence, Y: Sequence, tasks: list, k: int,
                   scales: tuple | None = None, *, n_jobs: int | None = None,
                   progress: bool | None = None,
                   desc: str = "knn") -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The per-row top-``k`` candidates of the blocks of ``tasks``: ``(rows, cols, sims,
    evaluations)``, normalised by ``scales`` (of ``X`` and ``Y``, :func:`diagonal_scales`).

    A task is ``(row_idx, col_idx, both)``: kernel values between ``X[row_idx]`` and
    ``Y[col_idx]`` (``col_idx=None``: the symmetric block of ``row_idx``); ``both`` also keeps
    the columns' top ``k`` (a graph on one set).  Each block is reduced in the worker
    (:class:`_TopK`, the reduce of :func:`~structkernels.engine.parallel.map_blocks`).
    """
    source = KernelSource(kernel, X, None if Y is X else Y, checked=True)
    reduce = _TopK(k, *(scales or (None, None)))
    found = list(map_blocks(source, tasks, reduce, n_jobs=n_jobs, progress=progress, desc=desc))
    if not found:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), 0
    rows, cols, sims, n_evals = zip(*found, strict=True)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(sims), sum(n_evals)


_NO_SCALE = np.ones(0, dtype=np.float64)


@dataclass
class _TopK:
    """A block's top-``k`` candidates, normalised by the scales ``1 / sqrt(k(x, x))`` of the
    whole sets (or None) and reduced by compiled, GIL-free code, so threads over tasks scale."""

    k: int
    scale_x: np.ndarray | None
    scale_y: np.ndarray | None

    def __call__(self, S: np.ndarray, task: tuple):
        rows, cols, both = task
        k = self.k
        scaled = self.scale_x is not None
        sr = self.scale_x[rows] if scaled else _NO_SCALE
        if cols is None:
            # the upper triangle is mirrored, as the Gram engine does; a structure
            # is never its own neighbour in a graph on one set
            r, c, s = topk_lines(S, rows, rows, k, False, both, sr, sr, scaled, True)
            return r, c, s, len(rows) * (len(rows) + 1) // 2
        sc = self.scale_y[cols] if scaled else _NO_SCALE
        r, c, s = topk_lines(S, rows, cols, k, False, both, sr, sc, scaled, False)
        if both:
            c2, r2, s2 = topk_lines(S, cols, rows, k, True, both, sr, sc, scaled, False)
            r, c, s = np.concatenate([r, c2]), np.concatenate([c, r2]), np.concatenate([s, s2])
        return r, c, s, len(rows) * len(cols)


def _check_common(k: Any, n_jobs: Any) -> None:
    validate_params(None, {"k": k, "n_jobs": n_jobs},
                    {"k": [Interval(Integral, 1, None, closed="left")], "n_jobs": N_JOBS})


def bounded_k(k: int, n: int, name: str = "k", stacklevel: int = 3) -> int:
    """``k`` clipped to ``n``, the structures a row can be compared with, with a warning:
    columns beyond ``n`` would only hold padding (with ``k = 10**9``, ``16 n 10**9`` bytes)."""
    k = int(k)
    if k > max(n, 1):
        warnings.warn(
            f"{name}={k} exceeds the {n} structures; using {name}={max(n, 1)} (a row has at "
            "most that many neighbours)",
            UserWarning,
            stacklevel=stacklevel,
        )
        return max(n, 1)
    return k


def kernel_diagonal(kernel: Kernel, X: Sequence) -> tuple[np.ndarray, int]:
    """``(k(x, x) of X, evaluations)``; self-similarities <= 0 warn as normalising does."""
    d = kernel.diag(X)
    normalization_scales(d, d[:0], stacklevel=3)
    return d, len(X)


def _merged(base: Kernel, X: Sequence, k: int, diag: np.ndarray | None, tasks: list,
            found: list, *, exclude_self: bool, n_jobs: int | None, progress: bool | None,
            desc: str) -> tuple[np.ndarray, np.ndarray, int]:
    """The blocks of ``tasks`` reduced to candidates, with those ``found`` otherwise (``(rows,
    cols, sims)``) and, without ``exclude_self``, each structure itself (its normalised
    self-similarity 1, 0 where ``diag`` is not positive, or the raw one), merged per row:
    ``(indices, similarities, evaluations)``."""
    scales = None if diag is None else (diagonal_scales(diag),) * 2
    r, c, s, n_evals = top_candidates(base, X, X, tasks, k, scales, n_jobs=n_jobs,
                                      progress=progress, desc=desc)
    found = [(r, c, s), *found]
    if not exclude_self:
        # the diagonal was masked in the blocks: put k(x, x) back as a candidate
        idx = np.arange(len(X), dtype=np.int64)
        found.append((idx, idx, base.diag(X) if diag is None else (diag > 0).astype(np.float64)))
        n_evals += len(X) if diag is None else 0
    rows, cols, sims = (np.concatenate(part) for part in zip(*found, strict=True))
    indices, similarities = merge_topk(len(X), k, rows, cols, sims, exclude_self)
    return indices, similarities, n_evals


def exact_knn_graph(X: Any, kernel: str | Kernel, k: int = 4, *, n_jobs: int | None = None,
                    block_size: int = 512, exclude_self: bool = True,
                    progress: bool | None = None) -> KNNGraph:
    """Exact k-NN graph from the upper triangle of blocks (``n (n + 1) / 2`` evaluations).

    Never holds more than one ``block_size`` square block per worker.
    See :func:`knn_graph` for the parameters.

    Examples
    --------
    >>> import numpy as np
    >>> g = exact_knn_graph(np.array([[0.0], [1.0], [3.0]]), "rbf", k=2)
    >>> g.indices.tolist(), g.n_evaluations
    ([[1, 2], [0, 2], [1, 0]], 6)
    """
    t0 = time.perf_counter()
    _check_common(k, n_jobs)
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) \
            or block_size < 1:
        raise ValueError(f"block_size must be an int >= 1, got {block_size!r}")
    base, normalize = prepare_kernel(kernel)
    X = as_structures(base, X, encode=True)
    n = len(X)
    k = bounded_k(k, n)
    probe_when_asked(base, X, n * (n + 1) // 2)
    diag, n_evals = kernel_diagonal(base, X) if normalize else (None, 0)
    blocks = block_ranges(n, min(int(block_size), max(n, 1)))
    tasks = [(np.arange(r0, r1, dtype=np.int64),
              None if c0 == r0 else np.arange(c0, c1, dtype=np.int64), True)
             for bi, (r0, r1) in enumerate(blocks) for c0, c1 in blocks[bi:]]
    indices, sims, ne = _merged(base, X, k, diag, tasks, [], exclude_self=exclude_self,
                                n_jobs=n_jobs, progress=progress, desc="exact knn")
    return KNNGraph(indices, sims, int(n_evals + ne), None, time.perf_counter() - t0)


def build_tables(X: Sequence, kernel: Kernel, hashing: Any, *, n_bits: int | None, n_tables: int,
                 random_state: Any, n_jobs: int,
                 hash_params: dict) -> tuple[list, list[np.ndarray], list[np.ndarray], int]:
    """Fit (or use) one hasher per table; returns hashers, codes, reference similarities, evals."""
    if not isinstance(n_tables, (int, np.integer)) or isinstance(n_tables, bool) or n_tables < 1:
        raise ValueError(f"n_tables must be an int >= 1, got {n_tables!r}")
    if isinstance(hashing, str) and n_tables > max(len(X), 1):
        # each table costs about n ** 1.5 evaluations: n tables cost more than the exact
        # graph's n ** 2 / 2 (and the seeds alone would not fit in memory for 10**9)
        raise ValueError(
            f"n_tables={n_tables} exceeds the {len(X)} structures; more tables than structures "
            "cost more than the exact graph (hashing=None)"
        )
    hashers: list = []
    codes: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    n_evals = 0
    if isinstance(hashing, str):
        seeds = check_random_state(random_state).randint(np.iinfo(np.int32).max, size=n_tables)
        if hashing not in HASHINGS:
            raise ValueError(
                f"unknown hashing {hashing!r}; expected None, one of {sorted(HASHINGS)}, or a "
                "fitted RandomKNNHash/KernelLSH"
            )
        cls = HASHINGS[hashing]
        for seed in seeds:
            try:
                h = cls(kernel, n_bits=n_bits, random_state=int(seed), n_jobs=n_jobs,
                        **hash_params)
            except TypeError as exc:
                raise TypeError(f"bad hash parameter for {cls.__name__}: {exc}") from None
            c, _, S = h.fit_hash(X, return_similarities=True)
            hashers.append(h)
            codes.append(c)
            sims.append(S)
            n_evals += h.n_evaluations_
        return hashers, codes, sims, n_evals
    fitted = list(hashing) if isinstance(hashing, (list, tuple)) else [hashing]
    for h in fitted:
        if not isinstance(h, (RandomKNNHash, KernelLSH)):
            raise TypeError(
                "hashing must be None, 'random-knn', 'klsh', a fitted RandomKNNHash/KernelLSH "
                f"or a list of them; got {type(h).__name__}"
            )
        if not hasattr(h, "reference_indices_"):
            raise ValueError(f"the {type(h).__name__} given as hashing= is not fitted")
    if n_tables not in (1, len(fitted)):
        raise ValueError(
            f"n_tables={n_tables} but {len(fitted)} fitted hasher(s) were given; pass one "
            "fitted hasher per table"
        )
    if hash_params or n_bits is not None:
        raise ValueError("n_bits and hash parameters cannot be given with fitted hashers")
    for h in fitted:
        before = h.n_evaluations_
        codes.append(h.hash(X))
        n_evals += h.n_evaluations_ - before
    return fitted, codes, [None] * len(fitted), n_evals


def group_buckets(codes: np.ndarray) -> dict[int, np.ndarray]:
    """``code -> sorted member indices``."""
    order = np.argsort(codes, kind="stable").astype(np.int64)
    uniq, starts = np.unique(codes[order], return_index=True)
    # no code: no bucket (np.split gives one empty part)
    return dict(zip(uniq.tolist(), np.split(order, starts[1:]), strict=False))


def knn_graph(X: Any, kernel: str | Kernel, k: int = 4, *, hashing: Any = None,
              n_bits: int | None = None, n_tables: int = 1, probe: int = 0,
              n_jobs: int | None = None, random_state: Any = None, exclude_self: bool = True,
              progress: bool | None = None, **hash_params: Any) -> KNNGraph:
    """k-nearest-neighbour graph of ``X`` under ``kernel``, exact or hashed.

    Parameters
    ----------
    X : sequence of structures (or 2-D array for vector kernels)
    kernel : str or Kernel
        A registered name or an instance; a :class:`~structkernels.Normalized`
        kernel is normalised with the self-similarities computed once.
    k : int, default 4
    hashing : None, "random-knn", "klsh", a fitted hasher or a list of them
        None is the exact blocked graph.  A fitted hasher (its reference set
        drawn from any data) hashes ``X`` as is.
    n_bits : int, optional
        Bits per code (default ``ceil(log2(n) / 2)``: about ``sqrt(n)`` per bucket).
    n_tables : int, default 1
        Independent hash tables; candidates are the union over tables.
    probe : {0, 1}, default 0
        1 also compares each bucket with its Hamming-distance-1 neighbours.
    n_jobs : int or None, default None
        joblib workers (hashing and bucket blocks both run through the Gram engine).
    random_state : int, RandomState or None
        Seeds the hash tables.
    exclude_self : bool, default True
        A structure is not its own neighbour.
    progress : bool, optional
        tqdm bar (default: on long work).
    **hash_params
        ``n_reference``, ``subset_size`` (random-knn); ``n_sample``, ``n_per_bit``,
        ``rcond`` (klsh).

    Returns
    -------
    KNNGraph

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import knn_graph
    >>> X = np.random.default_rng(0).normal(size=(400, 2))
    >>> exact = knn_graph(X, "rbf", k=1)
    >>> exact.n_evaluations
    80200
    >>> g = knn_graph(X, "rbf", k=1, hashing="random-knn", random_state=0)
    >>> g.n_evaluations < exact.n_evaluations / 4
    True
    """
    if hashing is None:
        if n_tables != 1 or probe != 0 or n_bits is not None or hash_params:
            raise ValueError(
                "n_bits, n_tables, probe and hash parameters apply only with hashing="
            )
        return exact_knn_graph(
            X, kernel, k, n_jobs=n_jobs, exclude_self=exclude_self, progress=progress
        )
    t0 = time.perf_counter()
    _check_common(k, n_jobs)
    if probe not in (0, 1) or isinstance(probe, bool):
        raise ValueError(f"probe must be 0 (own bucket) or 1 (also Hamming-1 buckets), got {probe!r}")
    base, normalize = prepare_kernel(kernel)
    hash_kernel = Normalized(base) if normalize else base
    X = as_structures(base, X, encode=True)
    n = len(X)
    k = bounded_k(k, n)
    hashers, codes, ref_sims, n_evals = build_tables(
        X, hash_kernel, hashing, n_bits=n_bits, n_tables=n_tables,
        random_state=random_state, n_jobs=n_jobs, hash_params=hash_params,
    )
    diag, ne = kernel_diagonal(base, X) if normalize else (None, 0)
    n_evals += ne
    tasks = []
    tables = []
    for h, c in zip(hashers, codes, strict=True):
        buckets = group_buckets(c)
        tables.append(buckets)
        for code, members in buckets.items():
            tasks.append((members, None, True))
            if probe:
                for j in range(h.n_bits_):
                    other = code ^ (1 << j)
                    if other > code and other in buckets:
                        tasks.append((members, buckets[other], True))
    # the similarities to the reference set are exact kernel values: free candidates
    found = []
    for h, S in zip(hashers, ref_sims, strict=True):
        if S is not None:
            found.append(line_topk(S, k, None, h.reference_indices_, mask_self=True))
            found.append(line_topk(S, k, h.reference_indices_, None, transpose=True,
                                   mask_self=True))
    indices, sims, ne = _merged(base, X, k, diag, tasks, found, exclude_self=exclude_self,
                                n_jobs=n_jobs, progress=progress, desc="hashed knn")
    return KNNGraph(indices, sims, int(n_evals + ne), tables, time.perf_counter() - t0, hashers)
