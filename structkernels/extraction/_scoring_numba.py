"""Compiled part of :mod:`structkernels.extraction.scoring` (numba).

Private module: a weighted sum of a Gram block's rows, each column's sum taken in row
order, so that a structure's score does not depend on the other structures of its batch
(a BLAS product's order of addition changes with the block's shape).
"""

from __future__ import annotations

import numpy as np

from structkernels.utils import njit


@njit(cache=True, nogil=True)
def weighted_rows(a, block):  # pragma: no cover - compiled
    """``a @ block`` for ``block`` of shape ``(len(a), n)``: column ``j`` is
    ``Σ_i a[i] block[i, j]`` added in the order of ``i``."""
    n_rows, n_cols = block.shape
    out = np.zeros(n_cols)
    for i in range(n_rows):
        c = a[i]
        for j in range(n_cols):
            out[j] += c * block[i, j]
    return out
