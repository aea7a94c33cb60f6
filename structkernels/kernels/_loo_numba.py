"""Compiled leave-one-out k-NN vote over a square similarity matrix (numba)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def loo_knn(K, scale, y, k):  # pragma: no cover (compiled)
    """Per row ``i``: the weighted positive share of its ``k`` most similar other rows.

    The similarity of ``(i, j)`` is ``K[i, j] * scale[i] * scale[j]``; the
    top ``k`` are ordered by value, ties to the smaller ``j``; weights are the
    non-negative part of the similarity; a row whose weights are all 0 scores 0.
    """
    n = K.shape[0]
    out = np.zeros(n)
    vals = np.empty(k)
    idx = np.empty(k, dtype=np.int64)
    for i in range(n):
        m = 0  # entries held, sorted by value descending (ties: earlier j first)
        si = scale[i]
        for j in range(n):
            if j == i:
                continue
            v = K[i, j] * si * scale[j]
            if m == k and not v > vals[k - 1]:
                continue  # not better than the k-th (an equal value keeps the smaller j)
            pos = m if m < k else k - 1
            while pos > 0 and v > vals[pos - 1]:
                if pos < k:
                    vals[pos] = vals[pos - 1]
                    idx[pos] = idx[pos - 1]
                pos -= 1
            vals[pos] = v
            idx[pos] = j
            if m < k:
                m += 1
        num = 0.0
        den = 0.0
        for t in range(m):
            w = vals[t] if vals[t] > 0.0 else 0.0
            num += w * y[idx[t]]
            den += w
        out[i] = num / den if den > 0.0 else 0.0
    return out
