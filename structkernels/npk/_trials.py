"""The exact trials of one label (Algorithm 1, step 3) without repeated work.

The same 1-NN graphs and losses as each trial from scratch (docs/npk.md), with fewer kernel
evaluations: (1) values of earlier trials of the label are read back; (2) by Eq. (1) σ_t = 0
changes only pairs of two structures with ``t``; (3) for a kernel monotone in σ, and (4)
where the chain bound holds, a pair that cannot be a first neighbour is not evaluated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.engine.checks import diagonal_scales
from structkernels.engine.gram import gram
from structkernels.engine.parallel import map_tasks
from structkernels.engine.source import KernelSource
from structkernels.kernels.base import Kernel
from structkernels.npk.loss import TrialResult, losses_of, trial_result, with_sigma
from structkernels.structures import PathList, take


def _fill_diagonal(B: np.ndarray, kernel: Kernel, X: Sequence,
                   rows: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Fill in the unknown (NaN) self-similarities of ``B`` (row ``i``: ``X[rows[i]]``);
    returns the diagonal and the evaluations made."""
    d = np.diagonal(B).copy()
    new = np.flatnonzero(np.isnan(d))
    if len(new):
        where = new if rows is None else rows[new]
        d[new] = KernelSource(kernel, take(X, where), checked=True).diagonal()
        B[new, new] = d[new]
    return d, int(len(new))


def _known_values(idx: np.ndarray, blocks: list) -> np.ndarray:
    """The values ``blocks`` (``(indices, raw matrix)`` of one kernel) hold for the pairs of
    the sorted ``idx``; NaN elsewhere."""
    raw = np.full((len(idx), len(idx)), np.nan)
    for bidx, braw in blocks:
        if len(bidx) == 0:
            continue
        pos = np.minimum(np.searchsorted(bidx, idx), len(bidx) - 1)
        p = np.flatnonzero(bidx[pos] == idx)
        sub = braw[np.ix_(pos[p], pos[p])]
        raw[np.ix_(p, p)] = np.where(np.isnan(sub), raw[np.ix_(p, p)], sub)
    return raw


def _gram_reusing(
    kernel: Kernel, X: Sequence, idx: np.ndarray, blocks: list, n_jobs: int | None = None
) -> tuple[np.ndarray, int]:
    """Raw Gram matrix of ``X[idx]`` evaluating only the pairs no block of ``blocks`` holds
    (each as a fresh ``gram`` gives it), and the evaluations made."""
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
            vals = KernelSource(kernel, Xa, checked=True).pairs(lo, hi, n_jobs=n_jobs)
            raw[lo, hi] = vals
            raw[hi, lo] = vals
            n_eval += len(lo)
    return raw, n_eval


def _new_by_old(kernel: Kernel, Xa: Sequence, is_new: np.ndarray, raw: np.ndarray,
                known: np.ndarray, n_jobs: int | None = None) -> int:
    """The pairs (new structure, known structure) between two ranges of positions ``a < b``
    (the Gram engine's orientation) into ``raw`` and ``known``; returns the evaluations."""
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
    src = KernelSource(kernel, Xa, checked=True)
    blocks = list(map_tasks(lambda task: src.block(*task), tasks,
                            n_jobs=n_jobs if src.releases_gil else 1))
    n_eval = 0
    for (rows, cols), block in zip(tasks, blocks, strict=True):
        raw[np.ix_(rows, cols)] = block
        raw[np.ix_(cols, rows)] = block.T
        known[np.ix_(rows, cols)] = True
        known[np.ix_(cols, rows)] = True
        n_eval += block.size
    return n_eval


#: Relative slack of the bounds (``K(σ_t = 0) <= K(σ_t = 1)``, the chain bound) against
#: round-off.
_SLACK = 1e-9


def _label_block_pruned(kernel0: Kernel, X: Sequence, idx: np.ndarray, inside: np.ndarray,
                        raw1: np.ndarray, blocks: list, normalize: bool,
                        n_jobs: int | None = None) -> tuple[np.ndarray, int]:
    """The σ_t = 0 values of the label's block (``inside``: positions in ``idx``) the exact 1-NN
    graph needs (NaN elsewhere), and the evaluations: ``U = raw1[i, j] s0_i s0_j`` bounds a
    σ_t = 0 similarity from above, known values bound each row's best ``b_i`` from below, and
    a pair with ``U < b_i`` and ``U < b_j`` is not evaluated."""
    I = idx[inside]
    m = len(I)
    B = _known_values(I, blocks)
    XI = kernel0.check_input(take(X, I))
    source = KernelSource(kernel0, XI, checked=True)
    d, n_eval = _fill_diagonal(B, kernel0, XI)
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
    U = U + np.abs(U) * _SLACK
    np.fill_diagonal(U, -np.inf)
    known = ~np.isnan(B) & ~np.eye(m, dtype=bool)
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
        vals = source.pairs(lo, hi, n_jobs=n_jobs)
        n_eval += len(lo)
        B[lo, hi] = vals
        B[hi, lo] = vals
        known[lo, hi] = known[hi, lo] = True
        k = vals * (s0[lo] * s0[hi])
        np.maximum.at(lb, lo, k)
        np.maximum.at(lb, hi, k)
    return B, n_eval


def _chain_bound_setup(kernels_v: dict, X: Sequence) -> tuple[np.ndarray, dict] | None:
    """``(C, w)`` for :func:`_chain_bound` (``C[i, e]``: tuples of ``X[i]`` with edge label
    ``e``), or None when the bound is not known to hold."""
    if not isinstance(X, PathList):
        return None
    w = {v: kern.chain_bound_weights(X) for v, kern in kernels_v.items()}
    if any(weights is None for weights in w.values()):
        return None
    ids = np.unique(X.edges)
    col = np.searchsorted(ids, X.edges)
    rows = np.repeat(np.arange(len(X)), np.diff(X.offsets))
    C = np.zeros((len(X), len(ids)), dtype=np.float64)
    np.add.at(C, (rows, col), 1.0)
    return C, w


def _chain_bound(C: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Upper bounds of the raw path kernel between the rows of ``C`` (edge-label counts).

    The path kernel sums, over chains of matched tuple pairs ``(s_1, t_1), ..., (s_k, t_k)``
    increasing in both paths, ``Π λ² m_q`` times ``λ`` per skipped position, with
    ``m_q <= σ(e)² [e_s = e_t]`` (indicator edge kernel, node similarity at most 1) and
    ``λ <= 1``.  A chain uses each position of ``x`` at most once, so the sum is at most the sum
    over all choices of "no partner or one partner with the same label" per position of ``x``::

        K(x, y) <= Π_s (1 + λ² σ(e_s)² c_y(e_s)) - 1 = exp(Σ_e c_x(e) log(1 + w_e c_y(e))) - 1

    and the same with ``x`` and ``y`` swapped; the smaller is returned.  Every
    term is non-negative; the exponent is one matrix product.
    """
    L = C @ np.log1p(w[None, :] * C).T
    return np.expm1(np.minimum(L, L.T))


def _walk(U: np.ndarray, known: np.ndarray, best: np.ndarray, evaluate) -> None:
    """Evaluate by ``evaluate(lo, hi)`` the unknown pairs whose upper bound ``U[i, j]`` reaches
    either row's ``best`` (updated): most promising first, in doubling batches."""
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


def _bounded_trial(kernels_v: dict, X: Sequence, a: np.ndarray, inside: np.ndarray, blocks: dict,
                   normalize: bool, bound: tuple[np.ndarray, dict],
                   n_jobs: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """The subset's raw σ_t = 1 matrix and σ_t = 0 block of ``inside`` with the values their
    1-NN graphs need (NaN elsewhere; :func:`_chain_bound`), and the evaluations."""
    k1, k0 = kernels_v[1], kernels_v[0]
    C, w = bound
    m = len(a)
    Xa = k1.check_input(take(X, a))
    sources = {v: KernelSource(kernels_v[v], Xa, checked=True) for v in (0, 1)}
    R1 = _known_values(a, blocks[1])
    I = a[inside]
    B0 = _known_values(I, blocks[0])
    is_in = np.zeros(m, dtype=bool)
    is_in[inside] = True
    # self-similarities: the σ_t = 0 ones differ only for structures with the label
    d1, ne1 = _fill_diagonal(R1, k1, Xa)
    dI, ne0 = _fill_diagonal(B0, k0, Xa, inside)
    n_eval = ne1 + ne0
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
        return U + np.abs(U) * _SLACK

    def row_best(V: np.ndarray, s: np.ndarray) -> np.ndarray:
        S = V * (s[:, None] * s[None, :])
        np.fill_diagonal(S, np.nan)
        return np.where(np.isnan(S), -np.inf, S).max(axis=1)

    # σ_t = 1: one kernel for every pair
    def eval1(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        vals = sources[1].pairs(lo, hi, n_jobs=n_jobs)
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
        for v, sel in ((0, ii), (1, ~ii)):
            if sel.any():
                vals = sources[v].pairs(lo[sel], hi[sel], n_jobs=n_jobs)
                W0[lo[sel], hi[sel]] = vals
                W0[hi[sel], lo[sel]] = vals
                if v == 1:
                    R1[lo[sel], hi[sel]] = vals
                    R1[hi[sel], lo[sel]] = vals
                out[sel] = vals
        counter[0] += len(lo)
        return out * (s0[lo] * s0[hi])

    _walk(U0, ~np.isnan(W0), row_best(W0, s0), eval0)
    return R1, W0[np.ix_(inside, inside)], n_eval + counter[0]


#: Kernel values kept per label and σ_t value for later trials; the oldest blocks are
#: dropped beyond it (costing evaluations, never changing a result).
_REUSE_ENTRIES = 2**24


def _keep(blocks: list, idx: np.ndarray, raw: np.ndarray) -> None:
    """Append a computed block; drop the oldest while the total exceeds ``_REUSE_ENTRIES``."""
    blocks.append((idx, raw))
    while len(blocks) > 1 and sum(b.size for _, b in blocks) > _REUSE_ENTRIES:
        blocks.pop(0)


def trial_cost(size: Any, inside: Any) -> Any:
    """Kernel evaluations of an exact trial: Gram of the subset + the label's block."""
    return size * (size + 1) // 2 + inside * (inside + 1) // 2


def exact_trials(base: Kernel, sigma: dict[str, float], label: str, X: Sequence, y: np.ndarray,
                 subsets: list[np.ndarray], has: np.ndarray, normalize: bool,
                 n_jobs: int | None = None, chain_bound: bool = True) -> list[TrialResult]:
    """:func:`~structkernels.npk.loss.subset_losses` of the exact trials of one label, each
    kernel value computed once (``n_nominal``: the cost from scratch, :func:`trial_cost`)."""
    kernels_v = {v: with_sigma(base, {**sigma, label: float(v)}) for v in (0, 1)}
    prune = bool(base.monotone_in_sigma())
    bound = _chain_bound_setup(kernels_v, X) if prune and chain_bound else None
    blocks: dict[int, list] = {0: [], 1: []}
    out = []
    for a in subsets:
        if len(a) < 2:
            out.append(TrialResult(len(a)))
            continue
        inside = np.flatnonzero(has[a])
        if bound is not None:
            R1, R0, n_eval = _bounded_trial(kernels_v, X, a, inside, blocks, normalize, bound,
                                            n_jobs)
            _keep(blocks[1], a, R1)
            if len(inside):
                _keep(blocks[0], a[inside], R0)
            raw1 = np.where(np.isnan(R1), -np.inf, R1)
            raw0 = raw1.copy()
            raw0[np.ix_(inside, inside)] = np.where(np.isnan(R0), -np.inf, R0)
        else:
            raw1, n_eval = _gram_reusing(kernels_v[1], X, a, blocks[1], n_jobs)
            _keep(blocks[1], a, raw1)
            raw0 = raw1.copy()
            if len(inside) and prune:
                block, ne = _label_block_pruned(
                    kernels_v[0], X, a, inside, raw1, blocks[0], normalize, n_jobs)
                n_eval += ne
                _keep(blocks[0], a[inside], block)
                raw0[np.ix_(inside, inside)] = np.where(np.isnan(block), -np.inf, block)
            elif len(inside):
                block, ne = _gram_reusing(kernels_v[0], X, a[inside], blocks[0], n_jobs)
                n_eval += ne
                _keep(blocks[0], a[inside], block)
                raw0[np.ix_(inside, inside)] = block
        out.append(trial_result(len(a), [losses_of(r, y[a], normalize) for r in (raw0, raw1)],
                                n_eval, trial_cost(len(a), len(inside))))
    return out
