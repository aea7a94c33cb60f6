"""The root of every exception and warning structkernels raises.

Each error class derives from :class:`StructkernelsError` *and* keeps its built-in base, so a
caller may catch either; warning classes derive from :class:`StructkernelsWarning`.
"""

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
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("careful", StructkernelsWarning)
    >>> issubclass(caught[0].category, UserWarning)
    True
    """
