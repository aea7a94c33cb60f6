"""The scikit-learn bridge: Gram matrices as features, kernels as distances."""

from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from structkernels.engine.checks import normalize_gram
from structkernels.engine.gram import gram
from structkernels.kernels.base import Kernel
from structkernels.kernels.names import as_kernel, takes_arrays
from structkernels.utils import N_JOBS, Interval, ValidatedParamsMixin

__all__ = ["GramTransformer", "kernel_to_distance"]


class GramTransformer(ValidatedParamsMixin, TransformerMixin, BaseEstimator):
    """Map structures to their kernel values against the training structures.

    Parameters
    ----------
    kernel : str or Kernel, default "linear"
        A registered kernel name or a kernel instance.
    kernel_params : dict, optional
        Parameters for a kernel given by name.
    normalize : bool, default False
        Cosine-normalise: ``K(x, y) / sqrt(K(x, x) K(y, y))``.
    n_jobs : int or None, default None
        Worker processes for the Gram engine.
    block_size : int, optional
        Block size for the Gram engine.
    cache : str, optional
        Directory of the Gram engine's on-disk cache.

    Attributes
    ----------
    kernel_ : Kernel
        The kernel used.
    X_fit_ : sequence
        The training structures, as checked by the kernel.
    diag_fit_ : ndarray or None
        Self-similarities of the training structures (when ``normalize``).
    n_features_in_ : int
        Only when fitted on a 2-D array.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.svm import SVC
    >>> from structkernels import GramTransformer
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [1.1, 1.0]])
    >>> y = [0, 0, 1, 1]
    >>> model = make_pipeline(GramTransformer("rbf"), SVC(kernel="precomputed"))
    >>> model.fit(X, y).predict(np.array([[1.0, 0.9]])).tolist()
    [1]
    """

    _param_constraints = {
        "kernel_params": [None, dict],
        "normalize": ["boolean"],
        "n_jobs": N_JOBS,
        "block_size": [None, Interval(numbers.Integral, 1, None)],
        "cache": [None, str, os.PathLike],
    }

    def __init__(
        self,
        kernel: str | Kernel = "linear",
        kernel_params: dict | None = None,
        normalize: bool = False,
        n_jobs: int | None = None,
        block_size: int | None = None,
        cache: str | None = None,
    ):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.n_jobs = n_jobs
        self.block_size = block_size
        self.cache = cache

    def set_params(self, **params: Any) -> GramTransformer:
        """Set parameters; ``kernel__<name>`` works whether ``kernel`` is a name or an object.

        With a kernel given by name, ``kernel__kmax=3`` goes into a copy of
        ``kernel_params`` (the name is resolved in :meth:`fit`), so
        ``GridSearchCV`` can search ``gramtransformer__kernel__kmax`` either way.
        """
        kernel = params.get("kernel", self.kernel)
        nested = {k: v for k, v in params.items() if k.startswith("kernel__")}
        if nested and isinstance(kernel, str):
            for key in nested:
                del params[key]
            kp = dict(params.get("kernel_params", self.kernel_params) or {})
            kp.update({key[len("kernel__"):]: value for key, value in nested.items()})
            params["kernel_params"] = kp
        return super().set_params(**params)

    def _options(self) -> dict[str, Any]:
        return dict(n_jobs=self.n_jobs, block_size=self.block_size, cache=self.cache)

    def _check_X(self, k: Kernel, X: Any, reset: bool) -> Any:
        Xc = k.check_input(X)
        if len(Xc) == 0:
            raise ValueError("GramTransformer needs at least one structure (got 0)")
        if isinstance(Xc, np.ndarray) and Xc.ndim == 2:
            if reset:
                self.n_features_in_ = Xc.shape[1]
            elif hasattr(self, "n_features_in_") and Xc.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {Xc.shape[1]} features, but GramTransformer is "
                                 f"expecting {self.n_features_in_} features as input")
        return Xc

    def fit(self, X: Any, y: Any = None) -> GramTransformer:
        """Keep the training structures (and their self-similarities if normalising)."""
        self._validate_params()
        k = as_kernel(self.kernel, **(self.kernel_params or {}))
        k.validate_params()
        Xc = self._check_X(k, X, reset=True)
        self.kernel_ = k
        self.X_fit_ = Xc
        self.diag_fit_ = k.diag(Xc) if self.normalize else None
        return self

    def transform(self, X: Any) -> np.ndarray:
        """``Gram(X, X_fit_)``, shape (len(X), n_train)."""
        check_is_fitted(self, "X_fit_")
        Xc = self._check_X(self.kernel_, X, reset=False)
        K = gram(self.kernel_, Xc, self.X_fit_, **self._options())
        if self.normalize:
            K = normalize_gram(K, self.kernel_.diag(Xc), self.diag_fit_)
        return K

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Fit, then the symmetric training Gram (each pair computed once)."""
        self.fit(X, y)
        K = gram(self.kernel_, self.X_fit_, **self._options())
        if self.normalize:
            K = normalize_gram(K, self.diag_fit_, self.diag_fit_)
        return K

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        # structures (paths, trees) are not 2-D float arrays: sklearn's checks skip them
        tags.input_tags.two_d_array = takes_arrays(self.kernel, self.kernel_params)
        return tags


def kernel_to_distance(
    K: np.ndarray, diag_x: np.ndarray, diag_y: np.ndarray | None = None
) -> np.ndarray:
    """Kernel-induced distance ``sqrt(max(Kxx + Kyy - 2 Kxy, 0))``.

    Parameters
    ----------
    K : ndarray, shape (n, m)
        Kernel values between ``x_i`` and ``y_j``.
    diag_x : ndarray, shape (n,)
        ``k(x_i, x_i)``.
    diag_y : ndarray, shape (m,), optional
        ``k(y_j, y_j)``; defaults to ``diag_x`` (a square Gram).

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> kernel_to_distance(K, np.diag(K)).round(4).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    K = np.asarray(K, dtype=np.float64)
    dx = np.asarray(diag_x, dtype=np.float64)
    dy = dx if diag_y is None else np.asarray(diag_y, dtype=np.float64)
    if K.ndim != 2 or K.shape != (dx.shape[0], dy.shape[0]):
        raise ValueError(f"K has shape {K.shape} but the diagonals have lengths "
                         f"{dx.shape[0]} and {dy.shape[0]}")
    D = dx[:, None] + dy[None, :] - 2.0 * K
    np.maximum(D, 0.0, out=D)
    return np.sqrt(D, out=D)
