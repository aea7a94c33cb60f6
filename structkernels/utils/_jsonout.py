"""JSON output that is always valid JSON: a non-finite number is an error naming where it is
(``json.dumps(allow_nan=False)`` names neither the key nor the value).
"""

from __future__ import annotations

import json
import math
from typing import Any

from structkernels.utils._numeric import NonFiniteError

__all__ = ["dumps_finite", "find_nonfinite", "check_header"]


def find_nonfinite(obj: Any, where: str = "") -> tuple[str, float] | None:
    """``(key path, value)`` of the first NaN or infinity in nested dicts and lists, or None.

    Iterative: any nesting depth.

    Examples
    --------
    >>> find_nonfinite({"a": [1.0, float("nan")]})
    ("['a'][1]", nan)
    >>> find_nonfinite({"a": 1}) is None
    True
    """
    stack: list[tuple[str, Any]] = [(where, obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                return path, value
        elif isinstance(value, dict):
            items = [(f"{path}[{k!r}]", v) for k, v in value.items()]
            stack.extend(reversed(items))
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

    Parameters
    ----------
    obj : JSON-ready value
    what : str
        What is being written, for the message (``"the HSIC result"``).
    **kwargs
        Passed to :func:`json.dumps` (``indent``, ``separators``, ...).

    Examples
    --------
    >>> from structkernels.utils import dumps_finite
    >>> dumps_finite({"statistic": 0.5})
    '{"statistic": 0.5}'
    >>> try:
    ...     dumps_finite({"statistic": float("nan")}, what="the HSIC result")
    ... except ValueError as exc:
    ...     print(exc)
    the HSIC result is not finite: ['statistic'] is nan (NaN and infinity are not JSON numbers)
    """
    kwargs.pop("allow_nan", None)
    bad = find_nonfinite(obj)
    if bad is not None:
        path, value = bad
        raise NonFiniteError(f"{what} is not finite: {path or 'the value'} is {value!r} "
                             "(NaN and infinity are not JSON numbers)", (), value)
    return json.dumps(obj, allow_nan=False, **kwargs)


def check_header(
    doc: Any,
    *,
    name: str,
    format: str,
    versions: tuple[int, ...],
    what: str,
    error: type[Exception] = ValueError,
) -> int:
    """Check a data file's ``"format"`` and ``"version"``; returns the version.

    Every versioned file structkernels reads (train-npk models, σ files, PHSIC
    models) starts with these two keys.  A document of another format, or a
    version this release does not read, raises ``error`` with one line naming
    the file ``name``.

    Examples
    --------
    >>> check_header({"format": "f", "version": 2}, name="m.json", format="f",
    ...              versions=(1, 2), what="model")
    2
    >>> check_header({"format": "f", "version": 3}, name="m.json", format="f",
    ...              versions=(1, 2), what="model")
    Traceback (most recent call last):
    ...
    ValueError: m.json: model version 3 is not supported (this release reads 1, 2)
    """
    if not isinstance(doc, dict) or doc.get("format") != format:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise error(f"{name}: not a {what} file (format {format!r} expected, got {got!r})")
    version = doc.get("version")
    if isinstance(version, bool) or version not in versions:
        raise error(f"{name}: {what} version {version!r} is not supported (this release reads "
                    f"{', '.join(map(str, versions))})")
    return int(version)
