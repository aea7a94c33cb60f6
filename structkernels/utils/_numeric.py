"""Finite numbers only: refuse non-finite values, naming the first bad entry, in arrays and
in JSON output (``json.dumps(allow_nan=False)`` names neither the key nor the value).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.utils._errors import StructkernelsError

__all__ = ["NonFiniteError", "check_finite", "first_nonfinite", "describe_nonfinite",
           "dumps_finite", "check_int"]


class NonFiniteError(StructkernelsError, ValueError):
    """A computed value is NaN or infinite: ``index``, the position of the first bad entry
    (offsets applied), and ``value`` (``nan``, ``inf`` or ``-inf``)."""

    def __init__(self, message: str, index: tuple[int, ...] = (), value: float = float("nan")):
        super().__init__(message)
        self.index = tuple(int(i) for i in index)
        self.value = float(value)

    def __reduce__(self):
        # raised in worker processes too: keep the position and the value across pickling
        return (type(self), (str(self), self.index, self.value))


def first_nonfinite(values: Any) -> tuple[tuple[int, ...], float] | None:
    """``(index, value)`` of the first non-finite entry (row-major order), or None.

    Examples
    --------
    >>> import numpy as np
    >>> first_nonfinite(np.array([[1.0, 2.0], [np.inf, np.nan]]))
    ((1, 0), inf)
    >>> first_nonfinite(np.ones(3)) is None
    True
    """
    a = np.asarray(values)
    if a.dtype.kind not in "fc":  # integers and bools are always finite
        return None
    if np.isfinite(a).all():
        return None
    flat = int(np.argmin(np.isfinite(a).ravel()))
    idx = np.unravel_index(flat, a.shape) if a.ndim else ()
    return tuple(int(i) for i in idx), float(a[idx] if a.ndim else a)


def describe_nonfinite(value: float) -> str:
    """``"inf (overflow)"``, ``"-inf (overflow)"`` or ``"nan"``."""
    return "nan" if np.isnan(value) else f"{value} (overflow)"


def check_int(value: Any, what: str, low: int, *, allow_none: bool = False) -> None:
    """Refuse ``value`` unless it is an int ``>= low`` (or None with ``allow_none``); bools are
    not ints here.  The ``ValueError`` reads ``"<what> must be an int >= <low>, got <value>"``.

    Examples
    --------
    >>> check_int(3, "KernelLSH.n_bits", 1)
    >>> check_int(0, "KernelLSH.n_bits", 1)
    Traceback (most recent call last):
    ...
    ValueError: KernelLSH.n_bits must be an int >= 1, got 0
    """
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{what} must be an int >= {low}, got {value!r}")


def check_finite(
    values: Any,
    what: str,
    index_names: Sequence[str] = ("row", "column"),
    *,
    offsets: Sequence[int] = (),
    hint: str = "",
    error: type[NonFiniteError] = NonFiniteError,
) -> None:
    """Raise ``error`` naming the first NaN/infinite entry of ``values``; else return.

    The message starts with ``what`` (``"linear kernel Gram"``), names the position with a
    name per axis (``index_names``) after adding ``offsets`` (a block's place in a larger
    matrix), and ends with ``hint``, what to do about it.  Integer arrays always pass.

    Examples
    --------
    >>> import numpy as np
    >>> check_finite(np.array([[1.0, 2.0]]), "K")
    >>> check_finite(np.array([[1.0, np.inf]]), "K", offsets=(10, 20))
    Traceback (most recent call last):
    ...
    structkernels.utils._numeric.NonFiniteError: K: row 10, column 21 is inf (overflow)
    """
    bad = first_nonfinite(values)
    if bad is None:
        return
    idx, value = bad
    idx = tuple(i + (offsets[a] if a < len(offsets) else 0) for a, i in enumerate(idx))
    where = ", ".join(
        f"{index_names[a] if a < len(index_names) else f'axis {a}'} {i}" for a, i in enumerate(idx))
    message = f"{what}{': ' + where if where else ''} is {describe_nonfinite(value)}"
    if hint:
        message += f"; {hint}"
    raise error(message, idx, value)


def _find_nonfinite(obj: Any, where: str = "") -> tuple[str, float] | None:
    """``(key path, value)`` of the first NaN or infinity in nested dicts and lists, or None
    (iterative: any nesting depth)."""
    stack: list[tuple[str, Any]] = [(where, obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                return path, value
        elif isinstance(value, dict):
            stack.extend(reversed([(f"{path}[{k!r}]", v) for k, v in value.items()]))
        elif isinstance(value, (list, tuple)):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(value)]))
        elif hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "fc":
            try:
                flat = [float(v) for v in value.ravel()] if hasattr(value, "ravel") else [float(value)]
            except (TypeError, ValueError):
                continue
            for i, v in enumerate(flat):
                if not math.isfinite(v):
                    return (f"{path}[{i}]" if getattr(value, "ndim", 0) else path), v
    return None


def dumps_finite(obj: Any, *, what: str = "the output", **kwargs: Any) -> str:
    """:func:`json.dumps` with ``allow_nan=False``; a NaN or infinity raises
    :class:`~structkernels.utils.NonFiniteError` (a ``ValueError``) naming its key path.

    ``what`` names what is written (``"the HSIC result"``); ``kwargs`` go to
    :func:`json.dumps`.

    Examples
    --------
    >>> from structkernels.utils import dumps_finite
    >>> try:
    ...     dumps_finite({"statistic": float("nan")}, what="the HSIC result")
    ... except ValueError as exc:
    ...     print(exc)
    the HSIC result is not finite: ['statistic'] is nan (NaN and infinity are not JSON numbers)
    """
    kwargs.pop("allow_nan", None)
    bad = _find_nonfinite(obj)
    if bad is not None:
        path, value = bad
        raise NonFiniteError(f"{what} is not finite: {path or 'the value'} is {value!r} "
                             "(NaN and infinity are not JSON numbers)", (), value)
    return json.dumps(obj, allow_nan=False, **kwargs)
