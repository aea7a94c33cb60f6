"""Resolving the ``kernel_x`` / ``kernel_y`` parameters into Gram sources.

A *source* gives what the estimators need of one side of the data and nothing
more: the diagonal, a few columns (for incomplete Cholesky), full Gram blocks
(for the exact estimators) and cross blocks against new points.  Two kinds
exist: :class:`KernelSource` (a registered name or a
:class:`structkernels.Kernel`, consumed only through ``check_input``,
``gram_block``, ``diag_block`` and :func:`structkernels.gram`) and
:class:`PrecomputedSource` (``"precomputed"``: the Gram matrix itself, as in
scikit-learn).  Every source counts the kernel evaluations it makes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone

from structkernels import Kernel, as_kernel, gram
from structkernels.kernel import Normalized, normalize_gram

__all__ = ["resolve_source", "KernelSource", "PrecomputedSource", "median_heuristic", "take"]


def take(X: Any, idx: Sequence[int] | np.ndarray) -> Any:
    """The items ``idx`` of a checked input, in the container type the kernel expects."""
    idx = np.asarray(idx, dtype=np.intp)
    if isinstance(X, np.ndarray):
        return X[idx]
    if isinstance(X, (list, tuple)):
        return [X[i] for i in idx.tolist()]
    try:
        return X[idx]
    except (TypeError, IndexError, KeyError):
        return [X[i] for i in idx.tolist()]


def median_heuristic(X: Any, *, max_samples: int = 2000, random_state: int = 0) -> float:
    """Median of the pairwise Euclidean distances between distinct rows of ``X``.

    The bandwidth ``sigma`` of the RBF kernel ``exp(-||x - y||^2 / (2 sigma^2))``
    is set to this median, which is hyppo's convention (``gamma = 1 / (2 med^2)``)
    and Gretton et al.'s.  Above ``max_samples`` rows, a seeded subsample is used.
    A median of 0 (constant data) gives 1.0, as in hyppo.

    Examples
    --------
    >>> import numpy as np
    >>> median_heuristic(np.array([[0.0], [1.0], [3.0]]))
    2.0
    """
    from scipy.spatial.distance import pdist

    A = np.asarray(X, dtype=np.float64)
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2 or len(A) < 2:
        raise ValueError(f"median heuristic needs a 2-D array of at least 2 rows, got shape {A.shape}")
    if len(A) > max_samples:
        rng = np.random.default_rng(random_state)
        A = A[np.sort(rng.choice(len(A), max_samples, replace=False))]
    med = float(np.median(pdist(A)))
    return med if med > 0 else 1.0


def _with_median(kernel: Kernel, X: Any) -> Kernel:
    """Replace a ``sigma="median"`` parameter by the median heuristic on ``X``."""
    params = kernel.get_params(deep=False)
    if params.get("sigma") == "median":
        return clone(kernel).set_params(sigma=median_heuristic(kernel.check_input(X)))
    return kernel


class KernelSource:
    """Gram access to ``X`` under a kernel, counting evaluations.

    Parameters
    ----------
    kernel : Kernel
    X : structures (checked here with ``kernel.check_input``)
    n_jobs : int
        Passed to :func:`structkernels.gram` for full Gram matrices.
    """

    precomputed = False

    def __init__(self, kernel: Kernel, X: Any, n_jobs: int = 1):
        kernel.validate_params()
        self.kernel = kernel
        self.X = kernel.check_input(X)
        self.n = len(self.X)
        self.n_jobs = n_jobs
        self.n_evaluations = 0
        # A Normalized kernel: its inner diagonal is computed once (as the Gram
        # engine does), not once per column as Normalized.gram_block would.
        self._inner = kernel.kernel if isinstance(kernel, Normalized) else None
        self._inner_diag: np.ndarray | None = None

    def _raw_diag(self) -> np.ndarray:
        if self._inner_diag is None:
            self._inner_diag = _InnerSource(self._inner, self.X, self).diag()
        return self._inner_diag

    def _block(self, Xa: Any, Xb: Any, da: np.ndarray | None = None, db: np.ndarray | None = None) -> np.ndarray:
        if self._inner is None:
            return np.asarray(self.kernel.gram_block(Xa, Xb), dtype=np.float64)
        B = np.asarray(self._inner.gram_block(Xa, Xb), dtype=np.float64)
        if da is None:
            da = np.asarray(self._inner.diag_block(Xa), dtype=np.float64)
            self.n_evaluations += len(Xa)
        if db is None:
            db = np.asarray(self._inner.diag_block(Xb), dtype=np.float64)
            self.n_evaluations += len(Xb)
        return normalize_gram(B, da, db)

    def diag(self) -> np.ndarray:
        if self._inner is not None:
            return (self._raw_diag() > 0).astype(np.float64)
        return self._plain_diag()

    def _plain_diag(self) -> np.ndarray:
        """``k(x_i, x_i)``: the kernel's own ``diag_block`` when it has one.

        A kernel that inherits the base class's per-pair ``diag_block`` but has
        a batched ``gram_block`` (the vector kernels) is asked for small
        diagonal blocks of ``chunk`` rows instead: ``chunk`` times the
        evaluations, but one BLAS call per block rather than one Python call
        per structure.
        """
        k = self.kernel
        base = type(k).diag_block is Kernel.diag_block
        batched = type(k).gram_block is not Kernel.gram_block
        if base and batched and self.n > 64:
            chunk = 128
            out = np.empty(self.n, dtype=np.float64)
            for s in range(0, self.n, chunk):
                e = min(s + chunk, self.n)
                Xb = self.X[s:e]
                out[s:e] = np.diagonal(np.asarray(k.gram_block(Xb, Xb), dtype=np.float64))
                self.n_evaluations += (e - s) ** 2
            return out
        self.n_evaluations += self.n
        return np.asarray(k.diag_block(self.X), dtype=np.float64)

    def columns(self, idx: Sequence[int]) -> np.ndarray:
        """``K[:, idx]`` (one kernel evaluation per entry)."""
        idx = np.asarray(idx, dtype=np.intp)
        if self._inner is None:
            cols = self._block(self.X, take(self.X, idx))
        else:
            d = self._raw_diag()
            cols = self._block(self.X, take(self.X, idx), d, d[idx])
        self.n_evaluations += cols.size
        return cols

    def rows(self, start: int, stop: int) -> np.ndarray:
        """``K[start:stop, :]`` through one ``gram_block`` call."""
        if self._inner is None:
            block = self._block(self.X[start:stop], self.X)
        else:
            d = self._raw_diag()
            block = self._block(self.X[start:stop], self.X, d[start:stop], d)
        self.n_evaluations += block.size
        return block

    def full(self) -> np.ndarray:
        """The full Gram matrix through the Gram engine (symmetric blocks, ``n_jobs``)."""
        K, info = gram(self.kernel, self.X, n_jobs=self.n_jobs, return_info=True)
        self.n_evaluations += info.n_evaluations
        return np.asarray(K)

    def cross(self, X_new: Any, idx: Sequence[int] | None = None) -> np.ndarray:
        """``k(x_new, x_i)`` for new points against all (or the ``idx``) training points."""
        Xn = self.kernel.check_input(X_new)
        ref = self.X if idx is None else take(self.X, idx)
        if self._inner is None:
            block = self._block(Xn, ref)
        else:
            d = self._raw_diag()
            block = self._block(Xn, ref, None, d if idx is None else d[np.asarray(idx, dtype=np.intp)])
        self.n_evaluations += block.size
        return block


class _InnerSource(KernelSource):
    """The un-normalised kernel of a Normalized one, sharing the owner's evaluation count."""

    def __init__(self, kernel: Kernel, X: Any, owner: KernelSource):
        self.kernel = kernel
        self.X = X
        self.n = len(X)
        self.owner = owner
        self._inner = None

    def diag(self) -> np.ndarray:
        before = self.n_evaluations = 0
        out = self._plain_diag()
        self.owner.n_evaluations += self.n_evaluations - before
        return out


class PrecomputedSource:
    """``"precomputed"``: ``X`` is the square Gram matrix; new points come as cross Grams."""

    precomputed = True

    def __init__(self, K: Any, name: str = "X"):
        K = np.asarray(K, dtype=np.float64)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ValueError(
                f"with a precomputed kernel, {name} must be a square Gram matrix, got shape {K.shape}"
            )
        if not np.isfinite(K).all():
            raise ValueError(f"precomputed Gram matrix {name} contains NaN or infinity")
        self.K = K
        self.n = K.shape[0]
        self.name = name
        self.n_evaluations = 0

    def diag(self) -> np.ndarray:
        return np.diag(self.K).copy()

    def columns(self, idx: Sequence[int]) -> np.ndarray:
        return self.K[:, np.asarray(idx, dtype=np.intp)]

    def rows(self, start: int, stop: int) -> np.ndarray:
        return self.K[start:stop]

    def full(self) -> np.ndarray:
        return self.K

    def cross(self, K_new: Any, idx: Sequence[int] | None = None) -> np.ndarray:
        K_new = np.asarray(K_new, dtype=np.float64)
        if K_new.ndim != 2 or K_new.shape[1] != self.n:
            raise ValueError(
                f"with a precomputed kernel, new {self.name} must be a cross Gram matrix of shape "
                f"(n_new, {self.n}) against the training points, got shape {K_new.shape}"
            )
        return K_new if idx is None else K_new[:, np.asarray(idx, dtype=np.intp)]


def resolve_kernel(spec: Any, params: Mapping[str, Any] | None, X: Any) -> Kernel | None:
    """A Kernel (``sigma="median"`` resolved on ``X``), or None for ``"precomputed"``."""
    if isinstance(spec, str) and spec == "precomputed":
        if params:
            raise ValueError("kernel parameters cannot be given with kernel='precomputed'")
        return None
    kernel = as_kernel(spec, **dict(params or {}))
    inner = kernel.kernel if isinstance(kernel, Normalized) else kernel
    if "sigma" in inner.get_params(deep=False) and inner.get_params(deep=False)["sigma"] == "median":
        resolved = _with_median(inner, X)
        kernel = Normalized(resolved) if isinstance(kernel, Normalized) else resolved
    return kernel


def resolve_source(
    spec: Any, params: Mapping[str, Any] | None, X: Any, *, name: str = "X", n_jobs: int = 1
) -> KernelSource | PrecomputedSource:
    """The Gram source of one side of the data."""
    kernel = resolve_kernel(spec, params, X)
    if kernel is None:
        return PrecomputedSource(X, name)
    return KernelSource(kernel, X, n_jobs=n_jobs)
