"""Pointwise HSIC (PHSIC), a kernelised co-occurrence score (Yokoi et al., EMNLP 2018).

PHSIC(x, y) is the contribution of the pair (x, y) to HSIC, as PMI is the
contribution of a pair to mutual information (Eq. 14-15), so the mean of
PHSIC over the training pairs is HSIC (MI : PMI = HSIC : PHSIC).  Estimators:

- ``"feature"`` (Eq. 18-21), linear and cosine kernels:
  ``(phi(x) - phi_bar)^T C_XY (psi(y) - psi_bar)`` with ``phi(x) = x`` (linear)
  or ``x / ||x||`` (cosine) and ``C_XY = 1/n sum_i phi(x_i) psi(y_i)^T - phi_bar psi_bar^T``;
  fit O(n d^2), score O(d^2) per pair.
- ``"icd"`` (Eq. 30-34), any kernel: the same form on incomplete Cholesky
  factors, ``(a - a_bar)^T C_ICD (b - b_bar)`` with ``C_ICD = 1/n (HA)^T B``;
  new points are projected "from halfway" (Eq. 34).
- ``"naive"`` (Eq. 27), any kernel, O(n) kernel values per scored point:
  ``(k - k_bar)^T (H / n) (l - l_bar)`` with ``k = (k(x, x_i))_i`` and
  ``k_bar = K 1 / n``; for checking.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from structkernels.kernels.vector import CosineKernel, LinearKernel
from structkernels_hsic._kernels import (
    _check_vectors,
    as_column,
    check_dtype,
    resolve_kernel,
    resolve_source,
)
from structkernels_hsic.icd import IncompleteCholesky, centred_cross, fit_pair, resolve_ranks

__all__ = ["PHSIC"]

ESTIMATORS = ("feature", "icd", "naive")


def _feature_map(kernel: Any, X: Any, dtype) -> tuple[np.ndarray, np.ndarray | None]:
    """Explicit feature map of Eq. 19 as ``(A, w)``: ``phi(x_i) = w_i A_i``.

    ``A`` is the validated input itself (no copy when it is already ``dtype``);
    ``w`` is ``1 / ||x_i||`` for the cosine kernel (1 for a zero row, which
    stays 0) and None for the linear kernel.  The row scales are folded into the
    products, so no normalised copy of the data is made.
    """
    if not isinstance(kernel, (CosineKernel, LinearKernel)):
        raise ValueError(
            f"estimator='feature' needs the linear or cosine kernel (explicit feature map, Eq. 19), "
            f"got {type(kernel).__name__}; use estimator='icd' or 'naive'"
        )
    A = _check_vectors(kernel, as_column(kernel, X), dtype)
    if A.dtype != dtype:
        A = A.astype(dtype)
    if isinstance(kernel, CosineKernel):
        norms = np.sqrt(np.einsum("ij,ij->i", A, A))
        norms[norms == 0] = 1.0
        return A, (1.0 / norms).astype(dtype, copy=False)
    return A, None


def _rowwise_bilinear(
    U: np.ndarray,
    C: np.ndarray,
    V: np.ndarray,
    mu: np.ndarray,
    nu: np.ndarray,
    wu: np.ndarray | None = None,
    wv: np.ndarray | None = None,
    block: int = 32768,
) -> np.ndarray:
    """``(wu_i u_i - mu)^T C (wv_i v_i - nu)`` for every row i: one GEMM per block, no per-pair loop.

    Expanded as ``wu wv u^T C v - wu u^T (C nu) - wv (mu^T C) v + mu^T C nu`` so
    that no centred or scaled copy of ``U`` or ``V`` is made (row scales None: 1).
    """
    dt = U.dtype
    C = np.asarray(C, dtype=dt)
    c_nu = C @ nu.astype(dt)
    mu_c = mu.astype(dt) @ C
    const = float(mu_c @ nu.astype(dt))
    out = np.empty(len(U), dtype=np.float64)
    for s in range(0, len(U), block):
        e = min(s + block, len(U))
        Ub, Vb = U[s:e], V[s:e]
        quad = np.einsum("ij,ij->i", Ub @ C, Vb)
        lin_u = Ub @ c_nu
        lin_v = Vb @ mu_c
        if wu is not None:
            quad *= wu[s:e]
            lin_u *= wu[s:e]
        if wv is not None:
            quad *= wv[s:e]
            lin_v *= wv[s:e]
        out[s:e] = quad - lin_u - lin_v + const
    return out


class PHSIC(BaseEstimator):
    """Pointwise HSIC: how strongly each pair (x, y) co-occurs given training pairs.

    Parameters
    ----------
    kernel_x, kernel_y : str, Kernel or "precomputed", default "cosine"
        Registered kernel name, instance or ``"precomputed"``: then ``fit``
        takes the training Gram matrices and ``score`` the cross Grams of
        shape (n_new, n_train).
    estimator : {"feature", "icd", "naive"}, default "feature"
    max_rank : int, None or (int, int), default None
        Largest incomplete Cholesky rank per side (``"icd"``; None: what ``tol``
        needs).  The paper uses a fixed rank 100: ``max_rank=100, tol=0``.
    tol : float, default 1e-3
        Incomplete Cholesky stop: ``trace(K - A A^T) <= tol trace(K)`` per side;
        stopped earlier by ``max_rank``, a ``ConvergenceWarning`` states the
        residual reached (``tol=0``: exactly ``max_rank``, no warning).
    kernel_x_params, kernel_y_params : dict, optional
        Parameters of kernels given by name (``{"sigma": "median"}`` allowed).
    dtype : np.float64 or np.float32, default np.float64
        Arithmetic of the feature and ICD estimators, end to end: float32 input
        is validated and used as it is (no float64 copy); scores are returned
        in float64.
    n_jobs : int, default 1
        ``"icd"``: decompose the two sides in two threads when not 1.
    rank : int, optional
        Deprecated alias of ``max_rank``.

    Attributes
    ----------
    n_samples_ : int
    cov_ : ndarray
        ``C_XY`` (feature) or ``C_ICD`` (icd).
    mean_x_, mean_y_ : ndarray
        ``phi_bar``, ``psi_bar`` (feature) or ``a_bar``, ``b_bar`` (icd).
    icd_x_, icd_y_ : IncompleteCholesky
        (``"icd"``.)
    rank_, residual_ : (int, int), (float, float)
        Ranks and relative residual traces of the two factors (``"icd"``).
    n_kernel_evaluations_ : int
        Kernel evaluations of ``fit`` (icd, naive) plus those of later ``score`` calls.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 5)); Y = X @ rng.normal(size=(5, 4))
    >>> model = PHSIC("linear", "linear").fit(X, Y)
    >>> s = model.score(X, Y)              # one score per training pair
    >>> s.shape
    (500,)
    >>> bool(model.score(X, Y[::-1]).mean() < s.mean())   # shuffled pairs score lower
    True
    """

    def __init__(
        self,
        kernel_x: Any = "cosine",
        kernel_y: Any = "cosine",
        estimator: str = "feature",
        max_rank: Any = None,
        tol: float = 1e-3,
        kernel_x_params: dict | None = None,
        kernel_y_params: dict | None = None,
        dtype: Any = np.float64,
        n_jobs: int = 1,
        rank: Any = "deprecated",
    ):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.estimator = estimator
        self.max_rank = max_rank
        self.tol = tol
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.rank = rank

    def fit(self, X: Any, Y: Any) -> PHSIC:
        """Learn from the training pairs ``(X[i], Y[i])``."""
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        dt = check_dtype(self.dtype)
        if self.estimator == "feature":
            kx = resolve_kernel(self.kernel_x, self.kernel_x_params, X)
            ky = resolve_kernel(self.kernel_y, self.kernel_y_params, Y)
            if kx is None or ky is None:
                raise ValueError("estimator='feature' cannot take precomputed Gram matrices")
            kx.validate_params()
            ky.validate_params()
            Phi, wx = _feature_map(kx, X, dt)
            Psi, wy = _feature_map(ky, Y, dt)
            self._check_pairs(len(Phi), len(Psi))
            n = len(Phi)
            self.kernel_x_, self.kernel_y_ = kx, ky
            self.mean_x_ = Phi.mean(axis=0) if wx is None else (wx @ Phi) / dt(n)
            self.mean_y_ = Psi.mean(axis=0) if wy is None else (wy @ Psi) / dt(n)
            # C = 1/n sum phi psi^T - phi_bar psi_bar^T  (Eq. 21): one GEMM, the row
            # scales w_i v_i of the cosine kernel applied to one side only
            w = wx if wy is None else (wy if wx is None else wx * wy)
            C = Phi.T @ (Psi if w is None else Psi * w[:, None])
            C /= n
            C -= np.outer(self.mean_x_, self.mean_y_).astype(C.dtype)
            self.cov_ = C
            self.n_kernel_evaluations_ = 0
        elif self.estimator == "icd":
            rx, ry = resolve_ranks(self.rank, self.max_rank, self.tol)
            sx = resolve_source(self.kernel_x, self.kernel_x_params, X, name="X", dtype=dt)
            sy = resolve_source(self.kernel_y, self.kernel_y_params, Y, name="Y", dtype=dt)
            self._check_pairs(sx.n, sy.n)
            n = sx.n
            self.icd_x_, self.icd_y_ = fit_pair(
                self.n_jobs,
                lambda: IncompleteCholesky(max_rank=rx, tol=self.tol)._fit_source(sx, name="X"),
                lambda: IncompleteCholesky(max_rank=ry, tol=self.tol)._fit_source(sy, name="Y"),
            )
            A, B = self.icd_x_.factor_, self.icd_y_.factor_
            self.rank_ = (self.icd_x_.rank_, self.icd_y_.rank_)
            self.residual_ = (self.icd_x_.residual_, self.icd_y_.residual_)
            self.mean_x_ = A.mean(axis=0)
            self.mean_y_ = B.mean(axis=0)
            self.cov_ = centred_cross(A, self.mean_x_, B) / dt(n)  # Eq. 32: 1/n (HA)^T B
            self._train_x = A
            self._train_y = B
            self.n_kernel_evaluations_ = self.icd_x_.n_kernel_evaluations_ + self.icd_y_.n_kernel_evaluations_
        else:
            sx = resolve_source(self.kernel_x, self.kernel_x_params, X, name="X")
            sy = resolve_source(self.kernel_y, self.kernel_y_params, Y, name="Y")
            self._check_pairs(sx.n, sy.n)
            n = sx.n
            K, L = sx.full(), sy.full()
            self.source_x_, self.source_y_ = sx, sy
            self.mean_x_ = K.mean(axis=1)  # k_bar = K 1 / n
            self.mean_y_ = L.mean(axis=1)
            self.n_kernel_evaluations_ = sx.n_evaluations + sy.n_evaluations
        self.n_samples_ = n
        return self

    @staticmethod
    def _check_pairs(nx: int, ny: int) -> None:
        if nx != ny:
            raise ValueError(f"X and Y must hold the same number of pairs, got {nx} and {ny}")
        if nx < 2:
            raise ValueError(f"PHSIC needs at least 2 training pairs, got {nx}")

    def score(self, X: Any, Y: Any) -> np.ndarray:
        """PHSIC of each pair ``(X[i], Y[i])``.

        Parameters
        ----------
        X, Y : paired structures (same length), or cross Gram matrices of shape
            (n_new, n_train) with ``"precomputed"`` kernels.

        Returns
        -------
        ndarray of float64, shape (n_pairs,)
        """
        if not hasattr(self, "n_samples_"):
            raise ValueError("PHSIC is not fitted; call fit(X, Y) first")
        if self.estimator == "feature":
            dt = check_dtype(self.dtype)
            U, wu = _feature_map(self.kernel_x_, X, dt)
            V, wv = _feature_map(self.kernel_y_, Y, dt)
            self._check_same(len(U), len(V))
            return _rowwise_bilinear(U, self.cov_, V, self.mean_x_, self.mean_y_, wu, wv)
        if self.estimator == "icd":
            A = self.icd_x_.transform(X)
            B = self.icd_y_.transform(Y)
            self._check_same(len(A), len(B))
            self.n_kernel_evaluations_ = self.icd_x_.n_kernel_evaluations_ + self.icd_y_.n_kernel_evaluations_
            return _rowwise_bilinear(A, self.cov_, B, self.mean_x_, self.mean_y_)
        Kn = self.source_x_.cross(X)
        Ln = self.source_y_.cross(Y)
        self._check_same(len(Kn), len(Ln))
        self.n_kernel_evaluations_ = self.source_x_.n_evaluations + self.source_y_.n_evaluations
        n = self.n_samples_
        Kc = Kn - self.mean_x_[None, :]  # k - k_bar
        Lc = Ln - self.mean_y_[None, :]
        Kc -= Kc.mean(axis=1, keepdims=True)  # (k - k_bar)^T H
        return np.einsum("ij,ij->i", Kc, Lc) / n  # Eq. 27

    def score_training(self) -> np.ndarray:
        """PHSIC of every training pair without re-reading the data (icd estimator)."""
        if self.estimator != "icd" or not hasattr(self, "_train_x"):
            raise ValueError("score_training is available for a fitted estimator='icd'")
        return _rowwise_bilinear(self._train_x, self.cov_, self._train_y, self.mean_x_, self.mean_y_)

    @staticmethod
    def _check_same(a: int, b: int) -> None:
        if a != b:
            raise ValueError(f"X and Y must hold the same number of pairs to score, got {a} and {b}")
