"""A kernel read from a stored Gram matrix: ``k(i, j) = G[i, j]`` on integer indices.

A rectangular ``G = np.vstack([K_train, K_test_train])`` holds the training structures as
rows and columns, test queries as rows below; a value not stored is an error, never a guess.

Example
-------
>>> import numpy as np
>>> from structkernels.kernels.lookup import GramLookup
>>> k = GramLookup(np.vstack([[[1.0, 0.5], [0.5, 1.0]], [[0.9, 0.1]]]))
>>> k(np.array([2]), np.array([0, 1])).tolist()
[[0.9, 0.1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.kernels.base import Kernel

__all__ = ["GramLookup"]


class GramLookup(Kernel):
    """The kernel ``k(i, j) = matrix[i, j]`` whose structures are indices into ``matrix``.

    Parameters
    ----------
    matrix : array of shape (n_rows, n_cols)
        Stored kernel values: index ``i`` is a row when ``i < n_rows``, a column when
        ``i < n_cols``.
    diagonal : array of shape (n_rows,), optional
        Self-similarities of every row structure (to normalise rows beyond ``n_cols``);
        default: the stored diagonal.
    """

    #: indexing a NumPy array: threads are safe (the engine keeps cheap blocks serial anyway)
    nogil_blocks = True

    def __init__(self, matrix: Any, diagonal: Any = None):
        self.matrix = matrix
        self.diagonal = diagonal

    def validate_params(self) -> None:
        G = self.matrix
        if not isinstance(G, np.ndarray) or G.ndim != 2:
            raise ValueError(f"GramLookup.matrix must be a 2-D NumPy array, got "
                             f"{type(G).__name__} of shape {getattr(G, 'shape', None)}")
        if self.diagonal is not None:
            d = np.asarray(self.diagonal)
            if d.shape != (G.shape[0],):
                raise ValueError(
                    f"GramLookup.diagonal must have shape ({G.shape[0]},) (one value per row), "
                    f"got {d.shape}")

    def check_input(self, X: Any) -> Sequence:
        idx = np.asarray(X)
        if idx.size == 0:
            return np.zeros(0, dtype=np.int64)
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise TypeError(
                "GramLookup: structures are integer indices into the stored Gram matrix; "
                f"got an array of dtype {idx.dtype} and shape {idx.shape}")
        n_rows = self.matrix.shape[0]
        bad = np.flatnonzero((idx < 0) | (idx >= n_rows))
        if len(bad):
            raise IndexError(
                f"GramLookup: index {int(idx[bad[0]])} (position {int(bad[0])}) is outside "
                f"the {n_rows} stored rows")
        return idx.astype(np.int64, copy=False)

    def _columns(self, Y: np.ndarray) -> np.ndarray:
        n_cols = self.matrix.shape[1]
        if len(Y) and int(Y.max()) >= n_cols:
            j = int(np.flatnonzero(Y >= n_cols)[0])
            raise IndexError(
                f"GramLookup: no stored value against structure {int(Y[j])} (position {j}): "
                f"only the first {n_cols} structures are columns of the stored matrix")
        return Y

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        X = np.asarray(X, dtype=np.int64)
        Y = self._columns(np.asarray(Y, dtype=np.int64))
        return np.asarray(self.matrix[np.ix_(X, Y)], dtype=np.float64)

    def diag_block(self, X: Sequence) -> np.ndarray:
        X = np.asarray(X, dtype=np.int64)
        if self.diagonal is not None:
            return np.asarray(self.diagonal, dtype=np.float64)[X]
        self._columns(X)
        return np.asarray(self.matrix[X, X], dtype=np.float64)
