"""The :class:`Kernel` base class, normalisation and the kernel algebra.

A kernel is a small scikit-learn style object (parameters stored verbatim, no fitted
state): ``k(X, Y)`` is the Gram matrix of two sequences (or 2-D arrays), ``k.value(x, y)``
one pair.  A subclass writes :meth:`Kernel.pair`, or :meth:`Kernel.gram_block` as a
batched fast path; everything else comes from the engine.

Kernels compose (KeLP style) instead of being copied with variations::

    k = Normalized(kernel("path", lam=0.8)) + 0.5 * kernel("linear")
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.engine.checks import (
    OVERFLOW_HINT,
    check_kernel_values,
    normalize_gram,
)
from structkernels.engine.gram import gram as engine_gram
from structkernels.engine.parallel import releases_gil
from structkernels.structures import Path, Tree
from structkernels.utils import ParamsMixin, after_import

__all__ = ["Kernel", "SumKernel", "ProductKernel", "ScaledKernel", "Normalized"]


class Kernel(ParamsMixin):
    """Base class of every kernel.

    ``__init__`` stores keyword parameters verbatim, :meth:`pair` (or :meth:`gram_block`)
    computes; :meth:`validate_params` and :meth:`check_input` run at every use.

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
    #: (``gram(cache=...)``, resumable ``out=``): bump it when the values change.
    code_version: int = 1

    #: How much of this kernel's output the engine checks (``validate="auto"``, see
    #: :func:`validation_level`): ``"auto"`` (non-finite values always; symmetry and a
    #: PSD probe too unless the class ships with structkernels), ``"full"`` or
    #: ``"finite"`` (the author vouches for symmetry and PSD: tested elsewhere).
    output_validation: str = "auto"

    #: Whether :meth:`paired_values` is a fast exact mode for scattered pairs
    #: (:meth:`structkernels.engine.source.KernelSource.pairs` uses it then).
    paired_mode: bool = False

    #: What to do when a value overflows, added to the error naming the pair.
    overflow_hint: str = OVERFLOW_HINT

    #: Whether raw values grow with the structures' size (a convolution kernel sums over
    #: common substructures): estimators with ``normalize="auto"`` cosine-normalise it.
    grows_with_size: bool = False

    def validate_params(self) -> None:
        """Check the parameters; raise ``ValueError``/``TypeError`` naming the bad one."""

    def check_input(self, X: Any) -> Sequence:
        """``X`` as an indexable, sliceable container (arrays as they are, else a list); a
        bare ``str``/``bytes`` is refused, not read as characters."""
        if isinstance(X, np.ndarray):
            return X
        if isinstance(X, (str, bytes)):
            raise TypeError(f"{type(self).__name__} expects a sequence of structures, got a bare "
                            f"{type(X).__name__}; wrap a single structure in a list")
        return list(X)

    def pair(self, x: Any, y: Any) -> float:
        """The kernel value of one pair of (already checked) structures."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement pair(x, y) or gram_block(X, Y)")

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        """Kernel values between all of ``X`` and all of ``Y`` (checked inputs); the default
        calls :meth:`pair`."""
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

    def feature_map(self, X: Sequence) -> tuple[np.ndarray, np.ndarray | None] | None:
        """An explicit finite feature map φ with ``k(x, y) = φ(x)·φ(y)``, or None when the
        kernel has none: ``(A, w)`` with ``φ(X[i]) = w[i] * A[i]`` for the checked ``X``
        (``A`` of shape (n, d), ``X`` itself for the identity; ``w`` None when every scale
        is 1), so that a scaled map needs no scaled copy of the data.

        Examples
        --------
        >>> import numpy as np
        >>> from structkernels import kernel
        >>> k = kernel("cosine")
        >>> X = k.check_input([[3.0, 4.0], [0.0, 2.0]])
        >>> A, w = k.feature_map(X)
        >>> Phi = w[:, None] * A
        >>> bool(np.allclose(Phi @ Phi.T, k(X)))
        True
        >>> kernel("rbf").feature_map(X) is None
        True
        """
        return None

    def __call__(self, X: Any, Y: Any = None) -> np.ndarray:
        """The Gram matrix ``K[i, j] = k(X[i], Y[j])`` (``Y = X`` when omitted), scikit-learn's
        kernel protocol; a single structure is refused (use :meth:`value`), never read as a
        sequence."""
        for arg in (X, Y):
            if arg is not None and self._is_single_structure(arg):
                raise TypeError(
                    f"{type(self).__name__}(X, Y) takes two sequences of structures (or 2-D "
                    f"arrays) and returns their Gram; got a single {type(arg).__name__}: use "
                    f"{type(self).__name__}.value(x, y) for one pair")
        return self.gram(X, Y, progress=False)

    def _is_single_structure(self, arg: Any) -> bool:
        if isinstance(arg, (Path, Tree, str, bytes)):
            return True
        # one re-writing (source tokens, target tokens), what the SRK and PR kernels take
        # as one structure: a pair of token sequences this kernel refuses as a sequence of
        # two structures but accepts as one (a bag-of-words kernel reads it as two)
        if not (isinstance(arg, (tuple, list)) and len(arg) == 2 and all(
            isinstance(side, (tuple, list)) and all(isinstance(t, str) for t in side)
            for side in arg
        )):
            return False
        try:
            self.check_input(arg)
        except (TypeError, ValueError):
            pass
        else:
            return False
        try:
            self.check_input([arg])
        except (TypeError, ValueError):
            return False
        return True

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
        v = np.asarray(self.gram_block(self.check_input([x]), self.check_input([y])),
                       dtype=np.float64)
        check_kernel_values(self, v, where="k(x, y)")
        return float(v[0, 0])

    def gram(self, X: Any, Y: Any = None, **options: Any) -> np.ndarray:
        """Gram matrix through the engine, :func:`structkernels.gram` (see there for ``options``)."""
        return engine_gram(self, X, Y, **options)

    def diag(self, X: Any) -> np.ndarray:
        """The vector of self-similarities ``[k(x, x) for x in X]``."""
        self.validate_params()
        d = np.asarray(self.diag_block(self.check_input(X)), dtype=np.float64)
        check_kernel_values(self, d, diagonal=True)
        return d

    # ------------------------------------------ hooks of the σ learner and of sources
    def paired_values(self, X: Any, Y: Any) -> np.ndarray:
        """``[k(X[i], Y[i]) for i]``; a kernel with a faster exact mode sets
        :attr:`paired_mode` and overrides this.

        Examples
        --------
        >>> from structkernels import kernel
        >>> kernel("linear").paired_values([[1.0], [2.0]], [[3.0], [4.0]]).tolist()
        [3.0, 8.0]
        """
        X, Y = self.check_input(X), self.check_input(Y)
        return np.array([float(np.asarray(self.gram_block(X[i:i + 1], Y[i:i + 1]))[0, 0])
                         for i in range(len(X))], dtype=np.float64)

    def column_function(self, X: Any) -> Any:
        """A function ``idx -> K(X, X[idx])`` (Gram columns of checked ``X``) reusing per-row
        data prepared once, for column-wise algorithms (incomplete Cholesky); None (the
        default) when the kernel has none.

        Examples
        --------
        >>> import numpy as np
        >>> from structkernels import kernel
        >>> X = np.array([[1.0, 0.0], [1.0, 1.0]])
        >>> kernel("linear").column_function(X)(np.array([1])).tolist()
        [[1.0], [2.0]]
        """
        return None

    def weighted_sum(self, X: Sequence, weights: Any, normalized: bool = False) -> Any:
        """``Σ_j w_j k(·, X[j])`` as one object, when the kernel is linear in explicit
        features: ``(collapse, diag)`` with ``collapse.dots(Y)`` giving ``<φ(y), v>`` and
        ``k(y, y)`` for each ``y`` (``v = Σ_j w_j φ(X[j])``, each ``φ(X[j])`` divided by its
        norm when ``normalized``) and ``diag`` the references' ``k(X[j], X[j])``; None (the
        default) for a kernel without such a map."""
        return None

    def canonical_form(self) -> Any:
        """A function writing a structure as one this kernel cannot tell apart from it
        (equal under it against every structure), so that equal references merge; None
        (the default) when there is none."""
        return None

    def monotone_in_sigma(self) -> bool:
        """Whether ``K(x, y; σ_t = 0) <= K(x, y; σ_t = 1)`` is known for every label ``t``
        (the σ learner's pruned trials rely on it); False unless a kernel says so."""
        return False

    def chain_bound_weights(self, X: Any) -> np.ndarray | None:
        """Per-label weights of an upper bound of the kernel by edge-label counts (the σ
        learner's bounded trials), or None when no such bound is known (the default)."""
        return None

    def __add__(self, other: Kernel) -> SumKernel:
        if not isinstance(other, Kernel):
            return NotImplemented
        return SumKernel(self, other)

    def __mul__(self, other: Any) -> Kernel:
        if isinstance(other, Kernel):
            return ProductKernel(self, other)
        return self.__rmul__(other)

    def __rmul__(self, other: Any) -> Kernel:
        if np.isscalar(other) and not isinstance(other, (str, bytes)):
            return ScaledKernel(self, float(other))
        return NotImplemented


# scikit-learn's pairwise_kernels (behind KernelRidge, KernelPCA, Nystroem ...) calls a
# kernel of its Gaussian-process family once with the whole arrays, any other callable once
# per pair of rows: as a virtual subclass of that family, a Kernel gives its Gram in one call.
# Registered when scikit-learn defines the family, so that using a kernel never imports it.
after_import("sklearn.gaussian_process.kernels", lambda module: module.Kernel.register(Kernel))


class _Combination(Kernel):
    """Two kernels combined value by value by ``_op`` (the same on every block)."""

    def __init__(self, k1: Kernel, k2: Kernel):
        self.k1 = k1
        self.k2 = k2

    @property
    def nogil_blocks(self) -> bool:
        """GIL-free blocks when both parts have them (the Gram engine then uses threads)."""
        return releases_gil(self.k1) and releases_gil(self.k2)

    def validate_params(self) -> None:
        for name in ("k1", "k2"):
            if not isinstance(getattr(self, name), Kernel):
                raise TypeError(f"{type(self).__name__}.{name} must be a Kernel")
        self.k1.validate_params()
        self.k2.validate_params()

    def check_input(self, X: Any) -> Sequence:
        return self.k2.check_input(self.k1.check_input(X))

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        return self._op(self.k1.gram_block(X, Y), self.k2.gram_block(X, Y))

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        return self._op(self.k1.gram_block_symmetric(X), self.k2.gram_block_symmetric(X))

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self._op(self.k1.diag_block(X), self.k2.diag_block(X))


class SumKernel(_Combination):
    """``k1(x, y) + k2(x, y)``; PSD when both are."""

    _op = staticmethod(operator.add)


class ProductKernel(_Combination):
    """``k1(x, y) * k2(x, y)``; PSD when both are (Schur product theorem)."""

    _op = staticmethod(operator.mul)


class _Wrapper(Kernel):
    """Shared parts of the kernels built on one ``kernel``."""

    @property
    def nogil_blocks(self) -> bool:
        """GIL-free blocks when the wrapped kernel has them."""
        return releases_gil(self.kernel)

    def check_input(self, X: Any) -> Sequence:
        return self.kernel.check_input(X)


class ScaledKernel(_Wrapper):
    """``c * kernel(x, y)`` with ``c >= 0`` (a negative scale would break PSD)."""

    def __init__(self, kernel: Kernel, scale: float = 1.0):
        self.kernel = kernel
        self.scale = scale

    def validate_params(self) -> None:
        if not isinstance(self.kernel, Kernel):
            raise TypeError("ScaledKernel.kernel must be a Kernel")
        if (isinstance(self.scale, (bool, np.bool_))
                or not isinstance(self.scale, (int, float, np.integer, np.floating))):
            raise TypeError(f"ScaledKernel.scale must be a number, got {self.scale!r}")
        if not np.isfinite(self.scale) or self.scale < 0:
            raise ValueError(f"ScaledKernel.scale must be finite and >= 0, got {self.scale!r}")
        self.kernel.validate_params()

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        return self.scale * self.kernel.gram_block(X, Y)

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        return self.scale * self.kernel.gram_block_symmetric(X)

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self.scale * self.kernel.diag_block(X)


class Normalized(_Wrapper):
    """Cosine normalisation ``k(x, y) / sqrt(k(x, x) k(y, y))``.

    A structure with zero self-similarity gets similarity 0 (with a warning).

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import Normalized, kernel
    >>> k = Normalized(kernel("linear"))
    >>> round(k.value(np.array([1.0, 0.0]), np.array([1.0, 1.0])), 6)
    0.707107
    """

    #: the Gram engine computes the inner kernel's Gram and normalises it once by its diagonal
    cosine_normalizes = True

    def __init__(self, kernel: Kernel):
        self.kernel = kernel

    def validate_params(self) -> None:
        if not isinstance(self.kernel, Kernel):
            raise TypeError("Normalized.kernel must be a Kernel")
        self.kernel.validate_params()

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        K = self.kernel.gram_block(X, Y)
        return normalize_gram(K, self.kernel.diag_block(X), self.kernel.diag_block(Y))

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        K = self.kernel.gram_block_symmetric(X)
        d = np.diag(K).copy()
        return normalize_gram(K, d, d)

    def diag_block(self, X: Sequence) -> np.ndarray:
        return (self.kernel.diag_block(X) > 0).astype(np.float64)


