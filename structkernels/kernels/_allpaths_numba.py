"""Compiled parts of the all-paths graph kernel and its features (numba); every function
releases the GIL (the Gram engine runs blocks in threads).
"""

from __future__ import annotations

import numpy as np

from structkernels.utils import njit


@njit(cache=True, nogil=True)
def dag_walk_sums(n, order, src, dst, wts):  # pragma: no cover - compiled
    """``W`` of a graph without cycles: ``W[u] = Σ_{u -> v} w (e_v + W[v])`` in reverse
    topological order (edges sorted by source)."""
    W = np.zeros((n, n))
    first = np.searchsorted(src, np.arange(n + 1))
    for t in range(n - 1, -1, -1):
        u = order[t]
        for e in range(first[u], first[u + 1]):
            v = dst[e]
            w = wts[e]
            W[u, v] += w
            for x in range(n):
                W[u, x] += w * W[v, x]
    return W


@njit(cache=True, nogil=True)
def label_pairs(W, offsets, label, m):  # pragma: no cover - compiled
    """``G = L W L^T`` over the ``m`` local labels (vertex ``v``'s: ``label[offsets[v]:...]``)."""
    n = W.shape[0]
    G = np.zeros((m, m))
    for u in range(n):
        for v in range(n):
            w = W[u, v]
            if w != 0.0:
                for p in range(offsets[u], offsets[u + 1]):
                    a = label[p]
                    for q in range(offsets[v], offsets[v + 1]):
                        G[a, label[q]] += w
    return G


@njit(cache=True, nogil=True)
def pair_entries(W, offsets, labels):  # pragma: no cover - compiled
    """The non-zero entries of ``G = L W L^T``: ascending keys ``label << 32 | label'``,
    values."""
    local = np.unique(labels)
    G = label_pairs(W, offsets, np.searchsorted(local, labels), len(local))
    count = np.count_nonzero(G)
    keys = np.empty(count, dtype=np.int64)
    vals = np.empty(count, dtype=np.float64)
    write_pairs(G, local, keys, vals, 0)
    return keys, vals


@njit(cache=True, nogil=True)
def write_pairs(G, local, keys, vals, t):  # pragma: no cover - compiled
    """Write the non-zero entries of ``G`` from position ``t`` on (keys ``local[a] << 32 |
    local[b]``, row by row); the position after them."""
    for a in range(len(local)):
        for b in range(len(local)):
            if G[a, b] != 0.0:
                keys[t] = (local[a] << 32) | local[b]
                vals[t] = G[a, b]
                t += 1
    return t


@njit(cache=True, nogil=True)
def _radix_sort(keys, bits):  # pragma: no cover - compiled
    """``(sorted keys, order)`` of non-negative ``keys`` below ``2 ** bits``: a stable radix
    sort in passes of 11 bits (``keys`` serves as a buffer)."""
    n = len(keys)
    idx = np.arange(n)
    k2 = np.empty_like(keys)
    i2 = np.empty_like(idx)
    count = np.empty(2049, dtype=np.int64)
    shift = 0
    while shift < bits:
        count[:] = 0
        for t in range(n):
            count[((keys[t] >> shift) & 2047) + 1] += 1
        for d in range(2048):
            count[d + 1] += count[d]
        for t in range(n):
            d = (keys[t] >> shift) & 2047
            q = count[d]
            k2[q] = keys[t]
            i2[q] = idx[t]
            count[d] = q + 1
        keys, k2 = k2, keys
        idx, i2 = i2, idx
        shift += 11
    return keys, idx


@njit(cache=True, nogil=True)
def factorize(keys, n_labels):  # pragma: no cover - compiled
    """``np.unique(keys, return_inverse=True)`` of label-pair keys, by a radix sort."""
    n = len(keys)
    comp = np.empty(n, dtype=np.int64)
    top = 0
    for t in range(n):
        comp[t] = (keys[t] >> 32) * n_labels + (keys[t] & 0xFFFFFFFF)
        top = max(top, comp[t])
    bits = 0
    while (1 << bits) <= top:
        bits += 1
    comp, idx = _radix_sort(comp, bits)
    inverse = np.empty(n, dtype=np.int64)
    n_unique = 0
    for t in range(n):
        if t == 0 or comp[t] != comp[t - 1]:
            n_unique += 1
    unique = np.empty(n_unique, dtype=np.int64)
    u = -1
    for t in range(n):
        if t == 0 or comp[t] != comp[t - 1]:
            u += 1
            unique[u] = keys[idx[t]]
        inverse[idx[t]] = u
    return unique, inverse


@njit(cache=True, nogil=True)
def row_sq(indptr, data):  # pragma: no cover - compiled
    """Sum of squares of each CSR row."""
    n = len(indptr) - 1
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * data[k]
        out[i] = s
    return out


@njit(cache=True, nogil=True)
def sort_rows(indptr, indices, data):  # pragma: no cover - compiled
    """Sort each CSR row by column, in place."""
    for i in range(len(indptr) - 1):
        a, b = indptr[i], indptr[i + 1]
        order = np.argsort(indices[a:b], kind="mergesort")
        indices[a:b] = indices[a:b][order]
        data[a:b] = data[a:b][order]


@njit(cache=True, nogil=True)
def _by_column(indptr, indices, data, limit):  # pragma: no cover - compiled
    """The entries of columns below ``limit`` as ``(columns, rows, values)`` sorted by
    column, then row (a stable radix sort)."""
    n = len(indptr) - 1
    total = 0
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            if indices[k] >= limit:
                break
            total += 1
    cols = np.empty(total, dtype=np.int64)
    rows = np.empty(total, dtype=np.int32)
    vals = np.empty(total, dtype=np.float64)
    t = 0
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            if indices[k] >= limit:
                break
            cols[t] = indices[k]
            rows[t] = i
            vals[t] = data[k]
            t += 1
    bits = 0
    while (1 << bits) < limit:
        bits += 1
    cols, order = _radix_sort(cols, bits)
    return cols, rows[order], vals[order]


@njit(cache=True, nogil=True)
def column_runs(indptr, indices, data, limit):  # pragma: no cover - compiled
    """The entries of columns below ``limit`` grouped by column: ``(columns, starts, rows,
    values)``, column ``columns[t]`` holding ``rows[starts[t]:starts[t + 1]]``."""
    cols, rows, vals = _by_column(indptr, indices, data, limit)
    total = len(cols)
    n_runs = 0
    for t in range(total):
        if t == 0 or cols[t] != cols[t - 1]:
            n_runs += 1
    columns = np.empty(n_runs, dtype=np.int64)
    starts = np.empty(n_runs + 1, dtype=np.int64)
    r = 0
    for t in range(total):
        if t == 0 or cols[t] != cols[t - 1]:
            columns[r] = cols[t]
            starts[r] = t
            r += 1
    starts[n_runs] = total
    return columns, starts, rows, vals


@njit(cache=True, nogil=True)
def column_join(xu, xs, xr, xv, yu, ys, yr, yv, same, out):  # pragma: no cover - compiled
    """``out[i, j] += Σ_c X[i, c] Y[j, c]`` in column order, an outer product per shared
    column; ``same`` (``Y`` is ``X``): the upper triangle, mirrored."""
    nx, ny = len(xu), len(yu)
    a, b = 0, 0
    while a < nx and b < ny:
        ca, cb = xu[a], yu[b]
        if ca < cb:
            a += 1
        elif cb < ca:
            b += 1
        else:
            q1 = ys[b + 1]
            for p in range(xs[a], xs[a + 1]):
                i = xr[p]
                v = xv[p]
                for q in range(p if same else ys[b], q1):
                    out[i, yr[q]] += v * yv[q]
            a += 1
            b += 1
    if same:
        n = out.shape[0]
        for i in range(n):
            for j in range(i + 1, n):
                out[j, i] = out[i, j]


@njit(cache=True, nogil=True)
def add_single(xrows, xsingle, yrows, out):  # pragma: no cover - compiled
    """``out[i, j] += xsingle[i]`` where ``xrows[i] == yrows[j]`` (the same graph)."""
    order = np.argsort(yrows, kind="mergesort")
    ys = yrows[order]
    for i in range(len(xrows)):
        r = xrows[i]
        p = np.searchsorted(ys, r)
        while p < len(ys) and ys[p] == r:
            out[i, order[p]] += xsingle[i]
            p += 1


@njit(cache=True, nogil=True)
def merge_counts(keys_a, counts_a, keys_b, counts_b):  # pragma: no cover - compiled
    """The union of two ascending arrays of distinct keys, their counts summed."""
    na, nb = len(keys_a), len(keys_b)
    keys = np.empty(na + nb, dtype=np.int64)
    counts = np.empty(na + nb, dtype=np.int64)
    i, j, t = 0, 0, 0
    while i < na and j < nb:
        a, b = keys_a[i], keys_b[j]
        if a < b:
            keys[t] = a
            counts[t] = counts_a[i]
            i += 1
        elif b < a:
            keys[t] = b
            counts[t] = counts_b[j]
            j += 1
        else:
            keys[t] = a
            counts[t] = counts_a[i] + counts_b[j]
            i += 1
            j += 1
        t += 1
    while i < na:
        keys[t] = keys_a[i]
        counts[t] = counts_a[i]
        i += 1
        t += 1
    while j < nb:
        keys[t] = keys_b[j]
        counts[t] = counts_b[j]
        j += 1
        t += 1
    return keys[:t].copy(), counts[:t].copy()
