"""The :class:`Kernel` base class, normalisation and the kernel algebra.

A kernel is a small scikit-learn style object: its parameters are the keyword
arguments of ``__init__``, stored verbatim (so ``get_params``, ``set_params``,
``clone`` and ``repr`` come from :class:`sklearn.base.BaseEstimator`), and it
holds no fitted state.  Calling a kernel follows scikit-learn: ``k(X, Y)`` is
the Gram matrix of two sequences (or 2-D arrays); ``k.value(x, y)`` is one
pair.  A subclass writes :meth:`Kernel.pair`; it may override
:meth:`Kernel.gram_block` (and :meth:`Kernel.gram_block_symmetric`) with a
batched fast path.  Everything else (Gram matrices, caching, parallelism,
hashing, k-NN, dependence measures) comes from the engine.

Kernels compose (KeLP style) instead of being copied with variations::

    k = Normalized(kernel("path", lam=0.8)) + 0.5 * kernel("linear")
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

__all__ = [
    "Kernel",
    "SumKernel",
    "ProductKernel",
    "ScaledKernel",
    "Normalized",
    "normalize_gram",
    "ZeroSelfSimilarityWarning",
]


class ZeroSelfSimilarityWarning(UserWarning):
    """Raised when normalisation meets a structure whose self-similarity is 0."""


class Kernel(BaseEstimator):
    """Base class of every kernel.

    Subclasses define ``__init__`` with keyword parameters stored verbatim and
    :meth:`pair`.  Parameter checks go in :meth:`validate_params`, input
    checks and conversion in :meth:`check_input`; both run every time a
    kernel is used (there is no lazy "initialised" flag).

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import Kernel
    >>> class Overlap(Kernel):
    ...     def __init__(self, scale=1.0):
    ...         self.scale = scale
    ...     def pair(self, x, y):
    ...         return self.scale * len(set(x) & set(y))
    >>> k = Overlap()
    >>> k.value("abc", "bcd")
    2.0
    >>> k.gram(["ab", "bc"]).tolist()
    [[2.0, 1.0], [1.0, 2.0]]
    """

    #: Version of the kernel's code, part of every cache and resume key
    #: (``gram(cache=...)``, ``dask_gram``): bump it when the values change.
    code_version: int = 1

    # ------------------------------------------------------------------ hooks
    def validate_params(self) -> None:
        """Check the parameters; raise ``ValueError``/``TypeError`` naming the bad one."""

    def check_input(self, X: Any) -> Sequence:
        """Return ``X`` as an indexable, sliceable container of structures.

        The default keeps NumPy arrays as they are and turns any other
        iterable into a list.  A bare ``str``/``bytes`` is refused: a sentence
        silently read as characters is a classic bug.
        """
        if isinstance(X, np.ndarray):
            return X
        if isinstance(X, (str, bytes)):
            raise TypeError(
                f"{type(self).__name__} expects a sequence of structures, got a bare "
                f"{type(X).__name__}; wrap a single structure in a list"
            )
        return list(X)

    def pair(self, x: Any, y: Any) -> float:
        """The kernel value of one pair of (already checked) structures."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement pair(x, y) or gram_block(X, Y)"
        )

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        """Kernel values between all of ``X`` and all of ``Y`` (checked inputs).

        Override with a batched fast path; the default calls :meth:`pair`.
        """
        out = np.empty((len(X), len(Y)), dtype=np.float64)
        pair = self.pair
        for i, x in enumerate(X):
            row = out[i]
            for j, y in enumerate(Y):
                row[j] = pair(x, y)
        return out

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        """Kernel values of ``X`` against itself, computing each pair once."""
        if type(self).gram_block is not Kernel.gram_block:
            # a batched fast path exists: it is faster than half the pairs in Python
            return self.gram_block(X, X)
        n = len(X)
        out = np.empty((n, n), dtype=np.float64)
        pair = self.pair
        for i in range(n):
            xi = X[i]
            for j in range(i, n):
                out[i, j] = out[j, i] = pair(xi, X[j])
        return out

    def diag_block(self, X: Sequence) -> np.ndarray:
        """Self-similarities ``k(x, x)`` of checked inputs."""
        if type(self).pair is Kernel.pair:
            return np.array([self.gram_block([x], [x])[0, 0] for x in X], dtype=np.float64)
        return np.fromiter((self.pair(x, x) for x in X), dtype=np.float64, count=len(X))

    # ------------------------------------------------------------ public API
    def __call__(self, X: Any, Y: Any = None) -> np.ndarray:
        """The Gram matrix ``K[i, j] = k(X[i], Y[j])`` (``Y = X`` when omitted).

        This is scikit-learn's kernel protocol (``SVC(kernel=k)``,
        ``sklearn.gaussian_process`` kernels, GraKeL): two 2-D arrays, or two
        sequences of structures, give their Gram.  One pair is :meth:`value`.
        A single structure (a :class:`~structkernels.Path`, a
        :class:`~structkernels.Tree`, a bare string) is refused with a pointer
        to :meth:`value`, so that a pair is never silently read as two
        sequences.
        """
        for arg in (X, Y):
            if arg is not None and self._is_single_structure(arg):
                raise TypeError(
                    f"{type(self).__name__}(X, Y) takes two sequences of structures (or 2-D "
                    f"arrays) and returns their Gram; got a single {type(arg).__name__}: use "
                    f"{type(self).__name__}.value(x, y) for one pair"
                )
        return self.gram(X, Y, progress=False)

    @staticmethod
    def _is_single_structure(arg: Any) -> bool:
        from structkernels.structures import Path, Tree

        return isinstance(arg, (Path, Tree, str, bytes))

    def value(self, x: Any, y: Any) -> float:
        """One kernel value ``k(x, y)`` of two structures, as a Python float.

        Examples
        --------
        >>> import numpy as np
        >>> from structkernels import kernel
        >>> kernel("linear").value(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
        11.0
        """
        self.validate_params()
        return float(self.gram_block(self.check_input([x]), self.check_input([y]))[0, 0])

    def gram(self, X: Any, Y: Any = None, **options: Any) -> np.ndarray:
        """Gram matrix through :func:`structkernels.gram` (see there for ``options``)."""
        from structkernels.gram import gram

        return gram(self, X, Y, **options)

    def diag(self, X: Any) -> np.ndarray:
        """The vector of self-similarities ``[k(x, x) for x in X]``."""
        self.validate_params()
        return np.asarray(self.diag_block(self.check_input(X)), dtype=np.float64)

    # --------------------------------------------------------------- algebra
    def __add__(self, other: Kernel) -> SumKernel:
        if not isinstance(other, Kernel):
            return NotImplemented
        return SumKernel(self, other)

    def __mul__(self, other: Any) -> Kernel:
        if isinstance(other, Kernel):
            return ProductKernel(self, other)
        if np.isscalar(other) and not isinstance(other, (str, bytes)):
            return ScaledKernel(self, float(other))
        return NotImplemented

    def __rmul__(self, other: Any) -> Kernel:
        if np.isscalar(other) and not isinstance(other, (str, bytes)):
            return ScaledKernel(self, float(other))
        return NotImplemented


class _Combination(Kernel):
    """Shared checks of two-kernel combinations."""

    def __init__(self, k1: Kernel, k2: Kernel):
        self.k1 = k1
        self.k2 = k2

    @property
    def nogil_blocks(self) -> bool:
        """GIL-free blocks when both parts have them (the Gram engine then uses threads)."""
        return bool(getattr(self.k1, "nogil_blocks", False)) and bool(
            getattr(self.k2, "nogil_blocks", False)
        )

    def validate_params(self) -> None:
        for name in ("k1", "k2"):
            if not isinstance(getattr(self, name), Kernel):
                raise TypeError(f"{type(self).__name__}.{name} must be a Kernel")
        self.k1.validate_params()
        self.k2.validate_params()

    def check_input(self, X: Any) -> Sequence:
        return self.k2.check_input(self.k1.check_input(X))


class SumKernel(_Combination):
    """``k1(x, y) + k2(x, y)``; PSD when both are."""

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        return self.k1.gram_block(X, Y) + self.k2.gram_block(X, Y)

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        return self.k1.gram_block_symmetric(X) + self.k2.gram_block_symmetric(X)

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self.k1.diag_block(X) + self.k2.diag_block(X)


class ProductKernel(_Combination):
    """``k1(x, y) * k2(x, y)``; PSD when both are (Schur product theorem)."""

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        return self.k1.gram_block(X, Y) * self.k2.gram_block(X, Y)

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        return self.k1.gram_block_symmetric(X) * self.k2.gram_block_symmetric(X)

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self.k1.diag_block(X) * self.k2.diag_block(X)


class ScaledKernel(Kernel):
    """``c * kernel(x, y)`` with ``c >= 0`` (a negative scale would break PSD)."""

    def __init__(self, kernel: Kernel, scale: float = 1.0):
        self.kernel = kernel
        self.scale = scale

    @property
    def nogil_blocks(self) -> bool:
        """GIL-free blocks when the scaled kernel has them."""
        return bool(getattr(self.kernel, "nogil_blocks", False))

    def validate_params(self) -> None:
        if not isinstance(self.kernel, Kernel):
            raise TypeError("ScaledKernel.kernel must be a Kernel")
        if not np.isfinite(self.scale) or self.scale < 0:
            raise ValueError(f"ScaledKernel.scale must be finite and >= 0, got {self.scale!r}")
        self.kernel.validate_params()

    def check_input(self, X: Any) -> Sequence:
        return self.kernel.check_input(X)

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        return self.scale * self.kernel.gram_block(X, Y)

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        return self.scale * self.kernel.gram_block_symmetric(X)

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self.scale * self.kernel.diag_block(X)


def normalization_scales(
    diag_x: np.ndarray, diag_y: np.ndarray, *, warn: bool = True, stacklevel: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """``(1 / sqrt(diag_x), 1 / sqrt(diag_y))``, 0 where a self-similarity is <= 0.

    A zero (or negative, from round-off) self-similarity gives a zero scale and a
    :class:`ZeroSelfSimilarityWarning` naming how many structures it hit.
    """
    dx = np.asarray(diag_x, dtype=np.float64)
    dy = np.asarray(diag_y, dtype=np.float64)
    sx = np.zeros_like(dx)
    sy = np.zeros_like(dy)
    okx, oky = dx > 0, dy > 0
    sx[okx] = 1.0 / np.sqrt(dx[okx])
    sy[oky] = 1.0 / np.sqrt(dy[oky])
    bad = int((~okx).sum() + (~oky).sum())
    if bad and warn:
        warnings.warn(
            f"normalisation met {bad} structure(s) with self-similarity <= 0; "
            "their normalised similarities are set to 0",
            ZeroSelfSimilarityWarning,
            stacklevel=stacklevel + 1,
        )
    return sx, sy


def normalize_gram(
    K: np.ndarray, diag_x: np.ndarray, diag_y: np.ndarray | None = None, *, warn: bool = True
) -> np.ndarray:
    """``K[i, j] / sqrt(diag_x[i] * diag_y[j])``, 0 where a self-similarity is 0.

    Modifies nothing in place; returns a new float64 array.  A zero (or
    negative, from round-off) self-similarity gives a zero row/column and a
    :class:`ZeroSelfSimilarityWarning` naming how many structures it hit.
    """
    diag_y = diag_x if diag_y is None else diag_y
    sx, sy = normalization_scales(diag_x, diag_y, warn=warn, stacklevel=3)
    # the scale s_x[i] s_y[j] is formed first, so a symmetric K stays exactly symmetric
    return np.asarray(K, dtype=np.float64) * (sx[:, None] * sy[None, :])


class Normalized(Kernel):
    """Cosine normalisation ``k(x, y) / sqrt(k(x, x) k(y, y))``.

    Structures with zero self-similarity get similarity 0 (with a warning).
    The Gram engine computes the diagonal once rather than per block.

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import Normalized, kernel
    >>> k = Normalized(kernel("linear"))
    >>> round(k.value(np.array([1.0, 0.0]), np.array([1.0, 1.0])), 6)
    0.707107
    """

    def __init__(self, kernel: Kernel):
        self.kernel = kernel

    @property
    def nogil_blocks(self) -> bool:
        """GIL-free blocks when the normalised kernel has them."""
        return bool(getattr(self.kernel, "nogil_blocks", False))

    def validate_params(self) -> None:
        if not isinstance(self.kernel, Kernel):
            raise TypeError("Normalized.kernel must be a Kernel")
        self.kernel.validate_params()

    def check_input(self, X: Any) -> Sequence:
        return self.kernel.check_input(X)

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        K = self.kernel.gram_block(X, Y)
        return normalize_gram(K, self.kernel.diag_block(X), self.kernel.diag_block(Y))

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        K = self.kernel.gram_block_symmetric(X)
        d = np.diag(K).copy()
        return normalize_gram(K, d, d)

    def diag_block(self, X: Sequence) -> np.ndarray:
        return (self.kernel.diag_block(X) > 0).astype(np.float64)
