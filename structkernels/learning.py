"""Learning the nonstationary weights σ of a convolution kernel (Algorithm 1).

Garg et al. (2018), "Stochastic learning of nonstationary kernels for natural
language modeling", Sec. 5-6: the tuple kernel of a path (or tree) kernel is
extended to ``k_NS((e_i, n_i), (e_j, n_j)) = σ(e_i) k_e(e_i, e_j) σ(e_j)
k_n(n_i, n_j)`` (Eq. 1), with one binary parameter ``σ(l) ∈ {0, 1}`` per edge
(semantic) label ``l``; ``σ(l) = 0`` makes the kernel ignore every common
substructure that uses an ``l`` tuple.

σ is learned for a k-NN classifier by minimising Loss Function 1 (Sec. 6.1)
on a 1-NN graph of the training data::

    L = Σ_i K(S_i, S_1nn(i); σ) I(y_i ≠ y_1nn(i))  -  Σ_i K(S_i, S_1nn(i); σ) I(y_i = y_1nn(i) = 1)

Rather than building the N × N Gram matrix this needs, Algorithm 1 (Sec. 6.2)
estimates the loss on randomly sampled local neighbourhoods of a global k-NN
graph built with kernel hashing:

1. sort the labels by frequency (descending) and set every σ to 1;
2. build the global k-NN graph ``G`` (k = 4) with the current kernel;
3. for each label ``t``, for ``α`` trials: draw ``β`` inducing points ``r``
   among the structures that contain ``t``; add their neighbours in ``G``
   (``n``), the structures that have them as neighbours (``n̄``) and the
   first neighbours of ``n ∪ n̄`` (``nn``); on the subset ``a = r ∪ n ∪ n̄ ∪
   nn`` build a 1-NN graph with ``σ_t = 0`` and with ``σ_t = 1`` and compute
   the loss of each;
4. set ``σ_t`` to the value with the lower loss summed over the trials.

With ``n_iter > 1`` the whole pass is repeated, rebuilding the global graph
with the σ learned so far (Sec. 7.1.3).  ``sampling="random"`` is the paper's
pure-random baseline (Table 4b): the subset is the ``β`` inducing points alone
and no global graph is built.

Only kernel evaluations on the sampled subsets and the hashed global graph
are made; the learner never forms an N × N Gram matrix.  Within a label's
exact trials no kernel value is computed twice and, for the path kernel,
values that cannot change a first neighbour (for σ_t = 1 or σ_t = 0) are
not computed (see the class Notes); the learned σ is the same as with every trial computed from
scratch.  Every evaluation is counted (``n_evaluations_``, and the ones
avoided in ``n_evaluations_reused_``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import joblib
import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state

from structkernels.gram import gram
from structkernels.kernel import (
    Kernel,
    Normalized,
    check_kernel_values,
    normalization_scales,
)
from structkernels.knn import _scales
from structkernels.progress import tqdm
from structkernels.registry import UnknownNameError, as_kernel, kernels
from structkernels.structures import Path, Tree, take

__all__ = ["NonstationaryLearner", "loss_function_1", "structure_edge_labels"]

MODEL_FORMAT = "structkernels.nonstationary-sigma"
MODEL_VERSION = 1


# --------------------------------------------------------------------- helpers
def structure_edge_labels(x: Any) -> frozenset[str]:
    """The distinct edge labels of a :class:`Path` or :class:`Tree` (the root's ``None`` left out).

    Examples
    --------
    >>> from structkernels import Path
    >>> sorted(structure_edge_labels(Path([(None, "bind-01"), ("ARG1", "enzyme")])))
    ['ARG1']
    """
    if isinstance(x, Path):
        return frozenset(e for e in x.edges if e is not None)
    if isinstance(x, Tree):
        return frozenset(e for e, _ in x.preorder() if e is not None)
    raise TypeError(
        f"NonstationaryLearner learns σ over edge labels of Path or Tree structures, "
        f"got {type(x).__name__}"
    )


def loss_function_1(
    similarities: np.ndarray, y: np.ndarray, y_nn: np.ndarray
) -> tuple[float, float, float]:
    """Loss Function 1 of Garg et al. (2018), Sec. 6.1, on a 1-NN graph.

    Parameters
    ----------
    similarities : ndarray of shape (n,)
        ``K(S_i, S_1nn(i); σ)`` of each structure and its first neighbour.
    y, y_nn : ndarray of shape (n,)
        Binary labels of the structures and of their first neighbours.

    Returns
    -------
    loss : float
        ``penalty - reward``.
    penalty : float
        ``Σ K(S_i, S_1nn(i)) I(y_i ≠ y_1nn(i))``.
    reward : float
        ``Σ K(S_i, S_1nn(i)) I(y_i = y_1nn(i) = 1)``.

    Examples
    --------
    >>> import numpy as np
    >>> loss_function_1(np.array([0.5, 0.9, 0.2]), np.array([1, 1, 0]), np.array([0, 1, 0]))
    (-0.4, 0.5, 0.9)
    """
    s = np.asarray(similarities, dtype=np.float64)
    y = np.asarray(y)
    y_nn = np.asarray(y_nn)
    penalty = float(s[y != y_nn].sum())
    reward = float(s[(y == 1) & (y_nn == 1)].sum())
    return penalty - reward, penalty, reward


def _first_neighbours(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index and similarity of each row's most similar other column (self excluded).

    Ties go to the lowest index, so the result does not depend on anything
    but the matrix.
    """
    S = np.array(S, dtype=np.float64, copy=True)
    np.fill_diagonal(S, -np.inf)
    nn = np.argmax(S, axis=1)
    return nn, S[np.arange(len(S)), nn]


def _with_sigma(base: Kernel, sigma: dict[str, float]) -> Kernel:
    """A copy of ``base`` whose ``sigma`` parameter is ``sigma``."""
    out = clone(base)
    out.set_params(sigma=dict(sigma))
    return out


def _kernel_spec(kernel: Any) -> str:
    """The registered name under which ``kernel`` (a name, class or instance) is saved.

    Files never hold ``module:Class``: a kernel class that is not registered
    is refused here, at save time, with how to register it.
    """
    if isinstance(kernel, str):
        return kernels.resolve_name(kernel)
    cls = kernel if isinstance(kernel, type) else type(kernel)
    try:
        return kernels.name_to_save(cls)
    except UnknownNameError as exc:
        raise ValueError(f"cannot save the model: {exc}") from None


def _resolve_kernel_class(spec: Any) -> type:
    """The registered kernel class a file's ``spec`` names (nothing is imported by name)."""
    return kernels.get(kernels.resolve_name(spec))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


# ------------------------------------------------------------------ one trial
def _subset_losses(
    base: Kernel,
    sigma: dict[str, float],
    label: str,
    X: Sequence,
    y: np.ndarray,
    subset: np.ndarray,
    has_label: np.ndarray,
    normalize: bool,
    hashing: str | None,
    n_bits: int | None,
    exact_below: int,
    seed: int,
) -> dict[str, Any]:
    """Loss of the 1-NN graph on ``X[subset]`` for ``σ_label = 0`` and ``σ_label = 1``.

    Exact subsets compute the Gram matrix once for ``σ_label = 1`` and
    recompute, for ``σ_label = 0``, only the block of the structures that
    contain the label: by Eq. (1) no other value depends on ``σ_label``.
    """
    Xa = [X[i] for i in subset]
    ya = y[subset]
    out: dict[str, Any] = {"size": int(len(subset)), "loss": {}, "penalty": {}, "reward": {}}
    n_eval = 0
    kernels_v = {
        v: _with_sigma(base, {**sigma, label: float(v)}) for v in (0, 1)
    }
    if len(subset) < 2:
        for v in (0, 1):
            out["loss"][v] = out["penalty"][v] = out["reward"][v] = 0.0
        out["n_evaluations"] = 0
        return out
    if hashing is None or len(subset) < exact_below:
        raw1, info = gram(kernels_v[1], Xa, return_info=True)
        n_eval += info.n_evaluations
        raw0 = raw1.copy()
        inside = np.flatnonzero(has_label[subset])
        if len(inside):
            block, info = gram(kernels_v[0], [Xa[i] for i in inside], return_info=True)
            n_eval += info.n_evaluations
            raw0[np.ix_(inside, inside)] = block
        for v, raw in ((0, raw0), (1, raw1)):
            out["loss"][v], out["penalty"][v], out["reward"][v] = _losses_of(raw, ya, normalize)
    else:
        from structkernels.knn import knn_graph

        for v in (0, 1):
            kv = Normalized(kernels_v[v]) if normalize else kernels_v[v]
            g = knn_graph(
                Xa, kv, k=1, hashing=hashing, n_bits=n_bits, n_jobs=1, random_state=seed,
                progress=False,
            )
            n_eval += int(g.n_evaluations)
            nn = np.asarray(g.indices)[:, 0]
            s = np.asarray(g.similarities, dtype=np.float64)[:, 0]
            found = nn >= 0
            loss, pen, rew = loss_function_1(s[found], ya[found], ya[nn[found]])
            out["loss"][v], out["penalty"][v], out["reward"][v] = loss, pen, rew
    out["n_evaluations"] = int(n_eval)
    return out


def _losses_of(raw: np.ndarray, ya: np.ndarray, normalize: bool) -> tuple[float, float, float]:
    """Loss Function 1 of the exact 1-NN graph of a raw (unnormalised) subset Gram matrix."""
    if normalize:
        # pruned pairs hold -inf (they cannot be a first neighbour) and stay -inf when
        # scaled; normalize_gram would refuse them as overflow
        d = np.diag(raw).copy()
        s, _ = normalization_scales(d, d, warn=False)
        K = raw * (s[:, None] * s[None, :])
    else:
        K = raw
    nn, s = _first_neighbours(K)
    return loss_function_1(s, ya, ya[nn])


def _checked(kernel: Kernel, values: Any, rows: np.ndarray, cols: np.ndarray | None = None
             ) -> np.ndarray:
    """``values`` as float64, refused when not finite, naming the pair by its positions in X
    (:func:`~structkernels.kernel.check_kernel_values` with ``rows``/``cols``)."""
    a = np.asarray(values, dtype=np.float64)
    check_kernel_values(kernel, a, rows=rows, cols=cols, names=("X", "X"), diagonal=cols is None)
    return a


def _fill_diagonal(B: np.ndarray, kernel: Kernel, X: Sequence,
                   rows: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Evaluate the self-similarities ``B`` does not know yet (NaN), in place.

    ``B``'s row ``i`` is structure ``X[rows[i]]`` (``X[i]`` without ``rows``).
    Returns the diagonal and the number of kernel evaluations made.
    """
    d = np.diagonal(B).copy()
    new = np.flatnonzero(np.isnan(d))
    if len(new):
        where = new if rows is None else rows[new]
        d[new] = _checked(kernel, kernel.diag_block(take(X, where)), where)
        B[new, new] = d[new]
    return d, int(len(new))


def _known_values(idx: np.ndarray, blocks: list) -> np.ndarray:
    """The ``len(idx)``-square matrix of the values ``blocks`` hold for the pairs of ``idx``.

    ``idx`` are sorted, distinct indices; ``blocks`` a list of ``(indices, raw
    matrix)`` computed earlier with one kernel, NaN where a block left a pair
    out (a pruned block).  NaN where no block holds a pair.
    """
    m = len(idx)
    raw = np.full((m, m), np.nan)
    for bidx, braw in blocks:
        if len(bidx) == 0:
            continue
        pos = np.minimum(np.searchsorted(bidx, idx), len(bidx) - 1)
        p = np.flatnonzero(bidx[pos] == idx)
        if len(p) == 0:
            continue
        q = pos[p]
        sub = braw[np.ix_(q, q)]
        ok = ~np.isnan(sub)
        cur = raw[np.ix_(p, p)]
        cur[ok] = sub[ok]
        raw[np.ix_(p, p)] = cur
    return raw


def _gram_reusing(
    kernel: Kernel, X: Sequence, idx: np.ndarray, blocks: list, n_jobs: int = 1
) -> tuple[np.ndarray, int]:
    """Raw Gram matrix of ``X[idx]`` that evaluates only the pairs no block in ``blocks`` holds.

    ``idx`` are sorted, distinct indices into ``X``; ``blocks`` is a list of
    ``(indices, raw Gram matrix)`` computed earlier with the same kernel (the
    earlier trials of a label).  Values are read from the blocks where both
    structures of a pair are in one block; the rest is computed: the Gram
    matrix of the structures in no block at once, their pairs with the others
    in rectangular blocks (:func:`_new_by_old`), then the missing pairs
    ``(i, j)`` left with ``i < j`` as ``K(X[i], X[j])`` -- the
    orientation of the Gram engine's upper triangle, so every value equals
    the one a fresh ``gram(kernel, X[idx])`` gives (:func:`_pair_values`).  Returns the matrix and
    the number of kernel evaluations made.
    """
    idx = np.asarray(idx, dtype=np.int64)
    m = len(idx)
    raw = _known_values(idx, blocks)
    known = ~np.isnan(raw)
    raw[~known] = 0.0
    n_eval = 0
    is_new = ~np.diagonal(known)
    new = np.flatnonzero(is_new)
    if len(new):
        block, info = gram(kernel, take(X, idx[new]), n_jobs=n_jobs, return_info=True)
        n_eval += int(info.n_evaluations)
        raw[np.ix_(new, new)] = block
        known[np.ix_(new, new)] = True
    if not known.all():
        Xa = kernel.check_input(take(X, idx))
        if len(new) and len(new) < m:
            n_eval += _new_by_old(kernel, Xa, is_new, raw, known, n_jobs)
        lo, hi = np.nonzero(np.triu(~known, 1))
        if len(lo):
            vals = _pair_values(kernel, Xa, lo, hi, n_jobs)
            raw[lo, hi] = vals
            raw[hi, lo] = vals
            n_eval += len(lo)
    return raw, n_eval


def _new_by_old(
    kernel: Kernel, Xa: Sequence, is_new: np.ndarray, raw: np.ndarray, known: np.ndarray,
    n_jobs: int = 1,
) -> int:
    """The pairs (new structure, known structure) of a subset, in rectangular Gram blocks.

    Positions are cut into contiguous ranges; between two ranges ``a < b`` every
    pair has its row before its column, the Gram engine's orientation, so
    ``gram_block(X[new in a], X[old in b])`` and ``gram_block(X[old in a],
    X[new in b])`` give the values a fresh Gram matrix holds.  Pairs inside one
    range are left to :func:`_pair_values`.  Fills ``raw`` and ``known`` and
    returns the number of evaluations.
    """
    from structkernels.gram import releases_gil

    m = len(is_new)
    n_ranges = int(max(1, min(16, m // 32)))
    bounds = np.linspace(0, m, n_ranges + 1).astype(np.int64)
    parts = [np.arange(bounds[a], bounds[a + 1]) for a in range(n_ranges)]
    tasks = []
    for a in range(n_ranges):
        na, oa = parts[a][is_new[parts[a]]], parts[a][~is_new[parts[a]]]
        for b in range(a + 1, n_ranges):
            nb, ob = parts[b][is_new[parts[b]]], parts[b][~is_new[parts[b]]]
            if len(na) and len(ob):
                tasks.append((na, ob))
            if len(oa) and len(nb):
                tasks.append((oa, nb))
    if not tasks:
        return 0

    def run(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return _checked(kernel, kernel.gram_block(take(Xa, rows), take(Xa, cols)), rows, cols)

    workers = 1 if n_jobs == 1 else joblib.effective_n_jobs(n_jobs)
    if workers > 1 and releases_gil(kernel):
        blocks = joblib.Parallel(n_jobs=workers, backend="threading")(
            joblib.delayed(run)(r, c) for r, c in tasks
        )
    else:
        blocks = [run(r, c) for r, c in tasks]
    n_eval = 0
    for (rows, cols), block in zip(tasks, blocks, strict=True):
        raw[np.ix_(rows, cols)] = block
        raw[np.ix_(cols, rows)] = block.T
        known[np.ix_(rows, cols)] = True
        known[np.ix_(cols, rows)] = True
        n_eval += block.size
    return n_eval


def _monotone_in_sigma(kernel: Kernel) -> bool:
    """Whether lowering a σ weight can only lower the kernel's values.

    True for the path kernel with indicator, partial-indicator or word-vector
    label kernels (all non-negative): every term of its sum is a product of
    non-negative tuple similarities and powers of λ, and σ_t = 0 removes the
    terms that use a ``t`` tuple, so ``K(x, y; σ_t = 0) <= K(x, y; σ_t = 1)``.
    Other kernels and user label kernels are not known to have the property.
    """
    from structkernels.kernels.path import PathKernel
    from structkernels.kernels.tuples import (
        IndicatorSimilarity,
        PartialIndicator,
        WordVectorSimilarity,
    )

    if type(kernel) is not PathKernel:
        return False
    try:
        tk = kernel._tuple_kernel()
    except (TypeError, ValueError):
        return False
    return all(
        (isinstance(lk, str) and lk == "indicator")
        or type(lk) in (IndicatorSimilarity, PartialIndicator, WordVectorSimilarity)
        for lk in (tk.edge_kernel, tk.node_kernel)
    )


#: Relative slack of the bound ``K(σ_t = 0) <= K(σ_t = 1)`` against round-off.
_BOUND_SLACK = 1e-9


def _label_block_pruned(
    kernel0: Kernel,
    X: Sequence,
    idx: np.ndarray,
    inside: np.ndarray,
    raw1: np.ndarray,
    blocks: list,
    normalize: bool,
    n_jobs: int = 1,
) -> tuple[np.ndarray, int]:
    """The σ_t = 0 values of the label's block needed by the exact 1-NN graph, and no others.

    ``idx`` are the subset's sorted indices into ``X``, ``inside`` the
    positions of the structures containing the label, ``raw1`` the subset's
    raw σ_t = 1 Gram matrix.  For a kernel monotone in σ
    (:func:`_monotone_in_sigma`), ``K0(i, j) <= K1(i, j)``, so
    ``U = raw1[i, j] s0_i s0_j`` (``s0 = 1 / sqrt(K0(i, i))`` when normalised)
    bounds the σ_t = 0 similarity of a pair from above, while any value
    already known -- a pair with a structure outside the label (unchanged by
    Eq. 1), a value of an earlier trial, one just computed -- bounds each row's
    best similarity ``b_i`` from below.  A pair with ``U < b_i`` and
    ``U < b_j`` is nobody's first neighbour and is not evaluated: each row
    walks its candidates best bound first, in doubling batches, until the
    next bound falls below its best value so far.  Every row's first neighbour and its similarity are then exactly
    those of the full block.

    Returns the block (``len(inside)`` square, NaN where not evaluated) and
    the number of kernel evaluations.
    """
    I = idx[inside]
    m = len(I)
    B, n_eval = _known_values(I, blocks), 0
    XI = kernel0.check_input(take(X, I))
    d, ne = _fill_diagonal(B, kernel0, XI)
    n_eval += ne
    if normalize:
        s0 = _scales(d)
        s1 = _scales(np.diagonal(raw1))
        s1[inside] = s0
    else:
        s0 = np.ones(m)
        s1 = np.ones(len(idx))
    # lower bounds of each inside row's best σ_t = 0 similarity: columns outside the label
    outside = np.ones(len(idx), dtype=bool)
    outside[inside] = False
    lb = np.full(m, -np.inf)
    if outside.any():
        lb = (raw1[np.ix_(inside, outside)] * (s0[:, None] * s1[outside][None, :])).max(axis=1)
    U = raw1[np.ix_(inside, inside)] * (s0[:, None] * s0[None, :])
    U = U + np.abs(U) * _BOUND_SLACK
    np.fill_diagonal(U, -np.inf)
    off = ~np.eye(m, dtype=bool)
    known = ~np.isnan(B) & off
    lb = np.maximum(lb, np.where(known, B * (s0[:, None] * s0[None, :]), -np.inf).max(
        axis=1, initial=-np.inf))
    # each row walks its candidates, best bound first, in doubling batches, and stops at
    # the first whose bound is below the best similarity it has seen (lb only grows, so
    # the candidates are the unknown pairs at or above the row's first lower bound)
    cand = ~known & (U >= lb[:, None])
    order: dict[int, np.ndarray] = {}
    for i in np.flatnonzero(cand.any(axis=1)):
        c = np.flatnonzero(cand[i])
        order[int(i)] = c[np.argsort(-U[i, c], kind="stable")]
    ptr = dict.fromkeys(order, 0)
    step = dict.fromkeys(order, 1)
    while order:
        rows_l, cols_l = [], []
        for i in list(order):
            oi, p = order[i], ptr[i]
            if p >= len(oi) or U[i, oi[p]] < lb[i]:
                del order[i]  # done: no later candidate can beat lb[i]
                continue
            c = oi[p : p + step[i]]
            ptr[i] = p + step[i]
            step[i] *= 2
            c = c[(U[i, c] >= lb[i]) & ~known[i, c]]
            rows_l.append(np.full(len(c), i, dtype=np.int64))
            cols_l.append(c)
        if not rows_l:
            break
        r, c = np.concatenate(rows_l), np.concatenate(cols_l)
        if len(r) == 0:
            continue
        lo, hi = np.minimum(r, c), np.maximum(r, c)
        pairs = np.unique(lo * m + hi)
        lo, hi = pairs // m, pairs % m
        vals = _pair_values(kernel0, XI, lo, hi, n_jobs)
        n_eval += len(lo)
        B[lo, hi] = vals
        B[hi, lo] = vals
        known[lo, hi] = known[hi, lo] = True
        k = vals * (s0[lo] * s0[hi])
        np.maximum.at(lb, lo, k)
        np.maximum.at(lb, hi, k)
    return B, n_eval


def _pair_values(
    kernel: Kernel, X: Sequence, rows: np.ndarray, cols: np.ndarray, n_jobs: int = 1
) -> np.ndarray:
    """``K(X[rows[q]], X[cols[q]])`` for each ``q``, as the Gram engine's upper triangle gives it.

    ``X`` is checked (encoded) input; ``rows[q] < cols[q]``.  Pairs of the
    path kernel go through its compiled diagonal mode on two lists, in chunks
    of ``_PAIR_CHUNK``; other kernels go row by row through ``gram_block``.
    With ``n_jobs != 1`` chunks run in threads when the kernel's compiled
    blocks release the GIL; a value does not depend on its chunk.
    """
    from structkernels.gram import releases_gil
    from structkernels.kernels import _conv_numba as _nb
    from structkernels.kernels.path import PathKernel, PathList

    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    order = np.lexsort((cols, rows))
    r, c = rows[order], cols[order]
    heads, starts = np.unique(r, return_index=True)
    ends = np.append(starts[1:], len(r))
    # the path kernel's compiled diagonal mode takes any list of pairs in one call; chunks
    # of _PAIR_CHUNK pairs keep each call's label tables small
    paired = type(kernel) is PathKernel
    if paired and isinstance(X, PathList) and X._items is not None:
        X = PathList(X.vocab, X.offsets, X.edges, X.nodes)  # no Path objects carried along

    def run(lo: int, hi: int) -> np.ndarray:
        if paired:
            block = kernel._block(take(X, r[lo:hi]), take(X, c[lo:hi]), _nb.MODE_DIAG)
            return _checked(kernel, np.asarray(block, dtype=np.float64)[:, 0], r[lo:hi], c[lo:hi])
        # lo, hi index rows (`heads`) here; their pairs are starts[lo] .. ends[hi - 1]
        out = np.empty(ends[hi - 1] - starts[lo], dtype=np.float64)
        for h in range(lo, hi):
            a, b = starts[h], ends[h]
            block = kernel.gram_block(take(X, r[a : a + 1]), take(X, c[a:b]))
            out[a - starts[lo] : b - starts[lo]] = _checked(kernel, block, r[a : a + 1],
                                                            c[a:b])[0]
        return out

    units = len(r) if paired else len(heads)
    workers = 1 if n_jobs == 1 else joblib.effective_n_jobs(n_jobs)
    if paired:
        n_chunks = max(1, -(-units // _PAIR_CHUNK))
        if workers > 1 and units >= 4096:
            n_chunks = max(n_chunks, 2 * workers)
        bounds = np.linspace(0, units, n_chunks + 1).astype(np.int64)
        chunks = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
    elif workers == 1 or len(r) < 4096 or not releases_gil(kernel):
        chunks = [(0, units)]
    else:
        bounds = np.linspace(0, units, 4 * workers + 1).astype(np.int64)
        chunks = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
    if units == 0:
        parts = []
    elif len(chunks) == 1 or workers == 1 or not releases_gil(kernel):
        parts = [run(*ch) for ch in chunks]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers) as pool:  # results in chunk order
            parts = list(pool.map(lambda ch: run(*ch), chunks))
    vals = np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)
    out = np.empty(len(rows), dtype=np.float64)
    out[order] = vals
    return out


#: Pairs per compiled call of :func:`_pair_values` (path kernel).
_PAIR_CHUNK = 8192

#: Relative slack of the chain bound (:func:`_chain_bound`) against round-off.
_CHAIN_SLACK = 1e-9


def _chain_bound_setup(kernels_v: dict, X: Sequence) -> tuple[np.ndarray, dict] | None:
    """Edge-label counts of ``X`` and each kernel's weights ``λ² σ(e)²``, for :func:`_chain_bound`.

    Returns ``(C, w)``: ``C[i, e]`` the number of tuples of ``X[i]`` with edge
    label ``e`` (the root's missing edge is a label of its own), ``w[v][e]``
    the weight of label ``e`` under ``kernels_v[v]``; None when the bound is
    not known to hold: a kernel other than the path kernel, an edge kernel
    other than the indicator, or a node kernel that can exceed 1 (only the
    indicator and :class:`~structkernels.kernels.tuples.PartialIndicator` qualify).
    """
    from structkernels.kernels.path import PathKernel, PathList
    from structkernels.kernels.tuples import IndicatorSimilarity, PartialIndicator

    if not isinstance(X, PathList) or any(type(k) is not PathKernel for k in kernels_v.values()):
        return None
    w = {}
    ids = np.unique(X.edges)
    for v, kern in kernels_v.items():
        try:
            tk = kern._tuple_kernel()
        except (TypeError, ValueError):
            return None
        if not (isinstance(tk.edge_kernel, str) and tk.edge_kernel == "indicator"):
            return None
        nk = tk.node_kernel
        if not ((isinstance(nk, str) and nk == "indicator") or type(nk) is IndicatorSimilarity
                or (type(nk) is PartialIndicator and 0.0 <= float(nk.mismatch) <= 1.0)):
            return None
        sig = np.ones(len(X.vocab), dtype=np.float64)
        for s in (tk.sigma, kern.sigma):
            for label, weight in (s or {}).items():
                i = X.vocab.get(label)
                if i > 0:
                    sig[i] *= float(weight)
        lam = float(kern.lam)
        w[v] = lam * lam * sig[ids] ** 2
    col = np.searchsorted(ids, X.edges)
    rows = np.repeat(np.arange(len(X)), np.diff(X.offsets))
    C = np.zeros((len(X), len(ids)), dtype=np.float64)
    np.add.at(C, (rows, col), 1.0)
    return C, w


def _chain_bound(C: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Upper bounds of the raw path kernel between the rows of ``C`` (edge-label counts).

    The path kernel sums, over chains of matched tuple pairs ``(s_1, t_1), ...,
    (s_k, t_k)`` increasing in both paths, ``Π λ² m_q`` times ``λ`` per
    skipped position, with ``m_q <= σ(e)² [e_s = e_t]`` (indicator edge kernel,
    node similarity at most 1) and ``λ <= 1``.  A chain uses each position of
    ``x`` at most once, so the sum is at most the sum over all choices of
    "no partner or one partner with the same label" per position of ``x``::

        K(x, y) <= Π_s (1 + λ² σ(e_s)² c_y(e_s)) - 1 = exp(Σ_e c_x(e) log(1 + w_e c_y(e))) - 1

    and the same with ``x`` and ``y`` swapped; the smaller is returned.  Every
    term is non-negative; the exponent is one matrix product.
    """
    L = C @ np.log1p(w[None, :] * C).T
    return np.expm1(np.minimum(L, L.T))


def _walk(U: np.ndarray, known: np.ndarray, best: np.ndarray, evaluate) -> None:
    """Evaluate the unknown pairs of a square matrix that can be some row's first neighbour.

    ``U`` bounds each pair's (normalised) similarity from above, ``known``
    marks pairs whose value is known, ``best`` holds each row's best known
    similarity (updated in place).  A pair ``(i, j)`` is evaluated unless
    ``U[i, j] < best[i]`` and ``U[i, j] < best[j]``: first each row's most
    promising pair, then every candidate in descending order of ``U`` in
    doubling batches, the bests rising as values come in; ``best`` only grows,
    so a pair skipped stays skippable, and every pair whose value can reach a
    row's best (ties included: ``U`` holds a slack) is evaluated.
    ``evaluate(lo, hi)`` computes and stores the pairs (``lo < hi``) and
    returns their similarities.
    """
    m = len(best)
    cand = np.triu(~known, 1)
    if not cand.any():
        return
    # each row's most promising unknown pair first: every row gets a best quickly
    Um = np.where(cand | cand.T, U, -np.inf)
    j = np.argmax(Um, axis=1)
    rows = np.flatnonzero(Um[np.arange(m), j] > -np.inf)
    lo, hi = np.minimum(rows, j[rows]), np.maximum(rows, j[rows])
    first = np.unique(lo * m + hi)
    lo, hi = first // m, first % m
    if len(lo):
        vals = evaluate(lo, hi)
        np.maximum.at(best, lo, vals)
        np.maximum.at(best, hi, vals)
        cand[lo, hi] = False
    lo, hi = np.nonzero(cand)
    u = U[lo, hi]
    keep = (u >= best[lo]) | (u >= best[hi])
    lo, hi, u = lo[keep], hi[keep], u[keep]
    order = np.argsort(-u, kind="stable")
    lo, hi, u = lo[order], hi[order], u[order]
    p, step = 0, max(256, m)
    while p < len(u) and not u[p] < best.min():
        q = min(len(u), p + step)
        l, h, uu = lo[p:q], hi[p:q], u[p:q]
        need = (uu >= best[l]) | (uu >= best[h])
        if need.any():
            l, h = l[need], h[need]
            vals = evaluate(l, h)
            np.maximum.at(best, l, vals)
            np.maximum.at(best, h, vals)
        p, step = q, min(2 * step, 1 << 16)


def _bounded_trial(
    kernels_v: dict,
    X: Sequence,
    a: np.ndarray,
    inside: np.ndarray,
    blocks: dict,
    normalize: bool,
    bound: tuple[np.ndarray, dict],
    n_jobs: int = 1,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Raw σ_t = 1 and σ_t = 0 matrices of one exact trial with only the values its 1-NN graphs need.

    ``a`` are the subset's sorted indices into ``X``, ``inside`` the positions
    of the structures containing the label.  Values earlier trials computed
    (``blocks[v]``) are read back; the self-similarities are computed; every
    other pair is bounded from above by :func:`_chain_bound` (and, for a
    σ_t = 0 pair of two structures with the label, by its σ_t = 1 value,
    the kernel being monotone in σ) and evaluated only if the bound reaches
    the best similarity of one of its rows (:func:`_walk`), first for
    σ_t = 1, then for σ_t = 0.  Each row's first neighbour and its
    similarity are those of the full matrices.  Returns the σ_t = 1 matrix
    of the subset and the σ_t = 0 block of ``inside`` (NaN where not
    evaluated) and the number of kernel evaluations.
    """
    k1, k0 = kernels_v[1], kernels_v[0]
    C, w = bound
    m = len(a)
    Xa = k1.check_input(take(X, a))
    n_eval = 0
    R1 = _known_values(a, blocks[1])
    I = a[inside]
    B0 = _known_values(I, blocks[0])
    is_in = np.zeros(m, dtype=bool)
    is_in[inside] = True
    # self-similarities: the σ_t = 0 ones differ only for structures with the label
    d1, ne1 = _fill_diagonal(R1, k1, Xa)
    dI, ne0 = _fill_diagonal(B0, k0, Xa, inside)
    n_eval += ne1 + ne0
    d0 = d1.copy()
    d0[inside] = dI
    if normalize:
        s1, s0 = _scales(d1), _scales(d0)
    else:
        s1 = s0 = np.ones(m)
    Ca = C[a]
    bad = normalize and bool((d1 <= 0).any() or (d0 <= 0).any())  # no bound: evaluate all

    def scaled_bound(raw_bound: np.ndarray, s: np.ndarray) -> np.ndarray:
        if bad:
            return np.full((m, m), np.inf)
        U = raw_bound * (s[:, None] * s[None, :])
        return U + np.abs(U) * _CHAIN_SLACK

    def row_best(V: np.ndarray, s: np.ndarray) -> np.ndarray:
        S = V * (s[:, None] * s[None, :])
        np.fill_diagonal(S, np.nan)
        return np.where(np.isnan(S), -np.inf, S).max(axis=1)

    # σ_t = 1: one kernel for every pair
    def eval1(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        vals = _pair_values(k1, Xa, lo, hi, n_jobs)
        R1[lo, hi] = vals
        R1[hi, lo] = vals
        counter[0] += len(lo)
        return vals * (s1[lo] * s1[hi])

    counter = [0]
    _walk(scaled_bound(_chain_bound(Ca, w[1]), s1), ~np.isnan(R1), row_best(R1, s1), eval1)
    # σ_t = 0: pairs of two structures with the label take k0, the others keep k1's value
    W0 = R1.copy()
    W0[np.ix_(inside, inside)] = B0
    U0 = scaled_bound(_chain_bound(Ca, w[0]), s0)
    both = is_in[:, None] & is_in[None, :]
    mono = scaled_bound(np.where(np.isnan(R1), np.inf, R1), s0)
    U0 = np.where(both, np.minimum(U0, mono), U0)

    def eval0(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        out = np.empty(len(lo))
        ii = is_in[lo] & is_in[hi]
        for kern, sel in ((k0, ii), (k1, ~ii)):
            if sel.any():
                vals = _pair_values(kern, Xa, lo[sel], hi[sel], n_jobs)
                W0[lo[sel], hi[sel]] = vals
                W0[hi[sel], lo[sel]] = vals
                if kern is k1:
                    R1[lo[sel], hi[sel]] = vals
                    R1[hi[sel], lo[sel]] = vals
                out[sel] = vals
        counter[0] += len(lo)
        return out * (s0[lo] * s0[hi])

    _walk(U0, ~np.isnan(W0), row_best(W0, s0), eval0)
    return R1, W0[np.ix_(inside, inside)], n_eval + counter[0]


#: Kernel values kept per label and σ_t value for reuse by later trials (float64
#: entries, 2**24 = 128 MiB); the oldest blocks are dropped beyond it, which
#: costs evaluations, never changes a result.
_REUSE_ENTRIES = 2**24


def _keep(blocks: list, idx: np.ndarray, raw: np.ndarray) -> None:
    """Append a computed block; drop the oldest while the total exceeds ``_REUSE_ENTRIES``."""
    blocks.append((idx, raw))
    while len(blocks) > 1 and sum(b.size for _, b in blocks) > _REUSE_ENTRIES:
        blocks.pop(0)


def _exact_trials(
    base: Kernel,
    sigma: dict[str, float],
    label: str,
    X: Sequence,
    y: np.ndarray,
    subsets: list[np.ndarray],
    has: np.ndarray,
    normalize: bool,
    n_jobs: int = 1,
    chain_bound: bool = True,
) -> list[dict[str, Any]]:
    """:func:`_subset_losses` of exact trials of one label, each kernel value computed once.

    The trials of a label draw overlapping subsets (identical ones when the
    label occurs in at most β structures), and the kernels for ``σ_t = 1`` and
    ``σ_t = 0`` do not change between them: a pair met in an earlier trial is
    read back, not evaluated again (:func:`_gram_reusing`).  As in
    :func:`_subset_losses`, ``σ_t = 0`` needs new values only for the pairs
    of structures that both contain the label (Eq. 1), and, for kernels
    monotone in σ, only those that can be a first neighbour
    (:func:`_label_block_pruned`).  For the path kernel with indicator edges
    and node similarities at most 1, the σ_t = 1 pairs too are bounded (the
    chain bound of :func:`_chain_bound`) and only those that can be a first
    neighbour under σ_t = 1 or σ_t = 0 are evaluated (:func:`_bounded_trial`).
    The 1-NN graphs and losses are those of :func:`_subset_losses`; only
    ``n_evaluations`` is smaller.
    """
    kernels_v = {v: _with_sigma(base, {**sigma, label: float(v)}) for v in (0, 1)}
    prune = _monotone_in_sigma(base)
    bound = _chain_bound_setup(kernels_v, X) if prune and chain_bound else None
    blocks: dict[int, list] = {0: [], 1: []}
    out = []
    for a in subsets:
        res: dict[str, Any] = {"size": int(len(a)), "loss": {}, "penalty": {}, "reward": {}}
        if len(a) < 2:
            for v in (0, 1):
                res["loss"][v] = res["penalty"][v] = res["reward"][v] = 0.0
            res["n_evaluations"] = 0
            out.append(res)
            continue
        ya = y[a]
        if bound is not None:
            inside = np.flatnonzero(has[a])
            R1, R0, n_eval = _bounded_trial(kernels_v, X, a, inside, blocks, normalize, bound,
                                            n_jobs)
            _keep(blocks[1], a, R1)
            if len(inside):
                _keep(blocks[0], a[inside], R0)
            raw1 = np.where(np.isnan(R1), -np.inf, R1)
            raw0 = raw1.copy()
            raw0[np.ix_(inside, inside)] = np.where(np.isnan(R0), -np.inf, R0)
            for v, raw in ((0, raw0), (1, raw1)):
                res["loss"][v], res["penalty"][v], res["reward"][v] = _losses_of(
                    raw, ya, normalize)
            res["n_evaluations"] = int(n_eval)
            out.append(res)
            continue
        raw1, n_eval = _gram_reusing(kernels_v[1], X, a, blocks[1], n_jobs)
        _keep(blocks[1], a, raw1)
        raw0 = raw1.copy()
        inside = np.flatnonzero(has[a])
        if len(inside) and prune:
            block, ne = _label_block_pruned(
                kernels_v[0], X, a, inside, raw1, blocks[0], normalize, n_jobs
            )
            n_eval += ne
            _keep(blocks[0], a[inside], block)
            raw0[np.ix_(inside, inside)] = np.where(np.isnan(block), -np.inf, block)
        elif len(inside):
            block, ne = _gram_reusing(kernels_v[0], X, a[inside], blocks[0], n_jobs)
            n_eval += ne
            _keep(blocks[0], a[inside], block)
            raw0[np.ix_(inside, inside)] = block
        for v, raw in ((0, raw0), (1, raw1)):
            res["loss"][v], res["penalty"][v], res["reward"][v] = _losses_of(raw, ya, normalize)
        res["n_evaluations"] = int(n_eval)
        out.append(res)
    return out


# -------------------------------------------------------------------- learner
class NonstationaryLearner(BaseEstimator):
    """Learn binary per-edge-label weights σ of a convolution kernel (Algorithm 1).

    Implements Algorithm 1 and Loss Function 1 of Garg et al. (2018),
    "Stochastic learning of nonstationary kernels for natural language
    modeling" (Sec. 6): σ starts at 1 for every label; labels are visited in
    descending frequency; for each, ``alpha`` noisy loss estimates on
    randomly sampled local neighbourhoods of a hashed global k-NN graph
    decide between σ = 0 and σ = 1.

    Parameters
    ----------
    kernel : str or Kernel, default "path"
        The convolution kernel to make nonstationary: a registered name
        (built with ``kernel_params``) or an instance; it must have a
        ``sigma`` parameter (dict edge label -> weight, labels not named
        weigh 1).  A :class:`~structkernels.Normalized` instance is unwrapped
        and ``normalize`` is then taken as True.
    kernel_params : dict, optional
        Parameters of the kernel (e.g. ``{"lam": 0.8}``).  A ``sigma`` given
        here fixes the weights of labels that are not learned.
    labels : list of str, optional
        Edge labels to learn σ for.  Default: the most frequent half of the
        edge labels seen in the training structures (``top_fraction``).
    top_fraction : float, default 0.5
        Share of the distinct edge labels, most frequent first, learned when
        ``labels`` is None (the paper learns the top 50%).
    alpha : int, default 10
        Trials per label (α).
    beta : int, default 100
        Inducing points per trial (β), drawn among the structures that
        contain the label.
    k : int, default 4
        Neighbours per structure in the global k-NN graph.
    n_iter : int, default 1
        Passes over the labels; the global graph is rebuilt with the learned
        σ before each pass after the first.
    sampling : {"neighbourhood", "random"}, default "neighbourhood"
        ``"neighbourhood"``: Algorithm 1's local neighbourhoods.
        ``"random"``: the pure-random baseline of Table 4(b), the ``β``
        inducing points alone (no global graph).
    hashing : {"random-knn", "klsh"} or None, default "random-knn"
        Kernel hashing of the global k-NN graph (and of sampled subsets of
        ``exact_below`` structures or more); None computes exact graphs.
    n_bits : int, optional
        Hash bits (H) of the global graph; the hashing module's default
        (about sqrt(N) buckets) when None.  Hashed subset graphs always use
        the default for their size.
    exact_below : int, default 2000
        Sampled subsets smaller than this get an exact 1-NN graph (their
        loss estimate is then free of hashing noise).
    chain_bound : bool, default True
        In exact trials of the path kernel (indicator edges, node
        similarities at most 1), bound every pair from above by the chain
        bound and evaluate only the pairs that can be a first neighbour: the
        same σ, losses and log with fewer kernel evaluations (0.21 instead
        of 0.30 of one Gram at N = 22,632, β = 550).  The bookkeeping is
        NumPy work and the surviving pairs are scattered, so with the cheap
        compiled kernel it costs more seconds than it saves (66.6 s against
        32.9 s there, 2 cores); ``False`` evaluates each subset's whole Gram
        instead (with reuse across trials and the pruned σ_t = 0 blocks).
    max_evaluations : "gram", int or None, default "gram"
        Budget of kernel evaluations for the whole fit.  ``"gram"`` is one
        Gram matrix, ``N (N + 1) / 2``: Algorithm 1 exists to cost less than
        that.  After the global graph, the rest is shared evenly among the
        remaining trials; a sampled subset whose exact cost (its Gram matrix
        for ``σ_t = 1`` plus the block of structures with the label for
        ``σ_t = 0``) exceeds its share is cut to its inducing points first,
        then their neighbours, until it fits (``n_trimmed_`` counts them).
        The budget counts each trial at that from-scratch cost, so the
        subsets, and σ, do not depend on how many values the reuse below
        saves; the evaluations actually made (``n_evaluations_``) are fewer.
        None: no budget.  With ``hashing=None`` and neighbourhood sampling the
        exact global graph alone is one Gram matrix, so ``"gram"`` sets no
        budget there.  With ``objective="knn-ap"`` the sample is shrunk until
        its estimated cost fits the budget (``n_trimmed_`` is then 1).
    normalize : bool, default True
        Use the cosine-normalised kernel ``K(x, y) / sqrt(K(x, x) K(y, y))``
        for the graphs and the loss.
    objective : {"loss1", "knn-ap"}, default "loss1"
        What decides each label.  ``"loss1"``: Loss Function 1 on the sampled
        neighbourhoods (the paper's Algorithm 1; ``alpha``, ``beta``, ``k``,
        ``sampling``, ``hashing`` apply).  ``"knn-ap"``: the average precision
        of the leave-one-out scores of the similarity-weighted
        ``n_neighbors``-NN classifier on a stratified sample of
        ``objective_sample`` training structures (:mod:`structkernels.sigma_knn`):
        the same greedy pass over the labels, judged by the classifier that
        will use σ.  σ(l) = 0 is kept only when it raises that AP by more than
        ``min_gain`` on each of two stratified halves of the sample.
    objective_sample : int, default 8000
        With ``"knn-ap"``: training structures in the sample (all when fewer).
    n_neighbors : int, default 8
        With ``"knn-ap"``: k of the classifier whose scores are judged.
    min_gain : float, default 0.005
        With ``"knn-ap"``: the AP gain σ(l) = 0 must exceed.
    n_jobs : int, default 1
        Workers for the global graph, the Gram blocks of exact trials and the
        hashed trials of a label (results do not depend on it).
    random_state : int, RandomState or None
        Seeds the inducing points and the hashing.
    progress : bool, optional
        Show a progress bar (default: when stderr is a terminal).

    Attributes
    ----------
    sigma_ : dict of str to float
        Learned weight (0.0 or 1.0) of each learned label.
    ignored_labels_ : list of str
        Labels with σ = 0, in the order they were learned.
    labels_ : list of str
        The learned labels, most frequent first.
    label_counts_ : dict of str to int
        Number of training structures containing each learned label.
    losses_ : dict of str to dict
        Per label: summed loss at σ = 0 and σ = 1 (``{"0": ..., "1": ...}``)
        of the last pass, and the value chosen.
    log_ : list of dict
        One entry per (pass, label, trial, value): subset size, loss,
        penalty, reward.
    n_evaluations_ : int
        Kernel evaluations made by ``fit`` (global graphs + subsets).
    n_evaluations_graph_ : int
        Of which for the global k-NN graphs.
    n_evaluations_reused_ : int
        Evaluations the exact trials did not make: values met in an earlier
        trial of the same label, and pairs that cannot be a first neighbour
        (see Notes).  ``n_evaluations_ + n_evaluations_reused_`` is
        the cost of computing every trial from scratch.
    budget_ : int or None
        The evaluation budget of ``max_evaluations`` for this N.
    n_trimmed_ : int
        Sampled subsets cut to fit the budget.
    n_train_ : int
        Number of training structures N (compare ``n_evaluations_`` with N²).
    fit_seconds_ : float

    Notes
    -----
    Exact trials (subsets below ``exact_below``, or ``hashing=None``) waste
    no kernel evaluation and learn exactly what computing each from scratch
    learns: (1) the α trials of a label draw overlapping subsets (the same one
    when the label occurs in at most β structures) under the same two
    kernels, so a value met in an earlier trial of the label is read back;
    (2) by Eq. (1) σ_t = 0 changes only pairs of structures that both contain
    ``t``; (3) for the path kernel with non-negative tuple similarities,
    ``K(σ_t = 0) <= K(σ_t = 1)``, so a pair of that block whose σ_t = 1 value,
    normalised with the σ_t = 0 self-similarities, is below both structures'
    best σ_t = 0 similarity found so far cannot be a first neighbour and is
    not evaluated; (4) for the path kernel with indicator edge labels and node
    similarities at most 1 (indicator, ``node_mismatch``), a chain of matched
    tuples uses each position of a path once, so ``K(x, y) <= Π_s (1 + λ²
    σ(e_s)² c_y(e_s)) - 1`` with ``c_y(e)`` the number of ``e`` tuples of ``y``
    (and the same with ``x`` and ``y`` swapped): one matrix product of
    edge-label counts bounds every pair of a subset, and a pair, for σ_t = 1
    as for σ_t = 0, is evaluated only when its bound reaches the best
    similarity found so far of one of its structures, candidates taken in
    descending order of the bound.  The 1-NN graphs and losses are
    bit-identical; at N = 22,632 Bio-AMR paths (β = 550, α = 3) the fit makes
    about 0.21 of one Gram's evaluations (0.30 without (4)).

    Examples
    --------
    The class is carried by the ARG0 node; ``mod`` and ``time`` are noise:

    >>> import itertools
    >>> from structkernels import NonstationaryLearner, Path
    >>> paths = [Path([(None, "bind"), ("ARG0", a), ("mod", m), ("time", t)])
    ...          for a, m, t in itertools.product(("kinase", "gene"), "abc", "uvw")]
    >>> y = [int(p[1][1] == "kinase") for p in paths]
    >>> learner = NonstationaryLearner("path", {"lam": 0.8}, top_fraction=1.0, alpha=2,
    ...                                beta=5, hashing=None, random_state=0, progress=False)
    >>> learner.fit(paths, y).ignored_labels_
    ['mod', 'time']
    >>> npk = learner.get_kernel()  # Normalized(PathKernel(lam=0.8, sigma={...}))
    """

    def __init__(
        self,
        kernel: str | Kernel = "path",
        kernel_params: dict | None = None,
        *,
        labels: Sequence[str] | None = None,
        top_fraction: float = 0.5,
        alpha: int = 10,
        beta: int = 100,
        k: int = 4,
        n_iter: int = 1,
        sampling: str = "neighbourhood",
        hashing: str | None = "random-knn",
        n_bits: int | None = None,
        exact_below: int = 2000,
        chain_bound: bool = True,
        max_evaluations: int | str | None = "gram",
        normalize: bool = True,
        objective: str = "loss1",
        objective_sample: int = 8000,
        n_neighbors: int = 8,
        min_gain: float = 0.005,
        n_jobs: int = 1,
        random_state: int | np.random.RandomState | None = None,
        progress: bool | None = None,
    ):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.labels = labels
        self.top_fraction = top_fraction
        self.alpha = alpha
        self.beta = beta
        self.k = k
        self.n_iter = n_iter
        self.sampling = sampling
        self.hashing = hashing
        self.n_bits = n_bits
        self.exact_below = exact_below
        self.chain_bound = chain_bound
        self.max_evaluations = max_evaluations
        self.normalize = normalize
        self.objective = objective
        self.objective_sample = objective_sample
        self.n_neighbors = n_neighbors
        self.min_gain = min_gain
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.progress = progress

    # ------------------------------------------------------------ validation
    def _check_params(self) -> None:
        def positive_int(name: str) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"NonstationaryLearner.{name} must be a positive int, got {v!r}")

        for name in ("alpha", "beta", "k", "n_iter", "exact_below", "objective_sample", "n_neighbors"):
            positive_int(name)
        if self.objective not in ("loss1", "knn-ap"):
            raise ValueError(
                f"NonstationaryLearner.objective must be 'loss1' or 'knn-ap', got {self.objective!r}"
            )
        if not isinstance(self.chain_bound, (bool, np.bool_)):
            raise TypeError(
                f"NonstationaryLearner.chain_bound must be True or False, got {self.chain_bound!r}"
            )
        mg = self.min_gain
        if isinstance(mg, bool) or not isinstance(mg, (int, float, np.floating)) or not 0 <= mg < 1:
            raise ValueError(f"NonstationaryLearner.min_gain must be a number in [0, 1), got {mg!r}")
        if self.sampling not in ("neighbourhood", "neighborhood", "random"):
            raise ValueError(
                "NonstationaryLearner.sampling must be 'neighbourhood' or 'random', "
                f"got {self.sampling!r}"
            )
        if self.hashing not in (None, "random-knn", "klsh"):
            raise ValueError(
                "NonstationaryLearner.hashing must be None, 'random-knn' or 'klsh', "
                f"got {self.hashing!r}"
            )
        if not (isinstance(self.top_fraction, (int, float)) and 0 < self.top_fraction <= 1):
            raise ValueError(
                f"NonstationaryLearner.top_fraction must be in (0, 1], got {self.top_fraction!r}"
            )
        me = self.max_evaluations
        if not (me is None or (isinstance(me, str) and me == "gram") or (
                isinstance(me, (int, np.integer)) and not isinstance(me, bool) and me >= 1)):
            raise ValueError(
                f"NonstationaryLearner.max_evaluations must be 'gram', a positive int or None, "
                f"got {me!r}"
            )
        if not isinstance(self.n_jobs, (int, np.integer)) or self.n_jobs == 0:
            raise ValueError(f"NonstationaryLearner.n_jobs must be a non-zero int, got {self.n_jobs!r}")
        if self.kernel_params is not None and not isinstance(self.kernel_params, dict):
            raise TypeError("NonstationaryLearner.kernel_params must be a dict or None")

    def _base_kernel(self) -> tuple[Kernel, bool, dict[str, float]]:
        """(kernel without normalisation, normalise?, fixed σ of labels not learned)."""
        params = dict(self.kernel_params or {})
        fixed = dict(params.pop("sigma", None) or {})
        if isinstance(self.kernel, Kernel):
            base = clone(self.kernel)
            if params:
                base.set_params(**params)
        else:
            base = as_kernel(self.kernel, **params)
        normalize = bool(self.normalize)
        if isinstance(base, Normalized):
            base, normalize = base.kernel, True
        given = base.get_params(deep=False)
        if "sigma" not in given or not (given["sigma"] is None or isinstance(given["sigma"], Mapping)):
            what = (
                "has none" if "sigma" not in given
                else f"has sigma={given['sigma']!r}, which is not a dict of edge-label weights"
            )
            raise TypeError(
                f"NonstationaryLearner needs a convolution kernel with a 'sigma' parameter "
                f"(per-edge-label weights, e.g. 'path' or 'tree'); {type(base).__name__} {what}"
            )
        fixed.update({str(k): float(v) for k, v in (base.get_params()["sigma"] or {}).items()})
        base.validate_params()
        return base, normalize, fixed

    # ------------------------------------------------------------------- fit
    def fit(self, X: Sequence, y: Any) -> NonstationaryLearner:
        """Learn σ from labelled structures.

        Parameters
        ----------
        X : sequence of Path (or Tree)
            Training structures.
        y : array-like of shape (n,)
            Binary labels (0/1, or booleans).

        Returns
        -------
        self
        """
        self._check_params()
        base, normalize, fixed = self._base_kernel()
        X = base.check_input(X)
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(
                f"NonstationaryLearner.fit: y must be 1-D with one label per structure; got "
                f"{len(X)} structures and y of shape {y.shape}"
            )
        if y.dtype == bool:
            y = y.astype(np.int64)
        bad = ~np.isin(y, [0, 1])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"NonstationaryLearner.fit: labels must be 0/1; y[{i}] = {y[i]!r}")
        y = y.astype(np.int64)
        n = len(X)
        if n < 2:
            raise ValueError(f"NonstationaryLearner.fit needs at least 2 structures, got {n}")

        t0 = time.perf_counter()
        edge_sets = [structure_edge_labels(x) for x in X]
        counts = Counter(label for s in edge_sets for label in s)
        if self.labels is None:
            ranked = sorted(counts, key=lambda lab: (-counts[lab], lab))
            learn = ranked[: int(np.ceil(self.top_fraction * len(ranked)))] if ranked else []
        else:
            if isinstance(self.labels, str):
                raise TypeError("NonstationaryLearner.labels must be a list of labels, not a str")
            missing = [lab for lab in self.labels if lab not in counts]
            if missing:
                raise ValueError(
                    f"NonstationaryLearner.labels: {missing} occur in no training structure"
                )
            learn = sorted(dict.fromkeys(self.labels), key=lambda lab: (-counts[lab], lab))
        rng = check_random_state(self.random_state)
        neighbourhood = self.sampling != "random"

        self.labels_ = list(learn)
        self.label_counts_ = {lab: int(counts[lab]) for lab in learn}
        self.sigma_ = {lab: 1.0 for lab in learn}
        self.fixed_sigma_ = fixed
        self.normalize_ = normalize
        self.ignored_labels_: list[str] = []
        self.losses_: dict[str, dict[str, Any]] = {}
        self.log_: list[dict[str, Any]] = []
        self.subset_sizes_: list[int] = []
        self.n_evaluations_ = 0
        self.n_evaluations_graph_ = 0
        self.n_evaluations_reused_ = 0
        self._charged = 0  # evaluations as computed without reuse: what the budget counts
        self.n_train_ = n
        if self.max_evaluations is None or (
            self.max_evaluations == "gram" and self.hashing is None and neighbourhood
        ):
            self.budget_ = None  # an exact global graph alone is one Gram matrix
        elif self.max_evaluations == "gram":
            self.budget_ = n * (n + 1) // 2
        else:
            self.budget_ = int(self.max_evaluations)
        self.n_trimmed_ = 0
        self._trials_left = self.n_iter * len(learn) * self.alpha
        self.interrupted_ = False
        members = {lab: np.flatnonzero([lab in s for s in edge_sets]) for lab in learn}
        has = {lab: np.zeros(n, dtype=bool) for lab in learn}
        for lab in learn:
            has[lab][members[lab]] = True

        if self.objective == "knn-ap":
            if self.max_evaluations is None:
                self.budget_ = None
            else:
                self.budget_ = n * (n + 1) // 2 if self.max_evaluations == "gram" else int(
                    self.max_evaluations)
            self._fit_knn_ap(base, normalize, fixed, X, y, learn, has, rng, t0)
            return self
        total = self.n_iter * len(learn) * self.alpha
        disable = None if self.progress is None else not self.progress
        bar = tqdm(total=total, desc="learning σ", unit="trial", disable=disable)
        with self._fitting(bar, learn, t0):
            for it in range(self.n_iter):
                graph = None
                if neighbourhood and not (
                    self.budget_ is not None and self._charged >= self.budget_
                ):
                    graph = self._global_graph(base, normalize, fixed, X, rng)
                    if self.budget_ is not None and self.n_evaluations_ > self.budget_:
                        warnings.warn(
                            f"NonstationaryLearner: the global k-NN graph alone took "
                            f"{self.n_evaluations_:,} kernel evaluations, over the budget "
                            f"max_evaluations={self.budget_:,}; the trials get none",
                            RuntimeWarning, stacklevel=2,
                        )
                for lab in learn:
                    bar.set_postfix_str(f"{lab} (pass {it + 1})")
                    self._learn_label(
                        it, lab, base, normalize, fixed, X, y, members[lab], has[lab], graph, rng
                    )
                    bar.update(self.alpha)
        return self

    @contextlib.contextmanager
    def _fitting(self, bar, learn, t0):
        """Around a fit's passes: Ctrl-C keeps the σ learned so far (``interrupted_``), and
        the bar, ``ignored_labels_`` and ``fit_seconds_`` are settled however it ends."""
        try:
            yield
        except KeyboardInterrupt:
            self.interrupted_ = True
            raise
        finally:
            bar.close()
            self.ignored_labels_ = [lab for lab in learn if self.sigma_[lab] == 0.0]
            self.fit_seconds_ = time.perf_counter() - t0

    def _fit_knn_ap(self, base, normalize, fixed, X, y, learn, has, rng, t0) -> None:
        """The greedy pass(es) judged by the k-NN classifier's leave-one-out AP."""
        from structkernels.sigma_knn import SigmaKNNSearch

        n = len(X)
        rows = np.arange(n)
        size = min(int(self.objective_sample), n)
        if self.budget_ is not None:
            # the sample's Gram S (S + 1) / 2 and, per pass, each label's block, about
            # (p_l S)^2 / 2 for a label in a share p_l of the structures: the largest S that fits
            p = np.array([has[lab].mean() for lab in learn])
            per_pair = 1.0 + self.n_iter * float((p**2).sum())
            fits = int(np.sqrt(2.0 * self.budget_ / per_pair))
            if fits < size:
                size = max(2, fits)
                self.n_trimmed_ = 1
        if size < n:
            from sklearn.model_selection import train_test_split

            rows, _ = train_test_split(
                rows, train_size=size,
                stratify=y if np.bincount(y, minlength=2).min() >= 2 else None,
                random_state=rng.randint(np.iinfo(np.int32).max),
            )
            rows = np.sort(rows)
        ys = y[rows]
        disable = None if self.progress is None else not self.progress
        bar = tqdm(total=self.n_iter * len(learn), desc="learning σ (k-NN AP)", unit="label",
                   disable=disable)
        with self._fitting(bar, learn, t0):
            if not ys.any() or ys.all():
                warnings.warn(
                    "NonstationaryLearner(objective='knn-ap'): the sample holds one class only; "
                    "every σ stays 1", RuntimeWarning, stacklevel=3,
                )
                return
            self.subset_sizes_ = [int(len(rows))]
            search = SigmaKNNSearch(
                lambda sig: _with_sigma(base, sig), take(X, rows), ys,
                {lab: has[lab][rows] for lab in learn}, self._current_sigma(fixed),
                int(self.n_neighbors), normalize, self.n_jobs,
            )
            self.n_evaluations_ = search.n_evaluations
            for it in range(self.n_iter):
                for lab in learn:
                    bar.set_postfix_str(f"{lab} (pass {it + 1})")
                    res = search.decide(lab, float(self.min_gain))
                    self.n_evaluations_ = search.n_evaluations
                    self.sigma_[lab] = res["chosen"]
                    # losses: the negated AP, so that lower is better as with Loss Function 1
                    self.losses_[lab] = {"0": -res["0"], "1": -res["1"], "chosen": res["chosen"],
                                         "pass": it}
                    for v in (0, 1):
                        self.log_.append({"pass": it, "label": lab, "trial": 0, "value": v,
                                          "size": res["size"], "loss": -res[str(v)],
                                          "penalty": 0.0, "reward": res[str(v)]})
                    bar.update(1)

    def _current_sigma(self, fixed: dict[str, float]) -> dict[str, float]:
        return {**fixed, **self.sigma_}

    def _global_graph(self, base, normalize, fixed, X, rng):
        from structkernels.knn import knn_graph

        kern = _with_sigma(base, self._current_sigma(fixed))
        if normalize:
            kern = Normalized(kern)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        options: dict[str, Any] = {}
        if self.hashing is not None:
            options = {"n_bits": self.n_bits, "random_state": seed}
        graph = knn_graph(
            X, kern, k=self.k, hashing=self.hashing, n_jobs=self.n_jobs, progress=False, **options
        )
        self.n_evaluations_ += int(graph.n_evaluations)
        self.n_evaluations_graph_ += int(graph.n_evaluations)
        self._charged += int(graph.n_evaluations)
        reverse = graph.reverse()
        return np.asarray(graph.indices), reverse

    def _sample(self, rng, members: np.ndarray, graph) -> np.ndarray:
        """Lines 6-10 of Algorithm 1: the indices ``a = r ∪ n ∪ n̄ ∪ nn``."""
        r = members if len(members) <= self.beta else rng.choice(members, self.beta, replace=False)
        if graph is None:
            return np.unique(r)
        indices, reverse = graph
        fwd = indices[r].ravel()
        fwd = fwd[fwd >= 0]
        back = [j for i in r for j in reverse[i]]
        nbrs = np.unique(np.concatenate([fwd, np.asarray(back, dtype=np.int64)]).astype(np.int64))
        nn = indices[nbrs, 0] if len(nbrs) else np.empty(0, dtype=np.int64)
        nn = nn[nn >= 0]
        # inducing points first, then their neighbours (the order a budget cut keeps)
        order = np.concatenate([r, nbrs, nn]).astype(np.int64)
        _, first = np.unique(order, return_index=True)
        return order[np.sort(first)]

    @staticmethod
    def _trial_cost(size: int, inside: int) -> int:
        """Kernel evaluations of an exact trial: Gram of the subset + the label's block."""
        return size * (size + 1) // 2 + inside * (inside + 1) // 2

    def _fit_budget(self, a: np.ndarray, has: np.ndarray, share: int) -> np.ndarray:
        """The longest prefix of ``a`` whose exact trial cost fits in ``share``."""
        inside = np.cumsum(has[a])
        sizes = np.arange(1, len(a) + 1)
        costs = sizes * (sizes + 1) // 2 + inside * (inside + 1) // 2
        fit = int(np.searchsorted(costs, share, side="right"))
        if fit >= len(a):
            return a
        self.n_trimmed_ += 1
        return a[:fit]

    def _learn_label(self, it, lab, base, normalize, fixed, X, y, members, has, graph, rng):
        subsets = [self._sample(rng, members, graph) for _ in range(self.alpha)]
        if self.budget_ is not None:
            share = max(0, self.budget_ - self._charged) // max(1, self._trials_left)
            subsets = [self._fit_budget(a, has, share) for a in subsets]
        self._trials_left -= self.alpha
        subsets = [np.unique(a) for a in subsets]
        seeds = rng.randint(np.iinfo(np.int32).max, size=self.alpha)
        sigma = self._current_sigma(fixed)
        results: list[Any] = [None] * self.alpha
        exact = [
            j for j, a in enumerate(subsets) if self.hashing is None or len(a) < self.exact_below
        ]
        hashed = [j for j in range(self.alpha) if j not in set(exact)]
        # exact trials: every kernel value of the label computed once, reused across its
        # trials; the Gram blocks run with n_jobs workers
        for j, res in zip(
            exact,
            _exact_trials(base, sigma, lab, X, y, [subsets[j] for j in exact], has, normalize,
                          self.n_jobs, bool(self.chain_bound)),
            strict=True,
        ):
            inside = int(has[subsets[j]].sum())
            size = len(subsets[j])
            res["n_nominal"] = self._trial_cost(size, inside) if size >= 2 else 0
            results[j] = res
        # sampled subsets are much smaller than N: their hash tables take the default bits
        args = (normalize, self.hashing, None, self.exact_below)
        if self.n_jobs == 1 or len(hashed) < 2:
            done = [
                _subset_losses(base, sigma, lab, X, y, subsets[j], has, *args, int(seeds[j]))
                for j in hashed
            ]
        else:
            # ship only the sampled structures to the workers
            done = joblib.Parallel(n_jobs=self.n_jobs)(
                joblib.delayed(_subset_losses)(
                    base,
                    sigma,
                    lab,
                    take(X, subsets[j]),
                    y[subsets[j]],
                    np.arange(len(subsets[j])),
                    has[subsets[j]],
                    *args,
                    int(seeds[j]),
                )
                for j in hashed
            )
        for j, res in zip(hashed, done, strict=True):
            res["n_nominal"] = res["n_evaluations"]
            results[j] = res
        summed = {0: 0.0, 1: 0.0}
        for j, res in enumerate(results):
            self.n_evaluations_ += res["n_evaluations"]
            self.n_evaluations_reused_ += res["n_nominal"] - res["n_evaluations"]
            self._charged += res["n_nominal"]
            self.subset_sizes_.append(res["size"])
            for v in (0, 1):
                summed[v] += res["loss"][v]
                self.log_.append(
                    {
                        "pass": it,
                        "label": lab,
                        "trial": j,
                        "value": v,
                        "size": res["size"],
                        "loss": res["loss"][v],
                        "penalty": res["penalty"][v],
                        "reward": res["reward"][v],
                    }
                )
        # line 17: argmin over v of the summed loss; a tie keeps the baseline σ = 1
        chosen = 0.0 if summed[0] < summed[1] else 1.0
        self.sigma_[lab] = chosen
        self.losses_[lab] = {"0": summed[0], "1": summed[1], "chosen": chosen, "pass": it}

    # ------------------------------------------------------------- results
    _FITTED = (
        "sigma_", "ignored_labels_", "labels_", "label_counts_", "losses_", "log_",
        "n_evaluations_", "n_evaluations_graph_", "n_evaluations_reused_", "subset_sizes_",
        "n_train_", "fit_seconds_",
        "fixed_sigma_", "normalize_", "interrupted_", "budget_", "n_trimmed_",
    )

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails: a fitted attribute before fit
        if name in NonstationaryLearner._FITTED:
            raise NotFittedError(
                f"this NonstationaryLearner is not fitted yet ({name} is set by fit); "
                "call fit(X, y) or NonstationaryLearner.load(path) first"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _check_fitted(self) -> None:
        if "sigma_" not in self.__dict__:
            raise NotFittedError(
                "this NonstationaryLearner is not fitted yet; call fit(X, y) or "
                "NonstationaryLearner.load(path) first"
            )

    @property
    def kernel_sigma_(self) -> dict[str, float]:
        """The full ``sigma`` to give the kernel: fixed weights and learned ones."""
        self._check_fitted()
        return {**self.fixed_sigma_, **self.sigma_}

    def get_kernel(self, normalize: bool | None = None) -> Kernel:
        """The kernel with the learned σ (normalised when the learner was).

        Examples
        --------
        >>> learner = NonstationaryLearner.load("model.json")  # doctest: +SKIP
        >>> K = learner.get_kernel().gram(paths)                # doctest: +SKIP
        """
        self._check_fitted()
        base, norm, _ = self._base_kernel()
        kern = _with_sigma(base, self.kernel_sigma_)
        norm = norm if normalize is None else normalize
        return Normalized(kern) if norm else kern

    def kernel_params_(self) -> dict[str, Any]:
        """``kernel_params`` with the learned ``sigma`` (for ``kernel(name, **params)``)."""
        self._check_fitted()
        return {**(self.kernel_params or {}), "sigma": self.kernel_sigma_}

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        """The fitted model as a JSON-ready dict (parameters, σ, losses, counters)."""
        self._check_fitted()
        params = self.get_params(deep=False)
        kern = params.pop("kernel")
        rs = params.pop("random_state")
        if isinstance(kern, Normalized):
            kern = kern.kernel
            params["normalize"] = True
        params["kernel_params"] = _jsonable(
            self.kernel_params if isinstance(kern, str) else kern.get_params(deep=False)
        )
        if not isinstance(kern, str) and self.kernel_params:
            params["kernel_params"].update(_jsonable(self.kernel_params))
        return {
            "format": MODEL_FORMAT,
            "version": MODEL_VERSION,
            "kernel": _kernel_spec(kern),
            "params": _jsonable(params),
            "random_state": rs if isinstance(rs, (int, type(None))) else None,
            "sigma": _jsonable(self.sigma_),
            "fixed_sigma": _jsonable(self.fixed_sigma_),
            "normalize": bool(self.normalize_),
            "labels": list(self.labels_),
            "label_counts": _jsonable(self.label_counts_),
            "ignored_labels": list(self.ignored_labels_),
            "losses": _jsonable(self.losses_),
            "log": _jsonable(self.log_),
            "n_train": int(self.n_train_),
            "n_evaluations": int(self.n_evaluations_),
            "n_evaluations_graph": int(self.n_evaluations_graph_),
            "n_evaluations_reused": int(self.n_evaluations_reused_),
            "budget": self.budget_,
            "n_trimmed": int(self.n_trimmed_),
            "mean_subset_size": float(np.mean(self.subset_sizes_)) if self.subset_sizes_ else 0.0,
            "fit_seconds": float(self.fit_seconds_),
            "interrupted": bool(self.interrupted_),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any] | str) -> NonstationaryLearner:
        """Inverse of :meth:`to_json` (also accepts a JSON string).

        The document is data only: its ``"kernel"`` resolves through the kernel
        registry (:meth:`structkernels.registry.Registry.resolve_name`), never
        by importing a name read from it; σ and fixed σ must be finite numbers
        >= 0.  Anything else raises a ``ValueError`` naming the field.
        """
        from structkernels.model_io import sigma_problem

        if isinstance(obj, str):
            try:
                obj = json.loads(obj)
            except RecursionError:
                raise ValueError("not a nonstationary σ model (JSON nested too deeply)") from None
        if not isinstance(obj, dict) or obj.get("format") != MODEL_FORMAT:
            raise ValueError(
                f"not a nonstationary σ model (expected format {MODEL_FORMAT!r}, "
                f"got {obj.get('format') if isinstance(obj, dict) else type(obj).__name__!r})"
            )
        if obj.get("version") != MODEL_VERSION:
            raise ValueError(f"unsupported σ model version {obj.get('version')!r}")
        for key in ("sigma", "fixed_sigma"):
            value = obj.get(key, {})
            problem = sigma_problem(key, value) if value is not None else (
                f"{key} must be an object of edge label -> σ, got null"
            )
            if problem is not None:
                raise ValueError(problem)
        for key in ("params", "label_counts", "losses"):
            if not isinstance(obj.get(key, {}), dict):
                raise ValueError(f"{key!r} must be an object, got {type(obj[key]).__name__}")
        for key in ("labels", "ignored_labels", "log"):
            if not isinstance(obj.get(key, []), list):
                raise ValueError(f"{key!r} must be a list, got {type(obj[key]).__name__}")
        # the kernel is a registered name; an old file's "module:Class" maps to the
        # registered name whose entry point is that target (looked up, not imported)
        kern = kernels.resolve_name(obj.get("kernel"))
        params = dict(obj.get("params") or {})
        allowed = set(cls._get_param_names()) - {"kernel", "random_state"}
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise ValueError(f"unknown learner parameter(s) {', '.join(map(repr, unknown))}")
        rs = obj.get("random_state")
        if rs is not None and (isinstance(rs, bool) or not isinstance(rs, int)):
            raise ValueError(f"'random_state' must be an int or null, got {rs!r}")
        try:
            learner = cls(kernel=kern, random_state=rs, **params)
            learner.sigma_ = {str(k): float(v) for k, v in obj["sigma"].items()}
            learner.fixed_sigma_ = {str(k): float(v) for k, v in obj.get("fixed_sigma", {}).items()}
            learner.normalize_ = bool(obj.get("normalize", learner.normalize))
            learner.labels_ = list(obj["labels"])
            learner.label_counts_ = {str(k): int(v) for k, v in obj.get("label_counts", {}).items()}
            learner.ignored_labels_ = list(obj["ignored_labels"])
            learner.losses_ = dict(obj.get("losses", {}))
            learner.log_ = list(obj.get("log", []))
            learner.n_train_ = int(obj["n_train"])
            learner.n_evaluations_ = int(obj["n_evaluations"])
            learner.n_evaluations_graph_ = int(obj.get("n_evaluations_graph", 0))
            learner.n_evaluations_reused_ = int(obj.get("n_evaluations_reused", 0))
            learner.subset_sizes_ = []
            learner.budget_ = obj.get("budget")
            learner.n_trimmed_ = int(obj.get("n_trimmed", 0))
            learner.fit_seconds_ = float(obj.get("fit_seconds", 0.0))
            learner.interrupted_ = bool(obj.get("interrupted", False))
        except (KeyError, TypeError, AttributeError) as exc:
            # AttributeError: a field that must be a mapping is null, a list or a scalar
            raise ValueError(f"malformed σ model: {type(exc).__name__}: {exc}") from None
        return learner

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model to ``path`` as JSON, atomically.

        The file appears complete under its name or not at all.  The kernel is
        saved by its registered name: a kernel class that is not registered
        is refused here (register it with ``structkernels.register(name, cls)``
        or an entry point), as is a NaN or infinity anywhere (named).
        """
        from structkernels.utils import atomic_open, dumps_finite

        doc = self.to_json()
        try:
            text = dumps_finite(doc, what=f"{os.fspath(path)}: the σ model", indent=1)
        except TypeError as exc:
            raise TypeError(f"{os.fspath(path)}: the σ model is not JSON data: {exc}") from None
        with atomic_open(path) as fh:
            fh.write(text + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_bytes: int | None = None) -> NonstationaryLearner:
        """Read a model written by :meth:`save` or by ``structkernels train-npk``.

        Reading never runs code (see :mod:`structkernels.model_io`): the
        kernel resolves through the registry, the size is bounded by
        ``max_bytes`` (default ``structkernels.model_io.MAX_MODEL_BYTES``) and
        every error is one :class:`~structkernels.model_io.ModelFormatError`
        line naming the file.
        """
        from structkernels.model_io import load_learner

        return load_learner(path, max_bytes=max_bytes)
