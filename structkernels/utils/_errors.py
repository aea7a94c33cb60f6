"""The root of every exception and warning structkernels raises."""

from __future__ import annotations

__all__ = ["StructkernelsError", "StructkernelsWarning"]


class StructkernelsError(Exception):
    """The root of the exceptions of structkernels and of its plugins.

    Subclasses keep a built-in base beside it: ``class GraphFormatError(StructkernelsError,
    ValueError)``.

    Examples
    --------
    >>> from structkernels.utils import NpyFormatError
    >>> issubclass(NpyFormatError, StructkernelsError), issubclass(NpyFormatError, ValueError)
    (True, True)
    """


class StructkernelsWarning(StructkernelsError, UserWarning):
    """The root of the warnings of structkernels and of its plugins (a ``UserWarning``).

    Examples
    --------
    >>> issubclass(StructkernelsWarning, UserWarning)
    True
    """
