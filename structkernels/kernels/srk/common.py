"""Shared machinery of the string re-writing kernels (Bu, Li & Zhu, ACL 2012).

A re-writing is a pair ``(s, t)`` of token sequences.  ``K_j`` is 0 for ``j > min(|s|, |t|)``
of either re-writing, so windows stop at the longest the input can use; a computation
planned over :func:`memory_budget` is refused (:class:`MemoryBudgetError`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
import warnings
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from structkernels.engine.checks import ZeroSelfSimilarityWarning, normalize_gram
from structkernels.engine.gram import block_ranges
from structkernels.engine.parallel import map_tasks, plan
from structkernels.engine.source import KernelSource
from structkernels.kernels.base import Kernel
from structkernels.utils import (
    MEMORY_BUDGET_ENV,
    CacheFolder,
    NpyFormatError,
    StructkernelsError,
    check_int,
    format_gib,
    memory_budget,
    read_npy,
    save_npy,
)

__all__ = ["MemoryBudgetError", "memory_budget", "Rewriting", "check_rewritings",
           "FeatureKernel", "SRKBase",
           "srk_gram_stack", "sum_normalized", "encode_rewritings", "PairwiseSRK"]

Rewriting = tuple[tuple[str, ...], tuple[str, ...]]

class MemoryBudgetError(StructkernelsError, ValueError, MemoryError):
    """A computation that would need more memory than the budget, refused before allocating:
    a ``ValueError`` (a parameter too large for the input) and a ``MemoryError``."""


def usable_window(X: Sequence[Rewriting], Y: Sequence[Rewriting] | None = None) -> int:
    """The longest window with a k-gram on all four sides of some pair of ``X`` × ``Y``
    (``Y=None``: ``X`` × ``X``).

    Examples
    --------
    >>> usable_window([(("a", "b", "c"), ("d", "e"))], [(("a",) * 9, ("b",) * 9)])
    2
    """
    cx = max((min(len(s), len(t)) for s, t in X), default=0)
    if Y is None:
        return cx
    return min(cx, max((min(len(s), len(t)) for s, t in Y), default=0))


def _check_side(owner: str, i: int, name: str, side: Any) -> tuple[str, ...]:
    if isinstance(side, (str, bytes)):
        raise TypeError(f"{owner}: re-writing {i}: the {name} is a bare {type(side).__name__} "
                        f"({str(side)[:40]!r}); give a sequence of tokens, e.g. "
                        "structkernels.text.tokenize(sentence)")
    if isinstance(side, np.ndarray):
        side = side.tolist()
    if not isinstance(side, (tuple, list)):
        raise TypeError(
            f"{owner}: re-writing {i}: the {name} must be a tuple or list of str tokens, "
            f"got {type(side).__name__}")
    for j, tok in enumerate(side):
        if not isinstance(tok, str):
            raise TypeError(f"{owner}: re-writing {i}: {name} token {j} is a {type(tok).__name__}, "
                            "not a str")
    return tuple(side)


def check_rewritings(X: Any, owner: str = "SRK") -> list[Rewriting]:
    """Validate a list of re-writings ``[(s, t), ...]``; return ``(tuple, tuple)`` pairs.

    A ``TypeError`` naming ``owner`` when ``X`` is a bare string, a record is not a
    ``(source, target)`` pair, or a side is a bare string or holds a non-``str`` token.

    Examples
    --------
    >>> check_rewritings([(["a", "b"], ("c",))])
    [(('a', 'b'), ('c',))]
    """
    if isinstance(X, (str, bytes)):
        raise TypeError(f"{owner} expects a list of re-writings (source tokens, target tokens), "
                        "got a bare string")
    out: list[Rewriting] = []
    for i, rec in enumerate(X):
        if isinstance(rec, (str, bytes)):
            raise TypeError(
                f"{owner}: re-writing {i} is a bare {type(rec).__name__} ({str(rec)[:40]!r}); "
                "each re-writing is a pair (source tokens, target tokens)")
        if not isinstance(rec, (tuple, list)) or len(rec) != 2:
            raise TypeError(
                f"{owner}: re-writing {i} must be a pair (source tokens, target tokens), "
                f"got {type(rec).__name__}"
                + (f" of length {len(rec)}" if isinstance(rec, (tuple, list)) else ""))
        out.append((_check_side(owner, i, "source", rec[0]),
                    _check_side(owner, i, "target", rec[1])))
    return out



class FeatureKernel(Kernel):
    """A kernel on a feature map ``f`` of re-writings: ``f(x) . f(y)`` with ``gamma=None``,
    else ``exp(-gamma ||f(x) - f(y)||^2)``; PSD either way.  Subclasses give
    :meth:`features` and a ``gamma`` parameter (the PR kernel, TF-KLD's)."""

    gamma: float | None

    def features(self, X: Sequence[Rewriting]) -> np.ndarray:
        """The feature rows of ``X``."""
        raise NotImplementedError

    def validate_params(self) -> None:
        g = self.gamma
        if g is not None and (isinstance(g, bool) or not isinstance(g, (int, float)) or not g > 0):
            raise ValueError(f"{type(self).__name__}.gamma must be None or a float > 0, got {g!r}")

    def check_input(self, X: Any) -> list[Rewriting]:
        return check_rewritings(X, type(self).__name__)

    def gram_block(self, X: Sequence[Rewriting], Y: Sequence[Rewriting]) -> np.ndarray:
        fx, fy = self.features(X), self.features(Y)
        if self.gamma is None:
            return fx @ fy.T
        d2 = (fx * fx).sum(1)[:, None] + (fy * fy).sum(1)[None, :] - 2.0 * fx @ fy.T
        return np.exp(-float(self.gamma) * np.maximum(d2, 0.0))

    def diag_block(self, X: Sequence[Rewriting]) -> np.ndarray:
        if self.gamma is not None:
            return np.ones(len(X))
        f = self.features(X)
        return (f * f).sum(1)

def encode_rewritings(X: Sequence[Rewriting], vocab: dict[str, int]) -> tuple[np.ndarray, ...]:
    """``(s_tok, s_off, s_in_t, t_tok, t_off, t_in_s)``: the token ids of all sources (CSR),
    likewise targets, and whether each token occurs in the other side; ``vocab`` grows."""
    tok: tuple[list[int], list[int]] = ([], [])
    inside: tuple[list[bool], list[bool]] = ([], [])
    off = ([0], [0])
    get = vocab.setdefault
    for x in X:
        ids = [[get(w, len(vocab)) for w in side] for side in x]
        for side, other in ((0, 1), (1, 0)):
            seen = set(ids[other])
            tok[side].extend(ids[side])
            inside[side].extend(w in seen for w in ids[side])
            off[side].append(len(tok[side]))
    return tuple(np.asarray(a, dtype=dt) for side in (0, 1)
                 for a, dt in ((tok[side], np.int64), (off[side], np.int64),
                               (inside[side], np.bool_)))


def sum_normalized(stack: np.ndarray, diag_x: np.ndarray, diag_y: np.ndarray) -> np.ndarray:
    """``sum_j K_j / sqrt(diag_x[j] diag_y[j])`` over the leading (window) axis of the raw
    per-window Grams ``stack``; a self-similarity of 0 (a sentence shorter than the window)
    makes its normalised terms 0, with one warning."""
    out = np.zeros(stack.shape[1:], dtype=np.float64)
    for j in range(stack.shape[0]):
        out += normalize_gram(stack[j], diag_x[j], diag_y[j], warn=False)
    bad = int((diag_x[: len(stack)] <= 0).sum() + (diag_y[: len(stack)] <= 0).sum())
    if bad:
        warnings.warn(f"{bad} (structure, window) self-similarities are 0 (sequences shorter "
                      "than the window); those normalised terms are 0",
                      ZeroSelfSimilarityWarning, stacklevel=3)
    return out


class SRKBase(Kernel):
    """Common parameters and block logic of the string re-writing kernels: subclasses set
    ``name`` and implement ``_stack`` and ``_diag_stack`` (the raw ``K_j`` of ``windows``).

    Parameters
    ----------
    k : int, default 1
        Window (k-gram) size; with ``kmax`` the smallest window.
    lam : float in (0, 1], default 1.0
        Wildcard weight λ (the paper uses 1; ps-SRK has no wildcards).
    kmax : int, optional
        The paper's ``K̂_k + ... + K̂_kmax`` (windows cosine-normalised, summed); None: ``K_k``.
    """

    name = "srk"
    preferred_block_size = 256  # re-writings that amortise the encoding of a block

    def __init__(self, k: int = 1, lam: float = 1.0, kmax: int | None = None):
        self.k = k
        self.lam = lam
        self.kmax = kmax

    def windows_for(self, X: Sequence[Rewriting], Y: Sequence[Rewriting] | None = None
                    ) -> list[int]:
        """``k..min(kmax, usable_window(X, Y))``, or ``[k]`` without ``kmax``."""
        if self.kmax is None:
            return [int(self.k)]
        top = min(int(self.kmax), usable_window(X, Y))
        return list(range(int(self.k), top + 1))

    def planned_bytes(self, X: Sequence[Rewriting], Y: Sequence[Rewriting] | None,
                      windows: list[int], diag: bool = False) -> int:
        """Estimated peak memory of :meth:`stack_block` (:meth:`diag_stack` with ``diag``)."""
        n = len(X)
        m = 1 if diag else n if Y is None else len(Y)
        return 16 * max(len(windows), 1) * n * m

    def _check_budget(self, X: Sequence[Rewriting], Y: Sequence[Rewriting] | None,
                      windows: list[int], diag: bool = False) -> None:
        """Refuse (:class:`MemoryBudgetError`) a block planned over :func:`memory_budget`."""
        need, budget = self.planned_bytes(X, Y, windows, diag), memory_budget()
        if need <= budget:
            return
        fits = next((windows[j - 1] for j in range(len(windows) - 1, 0, -1)
                     if self.planned_bytes(X, Y, windows[:j], diag) <= budget), None)
        out = SRKBase.planned_bytes(self, X, Y, windows[:1], diag)
        if fits is not None and self.kmax is not None:
            hint = f"kmax={fits} fits"
        elif out > budget:
            hint = (f"the output alone needs {format_gib(out)}: compute the Gram in blocks "
                    "(structkernels.gram with out= a memory map) or on fewer re-writings")
        else:
            longest = max((max(len(s), len(t)) for s, t in X), default=0)
            hint = (f"the longest sentences ({longest} tokens) need this working memory "
                    f"even for window {windows[0]}: shorten or drop them")
        raise MemoryBudgetError(
            f"{type(self).__name__}(k={self.k}, kmax={self.kmax}) on {len(X)} x "
            f"{len(X) if Y is None else len(Y)} re-writings (windows {windows[0]}..{windows[-1]}) "
            f"would need about {format_gib(need)}, over the memory budget of {format_gib(budget)}; "
            f"{hint} (or raise the budget with ${MEMORY_BUDGET_ENV})")

    def validate_params(self) -> None:
        owner = type(self).__name__
        check_int(self.k, f"{owner}.k", 1)
        check_int(self.kmax, f"{owner}.kmax", 1, allow_none=True)
        if self.kmax is not None and self.kmax < self.k:
            raise ValueError(f"{owner}.kmax must be >= k={self.k}, got {self.kmax!r}")
        lam = self.lam
        if (isinstance(lam, bool) or not isinstance(lam, (int, float, np.floating))
                or not 0.0 < float(lam) <= 1.0):
            raise ValueError(f"{owner}.lam must be a float in (0, 1], got {lam!r}")

    def check_input(self, X: Any) -> list[Rewriting]:
        return check_rewritings(X, type(self).__name__)

    def stack_block(self, X: Sequence[Rewriting], Y: Sequence[Rewriting] | None = None
                    ) -> np.ndarray:
        """Raw ``K_j(X[a], Y[b])`` for the windows :meth:`windows_for`, shape (w, n, m);
        ``Y=None``: ``X`` against itself, each pair computed once."""
        return self._windows_block(X, Y, diag=False)

    def diag_stack(self, X: Sequence[Rewriting]) -> np.ndarray:
        """Raw self-similarities ``K_j(X[a], X[a])``, shape (w, n)."""
        return self._windows_block(X, None, diag=True)

    def _windows_block(self, X, Y, diag: bool) -> np.ndarray:
        windows = self.windows_for(X, Y)
        shape = (len(windows), len(X)) + (() if diag else (len(X if Y is None else Y),))
        if not windows or windows[-1] > usable_window(X, Y) or 0 in shape[1:]:
            return np.zeros(shape)  # every window is 0: no work
        self._check_budget(X, Y, windows, diag)
        return self._diag_stack(X, windows) if diag else self._stack(X, Y, windows)

    def gram_block(self, X: Sequence[Rewriting], Y: Sequence[Rewriting]) -> np.ndarray:
        stack = self.stack_block(X, Y)
        if self.kmax is None:
            return stack[0]
        return sum_normalized(stack, self.diag_stack(X), self.diag_stack(Y))

    def gram_block_symmetric(self, X: Sequence[Rewriting]) -> np.ndarray:
        stack = self.stack_block(X, None)
        if self.kmax is None:
            return stack[0]
        d = np.diagonal(stack, axis1=1, axis2=2).copy()
        return sum_normalized(stack, d, d)

    def diag_block(self, X: Sequence[Rewriting]) -> np.ndarray:
        d = self.diag_stack(X)
        if self.kmax is None:
            return d[0]
        return (d > 0).sum(axis=0).astype(np.float64)

    def pair(self, x: Rewriting, y: Rewriting) -> float:
        return float(self.gram_block([x], [y])[0, 0])


def _stack_task(kernel: SRKBase, X, Y, task, symmetric):
    r0, r1, c0, c1 = task
    if symmetric and r0 == c0:
        return task, kernel.stack_block(X[r0:r1], None)
    return task, kernel.stack_block(X[r0:r1], (X if symmetric else Y)[c0:c1])


def srk_gram_stack(kernel: SRKBase, X: Any, Y: Any = None, *, n_jobs: int | None = None,
                   block_size: int | None = None, cache: str | os.PathLike | None = None,
                   progress: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raw per-window Gram matrices of an SRK and the per-window diagonals, from which every
    ``kmax`` sum is assembled (:func:`sum_normalized`).

    ``(stack, diag_x, diag_y)``, shapes ``(w, len(X), len(Y))``, ``(w, len(X))``, ``(w,
    len(Y))`` (``Y=None``: ``X`` itself); ``cache``: the checked ``.npy`` store of ``gram``.

    Examples
    --------
    >>> from structkernels.kernels.srk.kb import KbSRK
    >>> X = [(("a", "b"), ("b", "a")), (("a",), ("a",))]
    >>> S, dx, dy = srk_gram_stack(KbSRK(k=1, kmax=2), X)
    >>> S.shape, dx.shape
    ((2, 2, 2), (2, 2))
    """
    kernel.validate_params()
    X = kernel.check_input(X)
    Y = None if Y is None else kernel.check_input(Y)
    if cache is None:
        return _stack(kernel, X, Y, n_jobs, block_size, progress)
    key = hashlib.sha256(json.dumps(["srk-stack", KernelSource(kernel, X, Y, checked=True).key()],
                                    sort_keys=True).encode()).hexdigest()
    folder = CacheFolder(cache, "SRK Gram cache")
    n, m, w = len(X), len(X if Y is None else Y), len(kernel.windows_for(X, Y))
    parts = {f"srk-{key}-{part}.npy": 8 * w * size
             for part, size in (("stack", n * m), ("dx", n), ("dy", m))}
    if all(folder.check_file(name, key, size + 4096) for name, size in parts.items()):
        try:
            return tuple(read_npy(folder.file(name), max_bytes=size)
                         for name, size in parts.items())
        except NpyFormatError as exc:  # a pickle, an object array: never loaded
            folder.discard(next(iter(parts)), str(exc))
    out = _stack(kernel, X, Y, n_jobs, block_size, progress)
    for name, array in zip(parts, out, strict=True):
        folder.write_file(name, key, functools.partial(save_npy, array=array))
    return out


def _stack(kernel: SRKBase, X: Sequence, Y: Sequence | None, n_jobs: int | None,
           block_size: int | None, progress: bool | None):
    """:func:`srk_gram_stack` on checked input, run as :func:`plan` says."""
    windows = kernel.windows_for(X, Y)  # beyond: all 0
    symmetric, Y = Y is None, X if Y is None else Y
    n, m = len(X), len(Y)
    need = 8 * len(windows) * n * m  # the stack; each block checks its own working memory
    if need > memory_budget():
        raise MemoryBudgetError(
            f"srk_gram_stack: {len(windows)} windows of {n} x {m} need {format_gib(need)}, over "
            f"the memory budget of {format_gib(memory_budget())} (raise it with "
            f"${MEMORY_BUDGET_ENV})")
    run = plan(kernel, n_jobs, n_evaluations=n * m)
    bs = int(block_size or kernel.preferred_block_size)
    if block_size is None and run.backend == "threads":
        # threads: blocks cost nothing to send, so keep ~16 per worker for balance
        bs = min(bs, max(16, int(np.sqrt(n * m / (16 * run.workers)))))
    tasks = [(r0, r1, c0, c1) for r0, r1 in block_ranges(n, bs) for c0, c1 in block_ranges(m, bs)
             if not (symmetric and c0 < r0)]
    stack = np.zeros((len(windows), n, m), dtype=np.float64)

    def place(task, block) -> None:
        r0, r1, c0, c1 = task
        w = len(block)  # a block's windows: a prefix of ``windows`` (the rest are 0)
        stack[:w, r0:r1, c0:c1] = block
        if symmetric and r0 != c0:
            stack[:w, c0:c1, r0:r1] = block.transpose(0, 2, 1)

    def cost(task) -> int:
        return (task[1] - task[0]) * (task[3] - task[2])

    job = functools.partial(_stack_task, symmetric=symmetric)
    if run.probe_seconds is not None and run.backend == "processes" and len(tasks) > 1:
        # time the first block serially: processes only when the rest is worth them (threads
        # start for nothing, and an SRK evaluation is too dear for a serial block to pay)
        t0 = time.perf_counter()
        place(*job(kernel, X, Y, tasks[0]))
        per_eval = (time.perf_counter() - t0) / cost(tasks[0])
        tasks = tasks[1:]
        run = run.after_probe(per_eval * sum(map(cost, tasks)))
    # placement does not depend on the order in which blocks come back
    for task, block in map_tasks(job, tasks, backend=run, ordered=False, cost=cost,
                                 progress=progress, desc=f"{kernel.name} gram", unit="eval",
                                 shared=(kernel, X, Y)):
        place(task, block)
    if symmetric:
        d = np.diagonal(stack, axis1=1, axis2=2).copy()
        return stack, d, d
    w = len(windows)
    return stack, _pad_windows(kernel.diag_stack(X), w), _pad_windows(kernel.diag_stack(Y), w)


def _pad_windows(d: np.ndarray, w: int) -> np.ndarray:
    """The first ``w`` windows of a diagonal stack, zero rows added if it has fewer."""
    return d[:w] if len(d) >= w else np.concatenate([d, np.zeros((w - len(d),) + d.shape[1:])])


def _feature_matrices(seqs_list, k: int, lam: float, wildcards: bool):
    """Sparse k-gram count matrices of sequence lists in one feature index (with
    ``wildcards``, ``lam ** j`` to each of a k-gram's patterns with ``j`` wildcards)."""
    from scipy.sparse import csr_matrix  # here: scipy loads only when a pairwise SRK runs

    index: dict = {}
    get = index.setdefault
    # each pattern's wildcard positions and weight (without wildcards, the k-gram alone)
    masks = [(frozenset(pos), float(lam) ** j) for j in range(k + 1 if wildcards else 1)
             for pos in combinations(range(k), j)]
    mats = []
    for seqs in seqs_list:
        indptr = [0]
        indices: list[int] = []
        data: list[float] = []
        for seq in seqs:
            row: dict[int, float] = {}
            for a in range(len(seq) - k + 1):
                gram = seq[a:a + k]
                for pos, w in masks:
                    pat = tuple(None if p in pos else gram[p] for p in range(k)) if pos else gram
                    f = get(pat, len(index))
                    row[f] = row.get(f, 0.0) + w
            indices.extend(row.keys())
            data.extend(row.values())
            indptr.append(len(indices))
        mats.append((indptr, indices, data))
    n_feat = max(len(index), 1)
    return [
        csr_matrix((np.asarray(d, dtype=np.float64), np.asarray(i, dtype=np.int64),
                    np.asarray(p, dtype=np.int64)), shape=(len(p) - 1, n_feat))
        for p, i, d in mats
    ]


class PairwiseSRK(SRKBase):
    """An SRK that factorises as ``k_side(s1, s2) * k_side(t1, t2)`` (Examples 1, 2), each
    side an inner product of sparse k-gram (pattern) counts."""

    wildcards = False

    def planned_bytes(self, X, Y, windows, diag=False) -> int:
        """Output, plus the largest window's feature index (``120 + 8 k`` bytes a pattern)."""
        base = super().planned_bytes(X, Y, windows, diag)
        seqs = [q for x in X for q in x]
        if Y is not None and not diag:
            seqs += [q for y in Y for q in y]
        worst = max((sum(max(len(q) - k + 1, 0) for q in seqs)
                     * (2**k if self.wildcards else 1) * (120 + 8 * k) for k in windows), default=0)
        n = len(X)
        m = 1 if diag else n if Y is None else len(Y)
        return base + worst + 16 * n * m

    def _features(self, sets, k: int, side: int) -> list:
        """Feature matrices of one side (0: sources, 1: targets) of each set, one index."""
        return _feature_matrices([[x[side] for x in Z] for Z in sets], k, self.lam,
                                 self.wildcards)

    def _stack(self, X, Y, windows):
        sets = [X] if Y is None else [X, Y]
        out = np.empty((len(windows), len(X), len(sets[-1])))
        for i, k in enumerate(windows):
            Fs, Ft = (self._features(sets, k, side) for side in (0, 1))
            out[i] = (Fs[0] @ Fs[-1].T).toarray() * (Ft[0] @ Ft[-1].T).toarray()
        return out

    def _diag_stack(self, X, windows):
        out = np.empty((len(windows), len(X)))
        for i, k in enumerate(windows):
            sq = [np.asarray(F.multiply(F).sum(axis=1)).ravel()
                  for F in (self._features([X], k, side)[0] for side in (0, 1))]
            out[i] = sq[0] * sq[1]
        return out
