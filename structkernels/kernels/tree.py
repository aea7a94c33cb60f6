"""Tree kernel of Zelenko, Aone & Richardella (JMLR 2003), with nonstationary σ, as Sec. 4.1
of Garg et al. (2018) writes it::

    K(T, T') = k(r, r') ( k(r, r')
               + Σ_{i, j : l(i) = l(j)} decay(i, j) Σ_s K(T[i_s], T'[j_s]) Π_s k(T[i_s].r, T'[j_s].r) )

``r``, ``r'`` the roots, ``i``, ``j`` equal-length subsequences of the roots' ordered
children, ``k`` the tuple similarity of Sec. 5.1 (Eq. 1) on ``(edge from the parent, node
label)`` (the roots' edge is None).  ``k`` is both Zelenko's matching function and the
similarity; every term is a product of tuple kernels over aligned node pairs, so ``K`` is
PSD whenever ``k`` is.  With ``decay="length"``, ``σ(l) = 0`` gives exactly the kernel of
the trees with every subtree hanging from an ``l`` edge pruned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from structkernels.kernels import _conv_numba as _nb
from structkernels.kernels._convolution import EncodedConvolutionKernel
from structkernels.kernels.path import check_lam
from structkernels.kernels.sigma import check_sigma
from structkernels.kernels.tuples import as_tuple_kernel, match_keys
from structkernels.structures import Tree, TreeList, Vocabulary

__all__ = ["TreeKernel", "TreeList"]


class TreeKernel(EncodedConvolutionKernel):
    """Zelenko et al. (2003) tree kernel over ordered labelled trees (Sec. 4.1 and 5).

    Parameters
    ----------
    lam : float in (0, 1], default 0.8
        Decay ``λ``.
    decay : {"span", "length"}, default "span"
        ``"span"``: ``λ^(d(i) + d(j))``, ``d`` the span of a child subsequence (Zelenko's
        sparse kernel); ``"length"``: ``λ^l``, ``l`` the number of children matched (Sec. 4.1).
    contiguous : bool, default False
        Only contiguous runs of children.
    sigma : dict str -> float, optional
        Weights per edge label (``>= 0``); labels not named and the roots' missing edge weigh 1.
    tuple_kernel : TupleKernel, optional
        The stationary tuple similarity (default: indicator on edges and nodes).

    Examples
    --------
    >>> from structkernels import Tree, kernel
    >>> a = Tree("bind-01", [("ARG1", Tree("enzyme")), ("ARG2", Tree("small-molecule"))])
    >>> b = Tree("bind-01", [("ARG2", Tree("small-molecule"))])
    >>> k = kernel("tree", lam=1.0)
    >>> k.value(a, b)         # roots: 1 * (1 + K(ARG2 child) * 1) with K(child) = 1 * (1 + 0)
    2.0
    >>> kernel("tree", lam=1.0, sigma={"ARG2": 0.0}).value(a, b)
    1.0
    """

    structure = Tree
    overflow_hint = ("large trees share astronomically many common substructures: lower lam "
                     "(or compare smaller trees)")
    encoded = TreeList
    node_field = "labels"

    @staticmethod
    def _relabel(Y: TreeList, vocab: Vocabulary, ymap: np.ndarray) -> TreeList:
        return TreeList(vocab, Y.tree_offsets, ymap[Y.labels], ymap[Y.edges], Y.child_offsets,
                        Y.child_index)

    def __init__(self, lam: float = 0.8, decay: str = "span", contiguous: bool = False,
                 sigma: Mapping[str, float] | None = None, tuple_kernel: Any = None):
        self.lam = lam
        self.decay = decay
        self.contiguous = contiguous
        self.sigma = sigma
        self.tuple_kernel = tuple_kernel

    def validate_params(self) -> None:
        check_lam(self)
        if self.decay not in ("span", "length"):
            raise ValueError(f"TreeKernel.decay must be 'span' or 'length', got {self.decay!r}")
        if not isinstance(self.contiguous, (bool, np.bool_)):
            raise TypeError(f"TreeKernel.contiguous must be a bool, got {self.contiguous!r}")
        check_sigma(self.sigma, "TreeKernel.sigma")
        as_tuple_kernel(self.tuple_kernel, "TreeKernel")

    def _block(self, X: Sequence[Tree], Y: Sequence[Tree], mode: int) -> np.ndarray:
        tk = as_tuple_kernel(self.tuple_kernel, "TreeKernel")
        vocab, ex, ey, tb, (xe, xl, xec, xlc), (ye, yl, yec, ylc) = self._tables(
            tk, X, Y, mode != _nb.MODE_FULL)
        lam = float(self.lam)
        f, g = (lam * lam, lam) if self.decay == "span" else (lam, 1.0)
        xk, yk = match_keys(tb, len(vocab), xe, xl, ye, yl, ey is ex)
        return _nb.tree_block(
            ex.tree_offsets, xl, xe, xlc, xec, ex.child_offsets, ex.child_index, xk,
            ey.tree_offsets, yl, ye, ylc, yec, ey.child_offsets, ey.child_index, yk,
            tb.sig, tb.ind_e, tb.KE, tb.ind_n, tb.KN, tb.cn, f, g, bool(self.contiguous), mode)
