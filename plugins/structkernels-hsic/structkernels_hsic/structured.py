"""Structured HSIC for non-iid data (Zhang, Gretton, Song and Smola, 2008).

The observations form an undirected graphical model; HSIC is computed between
the *maximal cliques* rather than between single observations.

- Sequences (Sec. 3.2): cliques ``(x_{t..t+tau}, y_{t..t+tau})`` for
  ``t = 1 .. m`` with ``m = T - tau``.  The clique kernel is, by default, the
  product over offsets ``k_tau(x_{s..s+tau}, x_{t..t+tau}) = prod_u k(x_{s+u}, x_{t+u})``
  (``clique_kernel="product"``); ``"sum"`` adds them instead, and ``"concat"``
  applies the kernel to the concatenated window vectors (vector data only).
- 2-D grids (Sec. 3.4): cliques are the 2 x 2 squares
  ``(x_ij, x_i+1,j, x_i,j+1, x_i+1,j+1)`` with the same clique kernels.
- TD-SEP (Sec. 3.3, Eq. 14): linear kernels and the cliques ``(x_t, y_t)``,
  ``(x_t, y_t+tau)``, giving ``tr HKHL + sum_tau tr HKHL_tau``.

Normalisation: ``"mean"`` (default) divides ``tr(H K H L)`` by ``m^2`` for
``m`` cliques, so ``tau = 0`` is exactly the biased HSIC of the pairs;
``"paper"`` divides by ``m`` as the paper's Eq. 9 writes ``(1/T) tr HKHL``.
The Gram matrix of the base kernel over the T (or R C) observations is
computed once; clique Grams are products (or sums) of its shifted blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from structkernels.utils import check_finite
from structkernels_hsic._kernels import input_tags, resolve_source, set_n_features
from structkernels_hsic.hsic import HSICTestResult, finite_statistic, hsic_biased, hsic_unbiased

__all__ = ["StructuredHSIC", "clique_gram", "grid_clique_gram", "td_sep"]

CLIQUE_KERNELS = ("product", "sum", "concat")


def clique_gram(K: np.ndarray, lag: int, clique_kernel: str = "product") -> np.ndarray:
    """Gram of the sequence windows of length ``lag + 1`` from the base Gram ``K`` (T x T).

    Examples
    --------
    >>> import numpy as np
    >>> K = np.arange(9.0).reshape(3, 3)
    >>> clique_gram(K, 1).tolist()   # [[K00*K11, K01*K12], [K10*K21, K11*K22]]
    [[0.0, 5.0], [21.0, 32.0]]
    """
    T = K.shape[0]
    m = T - lag
    if m < 1:
        raise ValueError(f"a sequence of length {T} (n_samples={T}) has no clique of lag {lag}")
    out = K[0:m, 0:m].copy()
    for u in range(1, lag + 1):
        block = K[u : u + m, u : u + m]
        if clique_kernel == "product":
            out *= block
        else:
            out += block
    return out


def grid_clique_gram(K: np.ndarray, shape: tuple[int, int], clique_kernel: str = "product") -> np.ndarray:
    """Gram of the 2 x 2 grid cliques from the base Gram over the R x C nodes (row-major)."""
    R, C = shape
    if R < 2 or C < 2:
        raise ValueError(f"a grid of shape {shape} has no 2 x 2 clique")
    idx = np.arange(R * C).reshape(R, C)
    out = None
    for a in (0, 1):
        for b in (0, 1):
            nodes = idx[a : a + R - 1, b : b + C - 1].ravel()
            block = K[np.ix_(nodes, nodes)]
            if out is None:
                out = block.copy()
            elif clique_kernel == "product":
                out *= block
            else:
                out += block
    return out


def _check_cliques(K: np.ndarray, L: np.ndarray) -> None:
    """Clique Grams are products of Gram values: they overflow before any Gram value does."""
    for G, side in ((K, "X"), (L, "Y")):
        check_finite(
            G, f"clique Gram of {side}", ("clique", "clique"),
            hint="products of kernel values overflow: normalise the kernel or scale the input down",
        )


def _windows(A: np.ndarray, lag: int) -> np.ndarray:
    m = len(A) - lag
    A2 = A.reshape(len(A), -1)
    return np.concatenate([A2[u : u + m] for u in range(lag + 1)], axis=1)


def _grid_windows(A: np.ndarray) -> np.ndarray:
    R, C = A.shape[:2]
    A3 = A.reshape(R, C, -1)
    parts = [A3[a : a + R - 1, b : b + C - 1].reshape((R - 1) * (C - 1), -1) for a in (0, 1) for b in (0, 1)]
    return np.concatenate(parts, axis=1)


def td_sep(x: Any, y: Any, lags: Any = 1, normalization: str = "mean") -> float:
    """TD-SEP contrast as structured HSIC with linear kernels (Zhang et al. 2008, Sec. 3.3).

    ``sum over tau in {0} + lags`` of ``tr(H K H L_tau) / m^2``, where
    ``K = x x^T`` over ``t = 1..m``, ``L_tau = y_{.+tau} y_{.+tau}^T`` and
    ``m = T - max(lags)``.  For scalar series each term is the squared lagged
    cross-covariance ``cov(x_t, y_{t+tau})^2`` (Eq. 14's "estimators of
    E[x_t y_t] and E[x_t y_t+tau] up to a multiplicative constant").

    Parameters
    ----------
    x, y : array of shape (T,) or (T, d)
    lags : int or sequence of int
        An int ``tau`` means the lags ``1..tau`` (TD-SEP's range), a sequence
        lists them; lag 0 is always included.
    normalization : {"mean", "paper"}
        ``1/m^2`` or the paper's ``1/m``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([1.0, -1.0, 2.0, 0.0]); y = np.array([0.0, 1.0, -1.0, 2.0])
    >>> round(td_sep(x, y, lags=[1]), 6)   # cov(x_t, y_t)^2 + cov(x_t, y_t+1)^2 over t = 1..3
    3.419753
    """
    X = np.asarray(x, dtype=np.float64)
    Y = np.asarray(y, dtype=np.float64)
    X = X.reshape(len(X), -1)
    Y = Y.reshape(len(Y), -1)
    if len(X) != len(Y):
        raise ValueError(f"x and y must have the same length, got {len(X)} and {len(Y)}")
    lag_list = list(range(1, int(lags) + 1)) if np.isscalar(lags) else [int(t) for t in lags]
    if any(t < 0 for t in lag_list):
        raise ValueError(f"lags must be >= 0, got {lag_list}")
    lag_list = sorted({0, *lag_list})
    m = len(X) - max(lag_list)
    if m < 2:
        raise ValueError(f"series of length {len(X)} too short for lag {max(lag_list)}")
    if normalization not in ("mean", "paper"):
        raise ValueError(f"normalization must be 'mean' or 'paper', got {normalization!r}")
    Xc = X[:m] - X[:m].mean(axis=0)
    total = 0.0
    for t in lag_list:
        Yt = Y[t : t + m]
        M = Xc.T @ (Yt - Yt.mean(axis=0))  # tr(HKHL) = ||Xc^T Yc||_F^2 for linear kernels
        total += float(np.einsum("ij,ij->", M, M))
    return total / (m**2 if normalization == "mean" else m)


class StructuredHSIC(BaseEstimator):
    """HSIC between structured (sequence or grid) observations.

    Parameters
    ----------
    kernel_x, kernel_y : str or Kernel, default "rbf"
        Base kernels on single observations (any registered kernel).
    structure : {"sequence", "grid"}, default "sequence"
        ``"sequence"``: ``X`` and ``Y`` hold ``T`` observations in time order.
        ``"grid"``: ``X`` and ``Y`` are arrays of shape (R, C) or (R, C, d).
    lag : int, default 1
        Clique order ``tau`` of sequences (0 gives iid HSIC).
    clique_kernel : {"product", "sum", "concat"}, default "product"
    normalization : {"mean", "paper"}, default "mean"
        ``tr(HKHL) / m^2`` (tau = 0 is the biased HSIC) or the paper's ``/ m``.
    estimator : {"biased", "unbiased"}, default "biased"
        Applied to the clique Grams (the unbiased U-statistic of Song et al. 2012;
        Zhang et al. Theorem 3 uses it for stationary mixing sequences).
    kernel_x_params, kernel_y_params : dict, optional

    Attributes
    ----------
    statistic_ : float
    n_cliques_ : int
    n_features_in_ : int
        Columns of the observations of a sequence ``X`` (1 for a 1-D sequence); not set for grids.
    n_kernel_evaluations_ : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 2, 400).astype(float)
    >>> y = np.logical_xor(x, np.roll(x, 1)).astype(float)   # y_t = x_t xor x_t-1
    >>> iid = StructuredHSIC(lag=0).fit(x[:, None], y[:, None]).statistic_
    >>> seq = StructuredHSIC(lag=1).fit(x[:, None], y[:, None]).statistic_
    >>> seq > 10 * iid
    True
    """

    def __init__(
        self,
        kernel_x: Any = "rbf",
        kernel_y: Any = "rbf",
        structure: str = "sequence",
        lag: int = 1,
        clique_kernel: str = "product",
        normalization: str = "mean",
        estimator: str = "biased",
        kernel_x_params: dict | None = None,
        kernel_y_params: dict | None = None,
    ):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.structure = structure
        self.lag = lag
        self.clique_kernel = clique_kernel
        self.normalization = normalization
        self.estimator = estimator
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params

    def _validate(self) -> None:
        if self.structure not in ("sequence", "grid"):
            raise ValueError(f"structure must be 'sequence' or 'grid', got {self.structure!r}")
        if not isinstance(self.lag, (int, np.integer)) or isinstance(self.lag, bool) or self.lag < 0:
            raise ValueError(f"lag must be an int >= 0, got {self.lag!r}")
        if self.clique_kernel not in CLIQUE_KERNELS:
            raise ValueError(f"clique_kernel must be one of {CLIQUE_KERNELS}, got {self.clique_kernel!r}")
        if self.normalization not in ("mean", "paper"):
            raise ValueError(f"normalization must be 'mean' or 'paper', got {self.normalization!r}")
        if self.estimator not in ("biased", "unbiased"):
            raise ValueError(f"estimator must be 'biased' or 'unbiased', got {self.estimator!r}")

    def _clique_grams(self, X: Any, Y: Any) -> tuple[np.ndarray, np.ndarray, int]:
        self._validate()
        evals = 0
        grams = []
        for spec, params, data, name in (
            (self.kernel_x, self.kernel_x_params, X, "X"),
            (self.kernel_y, self.kernel_y_params, Y, "Y"),
        ):
            if isinstance(spec, str) and spec == "precomputed":
                raise ValueError("StructuredHSIC needs kernels on observations, not 'precomputed'")
            if self.structure == "grid":
                A = np.asarray(data)
                if A.ndim < 2:
                    raise ValueError(f"with structure='grid', {name} must have shape (R, C) or (R, C, d), got {A.shape}")
                shape = A.shape[:2]
                if self.clique_kernel == "concat":
                    src = resolve_source(spec, params, _grid_windows(A.astype(np.float64)), name=name)
                    G = src.full()
                else:
                    src = resolve_source(spec, params, A.reshape(shape[0] * shape[1], -1), name=name)
                    G = grid_clique_gram(src.full(), shape, self.clique_kernel)
                grams.append((G, shape))
                if name == "X":
                    set_n_features(self, None)  # a grid, not samples by features
            else:
                if self.clique_kernel == "concat":
                    A = np.asarray(data, dtype=np.float64)
                    if len(A) <= self.lag:
                        raise ValueError(f"{name} has {len(A)} observations, too few for lag {self.lag}")
                    src = resolve_source(spec, params, _windows(A, self.lag), name=name)
                    G = src.full()
                else:
                    src = resolve_source(spec, params, data, name=name)
                    G = clique_gram(src.full(), self.lag, self.clique_kernel)
                grams.append((G, (src.n + (self.lag if self.clique_kernel == "concat" else 0),)))
                if name == "X":
                    # the observations' columns (a 1-D sequence is one feature)
                    set_n_features(self, A.reshape(len(A), -1) if self.clique_kernel == "concat"
                                   else (None if src.precomputed else src.X))
            evals += src.n_evaluations
        (K, sx), (L, sy) = grams
        if sx != sy:
            raise ValueError(f"X and Y must have the same {self.structure} shape, got {sx} and {sy}")
        return K, L, evals

    def _stat(self, K: np.ndarray, L: np.ndarray) -> float:
        m = K.shape[0]
        if self.estimator == "unbiased":
            s = hsic_unbiased(K, L)
        else:
            s = hsic_biased(K, L)
        s = float(s * m) if self.normalization == "paper" else float(s)
        return finite_statistic(s, "structured HSIC statistic")

    def __sklearn_tags__(self):
        tags = input_tags(super().__sklearn_tags__(), self.kernel_x, self.kernel_x_params)
        if self.structure == "grid":  # one grid of observations, not samples by features
            tags.input_tags.two_d_array = False
        return tags

    def fit(self, X: Any, Y: Any) -> StructuredHSIC:
        """Estimate structured HSIC between the sequences (or grids) ``X`` and ``Y``."""
        K, L, evals = self._clique_grams(X, Y)
        _check_cliques(K, L)
        self.statistic_ = self._stat(K, L)
        self.n_cliques_ = int(K.shape[0])
        self.n_kernel_evaluations_ = int(evals)
        return self

    def test(
        self, X: Any, Y: Any, n_permutations: int = 500, random_state: Any = None
    ) -> HSICTestResult:
        """Shift test: the statistic against circular shifts of ``Y``'s cliques.

        Shifting (rather than permuting) keeps each sequence's own dependence,
        which a permutation would destroy; shifts closer than ``lag + 1`` are
        excluded so that no shifted clique overlaps its original.  For grids the
        shift is a 2-D circular roll of the clique grid.  ``p = (1 + #{null >=
        stat}) / (1 + n_permutations)``.
        """
        if not isinstance(n_permutations, (int, np.integer)) or n_permutations < 1:
            raise ValueError(f"n_permutations must be a positive int, got {n_permutations!r}")
        K, L, evals = self._clique_grams(X, Y)
        _check_cliques(K, L)
        stat = self._stat(K, L)
        m = K.shape[0]
        rng = check_random_state(random_state)
        gap = self.lag + 1 if self.structure == "sequence" else 2
        if m <= 2 * gap:
            raise ValueError(f"{m} cliques are too few for a shift test")
        null = np.empty(n_permutations)
        if self.structure == "sequence":
            for b in range(n_permutations):
                s = int(rng.randint(gap, m - gap + 1))
                p = np.roll(np.arange(m), s)
                null[b] = self._stat(K, L[np.ix_(p, p)])
        else:
            shape = np.asarray(X).shape[:2]
            grid = np.arange(m).reshape(shape[0] - 1, shape[1] - 1)
            for b in range(n_permutations):
                while True:
                    s0 = int(rng.randint(0, grid.shape[0]))
                    s1 = int(rng.randint(0, grid.shape[1]))
                    if min(s0, grid.shape[0] - s0) >= gap or min(s1, grid.shape[1] - s1) >= gap:
                        break
                p = np.roll(grid, (s0, s1), axis=(0, 1)).ravel()
                null[b] = self._stat(K, L[np.ix_(p, p)])
        self.statistic_ = stat
        self.n_cliques_ = m
        self.n_kernel_evaluations_ = int(evals)
        pv = float((1 + np.count_nonzero(null >= stat)) / (1 + n_permutations))
        return HSICTestResult(stat, pv, "shift", m, null_samples=null)

