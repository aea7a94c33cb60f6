"""Shared front end of the compiled convolution kernels (``path``, ``tree``): inputs encoded
once, every request answered by one ``_block(X, Y, mode)`` call into the compiled code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from structkernels.kernels import _conv_numba as _nb
from structkernels.kernels.base import Kernel
from structkernels.kernels.tuples import merge_vocabularies, tuple_tables
from structkernels.structures import Vocabulary


class EncodedConvolutionKernel(Kernel):
    """Base of kernels computed by ``_block(X, Y, mode)`` on encoded structures: subclasses
    set ``structure`` (the class they compare) and ``encoded`` (its encoded list class)."""

    structure: ClassVar[type]
    encoded: ClassVar[type]
    #: the encoded list's array of node labels (``nodes`` of paths, ``labels`` of trees)
    node_field: ClassVar[str] = "nodes"
    #: blocks run in compiled code without the GIL: the Gram engine uses threads
    nogil_blocks: ClassVar[bool] = True
    #: a sum over common substructures: larger structures, larger values
    grows_with_size: ClassVar[bool] = True

    def _structures(self, X: Any) -> Sequence:
        """``X`` as a list, each item checked to be the kernel's structure."""
        X = super().check_input(X)
        for i, s in enumerate(X):
            if not isinstance(s, self.structure):
                raise TypeError(
                    f"{type(self).__name__} expects structkernels.{self.structure.__name__} "
                    f"objects; item {i} is a {type(s).__name__}")
        return X

    def check_input(self, X: Any) -> Sequence:
        return X if isinstance(X, self.encoded) else self.encoded.encode(self._structures(X))

    def check_input_beside(self, X: Any, other: Sequence) -> tuple[Sequence, Sequence]:
        """``(other, X)`` checked, ``X`` encoded in a copy of ``other``'s vocabulary
        (:meth:`EncodedList.encode_beside`): their Gram blocks merge no vocabularies."""
        other = self.check_input(other)
        if isinstance(X, self.encoded):
            return other, X
        return other.encode_beside(self._structures(X))

    def pair(self, x: Any, y: Any) -> float:
        return float(self._block([x], [y], _nb.MODE_FULL)[0, 0])

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        return self._block(X, Y, _nb.MODE_FULL)

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        return self._block(X, X, _nb.MODE_SYMMETRIC)

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self._block(X, X, _nb.MODE_DIAG)[:, 0]

    def _encoded_pair(self, X: Any, Y: Any, symmetric: bool) -> tuple:
        """``(vocab, X, Y)`` encoded in one id space; encodes only what is not encoded."""
        cls = self.encoded
        if symmetric:
            X = X if isinstance(X, cls) else cls.encode(X)
            return X.vocab, X, X
        if not isinstance(X, cls) and not isinstance(Y, cls):
            vocab = Vocabulary()
            X = cls.encode(X, vocab)
            return vocab, X, (X if Y is X else cls.encode(Y, vocab))
        X = X if isinstance(X, cls) else cls.encode(X)
        Y = Y if isinstance(Y, cls) else cls.encode(Y)
        vocab, ymap = merge_vocabularies(X.vocab, Y.vocab)
        if ymap is not None:
            Y = self._relabel(Y, vocab, ymap)
        return vocab, X, Y

    def _tables(self, tk: Any, X: Any, Y: Any, same: bool) -> tuple:
        """``(vocab, ex, ey, tb, x, y)``: both sides encoded in one id space, the tuple tables
        and each side's ``(edges, nodes, edge classes, node classes)``."""
        vocab, ex, ey = self._encoded_pair(X, Y, same)
        xn = getattr(ex, self.node_field)
        yn = getattr(ey, self.node_field)
        if ey is ex:
            edges, nodes = ex.edges, xn
        else:
            edges = np.concatenate([ex.edges, ey.edges])
            nodes = np.concatenate([xn, yn])
        tb = tuple_tables(tk, self.sigma, vocab, edges, nodes)
        ec = tb.ec.astype(np.int64, copy=False)
        nc = tb.nc.astype(np.int64, copy=False)
        if ey is ex:
            x = y = (edges, nodes, ec, nc)
        else:
            nx = len(ex.edges)
            x = (ex.edges, xn, ec[:nx], nc[:nx])
            y = (ey.edges, yn, ec[nx:], nc[nx:])
        return vocab, ex, ey, tb, x, y
