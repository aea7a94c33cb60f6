"""Linear kernel on bags of features: ``k(x, y) = Σ_f c_x(f) c_y(f)``, the dot product of the
strings' counts (``[f ∈ x]`` with ``binary=True``), so that a linear model on sparse
indicator features sums with a structure kernel and shares its folds and classifiers.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from itertools import repeat
from typing import Any

import numpy as np
import scipy.sparse as sp

from structkernels.engine.checks import diagonal_scales
from structkernels.kernels.base import Kernel
from structkernels.kernels.tuples import merge_vocabularies
from structkernels.structures import EncodedList, Vocabulary

__all__ = ["BagKernel", "BagList", "BagWeights"]


def _check_bag(i: int, x: Any) -> None:
    if isinstance(x, (str, bytes)) or not isinstance(x, (tuple, list, frozenset, set)):
        raise TypeError(f"bag: item {i} is a {type(x).__name__}, expected a tuple, list or "
                        "frozenset of strings")


class BagList(EncodedList):
    """Bags encoded once (what :meth:`BagKernel.check_input` returns): one sparse row
    of feature counts per bag over a shared :class:`~structkernels.Vocabulary`, so a
    Gram block is one sparse product and blocks cut from it are not encoded again.

    Examples
    --------
    >>> X = BagList.encode([("a", "b"), ("b",)], binary=True)
    >>> len(X), X[1], (X.rows @ X.rows.T).toarray().tolist()
    (2, ('b',), [[2.0, 1.0], [1.0, 1.0]])
    """

    __slots__ = ("vocab", "rows", "_items")
    kind = "bags"

    def __init__(self, vocab: Vocabulary, rows: sp.csr_matrix, items: list | None = None):
        self.vocab = vocab
        self.rows = rows
        self._items = items

    @classmethod
    def encode(cls, bags: Sequence, vocab: Vocabulary | None = None,
               binary: bool = True) -> BagList:
        vocab = Vocabulary() if vocab is None else vocab
        indptr, cols, vals = [0], [], []
        for x in bags:
            counts = Counter(set(x)) if binary else Counter(x)
            for f, c in counts.items():
                cols.append(vocab.add(f))
                vals.append(float(c))
            indptr.append(len(cols))
        rows = sp.csr_matrix((np.asarray(vals, dtype=np.float64), np.asarray(cols, dtype=np.int64),
                              np.asarray(indptr, dtype=np.int64)),
                             shape=(len(indptr) - 1, max(len(vocab), 1)))
        return cls(vocab, rows, [tuple(x) for x in bags])

    def __len__(self) -> int:
        return self.rows.shape[0]

    def _build(self, i: int) -> tuple:
        row = self.rows.getrow(i)
        labels = self.vocab.labels
        return tuple(f for j, c in zip(row.indices.tolist(), row.data.tolist(), strict=True)
                     for f in [labels[j]] * int(c))

    def _subset(self, idx: np.ndarray) -> BagList:
        return BagList(self.vocab, self.rows[idx])

    def _arrays(self) -> tuple:
        return (self.vocab, self.rows)


class BagKernel(Kernel):
    """Dot product of feature counts of bags of strings.

    Parameters
    ----------
    binary : bool, default True
        Count each distinct feature once.

    Examples
    --------
    >>> from structkernels import kernel
    >>> k = kernel("bag")
    >>> k.value(("m:bind", "p:PROT1", "p:nsubj-of"), ("m:bind", "p:PROT1", "m:to"))
    2.0
    >>> kernel("bag", binary=False).value(("a", "a", "b"), ("a", "a"))
    4.0
    """

    grows_with_size = True

    def __init__(self, binary: bool = True):
        self.binary = binary

    def validate_params(self) -> None:
        if not isinstance(self.binary, (bool, np.bool_)):
            raise TypeError(f"BagKernel.binary must be a bool, got {self.binary!r}")

    def check_input(self, X: Any) -> Sequence:
        if isinstance(X, BagList):
            return X
        X = super().check_input(X)
        for i, x in enumerate(X):
            _check_bag(i, x)
            for f in x:
                if not isinstance(f, str):
                    raise TypeError(f"bag: item {i} holds {f!r}, expected strings only")
        return BagList.encode(X, binary=bool(self.binary))

    def pair(self, x: Any, y: Any) -> float:
        return float(self.gram_block([x], [y])[0, 0])

    def _encoded(self, X: Sequence) -> BagList:
        return X if isinstance(X, BagList) else BagList.encode(X, binary=bool(self.binary))

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        X, Y = self._encoded(X), self._encoded(Y)
        vocab, ymap = merge_vocabularies(X.vocab, Y.vocab)
        B = Y.rows
        indices = B.indices if ymap is None else ymap[B.indices]
        width = max(len(vocab), 1)  # the vocabulary may have grown since a list was cut
        A = sp.csr_matrix((X.rows.data, X.rows.indices, X.rows.indptr),
                          shape=(X.rows.shape[0], width))
        B = sp.csr_matrix((B.data, indices, B.indptr), shape=(B.shape[0], width))
        return np.asarray((A @ B.T).toarray(), dtype=np.float64)

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        X = self._encoded(X)
        return np.asarray((X.rows @ X.rows.T).toarray(), dtype=np.float64)

    def diag_block(self, X: Sequence) -> np.ndarray:
        X = self._encoded(X)
        return np.asarray(X.rows.multiply(X.rows).sum(axis=1), dtype=np.float64).ravel()

    def weighted_sum(self, X: Sequence, weights: Any, normalized: bool = False
                     ) -> tuple[BagWeights, np.ndarray]:
        """``(BagWeights, diag)``: the references' bags summed into one vector (see
        :meth:`Kernel.weighted_sum`); a bag with no feature weighs 0 when normalised."""
        refs = self.check_input(X)
        diag = np.asarray(self.diag_block(refs), dtype=np.float64)
        coef = np.asarray(weights, dtype=np.float64)
        if normalized:
            coef = coef * diagonal_scales(diag)
        return BagWeights(refs, coef, binary=bool(self.binary)), diag


class BagWeights:
    """A weighted sum of bags as one vector: ``v = Σ_j c_j φ(r_j)``, so that
    ``Σ_j c_j k(x, r_j) = <φ(x), v>`` costs one pass over the features of ``x``
    (see :meth:`Kernel.weighted_sum`).

    Parameters
    ----------
    bags : sequence of bags or BagList
        The reference bags.
    coef : array-like of shape (len(bags),)
        Their weights.
    binary : bool, default True
        The kernel's ``binary`` (each distinct feature counted once).

    Examples
    --------
    >>> w = BagWeights([("a", "b"), ("b",)], [1.0, -0.5])
    >>> dots, sq = w.dots([("a", "b", "c"), ("d",)])
    >>> dots.tolist(), sq.tolist()  # <φ(x), v> and k(x, x)
    ([1.5, 0.0], [3.0, 1.0])
    """

    def __init__(self, bags: Sequence, coef: Any, binary: bool = True):
        encoded = bags if isinstance(bags, BagList) else BagList.encode(bags, binary=binary)
        c = np.asarray(coef, dtype=np.float64)
        if c.shape != (len(encoded),):
            raise ValueError(f"{len(c)} weights for {len(encoded)} bags")
        rows = encoded.rows
        v = np.asarray(rows.T @ c, dtype=np.float64).ravel()
        labels = encoded.vocab.labels
        self.binary = bool(binary)
        #: feature -> its weight in ``v`` (features of no reference bag are absent)
        self.vector: dict[str, float] = {labels[j]: float(v[j])
                                         for j in np.unique(rows.indices).tolist()}

    def arrays(self) -> dict[str, np.ndarray]:
        """What it holds as plain arrays (the features as the UTF-8 of a JSON list), for
        :meth:`from_arrays`."""
        features = json.dumps(list(self.vector), ensure_ascii=False).encode("utf-8")
        return {"features": np.frombuffer(features, dtype=np.uint8),
                "values": np.fromiter(self.vector.values(), np.float64, len(self.vector)),
                "binary": np.array(self.binary)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> BagWeights:
        """The weighted sum :meth:`arrays` gave, its parts checked: ``ValueError`` when
        they do not fit together."""
        features = json.loads(np.asarray(arrays["features"], dtype=np.uint8).tobytes())
        values = np.asarray(arrays["values"])
        binary = np.asarray(arrays["binary"])
        if (not isinstance(features, list) or not all(isinstance(f, str) for f in features)
                or len(set(features)) != len(features) or values.dtype != np.float64
                or values.shape != (len(features),) or not np.isfinite(values).all()
                or binary.dtype != np.bool_ or binary.shape != ()):
            raise ValueError("the arrays of a BagWeights do not fit together")
        out = cls.__new__(cls)
        out.binary = bool(binary)
        out.vector = dict(zip(features, values.tolist(), strict=True))
        return out

    def dots(self, X: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """``(<φ(x), v>, k(x, x))`` of each bag of ``X``."""
        n = len(X)
        dots = np.zeros(n, dtype=np.float64)
        sq = np.zeros(n, dtype=np.float64)
        get = self.vector.get
        is_str = str.__instancecheck__
        for i, x in enumerate(X):
            _check_bag(i, x)
            # binary: each distinct feature once, in the order of first sight (not a set's,
            # which string hashing changes from one process to the next)
            feats = dict.fromkeys(x) if self.binary else Counter(x)
            if not all(map(is_str, feats)):
                raise TypeError(f"bag: item {i} holds a non-string, expected strings only")
            if self.binary:
                dots[i] = sum(map(get, feats, repeat(0.0)))
                sq[i] = len(feats)
            else:
                dots[i] = sum(c * get(f, 0.0) for f, c in feats.items())
                sq[i] = sum(c * c for c in feats.values())
        return dots, sq
