"""Checks of kernel values: finiteness, symmetry, positive semi-definiteness, normalisation."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.structures import take
from structkernels.utils import (
    NonFiniteError,
    StructkernelsError,
    StructkernelsWarning,
    check_finite,
    describe_nonfinite,
    first_nonfinite,
)

#: largest sample of :func:`probe_kernel`
PROBE_SIZE = 64
#: relative tolerances of the probe: ``|K - K^T| <= SYM_RTOL max|K|``,
#: ``min eig >= -PSD_RTOL trace``
SYM_RTOL = PSD_RTOL = 1e-6

#: The overflow hint of a kernel that gives none of its own (``Kernel.overflow_hint``).
OVERFLOW_HINT = (
    "a value beyond float64's range (1.8e308): scale the inputs or the kernel's "
    "parameters down"
)


def _is_kernel(obj: Any) -> bool:
    """A kernel object as the engine sees one: ``get_params`` and ``gram_block``."""
    return not isinstance(obj, type) and all(
        callable(getattr(obj, name, None)) for name in ("get_params", "gram_block"))


class ApproximationWarning(StructkernelsWarning):
    """A low-rank kernel approximation is less accurate than its tolerance asks."""


class ZeroSelfSimilarityWarning(StructkernelsWarning):
    """Raised when normalisation meets a structure whose self-similarity is 0."""


class KernelOutputError(StructkernelsError, ValueError):
    """A kernel returned something that is not a kernel value: NaN or infinite
    (:class:`NonFiniteKernelValueError`), not symmetric, or not positive semi-definite on a
    sample (:func:`probe_kernel`); the message names the kernel, the pair and the values."""


class NonFiniteKernelValueError(KernelOutputError, NonFiniteError):
    """A kernel value is NaN or infinite (an overflow, or a bug in the kernel)."""


def diagonal_scales(diag: np.ndarray) -> np.ndarray:
    """``1 / sqrt(diag)``, 0 where a self-similarity is <= 0; a non-finite one is refused.

    Examples
    --------
    >>> diagonal_scales([4.0, 0.0]).tolist()
    [0.5, 0.0]
    """
    d = np.asarray(diag, dtype=np.float64)
    # an infinite self-similarity would give a zero scale and NaN cells (inf * 0)
    check_finite(d, "normalisation", ("row",),
                 hint="its self-similarity k(x, x) is not finite; normalisation cannot "
                 "fix an overflow")
    s = np.zeros_like(d)
    ok = d > 0
    s[ok] = 1.0 / np.sqrt(d[ok])
    return s


def normalization_scales(
    diag_x: np.ndarray, diag_y: np.ndarray, *, warn: bool = True, stacklevel: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """``(1 / sqrt(diag_x), 1 / sqrt(diag_y))``; a zero (or negative, from round-off)
    self-similarity gives a zero scale and a :class:`ZeroSelfSimilarityWarning`."""
    sx, sy = diagonal_scales(diag_x), diagonal_scales(diag_y)
    bad = int((sx == 0).sum() + (sy == 0).sum())
    if bad and warn:
        warnings.warn(
            f"normalisation met {bad} structure(s) with self-similarity <= 0; "
            "their normalised similarities are set to 0",
            ZeroSelfSimilarityWarning,
            stacklevel=stacklevel + 1,
        )
    return sx, sy


def normalize_gram(
    K: np.ndarray, diag_x: np.ndarray, diag_y: np.ndarray | None = None, *, warn: bool = True,
    inplace: bool = False,
) -> np.ndarray:
    """``K[i, j] / sqrt(diag_x[i] * diag_y[j])``, 0 where a self-similarity is 0.

    A new float64 array, or with ``inplace`` ``K`` itself, normalised in row blocks (a
    memory map too); a self-similarity <= 0 gives a :class:`ZeroSelfSimilarityWarning`."""
    diag_y = diag_x if diag_y is None else diag_y
    sx, sy = normalization_scales(diag_x, diag_y, warn=warn, stacklevel=3)
    # the scale s_x[i] s_y[j] is formed first, so a symmetric K stays exactly symmetric
    if not inplace:
        out = np.asarray(K, dtype=np.float64) * (sx[:, None] * sy[None, :])
        check_normalized(out)
        return out
    rows = max(1, (1 << 25) // max(1, 8 * K.shape[1]))
    for r0 in range(0, K.shape[0], rows):
        block, _ = normalize_block(K[r0:r0 + rows], (r0, 0), (sx, sy))
        K[r0:r0 + rows] = block
    return K


#: ``scales`` of a diagonal block of a symmetric Gram normalised as it is written: its own
#: diagonal gives them
OWN_DIAGONAL = "own diagonal"


def normalize_block(block: np.ndarray, offsets: Sequence[int], scales: Any
                    ) -> tuple[np.ndarray, np.ndarray | None]:
    """A raw block at ``offsets`` normalised cell for cell as :func:`normalize_gram` does:
    ``scales`` None (as it is), ``(sx, sy)`` or :data:`OWN_DIAGONAL` (a diagonal block of a
    symmetric Gram, scaled by its own diagonal, which is returned too)."""
    if scales is None:
        return block, None
    r0, c0 = offsets
    d = None
    if isinstance(scales, str):
        d = np.diag(block).copy()
        sx = sy = diagonal_scales(d)
        block = block * (sx[:, None] * sy[None, :])
    else:
        sx, sy = scales
        n, m = block.shape
        block = block * (sx[r0:r0 + n, None] * sy[None, c0:c0 + m])
    check_normalized(block, offsets=(r0, c0))
    return block, d


def check_normalized(block: np.ndarray, offsets: Sequence[int] = (0, 0)) -> None:
    """Refuse a non-finite normalised value: with finite inputs, ``|K[i, j]|`` far above
    ``sqrt(k(x_i, x_i) k(y_j, y_j))``, which a PSD kernel never gives (Cauchy-Schwarz)."""
    check_finite(
        block, "normalisation: K[i, j] / sqrt(k(x_i, x_i) k(y_j, y_j))", ("row", "column"),
        offsets=offsets,
        hint="|k(x, y)| far exceeds sqrt(k(x, x) k(y, y)): the kernel is not positive "
        "semi-definite",
    )


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
            params = k.get_params(deep=False)
        except Exception:
            params = {}
        todo.extend(reversed([v for _, v in sorted(params.items()) if _is_kernel(v)]))
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
        shipped with structkernels (plugins, user subclasses) and finite only for the
        built-in ones (tested with by-definition oracles and property tests).  A
        combination is checked fully when any kernel in it is.

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

    ``values`` is a block ``K[i, j] = k(X[i], Y[j])`` at ``offsets``, or with ``diagonal``
    self-similarities; scattered structures are named by their positions ``rows[i]`` (and
    ``cols[j]``); a vector with ``cols`` holds pairs ``k(X[rows[i]], Y[cols[i]])``.

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
    if where is not None:  # the caller names the pair (one value)
        pass
    elif (diagonal or (a.ndim == 1 and not paired) or names[0] == names[1]) and i == j:
        where = f"row {i}: k(x, x)" if names[0] == "X" else f"row {i} of {names[0]}: k(x, x)"
    else:
        where = f"k({names[0]}[{i}], {names[1]}[{j}])"
    hint = _overflow_hint(kernel) if np.isinf(value) else (
        "a kernel value must be a finite number (a bug in the kernel, or NaN in its input)")
    message = f"{_kernel_name(kernel)}: {where} = {describe_nonfinite(value)}"
    if hint:
        message += f"; {hint}"
    raise NonFiniteKernelValueError(message, (i, j), value)


def _overflow_hint(kernel: Any) -> str:
    """The most specific ``overflow_hint`` of ``kernel`` or of a kernel inside it."""
    for k in component_kernels(kernel):
        hint = getattr(type(k), "overflow_hint", "")
        if hint and hint != OVERFLOW_HINT:
            return hint
    return getattr(kernel, "overflow_hint", "")


def probe_size(n: int, n_evaluations: int) -> int:
    """Structures in the probe of a Gram costing ``n_evaluations``: about 5% of them (at
    least 8, at most :data:`PROBE_SIZE` and ``n``)."""
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
    structkernels.engine.checks.KernelOutputError: Difference(): not symmetric: k(X[0], X[2]) = -2.0 but k(X[2], X[0]) = 2.0; a kernel must have k(x, y) = k(y, x) (pass validate=False to skip this check)
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
    """:func:`probe_kernel` on ``X`` when :func:`validation_level` says ``"full"``, its
    sample sized by :func:`probe_size` from the ``n_evaluations`` the work will cost."""
    if len(X) and validation_level(kernel, validate) == "full":
        probe_kernel(kernel, X, probe_size(len(X), n_evaluations))


def check_gram_sample(kernel: Any, A: np.ndarray, idx: Any = None) -> None:
    """The checks of :func:`probe_kernel` on a square Gram ``A`` already held (a diagonal
    tile) of structures ``idx`` (default ``0 .. len(A) - 1``, named in the messages)."""
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
