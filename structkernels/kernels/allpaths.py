"""All-paths graph kernel of Airola et al. (2008).

Airola, Pyysalo, Björne, Pahikkala, Ginter and Salakoski, "All-paths graph kernel for
protein-protein interaction extraction with evaluation of cross-corpus learning", BMC
Bioinformatics 9(Suppl 11):S2 (2008): ``k(G, G') = Σ_{l, l'} G[l, l'] G'[l, l']`` over
the features ``G = L W L^T`` (:mod:`structkernels.kernels.allpaths_features`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.kernels._allpaths_numba import add_single, column_join
from structkernels.kernels.allpaths_features import AllPathsFeatures, AllPathsWeights
from structkernels.kernels.base import Kernel
from structkernels.structures import LabelledGraph

__all__ = ["AllPathsGraphKernel"]


class AllPathsGraphKernel(Kernel):
    """The all-paths graph kernel (Airola et al. 2008) on :class:`LabelledGraph` objects.

    ``k(G, G') = Σ_{l, l'} G[l, l'] G'[l, l']`` with ``G = L W L^T``: every walk (of any
    length >= 1) from a vertex labelled ``l`` to one labelled ``l'`` adds the product of its
    edge weights to ``G[l, l']``.  The kernel has no parameter: the weights live in the
    graphs (:func:`structkernels.graphs.allpaths.allpaths_graph`).  The paper normalises:
    wrap it in :class:`~structkernels.Normalized`.

    Examples
    --------
    >>> from structkernels import Normalized, kernel
    >>> from structkernels.structures import LabelledGraph
    >>> g = LabelledGraph([("a",), ("b",), ("c",)], [(0, 1, 0.5), (1, 2, 0.5)])
    >>> h = LabelledGraph([("a",), ("b",)], [(0, 1, 0.9)])
    >>> k = kernel("all-paths-graph")
    >>> round(k.value(g, h), 6)      # only the pair (a, b) is shared: 0.5 * 0.9
    0.45
    >>> round(Normalized(k).value(g, h), 6)
    0.666667
    """

    #: a sum over shared walks: larger graphs, larger values
    grows_with_size = True
    #: blocks are a BLAS product and a compiled sparse product: threads in the Gram engine
    nogil_blocks = True
    overflow_hint = (
        "the walk sums of a graph are astronomically large (a cycle with weights near 1): "
        "lower the edge weights"
    )

    def check_input(self, X: Any) -> AllPathsFeatures:
        if isinstance(X, AllPathsFeatures):
            return X
        if isinstance(X, LabelledGraph):
            raise TypeError(
                "AllPathsGraphKernel takes a sequence of LabelledGraph objects, got a single "
                "one: wrap it in a list, or use value(x, y) for one pair")
        X = super().check_input(X)
        for i, g in enumerate(X):
            if not isinstance(g, LabelledGraph):
                raise TypeError(
                    f"AllPathsGraphKernel expects structkernels.structures.LabelledGraph "
                    f"objects; item {i} is a {type(g).__name__}")
        return AllPathsFeatures.encode(X)

    def pair(self, x: LabelledGraph, y: LabelledGraph) -> float:
        return float(self.gram_block([x], [y])[0, 0])

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        X, Y = self.check_input(X), self.check_input(Y)
        layout = X.layout
        same = Y.layout is layout
        if not same:
            Y = Y.aligned(layout)
        n, m = len(X), len(Y)
        if layout.n_dense and n and m:
            out = X.dense @ Y.dense.T
        else:
            out = np.zeros((n, m), dtype=np.float64)
        if not (n and m):
            return out
        # one encoding: the pairs of one graph only meet that graph (the diagonal)
        limit = layout.n_shared if same else layout.n_sparse
        if limit:
            xr = X.column_runs(limit)
            yr = xr if Y is X else Y.column_runs(limit)
            column_join(*xr, *yr, Y is X, out)
        if same and limit < layout.n_sparse:
            add_single(X.rows, X.single, Y.rows, out)
        return out

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self.check_input(X).squared_norms()

    def weighted_sum(self, X: Sequence, weights: Any, normalized: bool = False
                     ) -> tuple[AllPathsWeights, np.ndarray]:
        """``(AllPathsWeights, diag)``: the references' label-pair matrices summed into one
        (see :meth:`Kernel.weighted_sum`)."""
        collapse = AllPathsWeights(X, weights, normalized=normalized)
        return collapse, collapse.reference_squared_norms
