"""Compiled dynamic programmes of the path and tree convolution kernels (numba).

Both are sparse: they list the position pairs whose tuple similarity
``m = sig[e] sig[e'] k_e(e, e') k_n(n, n')`` is non-zero, then run the subsequence
recursion over that list only (``f`` the factor of a matched position, ``g`` of a skipped
one: ``f = lam**2, g = lam`` for the span decay, ``f = lam, g = 1`` for the length decay)::

    E[k] = f * m_k * (1 + sum over k' before k in both sequences of E[k'] * g**gaps(k', k))

Every term is non-negative: the sums have no cancellation.
"""

from __future__ import annotations

import numpy as np

from structkernels.utils import njit

MODE_FULL = 0
MODE_SYMMETRIC = 1
MODE_DIAG = 2


@njit(cache=True, nogil=True, inline="always")
def tuple_similarity(ea, na, eca, nca, eb, nb, ecb, ncb, sig, ind_e, KE, ind_n, KN, cn):
    """``sig[e] k_e(e, e') sig[e'] k_n(n, n')``; with ``ind_n``, ``k_n = cn + (1 - cn) I``."""
    w = sig[ea] * sig[eb]
    if w == 0.0:
        return 0.0
    if ind_e:
        if ea != eb:
            return 0.0
    else:
        w *= KE[eca, ecb]
    if ind_n:
        if na != nb:
            if cn == 0.0:
                return 0.0
            w *= cn
    else:
        w *= KN[nca, ncb]
    return w


@njit(cache=True, nogil=True, inline="always")
def pair_similarity(keyed, a, b, xk, xe, xn, xec, xnc, yk, ye, yn, yec, ync,
                    sig, ind_e, KE, ind_n, KN, cn):
    """Tuple similarity of position ``a`` of ``X`` and ``b`` of ``Y`` (``keyed``: one key
    comparison, both label kernels being the indicator)."""
    if keyed:
        if xk[a] != yk[b]:
            return 0.0
        w = sig[xe[a]] * sig[ye[b]]
        if w != 0.0 and xn[a] != yn[b]:
            w *= cn
        return w
    return tuple_similarity(xe[a], xn[a], xec[a], xnc[a], ye[b], yn[b], yec[b], ync[b],
                            sig, ind_e, KE, ind_n, KN, cn)


@njit(cache=True, nogil=True, inline="always")
def longest_segment(offsets, least):
    """The longest of the segments ``offsets`` delimits (CSR row lengths), at least ``least``."""
    m = least
    for i in range(len(offsets) - 1):
        m = max(m, offsets[i + 1] - offsets[i])
    return m


@njit(cache=True, nogil=True, inline="always")
def powers(base, n):
    """``[base**0, base**1, ..., base**(n - 1)]`` by repeated products."""
    out = np.empty(n, dtype=np.float64)
    g = 1.0
    for q in range(n):
        out[q] = g
        g *= base
    return out


@njit(cache=True, nogil=True, inline="always")
def block_columns(i, ny, mode):
    """The columns ``j`` a block computes for row ``i``."""
    if mode == MODE_DIAG:
        return i, i + 1
    if mode == MODE_SYMMETRIC:
        return i, ny
    return 0, ny


@njit(cache=True, nogil=True, inline="always")
def block_out(nx, ny, mode):
    """The block's result: ``(nx, 1)`` in diagonal mode, else ``(nx, ny)``."""
    return np.empty((nx, 1 if mode == MODE_DIAG else ny), dtype=np.float64)


@njit(cache=True, nogil=True, inline="always")
def block_store(out, i, j, value, mode):
    """``value`` of the pair ``(i, j)`` into :func:`block_out`'s array."""
    if mode == MODE_DIAG:
        out[i, 0] = value
    else:
        out[i, j] = value
        if mode == MODE_SYMMETRIC:
            out[j, i] = value


#: a pair with more matching position pairs than this is computed by the dense programme
SPARSE_LIMIT = 1 << 16


@njit(cache=True, nogil=True)
def _path_dense(xe, xn, xec, xnc, xk, a0, a1, ye, yn, yec, ync, yk, b0, b1,
                sig, ind_e, KE, ind_n, KN, cn, f, g, max_len, D, Dn, R):
    """The path kernel of one pair by the dense programme, ``O(L |S| |S'|)``:
    ``E_l[s, t] = f m D_{l-1}[s - 1, t - 1]``, ``D_l`` the ``g``-decayed prefix sums of ``E_l``."""
    lb = b1 - b0
    L = 1 if max_len <= 0 else max_len
    keyed = ind_e and ind_n
    for l in range(L):
        for t in range(lb + 1):
            D[l, t] = 0.0
    total = 0.0
    for s in range(a0, a1):
        for l in range(L):
            R[l, 0] = 0.0
            Dn[l, 0] = 0.0
        for t in range(b0, b1):
            w = pair_similarity(keyed, s, t, xk, xe, xn, xec, xnc, yk, ye, yn, yec, ync,
                                sig, ind_e, KE, ind_n, KN, cn)
            c = t - b0 + 1
            fw = f * w
            for l in range(L):
                if w == 0.0:
                    e = 0.0
                elif max_len <= 0:
                    e = fw * (1.0 + D[0, c - 1])
                elif l == 0:
                    e = fw
                else:
                    e = fw * D[l - 1, c - 1]
                total += e
                r = e + g * R[l, c - 1]
                R[l, c] = r
                Dn[l, c] = r + g * D[l, c]
        for l in range(L):
            for t in range(lb + 1):
                D[l, t] = Dn[l, t]
    return total


@njit(cache=True, nogil=True)
def path_block(
    xo, xe, xn, xec, xnc, xk, yo, ye, yn, yec, ync, yk,
    sig, ind_e, KE, ind_n, KN, cn, lam, max_len, mode,
):
    """Path kernel block of encoded paths ``X``, ``Y`` (``xk``/``yk``: tuple keys, compared
    when both label kernels are the indicator; ``max_len <= 0``: every length)."""
    nx = len(xo) - 1
    ny = len(yo) - 1
    lx = longest_segment(xo, 0)
    ly = longest_segment(yo, 0)
    cap = max(1, min(lx * ly, SPARSE_LIMIT))
    ms = np.empty(cap, dtype=np.int64)
    mt = np.empty(cap, dtype=np.int64)
    mw = np.empty(cap, dtype=np.float64)
    E = np.empty((cap, max(1, max_len)), dtype=np.float64)
    gpow = powers(lam, max(1, lx + ly))
    f = lam * lam
    Lw = max(1, max_len)
    Dw = np.empty((Lw, ly + 1), dtype=np.float64)
    Dnw = np.empty((Lw, ly + 1), dtype=np.float64)
    Rw = np.empty((Lw, ly + 1), dtype=np.float64)
    C = np.empty(max(1, ly), dtype=np.float64)
    Q = np.empty(max(1, ly), dtype=np.float64)
    out = block_out(nx, ny, mode)
    for i in range(nx):
        jlo, jhi = block_columns(i, ny, mode)
        a0 = xo[i]
        a1 = xo[i + 1]
        for j in range(jlo, jhi):
            b0 = yo[j]
            b1 = yo[j + 1]
            # 1. the matching position pairs, row-major (at most SPARSE_LIMIT)
            K = 0
            dense = False
            if ind_e and ind_n:
                for s in range(a0, a1):
                    ws = sig[xe[s]]
                    if ws == 0.0:
                        continue
                    key = xk[s]
                    for t in range(b0, b1):
                        if yk[t] == key:
                            if K == SPARSE_LIMIT:
                                dense = True
                                break
                            ms[K] = s - a0
                            mt[K] = t - b0
                            mw[K] = ws * ws if xn[s] == yn[t] else ws * ws * cn
                            K += 1
                    if dense:
                        break
            else:
                for s in range(a0, a1):
                    es, ns, ecs, ncs = xe[s], xn[s], xec[s], xnc[s]
                    for t in range(b0, b1):
                        w = tuple_similarity(es, ns, ecs, ncs, ye[t], yn[t], yec[t], ync[t],
                                 sig, ind_e, KE, ind_n, KN, cn)
                        if w != 0.0:
                            if K == SPARSE_LIMIT:
                                dense = True
                                break
                            ms[K] = s - a0
                            mt[K] = t - b0
                            mw[K] = w
                            K += 1
                    if dense:
                        break
            # 2. the recursion over the matches, row by row, or dense: chosen by the pair
            # alone, so every block gives the same value
            total = 0.0
            if dense or (max_len > 0 and K * K > 8 * (a1 - a0) * (b1 - b0) * Lw):
                total = _path_dense(xe, xn, xec, xnc, xk, a0, a1, ye, yn, yec, ync, yk, b0, b1,
                                    sig, ind_e, KE, ind_n, KN, cn, f, lam, max_len, Dw, Dnw, Rw)
            elif max_len <= 0 and K > b1 - b0:
                # all lengths, row by row: C[t] = Σ E g^(s - 1 - s') over earlier rows,
                # Q[t] = Σ_{t' < t} C[t'] g^(t - 1 - t'), E = f m (1 + Q[t])
                lb = b1 - b0
                for t in range(lb):
                    C[t] = 0.0
                prev = -1
                k = 0
                while k < K:
                    s = ms[k]
                    if prev >= 0:
                        sc = gpow[s - 1 - prev]
                        q = 0.0
                        for t in range(lb):
                            c = C[t] * sc
                            C[t] = c
                            Q[t] = q
                            q = lam * q + c
                    else:
                        for t in range(lb):
                            Q[t] = 0.0
                    kend = k
                    while kend < K and ms[kend] == s:
                        kend += 1
                    for kk in range(k, kend):
                        v = f * mw[kk] * (1.0 + Q[mt[kk]])
                        E[kk, 0] = v
                        total += v
                    # C as of after row s: sum E g^(s - s')
                    if prev >= 0:
                        for t in range(lb):
                            C[t] *= lam
                    for kk in range(k, kend):
                        C[mt[kk]] += E[kk, 0]
                    prev = s
                    k = kend
            elif max_len <= 0:
                for k in range(K):
                    sk = ms[k]
                    tk = mt[k]
                    acc = 1.0
                    for k2 in range(k):
                        s2 = ms[k2]
                        t2 = mt[k2]
                        if s2 < sk and t2 < tk:
                            acc += E[k2, 0] * gpow[sk - s2 - 1 + tk - t2 - 1]
                    v = f * mw[k] * acc
                    E[k, 0] = v
                    total += v
            else:
                for k in range(K):
                    sk = ms[k]
                    tk = mt[k]
                    fw = f * mw[k]
                    E[k, 0] = fw
                    total += fw
                    for l in range(1, max_len):
                        E[k, l] = 0.0
                    for k2 in range(k):
                        s2 = ms[k2]
                        t2 = mt[k2]
                        if s2 < sk and t2 < tk:
                            gp = fw * gpow[sk - s2 - 1 + tk - t2 - 1]
                            for l in range(1, max_len):
                                E[k, l] += E[k2, l - 1] * gp
                    for l in range(1, max_len):
                        total += E[k, l]
            block_store(out, i, j, total, mode)
    return out


@njit(cache=True, nogil=True)
def tree_block(
    xto, xl, xe, xlc, xec, xco, xci, xk,
    yto, yl, ye, ylc, yec, yco, yci, yk,
    sig, ind_e, KE, ind_n, KN, cn, f, g, contiguous, mode,
):
    """Tree kernel block of encoded trees ``X``, ``Y`` (pre-order CSR arrays): the node
    pairs reachable through matching tuples listed breadth first, then
    ``K(u, v) = m (m + C(u, v))`` children first, ``C`` the child-subsequence recursion
    (``P``: products of the children's ``m``; ``Q``: one factor ``m`` replaced by ``m K``)."""
    keyed = ind_e and ind_n
    nx = len(xto) - 1
    ny = len(yto) - 1
    sx = longest_segment(xto, 1)
    sy = longest_segment(yto, 1)
    cx = longest_segment(xco, 1)
    cy = longest_segment(yco, 1)
    pu = np.empty(sx * sy, dtype=np.int64)
    pv = np.empty(sx * sy, dtype=np.int64)
    pm = np.empty(sx * sy, dtype=np.float64)
    ps = np.empty(sx * sy, dtype=np.int64)  # child positions of the pair under its parents'
    pt = np.empty(sx * sy, dtype=np.int64)
    first = np.empty(sx * sy + 1, dtype=np.int64)  # the pair's children: first[k]:first[k + 1]
    Kloc = np.empty((sx, sy), dtype=np.float64)
    P = np.empty(cx * cy, dtype=np.float64)
    Q = np.empty(cx * cy, dtype=np.float64)
    gpow = powers(g, cx + cy)
    out = block_out(nx, ny, mode)
    for i in range(nx):
        jlo, jhi = block_columns(i, ny, mode)
        ra = xto[i]
        for j in range(jlo, jhi):
            rb = yto[j]
            total = 0.0
            m0 = pair_similarity(keyed, ra, rb, xk, xe, xl, xec, xlc, yk, ye, yl, yec, ylc,
                                 sig, ind_e, KE, ind_n, KN, cn)
            if m0 != 0.0:
                pu[0] = ra
                pv[0] = rb
                pm[0] = m0
                n = 1
                head = 0
                while head < n:
                    u = pu[head]
                    v = pv[head]
                    first[head] = n
                    head += 1
                    for p in range(xco[u], xco[u + 1]):
                        cu = xci[p]
                        for q in range(yco[v], yco[v + 1]):
                            cv = yci[q]
                            w = pair_similarity(keyed, cu, cv, xk, xe, xl, xec, xlc,
                                                yk, ye, yl, yec, ylc,
                                                sig, ind_e, KE, ind_n, KN, cn)
                            if w != 0.0:
                                pu[n] = cu
                                pv[n] = cv
                                pm[n] = w
                                ps[n] = p - xco[u]
                                pt[n] = q - yco[v]
                                n += 1
                first[n] = n
                # children first; a pair's matched children are its own run of the list,
                # in the order of the child-subsequence recursion
                for idx in range(n - 1, -1, -1):
                    m = pm[idx]
                    c0 = first[idx]
                    C = 0.0
                    for k in range(first[idx + 1] - c0):
                        sk = ps[c0 + k]
                        tk = pt[c0 + k]
                        accP = 1.0
                        accQ = 0.0
                        for k2 in range(k):
                            s2 = ps[c0 + k2]
                            t2 = pt[c0 + k2]
                            if contiguous:
                                if s2 == sk - 1 and t2 == tk - 1:
                                    accP += P[k2]
                                    accQ += Q[k2]
                            elif s2 < sk and t2 < tk:
                                gp = gpow[sk - s2 - 1 + tk - t2 - 1]
                                accP += P[k2] * gp
                                accQ += Q[k2] * gp
                        fw = f * pm[c0 + k]
                        P[k] = fw * accP
                        qk = fw * (accQ + Kloc[pu[c0 + k] - ra, pv[c0 + k] - rb] * accP)
                        Q[k] = qk
                        C += qk
                    Kloc[pu[idx] - ra, pv[idx] - rb] = m * (m + C)
                total = Kloc[0, 0]
            block_store(out, i, j, total, mode)
    return out
