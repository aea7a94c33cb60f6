"""Compiled part of :class:`~structkernels.kernels.allpaths_features.AllPathsWeights` (numba).

Private module: one graph's ``G = L W L^T`` (:func:`_label_pairs` of the kernel's own
compiled module) met with a weighted sum of other graphs' ``G``, kept as sorted label-pair
keys and values, without writing the graph's keys out.  Releases the GIL.
"""

from __future__ import annotations

import numpy as np

from structkernels.kernels._allpaths_numba import _label_pairs
from structkernels.utils import njit


@njit(cache=True, nogil=True)
def _weighted_dot(W, offsets, labels, n_known, keys, values):  # pragma: no cover - compiled
    """``(<G, V>, <G, G>)`` of one graph: ``labels[offsets[v]:offsets[v + 1]]`` are vertex
    ``v``'s label ids (those of ``V``'s labels below ``n_known``), ``V`` the sorted label-pair
    keys ``label << 32 | label'`` with their ``values``."""
    local = np.unique(labels)
    m = len(local)
    G = _label_pairs(W, offsets, np.searchsorted(local, labels), m)
    dot = 0.0
    sq = 0.0
    n = len(keys)
    for a in range(m):
        la = local[a]
        known = la < n_known
        lo = 0
        hi = 0
        if known:
            lo = np.searchsorted(keys, la << 32)
            hi = np.searchsorted(keys, (la + 1) << 32)
        for b in range(m):
            g = G[a, b]
            if g == 0.0:
                continue
            sq += g * g
            lb = local[b]
            if not known or lb >= n_known or lo >= hi:
                continue
            key = (la << 32) | lb
            # keys of row a ascend with b: search from the last place found
            i, j = lo, hi
            while i < j:
                mid = (i + j) >> 1
                if keys[mid] < key:
                    i = mid + 1
                else:
                    j = mid
            lo = i
            if i < n and keys[i] == key:
                dot += g * values[i]
    return dot, sq
