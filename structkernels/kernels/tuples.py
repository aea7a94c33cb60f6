"""Tuple similarities of the convolution kernels, with the nonstationary σ weighting.

Sec. 5.1 of Garg et al., "Stochastic learning of nonstationary kernels for natural
language modeling" (2018) (Eq. 1, Theorem 2)::

    k_NS((e, n), (e', n')) = σ(e) k_e(e, e') σ(e') k_n(n, n')

``σ ≡ 1`` gives the stationary kernel exactly; ``σ(l) = 0`` makes every tuple with edge
label ``l`` similar to nothing.  The missing edge of a root tuple (``None``) weighs 1.

Examples
--------
>>> from structkernels.kernels.tuples import TupleKernel, WeightedTupleKernel
>>> tk = WeightedTupleKernel(TupleKernel(), {"ARG0": 0.0, "ARG1": 0.5})
>>> tk(("ARG1", "enzyme"), ("ARG1", "enzyme")), tk(("ARG0", "enzyme"), ("ARG0", "enzyme"))
(0.25, 0.0)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from structkernels.kernels.sigma import sigma_weight
from structkernels.structures import Vocabulary
from structkernels.utils import ParamsMixin

__all__ = [
    "LabelKernel", "IndicatorSimilarity", "PartialIndicator", "WordVectorSimilarity",
    "TupleKernel", "WeightedTupleKernel", "TupleTables", "tuple_tables", "match_keys",
    "merge_vocabularies",
]


class LabelKernel(ParamsMixin):
    """Base class of kernels between labels (words, edge labels): subclasses implement
    :meth:`matrix`.  ``None`` (a root's missing edge) is similar to ``None`` alone."""

    def matrix(self, a: Sequence[str | None], b: Sequence[str | None]) -> np.ndarray:
        """Dense ``(len(a), len(b))`` similarity matrix."""
        raise NotImplementedError

    def __call__(self, x: str | None, y: str | None) -> float:
        return float(self.matrix([x], [y])[0, 0])


class IndicatorSimilarity(LabelKernel):
    """``I(i = j)``: 1 for equal labels, 0 otherwise."""

    def matrix(self, a: Sequence[str | None], b: Sequence[str | None]) -> np.ndarray:
        ids: dict[str | None, int] = {}
        ia = np.array([ids.setdefault(x, len(ids)) for x in a], dtype=np.int64)
        ib = np.array([ids.setdefault(y, len(ids)) for y in b], dtype=np.int64)
        return (ia[:, None] == ib[None, :]).astype(np.float64)


class PartialIndicator(LabelKernel):
    """``c + (1 - c) I(i = j)``: 1 for equal labels, ``c`` (the ``mismatch`` weight) otherwise;
    PSD for ``0 <= c <= 1``.  ``PathKernel(node_mismatch=c)`` uses it as the node kernel.

    Examples
    --------
    >>> from structkernels.kernels.tuples import PartialIndicator
    >>> PartialIndicator(0.9)("enzyme", "protein"), PartialIndicator(0.9)("enzyme", "enzyme")
    (0.9, 1.0)
    """

    def __init__(self, mismatch: float = 0.5):
        self.mismatch = mismatch

    def matrix(self, a: Sequence[str | None], b: Sequence[str | None]) -> np.ndarray:
        c = check_mismatch(self.mismatch, "PartialIndicator.mismatch")
        return c + (1.0 - c) * IndicatorSimilarity().matrix(a, b)


def check_mismatch(c: Any, owner: str) -> float:
    """A partial-credit weight: a number in ``[0, 1]`` (else TypeError/ValueError naming ``owner``)."""
    if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner} must be a number in [0, 1], got {c!r}")
    if not 0.0 <= float(c) <= 1.0:
        raise ValueError(f"{owner} must lie in [0, 1], got {c!r}")
    return float(c)


_SENSE = re.compile(r"-\d+$")


class WordVectorSimilarity(LabelKernel):
    """Word-vector similarity of Sec. 5.1 of the nonstationary kernels paper.

    ``k(i, j) = exp(w_i·w_j - 1) * ((w_i·w_j - γ) / (1 - γ))₊`` with ``w`` the
    unit-length word vectors (vectors are normalised here) and ``γ ∈ (-1, 1)``
    a sparsity parameter: pairs with cosine ``<= γ`` get 0.  ``k(i, i) = 1``.

    A label is looked up as it is, lower-cased, then without a PropBank sense (``bind-01``
    -> ``bind``); labels with no vector fall back to the indicator.  Not guaranteed PSD
    (the truncation can break it); the paper uses it as is.

    Parameters
    ----------
    vectors : dict str -> array, or 2-D array
        The embedding lookup: a dict word -> vector, or a matrix whose rows
        are the vectors of ``vocabulary``.
    vocabulary : sequence of str, optional
        The words of the rows of ``vectors`` when it is a matrix.
    gamma : float, default 0.0
        Sparsity ``γ`` (the paper tunes it to 0.6).

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels.kernels.tuples import WordVectorSimilarity
    >>> wv = WordVectorSimilarity({"enzyme": np.array([1.0, 0.0]),
    ...                            "protein": np.array([0.8, 0.6])}, gamma=0.5)
    >>> round(wv("enzyme", "protein"), 4)    # exp(0.8 - 1) * (0.8 - 0.5) / 0.5
    0.4912
    >>> wv("enzyme", "enzyme"), wv("unknown", "unknown"), wv("unknown", "enzyme")
    (1.0, 1.0, 0.0)
    """

    def __init__(self, vectors: Any = None, vocabulary: Sequence[str] | None = None,
                 gamma: float = 0.0):
        self.vectors = vectors
        self.vocabulary = vocabulary
        self.gamma = gamma

    def _check(self) -> None:
        g = self.gamma
        if isinstance(g, bool) or not isinstance(g, (int, float, np.integer, np.floating)):
            raise TypeError(f"WordVectorSimilarity.gamma must be a number, got {g!r}")
        if not -1.0 < float(g) < 1.0:
            raise ValueError(f"WordVectorSimilarity.gamma must lie in (-1, 1), got {g!r}")
        if self.vectors is None:
            raise ValueError("WordVectorSimilarity.vectors is required (dict or matrix)")

    def _lookup(self) -> tuple[dict[str, int], np.ndarray]:
        """(word -> row, unit-row matrix); cached on the instance per ``vectors`` object."""
        cached = self.__dict__.get("_lookup_cache")
        if cached is not None and cached[0] is self.vectors and cached[1] is self.vocabulary:
            return cached[2], cached[3]
        if isinstance(self.vectors, Mapping):
            words = list(self.vectors)
            M = np.array([np.asarray(self.vectors[w], dtype=np.float64) for w in words])
            if M.ndim != 2:
                raise ValueError("WordVectorSimilarity.vectors: all vectors must have one length")
        else:
            if self.vocabulary is None:
                raise ValueError(
                    "WordVectorSimilarity: a matrix of vectors needs `vocabulary` (its row words)")
            M = np.asarray(self.vectors, dtype=np.float64)
            words = list(self.vocabulary)
            if M.ndim != 2 or M.shape[0] != len(words):
                raise ValueError(f"WordVectorSimilarity: vectors of shape {M.shape} do not match a "
                                 f"vocabulary of {len(words)} words")
        if not np.isfinite(M).all():
            bad = int(np.flatnonzero(~np.isfinite(M).all(axis=1))[0])
            raise ValueError(f"WordVectorSimilarity: the vector of {words[bad]!r} is not finite")
        norms = np.linalg.norm(M, axis=1)
        if (norms == 0).any():
            bad = int(np.flatnonzero(norms == 0)[0])
            raise ValueError(f"WordVectorSimilarity: the vector of {words[bad]!r} is zero")
        U = M / norms[:, None]
        index = {w: i for i, w in enumerate(words)}
        self.__dict__["_lookup_cache"] = (self.vectors, self.vocabulary, index, U)
        return index, U

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_lookup_cache", None)  # rebuilt on use; never sent to workers
        return state

    def _rows(self, labels: Sequence[str | None], index: dict[str, int]) -> np.ndarray:
        rows = np.full(len(labels), -1, dtype=np.int64)
        for i, lab in enumerate(labels):
            if lab is None:
                continue
            r = index.get(lab)
            if r is None:
                low = lab.lower()
                r = index.get(low)
                if r is None:
                    r = index.get(_SENSE.sub("", low), -1)
            rows[i] = r
        return rows

    def matrix(self, a: Sequence[str | None], b: Sequence[str | None]) -> np.ndarray:
        self._check()
        index, U = self._lookup()
        ra = self._rows(a, index)
        rb = self._rows(b, index)
        gamma = float(self.gamma)
        S = U[np.maximum(ra, 0)] @ U[np.maximum(rb, 0)].T
        np.clip(S, -1.0, 1.0, out=S)
        K = np.exp(S - 1.0) * np.maximum((S - gamma) / (1.0 - gamma), 0.0)
        missing = (ra[:, None] < 0) | (rb[None, :] < 0)
        if missing.any():
            same = IndicatorSimilarity().matrix(a, b)
            K = np.where(missing, same, K)
        return K


def _as_label_kernel(spec: Any, what: str) -> LabelKernel | None:
    """None for the indicator, else the LabelKernel."""
    if (isinstance(spec, str) and spec == "indicator") or isinstance(spec, IndicatorSimilarity):
        return None
    if isinstance(spec, LabelKernel):
        return spec
    raise TypeError(f"{what} must be 'indicator' or a LabelKernel instance, got {spec!r}")


class TupleKernel(ParamsMixin):
    """``k_e(e, e') k_n(n, n')`` on ``(edge, node)`` tuples (Sec. 5.1), the stationary part of
    Eq. 1: σ lives in the convolution kernel's ``sigma`` (:mod:`structkernels.kernels.sigma`).

    Parameters
    ----------
    edge_kernel : "indicator" or LabelKernel, default "indicator"
    node_kernel : "indicator" or LabelKernel, default "indicator"
        E.g. :class:`WordVectorSimilarity` for the word-vector variant.

    Examples
    --------
    >>> from structkernels.kernels.tuples import TupleKernel
    >>> TupleKernel()(("ARG1", "enzyme"), ("ARG1", "enzyme"))
    1.0
    >>> TupleKernel()(("ARG1", "enzyme"), ("ARG2", "enzyme"))
    0.0
    """

    def __init__(self, edge_kernel: Any = "indicator", node_kernel: Any = "indicator"):
        self.edge_kernel = edge_kernel
        self.node_kernel = node_kernel

    def validate(self) -> None:
        """Raise ``TypeError``/``ValueError`` naming a bad parameter."""
        _as_label_kernel(self.edge_kernel, "TupleKernel.edge_kernel")
        node = _as_label_kernel(self.node_kernel, "TupleKernel.node_kernel")
        if isinstance(node, WordVectorSimilarity):
            node._check()

    def __call__(self, a: Sequence[str | None], b: Sequence[str | None]) -> float:
        (ea, na), (eb, nb) = a, b
        ke = _as_label_kernel(self.edge_kernel, "edge_kernel")
        kn = _as_label_kernel(self.node_kernel, "node_kernel")
        w = float(ea == eb) if ke is None or ea is None or eb is None else ke(ea, eb)
        w *= float(na == nb) if kn is None else kn(na, nb)
        return float(w)


class WeightedTupleKernel(ParamsMixin):
    """σ weighting of any tuple kernel: ``σ(e) base((e, n), (e', n')) σ(e')`` (Eq. 1), for a
    convolution kernel without a ``sigma`` of its own (a plugin's)."""

    def __init__(self, base: Callable[[Any, Any], float] | None = None,
                 sigma: Mapping[str, float] | None = None):
        self.base = base
        self.sigma = sigma

    def __call__(self, a: Sequence[str | None], b: Sequence[str | None]) -> float:
        sigma = self.sigma or {}
        w = sigma_weight(sigma, a[0]) * sigma_weight(sigma, b[0])
        if w == 0.0:
            return 0.0
        return w * float(self.base(a, b))


def as_tuple_kernel(spec: Any, owner: str) -> TupleKernel:
    """``None`` -> the indicator TupleKernel; a TupleKernel as is; else TypeError."""
    if spec is None:
        return TupleKernel()
    if isinstance(spec, TupleKernel):
        spec.validate()
        return spec
    raise TypeError(
        f"{owner}.tuple_kernel must be None or a structkernels.kernels.tuples.TupleKernel, "
        f"got {type(spec).__name__}")


class TupleTables(NamedTuple):
    """The tuple similarity for compiled kernels: ``sig[id]`` σ of each vocabulary id; with
    ``ind_e`` (``ind_n``) the edge (node) kernel compares ids (``cn`` the mismatch weight of
    a :class:`PartialIndicator`), else ``KE[ec[i], ec[j]]`` (``KN[nc[i], nc[j]]``)."""

    sig: np.ndarray
    ind_e: bool
    KE: np.ndarray
    ec: np.ndarray
    ind_n: bool
    KN: np.ndarray
    nc: np.ndarray
    cn: float = 0.0


_DUMMY = np.zeros((1, 1), dtype=np.float64)


def _compact(ids: np.ndarray, vocab: Vocabulary, kernel: LabelKernel) -> tuple[np.ndarray, np.ndarray]:
    uniq, inv = np.unique(ids, return_inverse=True)
    labels = vocab.labels
    names = [labels[i] for i in uniq]
    K = np.asarray(kernel.matrix(names, names), dtype=np.float64)
    # the missing edge is similar to itself only
    none = [i for i, n in enumerate(names) if n is None]
    if none:
        K = K.copy()
        K[none, :] = 0.0
        K[:, none] = 0.0
        K[none, none] = 1.0
    return np.ascontiguousarray(K), inv.astype(np.int64).reshape(ids.shape)


def sigma_table(sigma: Mapping[str, float] | None, vocab: Vocabulary) -> np.ndarray:
    """σ of each vocabulary id (1 for labels not named and for id 0, the missing edge).

    ``sigma`` is the kernel's, checked where its parameters are (``validate_params``)."""
    sig = np.ones(len(vocab), dtype=np.float64)
    for label, w in (sigma or {}).items():
        i = vocab.get(label)
        if i > 0:
            sig[i] = w
    return sig


def tuple_tables(tk: TupleKernel, sigma: Mapping[str, float] | None, vocab: Vocabulary,
                 edges: np.ndarray, nodes: np.ndarray) -> TupleTables:
    """Tables of ``tk`` weighted by ``sigma`` over the ids ``edges``/``nodes`` a block uses
    (both sides); the similarity matrices cover their distinct labels only."""
    sig = sigma_table(sigma, vocab)
    ke = _as_label_kernel(tk.edge_kernel, "TupleKernel.edge_kernel")
    kn = _as_label_kernel(tk.node_kernel, "TupleKernel.node_kernel")
    if ke is None:
        KE, ec, ind_e = _DUMMY, edges, True
    else:
        (KE, ec), ind_e = _compact(edges, vocab, ke), False
    cn = 0.0
    if isinstance(kn, PartialIndicator):
        # c + (1 - c) I(n = n'): an id comparison and one weight, not a |V| x |V| matrix
        kn, cn = None, check_mismatch(kn.mismatch, "PartialIndicator.mismatch")
    if kn is None:
        KN, nc, ind_n = _DUMMY, nodes, True
    else:
        (KN, nc), ind_n = _compact(nodes, vocab, kn), False
    return TupleTables(sig, ind_e, KE, ec, ind_n, KN, nc, cn)


def match_keys(tb: TupleTables, n_labels: int, xe: np.ndarray, xn: np.ndarray,
               ye: np.ndarray, yn: np.ndarray, same: bool) -> tuple[np.ndarray, np.ndarray]:
    """Integer keys of the tuples, equal for tuples that can match: ``edge * n_labels + node``
    when both label kernels are the indicator, else the edges.  ``same``: ``Y`` is ``X``."""
    if tb.ind_e and tb.ind_n and not tb.cn:
        xk = xe * n_labels + xn
        return xk, (xk if same else ye * n_labels + yn)
    return xe, ye


def merge_vocabularies(vx: Vocabulary, vy: Vocabulary) -> tuple[Vocabulary, np.ndarray | None]:
    """A vocabulary holding both, with ``vx``'s ids unchanged, and ``vy`` id -> new id
    (``(vx, None)`` when both are the same object)."""
    if vy is vx:
        return vx, None
    merged = vx.copy()
    add = merged.add
    ymap = np.fromiter((add(label) for label in vy.labels), dtype=np.int64, count=len(vy))
    return merged, ymap
