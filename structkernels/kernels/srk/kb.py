"""The k-gram bijective string re-writing kernel, kb-SRK (Bu, Li & Zhu, ACL 2012, Sec. 5).

``K_k`` (Eq. 4) sums ``K̄_k`` (Eq. 5) over all quadruples of k-grams of ``s1, t1, s2, t2``;
a rule matching a k-gram pair weighs ``lam ** (number of aligned wildcard pairs)``.
Algorithm 1 computes ``K̄_k`` from the counts of token pairs (*doubles*, codes
``a << 32 | b``); Algorithm 2 groups the double lists of each side by their non-identical
doubles (a hashed key: a collision can cost time, never change a value), so that only
equal keys meet.  ``K_1 = I_s I_t + lam^2 U W`` in closed form.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from structkernels.kernels._conv_numba import longest_segment
from structkernels.kernels.srk.common import Rewriting, SRKBase, encode_rewritings
from structkernels.utils import njit

__all__ = ["KbSRK", "kb_srk_direct", "kb_kbar"]


@njit(cache=True, nogil=True)
def _tables(kmax, lam2):
    """``j!``, ``C(n, r)`` and ``fl[j] = j! lam2^j`` (the weight of a non-identical double
    met j times on both sides), up to ``kmax``."""
    fact = np.ones(kmax + 1)
    fl = np.ones(kmax + 1)
    p = 1.0
    for i in range(1, kmax + 1):
        fact[i] = fact[i - 1] * i
        p *= lam2
        fl[i] = fact[i] * p
    binom = np.zeros((kmax + 1, kmax + 1))
    for n in range(kmax + 1):
        binom[n, 0] = 1.0
        for r in range(1, n + 1):
            binom[n, r] = binom[n - 1, r - 1] + (binom[n - 1, r] if r <= n - 1 else 0.0)
    return fact, binom, fl


@njit(cache=True, nogil=True)
def _g(vs, vt, k, lam2, fact, binom, fl):
    """Algorithm 1 lines 3-8 on two sorted rows of k double codes (``a << 32 | b``)."""
    r = 1.0
    i = 0
    j = 0
    while i < k or j < k:
        if j >= k:
            e = vs[i]
        elif i >= k:
            e = vt[j]
        else:
            e = vs[i] if vs[i] <= vt[j] else vt[j]
        cs = 0
        while i < k and vs[i] == e:
            cs += 1
            i += 1
        ct = 0
        while j < k and vt[j] == e:
            ct += 1
            j += 1
        if (e >> 32) == (e & 0xFFFFFFFF):  # identical double (c, c)
            mn = cs if cs < ct else ct
            if mn > 0:
                acc = 0.0
                p = 1.0
                for q in range(mn + 1):
                    acc += binom[cs, q] * binom[ct, q] * fact[q] * p
                    p *= lam2
                r *= acc
        else:
            if cs != ct:
                return 0.0
            r *= fl[cs]
    return r


@njit(cache=True, nogil=True)
def _window(x, y, a, b, k, out):
    """Sorted double codes of the window at (a, b); returns its number of identical doubles."""
    n_ident = 0
    for p in range(k):
        u = x[a + p]
        v = y[b + p]
        if u == v:
            n_ident += 1
        c = (u << 32) | v
        q = p - 1
        while q >= 0 and out[q] > c:
            out[q + 1] = out[q]
            q -= 1
        out[q + 1] = c
    return n_ident


@njit(cache=True, nogil=True)
def _direct_pair(s1, t1, s2, t2, k, lam2):
    """Eq. 4 literally: K̄_k (Algorithm 1) summed over all quadruples of k-grams."""
    fact, binom, fl = _tables(k, lam2)
    vs = np.empty(k, dtype=np.int64)
    vt = np.empty(k, dtype=np.int64)
    total = 0.0
    for a in range(len(s1) - k + 1):
        for b in range(len(s2) - k + 1):
            _window(s1, s2, a, b, k, vs)  # the sorted doubles of a_s1 ⊗ a_s2
            for c in range(len(t1) - k + 1):
                for d in range(len(t2) - k + 1):
                    _window(t1, t2, c, d, k, vt)
                    total += _g(vs, vt, k, lam2, fact, binom, fl)
    return total


_M1 = 0x5851F42D4C957F2D
_M2 = 0x14057B7EF767814F


@njit(cache=True, nogil=True)
def _mix(c):
    """A 64-bit mixer of a double code; multisets hash to the sum of their mixes."""
    z = (c + 0x632BE59BD9B4E019) * _M1
    z ^= z >> 29
    z *= _M2
    z ^= z >> 32
    return z


@njit(cache=True, nogil=True)
def _grid(x, xin, y, yin, R, HK, ca, cb):
    """One backward pass over the grid of doubles (x[a], y[b]) filling ``R`` (run lengths of
    admissible doubles) and ``HK`` (suffix sums of the non-identical doubles' hashes) along
    diagonals; returns (identical doubles, longest run, cells starting a run >= 2)."""
    n, m = len(x), len(y)
    n_ident = 0
    longest = 0
    nc = 0
    for b in range(m + 1):
        R[n, b] = 0
        HK[n, b] = 0
    for a in range(n - 1, -1, -1):
        R[a, m] = 0
        HK[a, m] = 0
        xa = x[a]
        xi = xin[a]
        Ra = R[a]
        Rn = R[a + 1]
        Ha = HK[a]
        Hn = HK[a + 1]
        for b in range(m - 1, -1, -1):
            yb = y[b]
            if xa == yb:
                n_ident += 1
                r = Rn[b + 1] + 1
                Ha[b] = Hn[b + 1]
            elif xi and yin[b]:
                r = Rn[b + 1] + 1
                Ha[b] = Hn[b + 1] + _mix((xa << 32) | yb)
            else:
                r = 0
                Ha[b] = Hn[b + 1]
            Ra[b] = r
            if r > longest:
                longest = r
            if r >= 2:
                ca[nc] = a
                cb[nc] = b
                nc += 1
    return n_ident, longest, nc


@njit(cache=True, nogil=True)
def _keep(R, HK, k, ca, cb, kh, nc):
    """Keep the listed cells whose run reaches k (the windows of size k); their key hashes."""
    cnt = 0
    for w in range(nc):
        a = ca[w]
        b = cb[w]
        if R[a, b] >= k:
            ca[cnt] = a
            cb[cnt] = b
            kh[cnt] = HK[a, b] - HK[a + k, b + k]
            cnt += 1
    return cnt


@njit(cache=True, nogil=True)
def _target_map(t1, t2, ca, cb, kht, nt, k, slots, ekh, ecnt, ewin, nxt, buf):
    """Algorithm 2 lines 6-9: the target map, key -> windows with counts c_t (open
    addressing, each slot chaining its windows, compared exactly); returns the mask."""
    P = 16
    while P < 2 * nt:
        P *= 2
    mask = P - 1
    for i in range(P):
        slots[i] = -1
    ne = 0
    for w in range(nt - 1, -1, -1):
        key = kht[w]
        h = _slot(slots, ekh, key, mask)
        _window(t1, t2, ca[w], cb[w], k, buf)
        e = slots[h]
        found = False
        while e >= 0:
            if _same(ewin[e], buf, k):
                ecnt[e] += 1.0
                found = True
                break
            e = nxt[e]
        if not found:
            ekh[ne] = key
            ecnt[ne] = 1.0
            for p in range(k):
                ewin[ne, p] = buf[p]
            nxt[ne] = slots[h]
            slots[h] = ne
            ne += 1
    return mask


@njit(cache=True, nogil=True)
def _slot(slots, ekh, key, mask):
    """The hash map's slot of ``key``: its own, or the first free one of its probe."""
    h = (key * 0x2545F4914F6CDD1D) & mask
    while slots[h] >= 0 and ekh[slots[h]] != key:
        h = (h + 1) & mask
    return h


@njit(cache=True, nogil=True)
def _same(u, v, k):
    for p in range(k):
        if u[p] != v[p]:
            return False
    return True


@njit(cache=True, nogil=True)
def _join(s1, s2, ca, cb, khs, ns, k, lam2, fact, binom, fl, slots, mask, ekh, ecnt, ewin,
          nxt, buf):
    """Algorithm 2 lines 10-13: each source window meets the target vectors of its key,
    each adding ``c_t * g`` (Algorithm 1, or ``prod_e #e! lam^(2 #e)`` without identicals)."""
    total = 0.0
    for w in range(ns - 1, -1, -1):
        key = khs[w]
        h = _slot(slots, ekh, key, mask)
        e = slots[h]
        if e < 0:
            continue
        n_ident = _window(s1, s2, ca[w], cb[w], k, buf)
        if n_ident == 0:
            gk = 1.0
            p = 0
            while p < k:
                q = p + 1
                while q < k and buf[q] == buf[p]:
                    q += 1
                gk *= fl[q - p]
                p = q
            while e >= 0:
                if _same(ewin[e], buf, k):
                    total += ecnt[e] * gk
                e = nxt[e]
        else:
            while e >= 0:
                total += ecnt[e] * _g(buf, ewin[e], k, lam2, fact, binom, fl)
                e = nxt[e]
    return total


@njit(cache=True, nogil=True)
def _self_matches(s, so, t, to):
    """Per re-writing ``i``, the equal (source token, target token) position pairs."""
    u = np.zeros(len(so) - 1)
    for i in range(len(so) - 1):
        for a in range(so[i], so[i + 1]):
            for b in range(to[i], to[i + 1]):
                if s[a] == t[b]:
                    u[i] += 1.0
    return u


@njit(cache=True, nogil=True)
def _pair_all(s1, s1in, t1, t1in, u1, s2, s2in, t2, t2in, u2, kmin, kmax, lam2,
              fact, binom, fl, Rs, HKs, Rt, HKt, cas, cbs, khs, cat, cbt, kht,
              ekh, ecnt, ewin, slots, nxt, buf, out):
    """K_k for k = kmin..kmax of one pair of re-writings into out[0..] (``u1``, ``u2``: the
    equal token pairs within each re-writing, for the closed form of K_1)."""
    i_s, long_s, ns = _grid(s1, s1in, s2, s2in, Rs, HKs, cas, cbs)
    i_t, long_t, nt = _grid(t1, t1in, t2, t2in, Rt, HKt, cat, cbt)
    for k in range(kmin, kmax + 1):
        if k == 1:
            out[0] = i_s * i_t + lam2 * u1 * u2
            continue
        if k > long_s or k > long_t:
            # no window of size k survives on one side: K_k = 0 (and for larger k)
            out[k - kmin] = 0.0
            continue
        nt = _keep(Rt, HKt, k, cat, cbt, kht, nt)
        ns = _keep(Rs, HKs, k, cas, cbs, khs, ns)
        mask = _target_map(t1, t2, cat, cbt, kht, nt, k, slots, ekh, ecnt, ewin, nxt, buf)
        out[k - kmin] = _join(s1, s2, cas, cbs, khs, ns, k, lam2, fact, binom, fl, slots, mask,
                              ekh, ecnt, ewin, nxt, buf)


@njit(cache=True, nogil=True)
def _gram_stack(xs, xso, xsi, xt, xto, xti, ys, yso, ysi, yt, yto, yti,
                kmin, kmax, lam, symmetric, diag_only):
    n = len(xso) - 1
    m = len(yso) - 1
    w = kmax - kmin + 1
    lam2 = lam * lam
    fact, binom, fl = _tables(kmax, lam2)
    mxs, mys = longest_segment(xso, 0), longest_segment(yso, 0)
    mxt, myt = longest_segment(xto, 0), longest_segment(yto, 0)
    cs = max(mxs * mys, 1)
    ct = max(mxt * myt, 1)
    P = 16
    while P < 2 * ct:
        P *= 2
    Rs = np.zeros((mxs + 1, mys + 1), dtype=np.int64)
    HKs = np.zeros((mxs + 1, mys + 1), dtype=np.int64)
    Rt = np.zeros((mxt + 1, myt + 1), dtype=np.int64)
    HKt = np.zeros((mxt + 1, myt + 1), dtype=np.int64)
    src = np.empty((3, cs), dtype=np.int64)  # source windows: cells, key hashes
    cas, cbs, khs = src[0], src[1], src[2]
    tgt = np.empty((5, ct), dtype=np.int64)  # target windows, and the target map's entries
    cat, cbt, kht, ekh, nxt = tgt[0], tgt[1], tgt[2], tgt[3], tgt[4]
    ecnt = np.empty(ct, dtype=np.float64)
    ewin = np.empty((ct, max(kmax, 1)), dtype=np.int64)
    slots = np.empty(P, dtype=np.int64)
    buf = np.empty(max(kmax, 1), dtype=np.int64)
    ux = _self_matches(xs, xso, xt, xto)
    uy = _self_matches(ys, yso, yt, yto)
    vals = np.empty(w)
    out = np.zeros((w, n, 1 if diag_only else m))  # diag_only: Y is X, pairs (a, a) only
    for a in range(n):
        s1 = xs[xso[a]:xso[a + 1]]
        s1i = xsi[xso[a]:xso[a + 1]]
        t1 = xt[xto[a]:xto[a + 1]]
        t1i = xti[xto[a]:xto[a + 1]]
        start = a if symmetric or diag_only else 0
        for b in range(start, a + 1 if diag_only else m):
            s2 = ys[yso[b]:yso[b + 1]]
            s2i = ysi[yso[b]:yso[b + 1]]
            t2 = yt[yto[b]:yto[b + 1]]
            t2i = yti[yto[b]:yto[b + 1]]
            _pair_all(s1, s1i, t1, t1i, ux[a], s2, s2i, t2, t2i, uy[b], kmin, kmax, lam2,
                      fact, binom, fl, Rs, HKs, Rt, HKt, cas, cbs, khs, cat, cbt, kht,
                      ekh, ecnt, ewin, slots, nxt, buf, vals)
            for q in range(w):
                if diag_only:
                    out[q, a, 0] = vals[q]
                    continue
                out[q, a, b] = vals[q]
                if symmetric:
                    out[q, b, a] = vals[q]
    return out


def kb_srk_stack(X: Sequence[Rewriting], Y: Sequence[Rewriting] | None, kmin: int, kmax: int,
                 lam: float) -> np.ndarray:
    """Raw ``K_k(X[a], Y[b])`` for ``k = kmin..kmax``, shape (kmax-kmin+1, n, m); checked input."""
    vocab: dict[str, int] = {}
    ex = encode_rewritings(X, vocab)
    ey = ex if Y is None else encode_rewritings(Y, vocab)
    return _gram_stack(*ex, *ey, int(kmin), int(kmax), float(lam), Y is None, False)


def kb_srk_diag(X: Sequence[Rewriting], kmin: int, kmax: int, lam: float) -> np.ndarray:
    """Raw ``K_k(X[a], X[a])`` for ``k = kmin..kmax``, shape (kmax-kmin+1, n)."""
    ex = encode_rewritings(X, {})
    return _gram_stack(*ex, *ex, int(kmin), int(kmax), float(lam), False, True)[:, :, 0]


def _ids(*seqs) -> list[np.ndarray]:
    """Token ids of each sequence, one vocabulary."""
    vocab: dict = {}
    return [np.asarray([vocab.setdefault(w, len(vocab)) for w in q], dtype=np.int64)
            for q in seqs]


def kb_srk_direct(x: Rewriting, y: Rewriting, k: int, lam: float = 1.0) -> float:
    """kb-SRK by the direct sum of Eq. 4 (Algorithm 1 on every quadruple of k-grams), the
    ``O(k n^4)`` baseline that Algorithm 2 replaces.

    Examples
    --------
    >>> kb_srk_direct((("a", "b"), ("b", "a")), (("a", "b"), ("b", "a")), k=1, lam=1.0)
    8.0
    """
    s1, t1, s2, t2 = _ids(x[0], x[1], y[0], y[1])
    return float(_direct_pair(s1, t1, s2, t2, int(k), float(lam) ** 2))


def kb_kbar(a_s1, a_t1, a_s2, a_t2, lam: float = 1.0) -> float:
    """K̄_k of two k-gram pairs by Algorithm 1 (Eq. 5).

    Examples
    --------
    The worked example of Figs. 2-5 at ``lam = 1``: ``12 + 24 + 14 + 2``

    >>> kb_kbar("abbccbb", "cbcbbcb", "abcccdd", "cbccdcd")
    52.0
    """
    seqs = [list(a_s1), list(a_t1), list(a_s2), list(a_t2)]
    k = len(seqs[0])
    if any(len(q) != k for q in seqs):
        raise ValueError("kb_kbar needs four k-grams of the same length")
    enc = _ids(*seqs)
    lam2 = float(lam) ** 2
    vs, vt = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64)
    _window(enc[0], enc[2], 0, 0, k, vs)
    _window(enc[1], enc[3], 0, 0, k, vt)
    return float(_g(vs, vt, k, lam2, *_tables(k, lam2)))


class KbSRK(SRKBase):
    """k-gram bijective string re-writing kernel (Bu, Li & Zhu, ACL 2012, Sec. 5, Eq. 4) on
    re-writings ``(source tokens, target tokens)``; parameters as
    :class:`~structkernels.kernels.srk.common.SRKBase` (``lam`` per aligned wildcard pair).

    Examples
    --------
    >>> from structkernels import kernel
    >>> x = (("shakespeare", "wrote", "hamlet"), ("hamlet", "was", "written", "by", "shakespeare"))
    >>> y = (("austen", "wrote", "emma"), ("emma", "was", "written", "by", "austen"))
    >>> kernel("kb-srk", k=1).value(x, y)   # 3 wildcard-free rules + 2 * 2 with one aligned pair
    7.0
    >>> round(kernel("kb-srk", k=1, kmax=2).value(x, x), 6)
    2.0
    """

    name = "kb-srk"
    nogil_blocks = True

    def planned_bytes(self, X, Y, windows, diag=False) -> int:
        """Output, plus the compiled workspace of :func:`_gram_stack` for the longest
        sentences of each side."""
        base = super().planned_bytes(X, Y, windows, diag)
        Y = X if Y is None or diag else Y
        sx, tx, sy, ty = (max((len(r[i]) for r in Z), default=0) for Z in (X, Y) for i in (0, 1))
        kmax = max(windows, default=1)
        cs, ct = sx * sy, tx * ty
        words = (3 * (sx + 1) * (sy + 1) + 3 * (tx + 1) * (ty + 1) + 4 * cs
                 + ct * (11 + kmax) + 2 * (kmax + 1) ** 2)
        return base + 8 * words

    def _stack(self, X, Y, windows):
        return kb_srk_stack(X, Y, windows[0], windows[-1], self.lam)

    def _diag_stack(self, X, windows):
        return kb_srk_diag(X, windows[0], windows[-1], self.lam)
