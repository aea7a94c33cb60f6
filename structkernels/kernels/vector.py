"""Kernels on real vectors (2-D float arrays): linear, cosine, RBF, Laplacian, polynomial.

Every block is one call of :mod:`sklearn.metrics.pairwise`; the RBF kernel is the PHSIC
paper's (Yokoi et al., 2018) ``exp(-||x - y||^2 / (2 b^2))``, ``b`` the ``bandwidth``.

Examples
--------
>>> import numpy as np
>>> from sklearn.svm import SVC
>>> from structkernels import kernel
>>> X = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [1.1, 1.0]])
>>> SVC(kernel=kernel("rbf", bandwidth=0.5)).fit(X, [0, 0, 1, 1]).predict([[1.0, 0.9]]).tolist()
[1]
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import pairwise
from sklearn.utils import check_array

from structkernels.engine.checks import check_kernel_values
from structkernels.kernels.base import Kernel
from structkernels.utils import StructkernelsWarning

_FLOAT64 = np.dtype(np.float64)

__all__ = ["LinearKernel", "CosineKernel", "RBFKernel", "LaplacianKernel", "PolynomialKernel",
           "BandwidthRenamedWarning"]


class VectorKernel(Kernel):
    """Shared input handling of the vector kernels."""

    #: blocks this size keep BLAS busy; the engine uses it as its default
    preferred_block_size = 2048

    overflow_hint = (
        "the vectors' products overflow float64 (beyond 1.8e308): scale the input down "
        "(e.g. sklearn's StandardScaler or MaxAbsScaler)"
    )

    def check_input(self, X: Any) -> np.ndarray:
        if isinstance(X, (str, bytes)):
            raise TypeError(f"{type(self).__name__} expects a 2-D float array, got a string")
        if _is_bool_data(X):
            raise TypeError(
                f"{type(self).__name__} expects a 2-D float array, got booleans; convert "
                "them explicitly (e.g. X.astype(float)) if 0/1 vectors are meant")
        if sp.issparse(X):
            raise TypeError(
                f"{type(self).__name__}: sparse input is not supported; densify it or reduce it "
                "(e.g. TruncatedSVD) first")
        if isinstance(X, np.ndarray) and X.ndim == 1 and X.size == 0:
            X = X.reshape(0, 0)
        try:
            A = check_array(
                X, dtype=np.float64, ensure_all_finite=False, ensure_min_samples=0,
                input_name=type(self).__name__,
            )
        except (TypeError, ValueError) as exc:
            raise type(exc)(
                f"{type(self).__name__} expects a 2-D float array (one row per vector): {exc}"
            ) from None
        if not np.isfinite(A).all():
            bad = np.flatnonzero(~np.isfinite(A).all(axis=1))
            raise ValueError(f"{type(self).__name__}: input contains NaN or infinity in row(s) "
                             f"{bad[:10].tolist()}{' ...' if len(bad) > 10 else ''}")
        return A

    def __call__(self, X: Any, Y: Any = None) -> np.ndarray | float:
        """Gram of two 2-D arrays; one value for two 1-D vectors (``pairwise_kernels``)."""
        if type(X) is np.ndarray and type(Y) is np.ndarray and X.ndim == 1 == Y.ndim:
            return self._vector_value(X, Y)  # scikit-learn's per-pair call: the common case first
        if (
            Y is not None
            and np.ndim(X) == 1 and np.ndim(Y) == 1
            and not isinstance(X, (str, bytes)) and not isinstance(Y, (str, bytes))
        ):
            return self._vector_value(X, Y)
        return super().__call__(X, Y)

    def _vector_value(self, x: Any, y: Any) -> float:
        """``k(x, y)`` of two 1-D vectors, checked as :meth:`check_input` would (after
        :meth:`_quick` when it vouches for the value)."""
        self.validate_params()
        if (
            type(x) is np.ndarray and type(y) is np.ndarray
            and x.dtype is _FLOAT64 and y.dtype is _FLOAT64 and x.shape == y.shape
        ):
            v = self._quick(x, y)
            if v is not None and math.isfinite(v):
                return v
        if _is_bool_data(x) or _is_bool_data(y):
            raise TypeError(
                f"{type(self).__name__} expects float vectors, got booleans; convert them "
                "explicitly (e.g. x.astype(float)) if 0/1 vectors are meant")
        try:
            a = np.asarray(x, dtype=np.float64)
            b = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{type(self).__name__} expects float vectors: {exc}") from None
        if a.shape != b.shape:
            raise ValueError(
                f"{type(self).__name__}: vectors of different dimensions, {a.size} and {b.size}")
        if not math.isfinite(a.sum() + b.sum()):  # one sum overflows only if a value is huge
            if not (np.isfinite(a).all() and np.isfinite(b).all()):
                raise ValueError(f"{type(self).__name__}: input contains NaN or infinity")
        v = float(self.pair(a, b))
        if not math.isfinite(v):
            check_kernel_values(self, np.array([[v]]), where="k(x, y)")
        return v

    def _quick(self, x: np.ndarray, y: np.ndarray) -> float | None:
        """``k(x, y)`` of unchecked float64 vectors when a sum it forms is finite (no NaN or
        infinity), else None."""
        return None

    def pair(self, x, y) -> float:
        """One value from two checked 1-D float vectors of one length."""
        return float(self.gram_block(x[None, :], y[None, :])[0, 0])

    def gram_block(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        if X.shape[1] != Y.shape[1]:
            raise ValueError(
                f"{type(self).__name__}: vectors of different dimensions, {X.shape[1]} and "
                f"{Y.shape[1]} (X is {X.shape[0]}x{X.shape[1]}, Y is {Y.shape[0]}x{Y.shape[1]})")
        return np.asarray(self._pairwise(X, Y), dtype=np.float64)

    def gram_block_symmetric(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self._pairwise(X, None), dtype=np.float64)

    def _pairwise(self, X: np.ndarray, Y: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError


def _is_bool_data(X: Any) -> bool:
    """A bool array, or a (nested) list whose first element is a bool."""
    if isinstance(X, np.ndarray):
        return X.dtype == np.bool_
    if isinstance(X, (bool, np.bool_)):
        return True
    if isinstance(X, (list, tuple)) and X:
        first = X[0]
        if isinstance(first, (list, tuple, np.ndarray)):
            return _is_bool_data(first if not isinstance(first, tuple) else list(first))
        return isinstance(first, (bool, np.bool_))
    return False


def _is_number(value: Any) -> bool:
    """A real number that is not a bool (``True`` is not ``1.0`` for a parameter)."""
    return isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(
        value, (bool, np.bool_))


def _check_positive(owner: Kernel, name: str, allow_none: bool = False) -> None:
    value = getattr(owner, name)
    if value is None and allow_none:
        return
    if not _is_number(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{type(owner).__name__}.{name} must be a positive number, got {value!r}")


class LinearKernel(VectorKernel):
    """``<x, y>``.

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import kernel
    >>> kernel("linear")(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0], [1.0, 0.0]])).tolist()
    [[11.0, 1.0]]
    """

    def _pairwise(self, X: np.ndarray, Y: np.ndarray | None) -> np.ndarray:
        return pairwise.linear_kernel(X, Y)

    def column_function(self, X: np.ndarray) -> Any:
        """``idx -> X @ X[idx].T`` (see :meth:`Kernel.column_function`)."""
        if type(self) is not LinearKernel:
            return None
        return ColumnFunction("product", X)

    def pair(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(x @ y)

    def _quick(self, x: np.ndarray, y: np.ndarray) -> float | None:
        v = float(x @ y)
        return v if math.isfinite(v) else None

    def diag_block(self, X: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", X, X)

    def feature_map(self, X: np.ndarray) -> tuple[np.ndarray, None]:
        """``φ(x) = x``: ``X`` itself (no copy), no row scales."""
        return X, None


class CosineKernel(VectorKernel):
    """``<x, y> / (||x|| ||y||)``; 0 when either vector is 0 (as scikit-learn)."""

    def _pairwise(self, X: np.ndarray, Y: np.ndarray | None) -> np.ndarray:
        return pairwise.cosine_similarity(X, Y)

    def column_function(self, X: np.ndarray) -> Any:
        """``idx -> U @ U[idx].T`` with the unit rows ``U`` prepared once (see
        :meth:`Kernel.column_function`)."""
        if type(self) is not CosineKernel:
            return None
        nrm = np.linalg.norm(X, axis=1)
        nrm[nrm == 0] = 1.0
        return ColumnFunction("product", X / nrm[:, None].astype(X.dtype))

    def pair(self, x: np.ndarray, y: np.ndarray) -> float:
        nx, ny = np.linalg.norm(x), np.linalg.norm(y)
        # a zero vector has similarity 0, as in cosine_similarity
        return 0.0 if nx == 0 or ny == 0 else float((x / nx) @ (y / ny))

    def _quick(self, x: np.ndarray, y: np.ndarray) -> float | None:
        return self.pair(x, y) if math.isfinite(float(x @ x + y @ y)) else None

    def diag_block(self, X: np.ndarray) -> np.ndarray:
        return (np.abs(X).sum(axis=1) > 0).astype(np.float64)

    def feature_map(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``φ(x) = x / ||x||`` as ``X`` itself (no copy) and the row scales ``1 / ||x||``
        in ``X``'s dtype (1 for a zero row, which stays 0, as :meth:`pair` gives it 0)."""
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        norms[norms == 0] = 1.0
        return X, (1.0 / norms).astype(X.dtype, copy=False)


class BandwidthRenamedWarning(StructkernelsWarning, FutureWarning):
    """``sigma=`` of the RBF and Laplacian kernels: their bandwidth is now ``bandwidth=``
    (σ names the nonstationary weights); the value given is used as the bandwidth."""


class _BandwidthKernel(VectorKernel):
    """A kernel of one bandwidth ``b > 0``; ``sigma`` is its deprecated name (used when given)."""

    def __init__(self, bandwidth: float = 1.0, sigma: float | None = None):
        if sigma is not None:
            warnings.warn(f"{type(self).__name__}(sigma=...) is deprecated: the bandwidth is "
                          "called bandwidth=", BandwidthRenamedWarning, stacklevel=3)
        self.bandwidth = bandwidth
        self.sigma = sigma

    @property
    def _b(self) -> Any:
        """The bandwidth in use: ``sigma`` when given (deprecated), else ``bandwidth``."""
        return self.bandwidth if self.sigma is None else self.sigma

    def validate_params(self) -> None:
        _check_positive(self, "bandwidth" if self.sigma is None else "sigma")

    def diag_block(self, X: np.ndarray) -> np.ndarray:
        return np.ones(len(X), dtype=np.float64)  # k(x, x) = exp(0)


class RBFKernel(_BandwidthKernel):
    """Gaussian kernel ``exp(-||x - y||^2 / (2 b^2))`` (PHSIC paper's form): scikit-learn's
    ``rbf_kernel`` with ``gamma = 1 / (2 b^2)``.

    Parameters
    ----------
    bandwidth : float, default 1.0
        ``b``.
    sigma : float, optional
        Deprecated name of ``bandwidth`` (a :class:`BandwidthRenamedWarning`).
    """

    def __init__(self, bandwidth: float = 1.0, sigma: float | None = None):
        super().__init__(bandwidth, sigma)  # named here: errors and get_params name RBFKernel

    def validate_params(self) -> None:
        super().validate_params()
        if not math.isfinite(0.5 / self._b / self._b):
            raise ValueError(
                f"RBFKernel.bandwidth = {self._b!r} is too small: 1 / (2 b^2) overflows")

    def _pairwise(self, X: np.ndarray, Y: np.ndarray | None) -> np.ndarray:
        # 0.5 / b / b: a huge bandwidth gives gamma 0 (all ones), never an OverflowError
        return pairwise.rbf_kernel(X, Y, gamma=0.5 / self._b / self._b)

    def column_function(self, X: np.ndarray) -> Any:
        """``idx -> K(X, X[idx])`` from the rows' squared norms prepared once (see
        :meth:`Kernel.column_function`)."""
        if type(self) is not RBFKernel:
            return None
        sq = np.einsum("ij,ij->i", X, X)
        return ColumnFunction("rbf", X, sq, 1.0 / (2.0 * float(self._b) ** 2))

    def pair(self, x: np.ndarray, y: np.ndarray) -> float:
        d = x - y
        return math.exp(-(0.5 / self._b / self._b) * float(d @ d))

    def _quick(self, x: np.ndarray, y: np.ndarray) -> float | None:
        d = x - y
        q = float(d @ d)
        return math.exp(-(0.5 / self._b / self._b) * q) if math.isfinite(q) else None


class LaplacianKernel(_BandwidthKernel):
    """``exp(-||x - y||_1 / b)``; scikit-learn's ``laplacian_kernel`` with gamma = 1/b.

    Its parameters are those of :class:`RBFKernel`: ``bandwidth`` ``b`` and ``sigma``, the
    deprecated name of ``bandwidth``.
    """

    def __init__(self, bandwidth: float = 1.0, sigma: float | None = None):
        super().__init__(bandwidth, sigma)  # named here, as in RBFKernel

    def _pairwise(self, X: np.ndarray, Y: np.ndarray | None) -> np.ndarray:
        return pairwise.laplacian_kernel(X, Y, gamma=1.0 / self._b)

    def pair(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(np.exp(-np.abs(x - y).sum() / self._b))

    def _quick(self, x: np.ndarray, y: np.ndarray) -> float | None:
        q = float(np.abs(x - y).sum())
        return math.exp(-q / self._b) if math.isfinite(q) else None


class PolynomialKernel(VectorKernel):
    """``(gamma <x, y> + coef0) ** degree`` (scikit-learn's ``polynomial_kernel``).

    Parameters
    ----------
    degree : int, default 3
    gamma : float, optional
        Defaults to ``1 / n_features``.
    coef0 : float, default 1.0
        Must be >= 0 for the kernel to be positive semi-definite.
    """

    def __init__(self, degree: int = 3, gamma: float | None = None, coef0: float = 1.0):
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0

    def validate_params(self) -> None:
        if (not isinstance(self.degree, (int, np.integer)) or isinstance(self.degree, bool)
                or self.degree < 1):
            raise ValueError(f"PolynomialKernel.degree must be an int >= 1, got {self.degree!r}")
        _check_positive(self, "gamma", allow_none=True)
        if not _is_number(self.coef0) or not math.isfinite(self.coef0) or self.coef0 < 0:
            raise ValueError(f"PolynomialKernel.coef0 must be >= 0, got {self.coef0!r}")

    def _pairwise(self, X: np.ndarray, Y: np.ndarray | None) -> np.ndarray:
        return pairwise.polynomial_kernel(
            X, Y, degree=self.degree, gamma=self.gamma, coef0=self.coef0)

    def pair(self, x: np.ndarray, y: np.ndarray) -> float:
        gamma = 1.0 / x.shape[0] if self.gamma is None else self.gamma
        return float((gamma * (x @ y) + self.coef0) ** self.degree)

    def _quick(self, x: np.ndarray, y: np.ndarray) -> float | None:
        return self.pair(x, y) if math.isfinite(float(x @ y)) else None

    def diag_block(self, X: np.ndarray) -> np.ndarray:
        gamma = 1.0 / X.shape[1] if self.gamma is None else self.gamma
        return (gamma * np.einsum("ij,ij->i", X, X) + self.coef0) ** self.degree


class ColumnFunction:
    """Columns ``K(X, X[idx])`` of a vector kernel from per-row data prepared once: ``kind``
    ``"product"`` (``X @ X[idx].T``, ``X`` the unit rows for cosine) or ``"rbf"``
    (``exp(-gamma ||x_i - x_j||^2)`` from the squared norms ``sq``; the HSIC plugin's
    incomplete Cholesky reads ``X``, ``sq`` and ``gamma``).

    Examples
    --------
    >>> import numpy as np
    >>> f = ColumnFunction("product", np.array([[1.0, 0.0], [1.0, 1.0]]))
    >>> f(np.array([0, 1])).tolist()
    [[1.0, 1.0], [1.0, 2.0]]
    """

    def __init__(self, kind: str, X: np.ndarray, sq: np.ndarray | None = None,
                 gamma: float | None = None):
        self.kind = kind
        self.X = X
        self.sq = sq
        self.gamma = gamma

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        if self.kind == "rbf":
            return _rbf_columns(self.X, self.sq, self.gamma, idx)
        return _product_columns(self.X, idx)


def _product_columns(P: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``P @ P[idx].T`` (a GEMV for one column)."""
    return (P @ P[idx[0]])[:, None] if len(idx) == 1 else P @ P[idx].T


def _rbf_columns(X: np.ndarray, sq: np.ndarray, g: float, idx: np.ndarray) -> np.ndarray:
    """``exp(-g ||x_i - x_j||^2)`` for every row ``i`` and ``j`` in ``idx``, from squared norms."""
    cols = _product_columns(X, idx)
    cols *= -2.0
    cols += sq[:, None]
    cols += sq[idx][None, :]
    np.maximum(cols, 0.0, out=cols)
    cols *= -g
    np.exp(cols, out=cols)
    return cols
