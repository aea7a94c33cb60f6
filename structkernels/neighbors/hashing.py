"""Kernel locality-sensitive hashing: random k-NN hashing and kernelised LSH.

Both families turn a structure into ``H`` bits using only kernel values against a reference
set of about ``sqrt(N)`` structures sampled from the data, so hashing ``N`` structures costs
about ``N ** 1.5`` kernel evaluations (Garg et al. 2018, Sec. 4.2), each counted in
``n_evaluations_``.  A code is a hash bucket.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state

from structkernels.engine.gram import gram
from structkernels.kernels.base import Kernel
from structkernels.kernels.names import as_kernel, takes_arrays
from structkernels.structures import is_encoded, take
from structkernels.utils import N_JOBS, Interval, ValidatedParamsMixin

__all__ = [
    "RandomKNNHash", "KernelLSH", "codes_from_bits", "auto_n_bits", "MAX_BITS", "check_n_features",
]

#: At most this many bits per code (a code is packed in an int64).
MAX_BITS = 62


def auto_n_bits(n: int) -> int:
    """Bits giving about ``sqrt(n)`` buckets of about ``sqrt(n)`` structures: ``ceil(log2(n) / 2)``."""
    return max(1, math.ceil(math.log2(max(n, 2)) / 2))


def codes_from_bits(bits: np.ndarray) -> np.ndarray:
    """Integer bucket codes ``sum_j bits[:, j] << j`` of a boolean bit matrix."""
    bits = np.asarray(bits, dtype=bool)
    if bits.ndim != 2 or bits.shape[1] > MAX_BITS:
        raise ValueError(f"bits must be a 2-D array with at most {MAX_BITS} columns")
    weights = np.left_shift(np.int64(1), np.arange(bits.shape[1], dtype=np.int64))
    return bits.astype(np.int64) @ weights


def as_structures(kernel: Kernel, X: Any, *, encode: bool = False) -> Sequence:
    """``X`` checked by the kernel, kept as a list/array that can be indexed by position; with
    ``encode`` the kernel's checked form (an encoded ``PathList``/``TreeList`` for the compiled
    kernels, whose sub-lists cut with :func:`take` are not encoded again)."""
    if isinstance(X, (str, bytes)):
        raise TypeError("expected a sequence of structures, got a bare string")
    if sp.issparse(X):
        raise TypeError(
            f"{type(kernel).__name__}: sparse input is not supported; densify it or reduce it "
            "(e.g. TruncatedSVD) first"
        )
    kernel.validate_params()
    if encode:
        return kernel.check_input(X if is_encoded(X) or isinstance(X, np.ndarray) else list(X))
    if not isinstance(X, np.ndarray):
        X = list(X)
    kernel.check_input(X)  # raises early, naming the bad record
    return X


def set_n_features(est: Any, X: Any) -> None:
    """``n_features_in_`` for 2-D array input (scikit-learn's convention); none for structures."""
    if isinstance(X, np.ndarray) and X.ndim == 2:
        est.n_features_in_ = int(X.shape[1])
    elif hasattr(est, "n_features_in_"):
        del est.n_features_in_


def check_n_features(est: Any, X: Any) -> None:
    """Refuse array input whose width differs from the fitted ``n_features_in_``."""
    expected = getattr(est, "n_features_in_", None)
    if expected is not None and isinstance(X, np.ndarray) and X.shape[-1:] != (expected,):
        got = X.shape[1] if X.ndim == 2 else X.shape
        raise ValueError(
            f"X has {got} features, but {type(est).__name__} is expecting {expected} features "
            "as input"
        )


def _at_least(low: int) -> list[Any]:
    return [None, Interval(numbers.Integral, low, None)]


class _KernelHash(ValidatedParamsMixin, BaseEstimator):
    """Shared machinery: parameter constraints, kernel resolution, reference sampling, counting."""

    _param_constraints: dict[str, list[Any]] = {
        "n_bits": [None, Interval(numbers.Integral, 1, MAX_BITS)],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS,
        "kernel_params": [None, dict],
    }

    def _fit_sample(self, X: Any, param: str, m: int | None) -> tuple[Kernel, Sequence, int, int]:
        """Checks of :meth:`fit`: ``(kernel, X encoded, n, sample size)``, the size ``m`` of
        parameter ``param`` (default ``max(2, ceil(sqrt(n)))``, at most ``n``)."""
        self._validate_params()
        kernel = as_kernel(self.kernel, **(self.kernel_params or {}))
        X = as_structures(kernel, X, encode=True)
        n = len(X)
        name = type(self).__name__
        if n < 2:
            raise ValueError(f"{name} needs at least 2 structures to fit, got n_samples={n}")
        set_n_features(self, X)
        m = m if m is not None else max(2, math.ceil(math.sqrt(n)))
        if m > n:
            raise ValueError(f"{name}.{param}={m} exceeds the {n} structures given")
        return kernel, X, n, m

    def _set_reference(self, kernel: Kernel, X: Sequence, n: int, m: int,
                       rng: np.random.RandomState) -> None:
        """Draw the ``m`` reference structures of ``X`` (the first draw of ``rng``)."""
        self.kernel_ = kernel
        self.reference_indices_ = np.sort(rng.choice(n, size=m, replace=False)).astype(np.int64)
        self.reference_ = take(X, self.reference_indices_)
        self.n_evaluations_ = 0

    def bits_from_similarities(self, S: np.ndarray) -> np.ndarray:
        """Bits from kernel values ``S`` (n, M) against the reference set."""
        return self._signed(self._checked_similarities(S)) > 0

    def margins_from_similarities(self, S: np.ndarray) -> np.ndarray:
        """How firmly each bit is set, (n, n_bits): ``|max_{H_j1} k - max_{H_j2} k|`` (random
        k-NN hashing), the distance ``|sum_i w_i k_c(x, x_i)|`` to its hyperplane (KLSH).

        Multi-probe search (``KernelKNNClassifier(n_probes=...)``) also visits the buckets
        across the least firm bits.
        """
        return np.abs(self._signed(self._checked_similarities(S)))

    def _codes(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        bits = self.bits_from_similarities(S)
        return codes_from_bits(bits), bits

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # structures (paths, trees) are not 2-D float arrays: sklearn's checks skip them
        tags.input_tags.two_d_array = takes_arrays(self.kernel, self.kernel_params)
        return tags

    def _check_fitted(self) -> None:
        if not hasattr(self, "reference_indices_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X) before hash(X)"
            )

    def _similarities(self, X: Sequence) -> np.ndarray:
        """Kernel values of ``X`` against the reference set (counted)."""
        S, info = gram(
            self.kernel_, X, self.reference_, n_jobs=self.n_jobs, return_info=True
        )
        self.n_evaluations_ += info.n_evaluations
        return S

    def _checked_similarities(self, S: Any) -> np.ndarray:
        self._check_fitted()
        S = np.asarray(S, dtype=np.float64)
        if S.ndim != 2 or S.shape[1] != len(self.reference_indices_):
            raise ValueError(
                f"expected similarities of shape (n, {len(self.reference_indices_)}), got {S.shape}"
            )
        return S

    def hash(self, X: Any, *, return_bits: bool = False):
        """Bucket codes of ``X`` (``int64``), and the bit matrix if ``return_bits``; costs
        ``len(X) * n_reference`` kernel evaluations, added to ``n_evaluations_``."""
        self._check_fitted()
        X = as_structures(self.kernel_, X, encode=True)
        check_n_features(self, X)
        codes, bits = self._codes(self._similarities(X))
        return (codes, bits) if return_bits else codes

    def fit_hash(self, X: Any, *, return_similarities: bool = False):
        """Fit on ``X`` and hash it; optionally also return ``k(X, reference)`` (free with the
        codes: the k-NN graph uses them as neighbour candidates)."""
        X = as_structures(as_kernel(self.kernel, **(self.kernel_params or {})), X, encode=True)
        self.fit(X)
        S = self._similarities(X)
        codes, bits = self._codes(S)
        return (codes, bits, S) if return_similarities else codes


class RandomKNNHash(_KernelHash):
    """Random k-NN hashing (Garg et al. 2018, Sec. 4.2, "Our Random kNN Hashing Function").

    A reference set ``A`` of ``M`` structures is drawn from the data; bit ``j`` draws two
    disjoint random subsets ``H_j1``, ``H_j2`` of ``A`` (``s`` structures each) and is set when
    the nearest neighbour of ``x`` among ``H_j1 ∪ H_j2`` lies in ``H_j1`` (a tie gives 0).
    Hashing a structure costs ``M`` kernel evaluations, whatever ``H``.

    Parameters
    ----------
    kernel : str or Kernel
        A registered kernel name or an instance.
    n_bits : int, optional
        Bits ``H`` per code; default ``ceil(log2(N) / 2)`` at fit (about ``sqrt(N)`` buckets).
    n_reference : int, optional
        Size ``M`` of the reference set; default ``ceil(sqrt(N))`` (at least 2).
    random_state : int, RandomState or None
    n_jobs : int or None, default None
        Worker processes of the Gram engine.
    subset_size : int, optional
        Size ``s`` of each of ``H_j1``, ``H_j2``; default ``max(1, M // 4)``; smaller subsets
        make bits more independent.
    kernel_params : dict, optional
        Parameters building ``kernel`` when it is a name.

    Attributes
    ----------
    kernel_ : Kernel
    reference_indices_ : ndarray of int, shape (M,)
        Positions in the fitted ``X`` of the reference structures.
    reference_ : list or ndarray
        The reference structures.
    subsets_ : ndarray of int, shape (n_bits, 2, s)
        Positions in ``reference_`` of ``H_j1`` and ``H_j2``.
    n_bits_ : int
    n_evaluations_ : int
        Kernel evaluations made so far (fit and every hash call).

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import RandomKNNHash
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> h = RandomKNNHash("rbf", n_bits=4, random_state=0).fit(X)
    >>> codes = h.hash(X)
    >>> codes.shape, int(codes.max()) < 16, h.n_evaluations_
    ((100,), True, 1000)
    """

    def __init__(self, kernel: str | Kernel = "path", n_bits: int | None = None,
                 n_reference: int | None = None, random_state: Any = None,
                 n_jobs: int | None = None, subset_size: int | None = None,
                 kernel_params: dict | None = None):
        self.kernel = kernel
        self.n_bits = n_bits
        self.n_reference = n_reference
        self.subset_size = subset_size
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.kernel_params = kernel_params

    _param_constraints = {
        **_KernelHash._param_constraints,
        "n_reference": _at_least(2),
        "subset_size": _at_least(1),
    }

    def fit(self, X: Any, y: Any = None) -> RandomKNNHash:
        """Draw the reference set and the bit subsets from ``X`` (no kernel evaluation)."""
        kernel, X, n, m = self._fit_sample(X, "n_reference", self.n_reference)
        s = self.subset_size if self.subset_size is not None else max(1, m // 4)
        if 2 * s > m:
            raise ValueError(
                f"RandomKNNHash.subset_size={s}: two disjoint subsets need 2 * {s} <= "
                f"n_reference={m}"
            )
        n_bits = self.n_bits if self.n_bits is not None else auto_n_bits(n)
        rng = check_random_state(self.random_state)
        self._set_reference(kernel, X, n, m, rng)
        # H_j1 and H_j2 of bit j: the first 2 s of a permutation of the reference set
        self.subsets_ = np.stack([rng.permutation(m)[: 2 * s].reshape(2, s)
                                  for _ in range(n_bits)]).astype(np.int64)
        self.n_bits_ = int(n_bits)
        return self

    def _signed(self, S: np.ndarray) -> np.ndarray:
        # max over H_j1 minus max over H_j2 for every bit at once: (n, n_bits, s) gathers
        return S[:, self.subsets_[:, 0, :]].max(axis=2) - S[:, self.subsets_[:, 1, :]].max(axis=2)


class KernelLSH(_KernelHash):
    """Kernelised locality-sensitive hashing (Kulis & Grauman, TPAMI 2012).

    ``p`` structures are sampled and their kernel matrix centred, ``K_c = (I - ee^T/p) K
    (I - ee^T/p)``; for bit ``j`` a random subset ``S_j`` of ``t`` points gives ``w_j =
    K_c^{-1/2} (e_S / t - e / p)`` (eigenvalues below ``rcond * max`` dropped: the numerical
    instability the nonstationary kernels paper mentions), and the bit is
    ``sum_i w_j[i] k_c(x, x_i) > 0``.  Hashing costs ``p`` kernel evaluations, fitting
    ``p (p + 1) / 2``.

    Parameters
    ----------
    kernel, n_bits, random_state, n_jobs, kernel_params
        As in :class:`RandomKNNHash`.
    n_sample : int, optional
        ``p``; default ``ceil(sqrt(N))`` (at least 2).
    n_per_bit : int, optional
        ``t``; default ``max(1, p // 4)``; must be < ``p``.
    rcond : float, default 1e-8
        Relative eigenvalue cut-off of ``K_c^{-1/2}``.

    Attributes
    ----------
    kernel_, reference_indices_, reference_, n_bits_, n_evaluations_
        As in :class:`RandomKNNHash`, the reference set of ``p`` structures.
    subsets_ : ndarray of int, shape (n_bits, t)
        Positions in ``reference_`` of the ``t`` points ``S_j`` of each bit.
    weights_ : ndarray, shape (p, n_bits)
        The ``w_j`` as columns.
    rank_ : int
        Eigenvalues of ``K_c`` kept in ``K_c^{-1/2}``.

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import KernelLSH
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> h = KernelLSH("rbf", n_bits=4, random_state=0).fit(X)
    >>> h.hash(X).shape, h.n_evaluations_
    ((100,), 1055)
    """

    def __init__(self, kernel: str | Kernel = "path", n_bits: int | None = None,
                 n_sample: int | None = None, n_per_bit: int | None = None,
                 random_state: Any = None, n_jobs: int | None = None, rcond: float = 1e-8,
                 kernel_params: dict | None = None):
        self.kernel = kernel
        self.n_bits = n_bits
        self.n_sample = n_sample
        self.n_per_bit = n_per_bit
        self.rcond = rcond
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.kernel_params = kernel_params

    _param_constraints = {
        **_KernelHash._param_constraints,
        "n_sample": _at_least(2),
        "n_per_bit": _at_least(1),
        "rcond": [Interval(numbers.Real, 0, 1, closed="left")],
    }

    def fit(self, X: Any, y: Any = None) -> KernelLSH:
        """Sample ``p`` structures, centre their kernel matrix and draw the hyperplanes."""
        kernel, X, n, p = self._fit_sample(X, "n_sample", self.n_sample)
        t = self.n_per_bit if self.n_per_bit is not None else max(1, p // 4)
        if t >= p:
            raise ValueError(f"KernelLSH.n_per_bit={t} must be smaller than n_sample={p}")
        n_bits = self.n_bits if self.n_bits is not None else auto_n_bits(n)
        rng = check_random_state(self.random_state)
        self._set_reference(kernel, X, n, p, rng)
        K, info = gram(kernel, self.reference_, n_jobs=self.n_jobs, return_info=True)
        self.n_evaluations_ += info.n_evaluations
        K = 0.5 * (K + K.T)
        self.col_means_ = K.mean(axis=0)
        self.grand_mean_ = float(K.mean())
        Kc = K - self.col_means_[None, :] - self.col_means_[:, None] + self.grand_mean_
        vals, vecs = np.linalg.eigh(Kc)
        top = vals.max() if vals.size else 0.0
        keep = vals > max(self.rcond * top, 0.0) if top > 0 else np.zeros_like(vals, dtype=bool)
        inv_sqrt = (vecs[:, keep] / np.sqrt(vals[keep])) @ vecs[:, keep].T
        W = np.empty((p, n_bits), dtype=np.float64)
        subsets = np.empty((n_bits, t), dtype=np.int64)
        for j in range(n_bits):
            subsets[j] = np.sort(rng.choice(p, size=t, replace=False))
            e = np.full(p, -1.0 / p)
            e[subsets[j]] += 1.0 / t
            W[:, j] = inv_sqrt @ e
        self.subsets_ = subsets
        self.weights_ = W
        self.rank_ = int(keep.sum())
        self.n_bits_ = int(n_bits)
        return self

    def _signed(self, S: np.ndarray) -> np.ndarray:
        # the side of each bit's hyperplane
        Sc = S - S.mean(axis=1, keepdims=True) - self.col_means_[None, :] + self.grand_mean_
        return Sc @ self.weights_
