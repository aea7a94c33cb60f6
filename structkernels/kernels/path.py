"""Path (subsequence) kernel of Bunescu & Mooney (2005) with nonstationary σ.

Sec. 4.1 of Garg et al. (2018), between paths ``S`` and ``S'`` of ``(edge, node)`` tuples::

    K(S, S') = Σ_{i, j : |i| = |j|}  Π_k k(S[i_k], S'[j_k]) · λ^(l(i) + l(j))

over index subsequences of equal length ``1 <= |i| <= max_len``, ``l(i)`` the span of
``i``, ``k`` the tuple similarity of Sec. 5.1 (Eq. 1, :mod:`structkernels.kernels.tuples`).
``σ ≡ 1`` is the stationary path kernel (PK), a learned σ the nonstationary one (NPK).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from structkernels.engine.parallel import map_tasks
from structkernels.kernels import _conv_numba as _nb
from structkernels.kernels import _path_grad_numba as _gr
from structkernels.kernels._convolution import EncodedConvolutionKernel
from structkernels.kernels.base import Kernel
from structkernels.kernels.sigma import check_sigma
from structkernels.kernels.tuples import (
    IndicatorSimilarity,
    PartialIndicator,
    TupleKernel,
    WordVectorSimilarity,
    as_tuple_kernel,
    check_mismatch,
    match_keys,
    sigma_table,
)
from structkernels.structures import Path, PathList, Vocabulary

__all__ = ["PathKernel", "PathList", "SigmaZeroForm"]


def check_lam(owner: Kernel) -> None:
    lam = owner.lam
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.integer, np.floating)):
        raise TypeError(f"{type(owner).__name__}.lam must be a number in (0, 1], got {lam!r}")
    if not 0.0 < float(lam) <= 1.0:
        raise ValueError(f"{type(owner).__name__}.lam must lie in (0, 1], got {lam!r}")


class SigmaZeroForm:
    """Writes a path's tuples whose edge label has σ = 0 alike (the first such label for edge
    and node): they match nothing (:meth:`PathKernel.canonical_form`)."""

    def __init__(self, dead: set[str], name: str):
        self.dead, self.name = dead, name

    def __call__(self, p: Any) -> Any:
        dead, name = self.dead, self.name
        if not isinstance(p, Path) or not any(e in dead for e, _ in p):
            return p
        return Path([(name, name) if e in dead else (e, n) for e, n in p])


class PathKernel(EncodedConvolutionKernel):
    """Subsequence kernel on paths of ``(edge, node)`` tuples (Sec. 4.1 and 5, Eq. 1).

    Parameters
    ----------
    lam : float in (0, 1], default 0.8
        Decay ``λ`` of a subsequence pair, ``λ^(l(i) + l(j))`` with ``l`` the span (last index
        - first index + 1).  The paper uses 0.8.
    max_len : int or None, default None
        Longest subsequence length counted; None counts every length.
    sigma : dict str -> float, optional
        Nonstationary weights per edge label (``>= 0``); labels not named weigh 1.
        ``sigma[l] = 0`` removes every common subsequence that uses an ``l`` tuple.
    tuple_kernel : TupleKernel, optional
        The stationary tuple similarity (default: indicator on edges and nodes).
    node_mismatch : float in [0, 1], default 0.0
        Partial credit: two tuples with the same edge label and different nodes match with
        this weight instead of 0 (node kernel
        :class:`~structkernels.kernels.tuples.PartialIndicator`; 0 is the paper's indicator).
        Needs an indicator node kernel in ``tuple_kernel``.

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
    encoded = PathList
    overflow_hint = ("long paths share astronomically many common substructures: lower lam or "
                     "set max_len (or compare shorter paths)")

    @staticmethod
    def _relabel(Y: PathList, vocab: Vocabulary, ymap: np.ndarray) -> PathList:
        """``Y`` with its label ids mapped by ``ymap`` into ``vocab``."""
        return PathList(vocab, Y.offsets, ymap[Y.edges], ymap[Y.nodes])

    def __init__(self, lam: float = 0.8, max_len: int | None = None,
                 sigma: Mapping[str, float] | None = None, tuple_kernel: Any = None,
                 node_mismatch: float = 0.0):
        self.lam = lam
        self.max_len = max_len
        self.sigma = sigma
        self.tuple_kernel = tuple_kernel
        self.node_mismatch = node_mismatch

    def validate_params(self) -> None:
        check_lam(self)
        ml = self.max_len
        if ml is not None and (isinstance(ml, bool) or not isinstance(ml, (int, np.integer))
                               or ml < 1):
            raise ValueError(f"PathKernel.max_len must be None or an int >= 1, got {ml!r}")
        check_sigma(self.sigma, "PathKernel.sigma")
        self.resolved_tuple_kernel()

    def resolved_tuple_kernel(self) -> TupleKernel:
        """The tuple similarity in use (``tuple_kernel`` with ``node_mismatch`` applied)."""
        tk = as_tuple_kernel(self.tuple_kernel, "PathKernel")
        c = check_mismatch(getattr(self, "node_mismatch", 0.0), "PathKernel.node_mismatch")
        if c == 0.0:
            return tk
        if not (isinstance(tk.node_kernel, str) and tk.node_kernel == "indicator"):
            raise ValueError("PathKernel.node_mismatch applies to the indicator node kernel only; "
                             f"tuple_kernel already has node_kernel={tk.node_kernel!r}")
        return TupleKernel(tk.edge_kernel, PartialIndicator(c))

    def _block(self, X: Sequence[Path], Y: Sequence[Path], mode: int) -> np.ndarray:
        tk = self.resolved_tuple_kernel()
        # the diagonal mode pairs X[i] with Y[i] (Y is X for self-similarities)
        vocab, ex, ey, tb, (xe, xn, xec, xnc), (ye, yn, yec, ync) = self._tables(
            tk, X, Y, mode == _nb.MODE_SYMMETRIC or Y is X)
        max_len = 0 if self.max_len is None else int(self.max_len)
        if max_len:  # no longer than the longest path of X
            max_len = max(1, min(max_len, int(np.diff(ex.offsets).max(initial=0))))
        xk, yk = match_keys(tb, len(vocab), xe, xn, ye, yn, ey is ex)
        return _nb.path_block(
            ex.offsets, xe, xn, xec, xnc, xk, ey.offsets, ye, yn, yec, ync, yk,
            tb.sig, tb.ind_e, tb.KE, tb.ind_n, tb.KN, tb.cn, float(self.lam), max_len, mode)

    def canonical_form(self) -> SigmaZeroForm | None:
        """The tuples whose edge label has σ = 0 written alike (:class:`SigmaZeroForm`), or
        None when no label has σ = 0 or the tuple kernel is not the default one."""
        if type(self) is not PathKernel or self.tuple_kernel is not None or not self.sigma:
            return None
        zero = sorted(str(e) for e, v in self.sigma.items() if float(v) == 0.0)
        return SigmaZeroForm(set(zero), zero[0]) if zero else None

    def weighted_gradient(self, X: Sequence[Path], V: Any, labels: Sequence[str],
                          Y: Sequence[Path] | None = None, *, diagonal: bool = False,
                          lam: bool = False, n_jobs: int | None = None) -> np.ndarray:
        """``Σ_ij V[i, j] ∂K(X[i], Y[j]) / ∂θ``: the exact derivative in σ and λ, contracted.

        ``θ`` is ``σ(label)`` for each of ``labels``, then ``λ``, by forward mode in the
        compiled programme; with ``V = ∂J/∂K`` it is the gradient of an objective ``J``.

        Parameters
        ----------
        V : array
            ``(len(X), len(Y))`` weights (``Y`` None: ``X`` with itself); with ``diagonal``,
            ``len(X)`` weights of the pairs ``(X[i], Y[i])`` (``Y`` None: ``(X[i], X[i])``).
        labels : sequence of str
            The edge labels whose σ the gradient is taken in.
        lam : bool, default False
            Also the derivative in λ (else the last value is 0).
        n_jobs : int, optional
            Threads; the result does not depend on it (fixed bands summed in order).

        Returns
        -------
        ndarray of shape (len(labels) + 1,)
            One value per label, then λ's.

        Examples
        --------
        >>> from structkernels import Path, kernel
        >>> a = Path([(None, "bind"), ("nsubj", "A"), ("dobj", "B")])
        >>> k = kernel("path", lam=1.0, sigma={"nsubj": 0.5})
        >>> g = k.weighted_gradient([a], [[1.0]], ["nsubj", "dobj"])
        >>> [round(float(v), 6) for v in g]  # K(a, a) = 2 (1 + σ(nsubj)²)(1 + σ(dobj)²) - 1
        [4.0, 5.0, 0.0]
        """
        self.validate_params()
        tk = self.resolved_tuple_kernel()
        same = Y is None
        vocab, ex, ey, tb, (xe, xn, xec, xnc), (ye, yn, yec, ync) = self._tables(
            tk, X, X if same else Y, same)
        pe = np.full(len(vocab), -1, dtype=np.int64)
        for p, label in enumerate(labels):
            i = vocab.get(label)
            if i > 0:
                pe[i] = p
        W = np.asarray(V, dtype=np.float64)
        n, m = len(ex.offsets) - 1, len(ey.offsets) - 1
        if diagonal:
            W = W.reshape(-1, 1)
            if W.shape[0] != n or n != m:
                raise ValueError(f"weighted_gradient: {W.shape[0]} diagonal weights for "
                                 f"{n} x {m} structures")
            mode = _nb.MODE_DIAG
        else:
            if W.shape != (n, m):
                raise ValueError(f"weighted_gradient: V has shape {W.shape}, expected {(n, m)}")
            mode = _nb.MODE_SYMMETRIC if same else _nb.MODE_FULL
        if not np.isfinite(W).all():
            raise ValueError("weighted_gradient: V has non-finite values")
        max_len = 0 if self.max_len is None else int(self.max_len)
        W = np.ascontiguousarray(W)

        def rows(band: tuple[int, int]) -> np.ndarray:
            return _gr.path_grad_block(
                ex.offsets, xe, xn, xec, xnc, ey.offsets, ye, yn, yec, ync,
                tb.sig, tb.ind_e, tb.KE, tb.ind_n, tb.KN, tb.cn, float(self.lam), max_len,
                pe, len(labels), bool(lam), W, mode, band[0], band[1])

        pairs = n if mode == _nb.MODE_DIAG else (n * (n + 1) // 2 if mode == _nb.MODE_SYMMETRIC
                                                 else n * m)
        bands = _row_bands(n, pairs, triangle=mode == _nb.MODE_SYMMETRIC)
        out = np.sum(list(map_tasks(rows, bands, n_jobs=n_jobs)), axis=0)
        if not np.isfinite(out).all():
            raise FloatingPointError("PathKernel.weighted_gradient: non-finite derivative; "
                                     + self.overflow_hint)
        return out

    @property
    def paired_mode(self) -> bool:  # type: ignore[override]
        """The compiled paired mode gives this kernel's values (not a subclass's)."""
        return type(self) is PathKernel

    def paired_values(self, X: Sequence[Path], Y: Sequence[Path]) -> np.ndarray:
        """``[k(X[i], Y[i]) for i]``: pairs in one compiled call (its diagonal mode).

        Examples
        --------
        >>> from structkernels import Path, kernel
        >>> a, b = Path([(None, "x")]), Path([(None, "x"), ("ARG0", "y")])
        >>> kernel("path").paired_values([a, b], [b, b]).tolist() == [
        ...     kernel("path").value(a, b), kernel("path").value(b, b)]
        True
        """
        return np.asarray(self._block(X, Y, _nb.MODE_DIAG), dtype=np.float64)[:, 0]

    def _own_tuple_kernel(self) -> TupleKernel | None:
        """The tuple kernel in use, or None for a subclass or parameters that do not resolve."""
        if type(self) is not PathKernel:
            return None
        try:
            return self.resolved_tuple_kernel()
        except (TypeError, ValueError):
            return None

    def monotone_in_sigma(self) -> bool:
        """Whether ``K(x, y; σ_t = 0) <= K(x, y; σ_t = 1)`` is known: true with the built-in
        (non-negative) label similarities, σ_t = 0 removing non-negative terms."""
        tk = self._own_tuple_kernel()
        return tk is not None and all(
            (isinstance(lk, str) and lk == "indicator")
            or type(lk) in (IndicatorSimilarity, PartialIndicator, WordVectorSimilarity)
            for lk in (tk.edge_kernel, tk.node_kernel))

    def chain_bound_weights(self, X: PathList) -> np.ndarray | None:
        """Weights ``λ² σ(e)²`` of the distinct edge labels of ``X`` (sorted ids), bounding
        ``K(x, y) <= Π_s (1 + λ² σ(e_s)² c_y(e_s)) - 1`` (``c_y`` the edge-label counts of
        ``y``); None unless the edge kernel is the indicator and the node kernel at most 1."""
        tk = self._own_tuple_kernel()
        if tk is None or not (isinstance(tk.edge_kernel, str) and tk.edge_kernel == "indicator"):
            return None
        nk = tk.node_kernel
        if not ((isinstance(nk, str) and nk == "indicator") or type(nk) is IndicatorSimilarity
                or (type(nk) is PartialIndicator and 0.0 <= float(nk.mismatch) <= 1.0)):
            return None
        lam = float(self.lam)
        return lam * lam * sigma_table(self.sigma, X.vocab)[np.unique(X.edges)] ** 2


#: Bands of rows :meth:`PathKernel.weighted_gradient` cuts its pairs into (fixed, so that the
#: sum does not depend on the threads), and the fewest pairs worth a band of their own.
GRADIENT_BANDS = 8
_BAND_PAIRS = 4096


def _row_bands(n: int, pairs: int, triangle: bool = False) -> list[tuple[int, int]]:
    """``(i0, i1)`` bands of ``n`` rows holding ``pairs`` pairs, of about equal work (with
    ``triangle``, row ``i`` has ``n - i`` pairs)."""
    k = max(1, min(GRADIENT_BANDS, n, pairs // _BAND_PAIRS))
    if k == 1:
        return [(0, n)]
    if triangle:  # equal areas: (n - i0)² - (n - i1)² the same for every band
        cuts = np.round(n - np.sqrt(np.linspace(n * n, 0, k + 1))).astype(int)
    else:
        cuts = np.linspace(0, n, k + 1).round().astype(int)
    cuts[0], cuts[-1] = 0, n
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]
