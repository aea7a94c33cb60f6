"""Exact derivatives of the path kernel in σ and λ, by forward mode in the compiled programme.

The recursion of :mod:`structkernels.kernels._conv_numba` is differentiated term by term:
each match carries its derivative in the parameters present in the pair (at most two edge
weights per match, and λ), contracted with weights ``V`` over the pairs,
``Σ_ij V_ij ∂K(x_i, y_j)/∂θ``.  Matches with ``σ = 0`` are kept: their derivative need not
be 0.
"""

from __future__ import annotations

import numpy as np

from structkernels.kernels._conv_numba import (
    MODE_DIAG,
    MODE_SYMMETRIC,
    block_columns,
    longest_segment,
    powers,
    tuple_similarity,
)
from structkernels.utils import njit

__all__ = ["path_grad_block"]


@njit(cache=True, nogil=True)
def _pair_grad(xe, xn, xec, xnc, a0, a1, ye, yn, yec, ync, b0, b1,
               sig, ones, ind_e, KE, ind_n, KN, cn, lam, max_len, pe, n_par, with_lam,
               ms, mt, mw, mr, E, dE, loc, glob, gpow, weight, grad):
    """Add ``weight * ∂K(x, y)/∂θ`` of one pair to ``grad`` (``θ``: σ per ``pe``, then λ)."""
    # 1. matches: every position pair whose similarity without σ is non-zero
    K = 0
    for s in range(a0, a1):
        for t in range(b0, b1):
            r = tuple_similarity(xe[s], xn[s], xec[s], xnc[s], ye[t], yn[t], yec[t], ync[t],
                     ones, ind_e, KE, ind_n, KN, cn)
            if r != 0.0:
                ms[K] = s - a0
                mt[K] = t - b0
                mr[K] = r
                mw[K] = r * sig[xe[s]] * sig[ye[t]]
                K += 1
    if K == 0:
        return
    # 2. the parameters present, numbered locally (λ last when learned)
    d = 0
    for k in range(K):
        for side in range(2):
            e = xe[a0 + ms[k]] if side == 0 else ye[b0 + mt[k]]
            p = pe[e]
            if p >= 0 and loc[p] < 0:
                loc[p] = d
                glob[d] = p
                d += 1
    dl = -1
    if with_lam:
        dl = d
        glob[d] = n_par
        d += 1
    f = lam * lam
    L = 1 if max_len <= 0 else max_len
    for k in range(K):
        sk = ms[k]
        tk = mt[k]
        ea = xe[a0 + sk]
        eb = ye[b0 + tk]
        m = mw[k]
        for l in range(L):
            # S = Σ E_{l-1}[k'] g^gap (l = 0: the "1 +" of all lengths, or nothing)
            S = 0.0
            for q in range(d):
                dE[k, l, q] = 0.0
            if l > 0 or max_len <= 0:
                ll = 0 if max_len <= 0 else l - 1
                for k2 in range(k):
                    s2 = ms[k2]
                    t2 = mt[k2]
                    if s2 < sk and t2 < tk:
                        gap = sk - s2 - 1 + tk - t2 - 1
                        gp = gpow[gap]
                        S += E[k2, ll] * gp
                        for q in range(d):
                            dE[k, l, q] += dE[k2, ll, q] * gp
                        if dl >= 0 and gap > 0:
                            dE[k, l, dl] += E[k2, ll] * gap * gpow[gap - 1]
            if max_len <= 0:
                base = 1.0 + S
            elif l == 0:
                base = 1.0
            else:
                base = S
            E[k, l] = f * m * base
            for q in range(d):
                dE[k, l, q] *= f * m
            if base != 0.0:
                # ∂m: σ(ea) σ(eb) r
                pa = pe[ea]
                if pa >= 0:
                    dE[k, l, loc[pa]] += f * sig[eb] * mr[k] * base
                pb = pe[eb]
                if pb >= 0:
                    dE[k, l, loc[pb]] += f * sig[ea] * mr[k] * base
                if dl >= 0:
                    dE[k, l, dl] += 2.0 * lam * m * base
    for k in range(K):
        for l in range(L):
            for q in range(d):
                grad[glob[q]] += weight * dE[k, l, q]
    for q in range(d):
        p = glob[q]
        if p < n_par:
            loc[p] = -1


@njit(cache=True, nogil=True)
def path_grad_block(
    xo, xe, xn, xec, xnc, yo, ye, yn, yec, ync,
    sig, ind_e, KE, ind_n, KN, cn, lam, max_len, pe, n_par, with_lam, V, mode, i0, i1,
):
    """``Σ_ij V[i, j] ∂K(X[i], Y[j])/∂θ`` over the rows ``i0 <= i < i1``: ``n_par`` values
    for σ of the parameter ids ``pe`` (-1 for a label not learned), then λ's (0 unless
    ``with_lam``).  Symmetric mode weighs the upper triangle by ``V[i, j] + V[j, i]``."""
    ny = len(yo) - 1
    lx = longest_segment(xo, 1)
    ly = longest_segment(yo, 1)
    cap = lx * ly
    Lw = max(1, max_len)
    dmax = min(n_par, 2 * cap) + 1
    ms = np.empty(cap, dtype=np.int64)
    mt = np.empty(cap, dtype=np.int64)
    mw = np.empty(cap, dtype=np.float64)
    mr = np.empty(cap, dtype=np.float64)
    E = np.empty((cap, Lw), dtype=np.float64)
    dE = np.empty((cap, Lw, dmax), dtype=np.float64)
    loc = np.full(max(1, n_par), -1, dtype=np.int64)
    glob = np.empty(dmax, dtype=np.int64)
    gpow = powers(lam, lx + ly + 1)
    ones = np.ones(len(sig), dtype=np.float64)
    grad = np.zeros(n_par + 1, dtype=np.float64)
    for i in range(i0, i1):
        jlo, jhi = block_columns(i, ny, mode)
        for j in range(jlo, jhi):
            if mode == MODE_DIAG:
                w = V[i, 0]
            elif mode == MODE_SYMMETRIC and j != i:
                w = V[i, j] + V[j, i]
            else:
                w = V[i, j]
            if w == 0.0:
                continue
            _pair_grad(xe, xn, xec, xnc, xo[i], xo[i + 1], ye, yn, yec, ync, yo[j], yo[j + 1],
                       sig, ones, ind_e, KE, ind_n, KN, cn, lam, max_len, pe, n_par, with_lam,
                       ms, mt, mw, mr, E, dE, loc, glob, gpow, w, grad)
    return grad
