"""The k-gram bijective string re-writing kernel, kb-SRK (Bu, Li & Zhu, ACL 2012, Sec. 5).

For re-writings ``(s1, t1)`` and ``(s2, t2)`` (token sequences), Eq. 4:

    K_k = sum over k-grams a_s1 of s1, a_t1 of t1, a_s2 of s2, a_t2 of t2 of
          K̄_k((a_s1, a_t1), (a_s2, a_t2))

where K̄_k (Eq. 5) sums, over the re-writing rules ``(b_s, b_t, beta)`` with
patterns of length k over tokens and a one-token wildcard ``*``, and a
bijective alignment ``beta`` of the wildcards, the product of the rule's
weights on the two k-gram pairs; a rule matching a k-gram pair weighs
``lam ** (number of aligned wildcard pairs)`` (so each common rule adds
``lam ** (2 i)``, as Algorithm 1 and the worked example of Figs. 2-5 have it).
k-grams are occurrences: a repeated k-gram counts as often as it occurs.

Computation (Algorithms 1 and 2):

* Algorithm 1: ``K̄_k = g(#(a_s1 ⊗ a_s2), #(a_t1 ⊗ a_t2))`` from the counts of
  *doubles* (token pairs) of the two double lists: a non-identical double
  must occur equally often on both sides (``j!`` alignments, ``lam^(2j)``);
  an identical double ``e`` gives ``sum_i C(#s e, i) C(#t e, i) i! lam^(2i)``.
* Algorithm 2: the double lists of each side are grouped by the counts of
  their non-identical doubles (their *key*); only equal keys meet, and within
  a key equal double counts are counted once with their multiplicity.  Here
  the groups come from one lexicographic sort per side and a merge join (no
  hashing, so the result is exact).
* A double list holding a non-identical double ``(a, b)`` with ``a`` absent
  from ``t1`` or ``b`` absent from ``t2`` can meet no target key and is
  skipped before any sorting (and symmetrically on the target side); one
  pass of diagonal run lengths decides this for every window size at once,
  and all of ``K_1 .. K_kmax`` come from that pass.

Everything runs compiled (numba, cached on disk).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from structkernels.kernels._srk_common import Rewriting, SRKBase, encode_rewritings

__all__ = ["KbSRK", "kb_srk_direct", "kb_kbar"]


# ----------------------------------------------------------------- Algorithm 1
@njit(cache=True)
def _tables(kmax):
    fact = np.ones(kmax + 1)
    for i in range(1, kmax + 1):
        fact[i] = fact[i - 1] * i
    binom = np.zeros((kmax + 1, kmax + 1))
    for n in range(kmax + 1):
        binom[n, 0] = 1.0
        for r in range(1, n + 1):
            binom[n, r] = binom[n - 1, r - 1] + (binom[n - 1, r] if r <= n - 1 else 0.0)
    return fact, binom


@njit(cache=True)
def _g(vs, vt, k, V, lam2, fact, binom):
    """Algorithm 1 lines 3-8 on two sorted rows of k double codes (``a * V + b``)."""
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
        if e // V == e % V:  # identical double (c, c)
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
            r *= fact[cs] * lam2**cs
    return r


@njit(cache=True)
def _sort_small(a, n):
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@njit(cache=True)
def _kbar(as1, as2, at1, at2, k, V, lam2, fact, binom, vs, vt):
    for p in range(k):
        vs[p] = as1[p] * V + as2[p]
        vt[p] = at1[p] * V + at2[p]
    _sort_small(vs, k)
    _sort_small(vt, k)
    return _g(vs, vt, k, V, lam2, fact, binom)


@njit(cache=True)
def _direct_pair(s1, t1, s2, t2, k, V, lam2):
    """Eq. 4 literally: K̄_k (Algorithm 1) summed over all quadruples of k-grams."""
    fact, binom = _tables(k)
    vs = np.empty(k, dtype=np.int64)
    vt = np.empty(k, dtype=np.int64)
    total = 0.0
    for a in range(len(s1) - k + 1):
        for b in range(len(s2) - k + 1):
            for c in range(len(t1) - k + 1):
                for d in range(len(t2) - k + 1):
                    total += _kbar(
                        s1[a:a + k], s2[b:b + k], t1[c:c + k], t2[d:d + k],
                        k, V, lam2, fact, binom, vs, vt,
                    )
    return total


# ----------------------------------------------------------------- Algorithm 2
@njit(cache=True)
def _runs(x, xin, y, yin, R):
    """Diagonal run lengths of admissible doubles: R[a, b] = #consecutive ok from (a, b)."""
    n, m = len(x), len(y)
    for b in range(m + 1):
        R[n, b] = 0
    for a in range(n - 1, -1, -1):
        R[a, m] = 0
        xa = x[a]
        xi = xin[a]
        for b in range(m - 1, -1, -1):
            if xa == y[b] or (xi and yin[b]):
                R[a, b] = R[a + 1, b + 1] + 1
            else:
                R[a, b] = 0


@njit(cache=True)
def _collect(x, y, R, k, V, rows):
    """Rows [key (non-identical codes, sorted, padded -1) | all k codes, sorted]."""
    n, m = len(x), len(y)
    cnt = 0
    for a in range(n - k + 1):
        for b in range(m - k + 1):
            if R[a, b] >= k:
                row = rows[cnt]
                for p in range(k):
                    row[k + p] = x[a + p] * V + y[b + p]
                # insertion sort of the value part
                for i in range(k + 1, 2 * k):
                    v = row[i]
                    j = i - 1
                    while j >= k and row[j] > v:
                        row[j + 1] = row[j]
                        j -= 1
                    row[j + 1] = v
                q = 0
                for p in range(k, 2 * k):
                    c = row[p]
                    if c // V != c % V:
                        row[q] = c
                        q += 1
                for p in range(q, k):
                    row[p] = -1
                cnt += 1
    return cnt


@njit(cache=True)
def _cmp(rows, i, j, lo, hi):
    ri = rows[i]
    rj = rows[j]
    for p in range(lo, hi):
        if ri[p] != rj[p]:
            return -1 if ri[p] < rj[p] else 1
    return 0


@njit(cache=True)
def _argsort_rows(rows, n, L, idx, tmp):
    """Stable bottom-up merge sort of row indices 0..n-1 by lexicographic row order."""
    for i in range(n):
        idx[i] = i
    # insertion sort runs of 8
    run = 8
    for s in range(0, n, run):
        e = min(s + run, n)
        for i in range(s + 1, e):
            v = idx[i]
            j = i - 1
            while j >= s and _cmp(rows, idx[j], v, 0, L) > 0:
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = v
    width = run
    src = idx
    dst = tmp
    while width < n:
        for s in range(0, n, 2 * width):
            mid = min(s + width, n)
            e = min(s + 2 * width, n)
            i = s
            j = mid
            o = s
            while i < mid and j < e:
                if _cmp(rows, src[j], src[i], 0, L) < 0:
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < e:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        width *= 2
    if src is not idx:
        for i in range(n):
            idx[i] = src[i]


@njit(cache=True)
def _key_cmp(rs, i, rt, j, k):
    a = rs[i]
    b = rt[j]
    for p in range(k):
        if a[p] != b[p]:
            return -1 if a[p] < b[p] else 1
    return 0


@njit(cache=True)
def _join(rs, ids, ns, rt, idt, nt, k, V, lam2, fact, binom):
    """Algorithm 2 lines 10-13 on the key-sorted rows of both sides."""
    total = 0.0
    i = 0
    j = 0
    while i < ns and j < nt:
        c = _key_cmp(rs, ids[i], rt, idt[j], k)
        if c < 0:
            i += 1
            continue
        if c > 0:
            j += 1
            continue
        ie = i + 1
        while ie < ns and _key_cmp(rs, ids[ie], rs, ids[i], k) == 0:
            ie += 1
        je = j + 1
        while je < nt and _key_cmp(rt, idt[je], rt, idt[j], k) == 0:
            je += 1
        # distinct value rows (double counts) with multiplicities: c_s, c_t of Alg. 2
        a = i
        while a < ie:
            a2 = a + 1
            while a2 < ie and _cmp(rs, ids[a2], ids[a], k, 2 * k) == 0:
                a2 += 1
            cs = a2 - a
            vs = rs[ids[a]][k:2 * k]
            b = j
            while b < je:
                b2 = b + 1
                while b2 < je and _cmp(rt, idt[b2], idt[b], k, 2 * k) == 0:
                    b2 += 1
                ct = b2 - b
                total += cs * ct * _g(vs, rt[idt[b]][k:2 * k], k, V, lam2, fact, binom)
                b = b2
            a = a2
        i = ie
        j = je
    return total


@njit(cache=True)
def _pair_all(s1, s1in, t1, t1in, s2, s2in, t2, t2in, kmin, kmax, V, lam2,
              fact, binom, Rs, Rt, rows_s, rows_t, ids, idt, tmp, out):
    """K_k for k = kmin..kmax of one pair of re-writings into out[0..]."""
    _runs(s1, s1in, s2, s2in, Rs)
    _runs(t1, t1in, t2, t2in, Rt)
    for k in range(kmin, kmax + 1):
        ns = _collect(s1, s2, Rs, k, V, rows_s)
        if ns == 0:
            out[k - kmin] = 0.0
            continue
        nt = _collect(t1, t2, Rt, k, V, rows_t)
        if nt == 0:
            out[k - kmin] = 0.0
            continue
        _argsort_rows(rows_s, ns, 2 * k, ids, tmp)
        _argsort_rows(rows_t, nt, 2 * k, idt, tmp)
        out[k - kmin] = _join(rows_s, ids, ns, rows_t, idt, nt, k, V, lam2, fact, binom)


@njit(cache=True)
def _max_len(off):
    m = 0
    for i in range(len(off) - 1):
        if off[i + 1] - off[i] > m:
            m = off[i + 1] - off[i]
    return m


@njit(cache=True)
def _gram_stack(xs, xso, xsi, xt, xto, xti, ys, yso, ysi, yt, yto, yti,
                kmin, kmax, V, lam, symmetric, diag_only):
    n = len(xso) - 1
    m = len(yso) - 1
    w = kmax - kmin + 1
    fact, binom = _tables(kmax)
    lam2 = lam * lam
    mxs = _max_len(xso)
    mys = _max_len(yso)
    mxt = _max_len(xto)
    myt = _max_len(yto)
    Rs = np.zeros((mxs + 1, mys + 1), dtype=np.int64)
    Rt = np.zeros((mxt + 1, myt + 1), dtype=np.int64)
    cap = max(mxs * mys, mxt * myt, 1)
    rows_s = np.empty((max(mxs * mys, 1), 2 * kmax), dtype=np.int64)
    rows_t = np.empty((max(mxt * myt, 1), 2 * kmax), dtype=np.int64)
    ids = np.empty(cap, dtype=np.int64)
    idt = np.empty(cap, dtype=np.int64)
    tmp = np.empty(cap, dtype=np.int64)
    vals = np.empty(w)
    if diag_only:
        out = np.zeros((w, n, 1))
    else:
        out = np.zeros((w, n, m))
    for a in range(n):
        s1 = xs[xso[a]:xso[a + 1]]
        s1i = xsi[xso[a]:xso[a + 1]]
        t1 = xt[xto[a]:xto[a + 1]]
        t1i = xti[xto[a]:xto[a + 1]]
        if diag_only:
            _pair_all(s1, s1i, t1, t1i, s1, s1i, t1, t1i, kmin, kmax, V, lam2,
                      fact, binom, Rs, Rt, rows_s, rows_t, ids, idt, tmp, vals)
            for q in range(w):
                out[q, a, 0] = vals[q]
            continue
        start = a if symmetric else 0
        for b in range(start, m):
            s2 = ys[yso[b]:yso[b + 1]]
            s2i = ysi[yso[b]:yso[b + 1]]
            t2 = yt[yto[b]:yto[b + 1]]
            t2i = yti[yto[b]:yto[b + 1]]
            _pair_all(s1, s1i, t1, t1i, s2, s2i, t2, t2i, kmin, kmax, V, lam2,
                      fact, binom, Rs, Rt, rows_s, rows_t, ids, idt, tmp, vals)
            for q in range(w):
                out[q, a, b] = vals[q]
                if symmetric:
                    out[q, b, a] = vals[q]
    return out


def _encode_both(X, Y):
    vocab: dict[str, int] = {}
    ex = encode_rewritings(X, vocab)
    ey = ex if Y is None else encode_rewritings(Y, vocab)
    return ex, ey, max(len(vocab), 1)


def kb_srk_stack(
    X: Sequence[Rewriting], Y: Sequence[Rewriting] | None, kmin: int, kmax: int, lam: float
) -> np.ndarray:
    """Raw ``K_k(X[a], Y[b])`` for ``k = kmin..kmax``, shape (kmax-kmin+1, n, m); checked input."""
    ex, ey, V = _encode_both(X, Y)
    return _gram_stack(*ex, *ey, int(kmin), int(kmax), np.int64(V), float(lam), Y is None, False)


def kb_srk_diag(X: Sequence[Rewriting], kmin: int, kmax: int, lam: float) -> np.ndarray:
    """Raw ``K_k(X[a], X[a])`` for ``k = kmin..kmax``, shape (kmax-kmin+1, n)."""
    ex, _, V = _encode_both(X, None)
    return _gram_stack(*ex, *ex, int(kmin), int(kmax), np.int64(V), float(lam), True, True)[:, :, 0]


def kb_srk_direct(x: Rewriting, y: Rewriting, k: int, lam: float = 1.0) -> float:
    """kb-SRK by the direct sum of Eq. 4 (Algorithm 1 on every quadruple of k-grams).

    The ``O(k n^4)`` baseline that Algorithm 2 replaces; kept for tests and benchmarks.

    Examples
    --------
    >>> kb_srk_direct((("a", "b"), ("b", "a")), (("a", "b"), ("b", "a")), k=1, lam=1.0)
    6.0
    """
    vocab: dict[str, int] = {}
    enc = [np.asarray([vocab.setdefault(w, len(vocab)) for w in side], dtype=np.int64)
           for side in (x[0], x[1], y[0], y[1])]
    V = np.int64(max(len(vocab), 1))
    return float(_direct_pair(enc[0], enc[1], enc[2], enc[3], int(k), V, float(lam) ** 2))


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
    vocab: dict = {}
    enc = [np.asarray([vocab.setdefault(w, len(vocab)) for w in q], dtype=np.int64) for q in seqs]
    V = np.int64(max(len(vocab), 1))
    fact, binom = _tables(k)
    vs = np.empty(k, dtype=np.int64)
    vt = np.empty(k, dtype=np.int64)
    return float(_kbar(enc[0], enc[2], enc[1], enc[3], k, V, float(lam) ** 2, fact, binom, vs, vt))


class KbSRK(SRKBase):
    """k-gram bijective string re-writing kernel (Bu, Li & Zhu, ACL 2012, Sec. 5, Eq. 4).

    Input: re-writings ``(source tokens, target tokens)``.  Rules have two
    patterns of ``k`` tokens with one-token wildcards, bijectively aligned;
    a rule weighs ``lam`` per aligned wildcard pair on each re-writing.

    Parameters
    ----------
    k : int, default 1
        Window (k-gram) size; with ``kmax`` the smallest window.
    lam : float in (0, 1], default 1.0
        Wildcard penalty λ (the paper uses 1).
    kmax : int, optional
        If given, the kernel is the paper's ``K̂_k + ... + K̂_kmax``: every
        window cosine-normalised, then summed (computed in one pass).  If
        None, the raw ``K_k``.

    Examples
    --------
    >>> from structkernels import kernel
    >>> x = (("shakespeare", "wrote", "hamlet"), ("hamlet", "was", "written", "by", "shakespeare"))
    >>> y = (("austen", "wrote", "emma"), ("emma", "was", "written", "by", "austen"))
    >>> kernel("kb-srk", k=1)(x, y)
    42.0
    >>> round(kernel("kb-srk", k=1, kmax=2)(x, x), 6)
    2.0
    """

    name = "kb-srk"

    def __init__(self, k: int = 1, lam: float = 1.0, kmax: int | None = None):
        self.k = k
        self.lam = lam
        self.kmax = kmax

    def _stack(self, X, Y, windows):
        return kb_srk_stack(X, Y, windows[0], windows[-1], self.lam)

    def _diag_stack(self, X, windows):
        return kb_srk_diag(X, windows[0], windows[-1], self.lam)
