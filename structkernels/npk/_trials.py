"""The exact and bounded trials of one label (Algorithm 1, step 3) without repeated work.

Within a label's trials no kernel value is computed twice (:func:`_gram_reusing`), and for
kernels monotone in σ the values that cannot change a first neighbour are not computed
(:func:`_label_block_pruned`, :func:`_bounded_trial`, the chain bounds); the losses equal
those of every trial computed from scratch (see :class:`~structkernels.npk.learner.NonstationaryLearner`).

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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.engine.checks import check_kernel_values, diagonal_scales
from structkernels.engine.gram import gram
from structkernels.engine.parallel import map_tasks, releases_gil
from structkernels.engine.source import KernelSource
from structkernels.kernels.base import Kernel
from structkernels.npk.loss import _losses_of, _with_sigma
from structkernels.structures import PathList, take


def _checked(kernel: Kernel, values: Any, rows: np.ndarray, cols: np.ndarray | None = None
             ) -> np.ndarray:
    """``values`` as float64, refused when not finite, naming the pair by its positions in X
    (:func:`~structkernels.engine.checks.check_kernel_values` with ``rows``/``cols``)."""
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
    kernel: Kernel, X: Sequence, idx: np.ndarray, blocks: list, n_jobs: int | None = None
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
    n_jobs: int | None = None,
) -> int:
    """The pairs (new structure, known structure) of a subset, in rectangular Gram blocks.

    Positions are cut into contiguous ranges; between two ranges ``a < b`` every
    pair has its row before its column, the Gram engine's orientation, so
    ``gram_block(X[new in a], X[old in b])`` and ``gram_block(X[old in a],
    X[new in b])`` give the values a fresh Gram matrix holds.  Pairs inside one
    range are left to :func:`_pair_values`.  Fills ``raw`` and ``known`` and
    returns the number of evaluations.
    """
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

    def run(task: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        rows, cols = task
        return _checked(kernel, kernel.gram_block(take(Xa, rows), take(Xa, cols)), rows, cols)

    blocks = list(map_tasks(run, tasks, n_jobs=n_jobs if releases_gil(kernel) else 1))
    n_eval = 0
    for (rows, cols), block in zip(tasks, blocks, strict=True):
        raw[np.ix_(rows, cols)] = block
        raw[np.ix_(cols, rows)] = block.T
        known[np.ix_(rows, cols)] = True
        known[np.ix_(cols, rows)] = True
        n_eval += block.size
    return n_eval


def _monotone_in_sigma(kernel: Kernel) -> bool:
    """Whether ``K(σ_t = 0) <= K(σ_t = 1)`` is known: the path kernel itself (not a subclass)
    with non-negative label similarities (:meth:`PathKernel.monotone_in_sigma`)."""
    check = getattr(kernel, "monotone_in_sigma", None)
    return bool(check()) if check is not None else False


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
    n_jobs: int | None = None,
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
        s0 = diagonal_scales(d)
        s1 = diagonal_scales(np.diagonal(raw1))
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
    kernel: Kernel, X: Sequence, rows: np.ndarray, cols: np.ndarray, n_jobs: int | None = None
) -> np.ndarray:
    """``K(X[rows[q]], X[cols[q]])`` for each ``q``, as the Gram engine's upper triangle gives it.

    ``X`` is checked (encoded) input; ``rows[q] < cols[q]``
    (:meth:`~structkernels.engine.source.KernelSource.pairs`: a kernel's paired mode in
    chunks, or row by row; chunks in threads with ``n_jobs != 1``).
    """
    return KernelSource(kernel, X, checked=True).pairs(rows, cols, n_jobs=n_jobs)


#: Relative slack of the chain bound (:func:`_chain_bound`) against round-off.
_CHAIN_SLACK = 1e-9


def _chain_bound_setup(kernels_v: dict, X: Sequence) -> tuple[np.ndarray, dict] | None:
    """Edge-label counts of ``X`` and each kernel's weights ``λ² σ(e)²``, for :func:`_chain_bound`.

    Returns ``(C, w)``: ``C[i, e]`` the number of tuples of ``X[i]`` with edge
    label ``e`` (the root's missing edge is a label of its own), ``w[v][e]``
    the weight of label ``e`` under ``kernels_v[v]``
    (:meth:`PathKernel.chain_bound_weights`); None when the bound is not known to hold
    (a kernel other than the path kernel, or label kernels it does not hold for).
    """
    if not isinstance(X, PathList):
        return None
    w = {}
    for v, kern in kernels_v.items():
        bound = getattr(kern, "chain_bound_weights", None)
        weights = None if bound is None else bound(X)
        if weights is None:
            return None
        w[v] = weights
    ids = np.unique(X.edges)
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
    n_jobs: int | None = None,
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
        s1, s0 = diagonal_scales(d1), diagonal_scales(d0)
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
    n_jobs: int | None = None,
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
