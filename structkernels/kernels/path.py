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

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from structkernels.kernel import Kernel
from structkernels.kernels import _conv_numba as _nb
from structkernels.kernels._convolution import EncodedConvolutionKernel
from structkernels.kernels.tuples import (
    PartialIndicator,
    TupleKernel,
    as_tuple_kernel,
    check_mismatch,
    check_sigma,
    match_keys,
    merge_vocabularies,
    tuple_tables,
)
from structkernels.structures import Path, Vocabulary

__all__ = ["PathKernel", "PathList"]


def _gather_ranges(offsets: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """New CSR offsets of the rows ``idx`` and the positions of their items."""
    starts = offsets[idx]
    lengths = offsets[idx + 1] - starts
    new = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new[1:])
    pos = np.repeat(starts - new[:-1], lengths) + np.arange(new[-1], dtype=np.int64)
    return new, pos


def _as_index(i: Any, n: int) -> np.ndarray:
    if isinstance(i, slice):
        return np.arange(*i.indices(n), dtype=np.int64)
    idx = np.asarray(i)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise IndexError(f"boolean index of shape {idx.shape} for {n} structures")
        return np.flatnonzero(idx)
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise IndexError(f"index must be an int, a slice or a 1-D sequence of ints, got {i!r}")
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"index out of range for {n} structures")
    return np.where(idx < 0, idx + n, idx)


class PathList(Sequence):
    """Paths encoded once (what :meth:`PathKernel.check_input` returns).

    A sequence of :class:`~structkernels.Path`: ``len``, iteration and
    ``p[i]`` give the paths; slices and integer arrays give encoded
    sub-lists sharing the vocabulary, so Gram blocks cut from it are not
    encoded again.  It pickles as its integer arrays (small, fast to send
    to worker processes).  Concatenation with ``+`` gives a plain list.

    Examples
    --------
    >>> from structkernels import Path, kernel
    >>> k = kernel("path")
    >>> X = k.check_input([Path([(None, "a")]), Path([(None, "a"), ("ARG0", "b")])])
    >>> X[1], len(X[:1]), type(X[[1, 0]]).__name__
    (Path([(None, 'a'), ('ARG0', 'b')]), 1, 'PathList')
    """

    __slots__ = ("vocab", "offsets", "edges", "nodes", "_items")

    def __init__(self, vocab: Vocabulary, offsets: np.ndarray, edges: np.ndarray,
                 nodes: np.ndarray, items: list[Path] | None = None):
        self.vocab = vocab
        self.offsets = offsets
        self.edges = edges
        self.nodes = nodes
        self._items = items

    @classmethod
    def encode(cls, paths: Sequence[Path], vocab: Vocabulary | None = None) -> PathList:
        vocab = Vocabulary() if vocab is None else vocab
        enc = vocab.encode_paths(paths)
        return cls(vocab, enc.offsets, enc.edges.astype(np.int64), enc.nodes.astype(np.int64),
                   list(paths))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _item(self, i: int) -> Path:
        if self._items is None:  # unpickled: rebuild paths on demand, once each
            self._items = [None] * len(self)
        p = self._items[i]
        if p is None:
            labels = self.vocab.labels
            a, b = self.offsets[i], self.offsets[i + 1]
            p = Path([(labels[e], labels[n]) for e, n in zip(self.edges[a:b].tolist(),
                                                             self.nodes[a:b].tolist(),
                                                             strict=True)])
            self._items[i] = p
        return p

    def __getitem__(self, i):  # type: ignore[override]
        n = len(self)
        if isinstance(i, (int, np.integer)):
            if not -n <= i < n:
                raise IndexError(f"index {i} out of range for {n} paths")
            return self._item(int(i) % n)
        idx = _as_index(i, n)
        offsets, pos = _gather_ranges(self.offsets, idx)
        items = None if self._items is None else [self._items[j] for j in idx.tolist()]
        return PathList(self.vocab, offsets, self.edges[pos], self.nodes[pos], items)

    def __iter__(self) -> Iterator[Path]:
        return (self._item(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        """Equal to any list, tuple or encoded list holding equal structures in order."""
        if not isinstance(other, (PathList, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> list:
        return list(self) + list(other)

    def __radd__(self, other: Any) -> list:
        return list(other) + list(self)

    def __reduce__(self):
        return (PathList, (self.vocab, self.offsets, self.edges, self.nodes))

    def __repr__(self) -> str:
        return f"<PathList of {len(self)} paths, {len(self.vocab)} labels>"


def _path_arrays(X: Any, Y: Any, symmetric: bool):
    """(vocab, X arrays, Y arrays) with one id space; encodes only what is not encoded."""
    if symmetric:
        X = X if isinstance(X, PathList) else PathList.encode(X)
        return X.vocab, X, X
    if not isinstance(X, PathList) and not isinstance(Y, PathList):
        vocab = Vocabulary()
        X = PathList.encode(X, vocab)
        return vocab, X, (X if Y is X else PathList.encode(Y, vocab))
    X = X if isinstance(X, PathList) else PathList.encode(X)
    Y = Y if isinstance(Y, PathList) else PathList.encode(Y)
    vocab, ymap = merge_vocabularies(X.vocab, Y.vocab)
    if ymap is not None:
        Y = PathList(vocab, Y.offsets, ymap[Y.edges], ymap[Y.nodes])
    return vocab, X, Y


def _check_lam(owner: Kernel) -> None:
    lam = owner.lam
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.integer, np.floating)):
        raise TypeError(f"{type(owner).__name__}.lam must be a number in (0, 1], got {lam!r}")
    if not 0.0 < float(lam) <= 1.0:
        raise ValueError(f"{type(owner).__name__}.lam must lie in (0, 1], got {lam!r}")


class PathKernel(EncodedConvolutionKernel):
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
    node_mismatch : float in [0, 1], default 0.0
        Partial credit between tuples: two tuples with the same edge label
        and different nodes match with this weight instead of 0 (node kernel
        :class:`~structkernels.kernels.tuples.PartialIndicator`).  0 is the
        paper's indicator kernel.  Needs an indicator node kernel in
        ``tuple_kernel``.

    Examples
    --------
    >>> from structkernels import Path, kernel
    >>> a = Path([(None, "bind-01"), ("ARG1", "enzyme"), ("ARG2", "small-molecule")])
    >>> b = Path([(None, "bind-01"), ("ARG2", "small-molecule")])
    >>> k = kernel("path", lam=1.0)
    >>> k.value(a, b)         # (bind), (ARG2 small-molecule), and the two in order
    3.0
    >>> kernel("path", lam=1.0, sigma={"ARG2": 0.0}).value(a, b)
    1.0
    """

    structure = Path
    overflow_hint = (
        "long paths share astronomically many common substructures: lower lam or set "
        "max_len (or compare shorter paths)"
    )
    encoded = PathList

    def __init__(
        self,
        lam: float = 0.8,
        max_len: int | None = None,
        sigma: Mapping[str, float] | None = None,
        tuple_kernel: Any = None,
        node_mismatch: float = 0.0,
    ):
        self.lam = lam
        self.max_len = max_len
        self.sigma = sigma
        self.tuple_kernel = tuple_kernel
        self.node_mismatch = node_mismatch

    def validate_params(self) -> None:
        _check_lam(self)
        ml = self.max_len
        if ml is not None and (isinstance(ml, bool) or not isinstance(ml, (int, np.integer))
                               or ml < 1):
            raise ValueError(f"PathKernel.max_len must be None or an int >= 1, got {ml!r}")
        check_sigma(self.sigma, "PathKernel.sigma")
        self._tuple_kernel()

    # -------------------------------------------------------------- internals
    def _tuple_kernel(self) -> TupleKernel:
        tk = as_tuple_kernel(self.tuple_kernel, "PathKernel")
        c = check_mismatch(getattr(self, "node_mismatch", 0.0), "PathKernel.node_mismatch")
        if c == 0.0:
            return tk
        if not (isinstance(tk.node_kernel, str) and tk.node_kernel == "indicator"):
            raise ValueError(
                "PathKernel.node_mismatch applies to the indicator node kernel only; "
                f"tuple_kernel already has node_kernel={tk.node_kernel!r}"
            )
        return TupleKernel(tk.edge_kernel, PartialIndicator(c), tk.sigma)

    def _block(self, X: Sequence[Path], Y: Sequence[Path], mode: int) -> np.ndarray:
        tk = self._tuple_kernel()
        # the diagonal mode pairs X[i] with Y[i] (Y is X for self-similarities)
        vocab, ex, ey = _path_arrays(X, Y, mode == _nb.MODE_SYMMETRIC or Y is X)
        if ey is ex:
            edges, nodes = ex.edges, ex.nodes
        else:
            edges = np.concatenate([ex.edges, ey.edges])
            nodes = np.concatenate([ex.nodes, ey.nodes])
        tb = tuple_tables(tk, self.sigma, vocab, edges, nodes)
        ec = tb.ec.astype(np.int64, copy=False)
        nc = tb.nc.astype(np.int64, copy=False)
        max_len = 0 if self.max_len is None else int(self.max_len)
        if max_len:
            lengths = np.diff(ex.offsets)
            longest = int(lengths.max()) if len(lengths) else 0
            max_len = max(1, min(max_len, longest))
        nx = len(ex.edges)
        if ey is ex:
            xe, xn, xec, xnc = edges, nodes, ec, nc
            ye, yn, yec, ync = xe, xn, xec, xnc
        else:
            xe, xn, xec, xnc = ex.edges, ex.nodes, ec[:nx], nc[:nx]
            ye, yn, yec, ync = ey.edges, ey.nodes, ec[nx:], nc[nx:]
        xk, yk = match_keys(tb, len(vocab), xe, xn, ye, yn, ey is ex)
        return _nb.path_block(
            ex.offsets, xe, xn, xec, xnc, xk, ey.offsets, ye, yn, yec, ync, yk,
            tb.sig, tb.ind_e, tb.KE, tb.ind_n, tb.KN, tb.cn, float(self.lam), max_len, mode,
        )
