"""The root of every exception and warning structkernels raises.

Each error class of the package and of its plugins derives from
:class:`StructkernelsError` *and* keeps its built-in base (``ValueError``,
``OSError``, ``MemoryError``, ...), so a caller may catch everything the package
refuses with one ``except StructkernelsError`` or keep catching the built-in
type as before.  Warning classes derive from :class:`StructkernelsWarning`, a
``UserWarning`` under the same root.

Nothing here imports another package of structkernels.
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
