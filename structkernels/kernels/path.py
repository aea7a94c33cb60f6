"""Path (subsequence) kernel of Bunescu & Mooney with nonstationary σ.

The path kernel of Sec. 4.1 of Garg et al., "Stochastic learning of
nonstationary kernels for natural language modeling" (2018), after Mooney &
Bunescu (2005), between two paths ``S`` and ``S'`` of ``(edge, node)`` tuples::

    K(S, S') = Σ_{i, j : |i| = |j|}  Π_k k(S[i_k], S'[j_k]) · λ^(l(i) + l(j))

over all pairs of index subsequences ``i`` of ``S`` and ``j`` of ``S'`` of
equal length ``1 <= |i| <= max_len`` (the empty subsequence is not counted),
with ``l(i) = i_last - i_first + 1`` the span of the subsequence (Bunescu &
Mooney's convention; subsequences need not be contiguous).  The tuple
similarity ``k`` is the nonstationary one of Sec. 5.1 (Eq. 1)::

    k((e, n), (e', n')) = σ(e) k_e(e, e') σ(e') k_n(n, n')

with indicator label kernels by default (see
:mod:`structkernels.kernels.tuples` for the word-vector node similarity).
The root's tuple has no edge (``None``): it matches only other root tuples
and always weighs 1.  With ``σ ≡ 1`` (``sigma=None``) this is the stationary
path kernel (PK); with a learned σ it is the nonstationary path kernel (NPK).

The Gram blocks run in one compiled sparse dynamic programme per block
(:mod:`structkernels.kernels._conv_numba`): cost per pair is
``O(|S| |S'| + M^2 L)`` for ``M`` matching tuple pairs and ``L`` lengths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from structkernels.kernel import Kernel
from structkernels.kernels import _conv_numba as _nb
from structkernels.kernels.tuples import as_tuple_kernel, check_sigma, tuple_tables
from structkernels.structures import Path, Vocabulary

__all__ = ["PathKernel"]


def _check_lam(owner: Kernel) -> None:
    lam = owner.lam
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.integer, np.floating)):
        raise TypeError(f"{type(owner).__name__}.lam must be a number in (0, 1], got {lam!r}")
    if not 0.0 < float(lam) <= 1.0:
        raise ValueError(f"{type(owner).__name__}.lam must lie in (0, 1], got {lam!r}")


class PathKernel(Kernel):
    """Subsequence kernel on paths of ``(edge, node)`` tuples (Sec. 4.1 and 5, Eq. 1).

    Parameters
    ----------
    lam : float in (0, 1], default 0.8
        Decay ``λ`` of a subsequence pair, ``λ^(l(i) + l(j))`` with ``l`` the
        span (last index - first index + 1).  The paper uses 0.8.
    max_len : int or None, default None
        Longest subsequence length counted; None counts every length.
    sigma : dict str -> float, optional
        Nonstationary weights per edge label (``>= 0``); labels not named
        weigh 1.  ``sigma[l] = 0`` removes every common subsequence that uses
        a tuple with edge label ``l``.
    tuple_kernel : TupleKernel, optional
        The stationary tuple similarity (default: indicator on edges and
        nodes); its own ``sigma`` multiplies ``sigma``.  The ``nonstationary``
        kernel sets this parameter.

    Examples
    --------
    >>> from structkernels import Path, kernel
    >>> a = Path([(None, "bind-01"), ("ARG1", "enzyme"), ("ARG2", "small-molecule")])
    >>> b = Path([(None, "bind-01"), ("ARG2", "small-molecule")])
    >>> k = kernel("path", lam=1.0)
    >>> k(a, b)         # (bind), (ARG2 small-molecule), and the two in order
    3.0
    >>> kernel("path", lam=1.0, sigma={"ARG2": 0.0})(a, b)
    1.0
    """

    #: large blocks amortise the encoding; the engine uses this as its default
    preferred_block_size = 512

    def __init__(
        self,
        lam: float = 0.8,
        max_len: int | None = None,
        sigma: Mapping[str, float] | None = None,
        tuple_kernel: Any = None,
    ):
        self.lam = lam
        self.max_len = max_len
        self.sigma = sigma
        self.tuple_kernel = tuple_kernel

    def validate_params(self) -> None:
        _check_lam(self)
        ml = self.max_len
        if ml is not None and (isinstance(ml, bool) or not isinstance(ml, (int, np.integer))
                               or ml < 1):
            raise ValueError(f"PathKernel.max_len must be None or an int >= 1, got {ml!r}")
        check_sigma(self.sigma, "PathKernel.sigma")
        as_tuple_kernel(self.tuple_kernel, "PathKernel")

    def check_input(self, X: Any) -> Sequence[Path]:
        X = super().check_input(X)
        for i, p in enumerate(X):
            if not isinstance(p, Path):
                raise TypeError(
                    f"PathKernel expects structkernels.Path objects; item {i} is a "
                    f"{type(p).__name__}"
                )
        return X

    def pair(self, x: Path, y: Path) -> float:
        return float(self._block([x], [y], _nb.MODE_FULL)[0, 0])

    def gram_block(self, X: Sequence[Path], Y: Sequence[Path]) -> np.ndarray:
        return self._block(X, Y, _nb.MODE_FULL)

    def gram_block_symmetric(self, X: Sequence[Path]) -> np.ndarray:
        return self._block(X, X, _nb.MODE_SYMMETRIC)

    def diag_block(self, X: Sequence[Path]) -> np.ndarray:
        return self._block(X, X, _nb.MODE_DIAG)[:, 0]

    # -------------------------------------------------------------- internals
    def _block(self, X: Sequence[Path], Y: Sequence[Path], mode: int) -> np.ndarray:
        tk = as_tuple_kernel(self.tuple_kernel, "PathKernel")
        vocab = Vocabulary()
        ex = vocab.encode_paths(X)
        ey = ex if mode != _nb.MODE_FULL else vocab.encode_paths(Y)
        nx = len(ex.edges)
        if ey is ex:
            edges, nodes = ex.edges.astype(np.int64), ex.nodes.astype(np.int64)
        else:
            edges = np.concatenate([ex.edges, ey.edges]).astype(np.int64)
            nodes = np.concatenate([ex.nodes, ey.nodes]).astype(np.int64)
        tb = tuple_tables(tk, self.sigma, vocab, edges, nodes)
        ec = tb.ec.astype(np.int64, copy=False)
        nc = tb.nc.astype(np.int64, copy=False)
        max_len = 0 if self.max_len is None else int(self.max_len)
        if max_len:
            longest = max((len(p) for p in X), default=0)
            max_len = max(1, min(max_len, longest))
        if ey is ex:
            xe, xn, xec, xnc = edges, nodes, ec, nc
            ye, yn, yec, ync = xe, xn, xec, xnc
        else:
            xe, xn, xec, xnc = edges[:nx], nodes[:nx], ec[:nx], nc[:nx]
            ye, yn, yec, ync = edges[nx:], nodes[nx:], ec[nx:], nc[nx:]
        return _nb.path_block(
            ex.offsets, xe, xn, xec, xnc, ey.offsets, ye, yn, yec, ync,
            tb.sig, tb.ind_e, tb.KE, tb.ind_n, tb.KN, float(self.lam), max_len, mode,
        )
