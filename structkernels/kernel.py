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

from structkernels.structures import Path, Tree, take
from structkernels.utils import NonFiniteError, check_finite, describe_nonfinite, first_nonfinite

__all__ = [
    "Kernel",
    "SumKernel",
    "ProductKernel",
    "ScaledKernel",
    "Normalized",
    "normalize_gram",
    "ZeroSelfSimilarityWarning",
    "KernelOutputError",
    "NonFiniteKernelValueError",
    "validation_level",
    "check_kernel_values",
    "probe_kernel",
    "check_gram_sample",
]


class ZeroSelfSimilarityWarning(UserWarning):
    """Raised when normalisation meets a structure whose self-similarity is 0."""


class KernelOutputError(ValueError):
    """A kernel returned something that is not a kernel value.

    Raised, naming the kernel, the pair and the values, when a kernel's output
    is NaN or infinite (:class:`NonFiniteKernelValueError`), when
    ``k(x, y) != k(y, x)``, or when a sample of its Gram matrix is not positive
    semi-definite (see :func:`probe_kernel`).
    """


class NonFiniteKernelValueError(KernelOutputError, NonFiniteError):
    """A kernel value is NaN or infinite (an overflow, or a bug in the kernel)."""


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

    #: How much of this kernel's output the engine checks (``validate="auto"``, see
    #: :func:`validation_level`): ``"auto"`` (non-finite values always; symmetry and a
    #: PSD probe too unless the class ships with structkernels), ``"full"`` or
    #: ``"finite"`` (the author vouches for symmetry and PSD: tested elsewhere).
    output_validation: str = "auto"

    #: What to do when a value overflows, added to the error naming the pair.
    overflow_hint: str = (
        "a value beyond float64's range (1.8e308): scale the inputs or the kernel's "
        "parameters down"
    )

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
        :class:`~structkernels.Tree`, a bare string, one re-writing) is refused with a pointer
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
        """Gram matrix through :func:`structkernels.gram` (see there for ``options``)."""
        from structkernels.gram import gram

        return gram(self, X, Y, **options)

    def diag(self, X: Any) -> np.ndarray:
        """The vector of self-similarities ``[k(x, x) for x in X]``."""
        self.validate_params()
        d = np.asarray(self.diag_block(self.check_input(X)), dtype=np.float64)
        check_kernel_values(self, d, diagonal=True)
        return d

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
        if isinstance(self.scale, (bool, np.bool_)) or not isinstance(
            self.scale, (int, float, np.integer, np.floating)
        ):
            raise TypeError(f"ScaledKernel.scale must be a number, got {self.scale!r}")
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
    for d in (dx, dy):
        # an infinite self-similarity would give a zero scale and NaN cells (inf * 0)
        check_finite(d, "normalisation", ("row",),
                     hint="its self-similarity k(x, x) is not finite; normalisation cannot "
                     "fix an overflow")
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
    out = np.asarray(K, dtype=np.float64) * (sx[:, None] * sy[None, :])
    check_normalized(out)
    return out


def check_normalized(block: np.ndarray, offsets: Sequence[int] = (0, 0)) -> None:
    """Refuse a non-finite normalised value ``K[i, j] / sqrt(k(x_i, x_i) k(y_j, y_j))``.

    With finite inputs this happens only when ``|K[i, j]|`` is far above
    ``sqrt(k(x_i, x_i) k(y_j, y_j))``, which a positive semi-definite kernel never
    gives (Cauchy-Schwarz).
    """
    check_finite(
        block, "normalisation: K[i, j] / sqrt(k(x_i, x_i) k(y_j, y_j))", ("row", "column"),
        offsets=offsets,
        hint="|k(x, y)| far exceeds sqrt(k(x, x) k(y, y)): the kernel is not positive "
        "semi-definite",
    )


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


# ------------------------------------------------------------ output checks
def _kernel_name(kernel: Any) -> str:
    """``PathKernel(lam=0.9)``-like name of a kernel for error messages (short)."""
    try:
        text = repr(kernel)
    except Exception:  # a broken repr must not hide the real error
        text = type(kernel).__name__
    return text if len(text) <= 80 else type(kernel).__name__


def component_kernels(kernel: Any) -> list:
    """``kernel`` and every kernel among its parameters, at any depth, in pre-order.

    Parameters are visited in sorted name order, so the list (and anything
    keyed on it, such as a cache key's code version) does not depend on how
    a kernel stores them.

    Examples
    --------
    >>> from structkernels import Normalized, kernel
    >>> [type(k).__name__ for k in component_kernels(Normalized(kernel("rbf") + kernel("linear")))]
    ['Normalized', 'SumKernel', 'RBFKernel', 'LinearKernel']
    """
    found: list = []
    todo: list = [kernel]
    seen: set[int] = set()
    while todo:
        k = todo.pop()
        if id(k) in seen:
            continue
        seen.add(id(k))
        found.append(k)
        try:
            params = k.get_params(deep=False) if isinstance(k, BaseEstimator) else {}
        except Exception:
            params = {}
        todo.extend(reversed([v for _, v in sorted(params.items()) if isinstance(v, Kernel)]))
    return found


def _ships_with_structkernels(cls: type) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return module == "structkernels" or module.startswith("structkernels.")


def validation_level(kernel: Any, validate: bool | str = "auto") -> str:
    """How much of ``kernel``'s output to check: ``"full"`` or ``"finite"``.

    Non-finite values are always refused.  ``"full"`` adds a symmetry and
    positive-semi-definiteness probe on a small sample (:func:`probe_kernel`).

    Parameters
    ----------
    kernel : Kernel
    validate : {"auto", True, False}
        ``True``: full; ``False``: finite only; ``"auto"``: each kernel class's
        ``output_validation`` decides, and ``"auto"`` there means full for kernels not
        shipped with structkernels (plugins, user subclasses) and finite only for
        the built-in ones (tested with by-definition oracles and property tests).
        A combination (sum, product, normalised, nonstationary, ...) is checked
        fully when any kernel in it is.

    Examples
    --------
    >>> from structkernels import kernel
    >>> validation_level(kernel("linear")), validation_level(kernel("linear"), True)
    ('finite', 'full')
    """
    if isinstance(validate, str):
        if validate != "auto":
            raise ValueError(f"validate must be 'auto', True or False, got {validate!r}")
    elif isinstance(validate, (bool, np.bool_)):
        return "full" if validate else "finite"
    else:
        raise TypeError(f"validate must be 'auto', True or False, got {validate!r}")
    for k in component_kernels(kernel):
        own = getattr(k, "output_validation", "auto")
        if own == "full":
            return "full"
        if own == "finite":
            continue
        if not _ships_with_structkernels(type(k)):
            return "full"
    return "finite"


def check_kernel_values(
    kernel: Any,
    values: Any,
    *,
    offsets: Sequence[int] = (0, 0),
    names: Sequence[str] = ("X", "Y"),
    diagonal: bool = False,
    where: str | None = None,
    rows: Any = None,
    cols: Any = None,
) -> None:
    """Refuse NaN or infinite kernel values, naming the kernel, the pair and the value.

    One vectorised ``np.isfinite(values).all()``; the bad entry is located only
    on failure.  ``values`` is a block ``K[i, j] = k(X[i], Y[j])`` placed at
    ``offsets`` in the full matrix, or with ``diagonal`` a vector of
    self-similarities ``k(X[i], X[i])``.  A block of scattered structures
    names them by their positions instead: ``rows[i]`` (and ``cols[j]``) is
    the position of the block's row ``i`` (column ``j``); a vector with
    ``cols`` holds pairs, ``values[i] = k(X[rows[i]], Y[cols[i]])``.

    Raises
    ------
    NonFiniteKernelValueError
        e.g. ``LinearKernel(): k(X[3], X[3]) = inf (overflow); ...``.
    """
    a = np.asarray(values)
    if a.dtype.kind not in "fc" or np.isfinite(a).all():
        return
    idx, value = first_nonfinite(a)
    r, c = idx[0], (idx[0] if a.ndim == 1 else idx[1])
    paired = a.ndim == 1 and not diagonal and cols is not None
    i = int(rows[r]) if rows is not None else r + (offsets[0] if offsets else 0)
    if (diagonal or a.ndim == 1) and not paired:
        j = i
    elif cols is not None:
        j = int(cols[c])
    else:
        j = c + offsets[1]
    if where is not None:
        pass  # the caller names the pair (one value)
    elif (diagonal or (a.ndim == 1 and not paired) or names[0] == names[1]) and i == j:
        where = f"row {i}: k(x, x)" if names[0] == "X" else f"row {i} of {names[0]}: k(x, x)"
    else:
        where = f"k({names[0]}[{i}], {names[1]}[{j}])"
    idx = (i, j)
    hint = _overflow_hint(kernel) if np.isinf(value) else (
        "a kernel value must be a finite number (a bug in the kernel, or NaN in its input)"
    )
    message = f"{_kernel_name(kernel)}: {where} = {describe_nonfinite(value)}"
    if hint:
        message += f"; {hint}"
    raise NonFiniteKernelValueError(message, idx, value)


def _overflow_hint(kernel: Any) -> str:
    """The most specific ``overflow_hint`` of ``kernel`` or of a kernel inside it."""
    for k in component_kernels(kernel):
        hint = getattr(type(k), "overflow_hint", "")
        if hint and hint != Kernel.overflow_hint:
            return hint
    return getattr(kernel, "overflow_hint", "")


#: largest sample of :func:`probe_kernel`
PROBE_SIZE = 64
#: relative tolerances of the probe: ``|K - K^T| <= SYM_RTOL max|K|``,
#: ``min eig >= -PSD_RTOL trace``
SYM_RTOL = 1e-6
PSD_RTOL = 1e-6


def probe_size(n: int, n_evaluations: int) -> int:
    """Structures in the probe of a Gram costing ``n_evaluations``: at most
    :data:`PROBE_SIZE`, about 5% of the Gram's evaluations (at least 8), at most ``n``."""
    s = int(np.sqrt(max(n_evaluations, 0) / 20.0))
    return int(min(n, PROBE_SIZE, max(8, s)))


def probe_kernel(kernel: Any, X: Any, size: int | None = None, *, random_state: int = 0) -> int:
    """Check ``kernel`` on a seeded sample of ``X``: finite, symmetric, positive semi-definite.

    ``X`` is a checked input (``kernel.check_input(X)``).  A sample of ``size``
    structures (default :data:`PROBE_SIZE`, at most ``len(X)``) is drawn with
    ``random_state`` and its full Gram ``A`` computed with ``gram_block`` (both
    orders of every pair).  Refused, with :class:`KernelOutputError` naming the
    kernel, the pair and the values, when

    * a value is NaN or infinite;
    * ``|A - A^T| > 1e-6 max|A|`` (``k(x, y) != k(y, x)``);
    * a self-similarity is negative, or ``|k(x, y)|^2 > k(x, x) k(y, y)``
      beyond round-off (a 2 x 2 minor that is not PSD);
    * the smallest eigenvalue of ``A`` is below ``-1e-6 trace(A)``.

    Returns the number of kernel evaluations made (``size ** 2``).

    Examples
    --------
    >>> from structkernels import Kernel
    >>> class Difference(Kernel):
    ...     def pair(self, x, y):
    ...         return float(x - y)
    >>> probe_kernel(Difference(), [0.0, 1.0, 2.0])
    Traceback (most recent call last):
    ...
    structkernels.kernel.KernelOutputError: Difference(): not symmetric: k(X[0], X[2]) = -2.0 but k(X[2], X[0]) = 2.0; a kernel must have k(x, y) = k(y, x) (pass validate=False to skip this check)
    """
    n = len(X)
    s = min(n, PROBE_SIZE if size is None else int(size))
    if s < 1:
        return 0
    if s < n:
        idx = np.sort(np.random.RandomState(random_state).choice(n, s, replace=False))
    else:
        idx = np.arange(n)
    S = take(X, idx)
    A = np.asarray(kernel.gram_block(S, S), dtype=np.float64)
    if A.shape != (s, s):
        raise KernelOutputError(
            f"{_kernel_name(kernel)}: a Gram block of {s} x {s} structures has shape {A.shape}"
        )
    check_gram_sample(kernel, A, idx)
    return s * s


def probe_when_asked(kernel: Any, X: Any, n_evaluations: int, validate: bool | str = "auto"
                     ) -> None:
    """:func:`probe_kernel` on ``X`` when :func:`validation_level` says ``"full"``.

    The entry point of every consumer (the Gram engine, k-NN graphs, the
    classifier): the sample is sized by :func:`probe_size` from the
    ``n_evaluations`` the work will cost.
    """
    if len(X) and validation_level(kernel, validate) == "full":
        probe_kernel(kernel, X, probe_size(len(X), n_evaluations))


def check_gram_sample(kernel: Any, A: np.ndarray, idx: Any = None) -> None:
    """The checks of :func:`probe_kernel` on a square Gram ``A`` of structures ``idx``.

    For callers that already hold such a matrix (a diagonal Gram tile), at no
    extra kernel evaluation.  ``idx`` (default ``0 .. len(A) - 1``) names the
    structures in the messages.
    """
    A = np.asarray(A, dtype=np.float64)
    s = A.shape[0]
    idx = np.arange(s) if idx is None else np.asarray(idx)
    name = _kernel_name(kernel)
    skip = " (pass validate=False to skip this check)"
    bad = ~np.isfinite(A)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        check_kernel_values(kernel, A[i : i + 1, j : j + 1], offsets=(int(idx[i]), int(idx[j])),
                            names=("X", "X"))
    scale = float(np.abs(A).max()) if A.size else 0.0
    asym = np.abs(A - A.T)
    if asym.size and float(asym.max()) > SYM_RTOL * scale:
        i, j = np.unravel_index(int(np.argmax(asym)), asym.shape)
        i, j = min(i, j), max(i, j)
        raise KernelOutputError(
            f"{name}: not symmetric: k(X[{idx[i]}], X[{idx[j]}]) = {float(A[i, j])!r} but "
            f"k(X[{idx[j]}], X[{idx[i]}]) = {float(A[j, i])!r}; a kernel must have k(x, y) = k(y, x)"
            + skip
        )
    d = np.diag(A)
    tol = PSD_RTOL * max(scale, np.finfo(np.float64).tiny)
    if (d < -tol).any():
        i = int(np.flatnonzero(d < -tol)[0])
        raise KernelOutputError(
            f"{name}: not positive semi-definite: row {idx[i]}: k(x, x) = {float(d[i])!r} < 0" + skip
        )
    dpos = np.maximum(d, 0.0)
    excess = A * A - np.outer(dpos, dpos)
    cs_tol = 2 * PSD_RTOL * max(scale * scale, np.finfo(np.float64).tiny)
    if (excess > cs_tol).any():
        i, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
        raise KernelOutputError(
            f"{name}: not positive semi-definite: |k(X[{idx[i]}], X[{idx[j]}])| = "
            f"{abs(float(A[i, j]))!r} "
            f"exceeds sqrt(k(x, x) k(y, y)) = {float(np.sqrt(dpos[i] * dpos[j]))!r} "
            "(Cauchy-Schwarz)" + skip
        )
    if s > 2:
        w = np.linalg.eigvalsh((A + A.T) / 2.0)
        trace = float(np.abs(w).sum())
        if float(w[0]) < -PSD_RTOL * max(trace, np.finfo(np.float64).tiny):
            raise KernelOutputError(
                f"{name}: not positive semi-definite: the Gram matrix of {s} sampled "
                f"structures has eigenvalue {float(w[0]):.6g} (largest {float(w[-1]):.6g})"
                + skip
            )
