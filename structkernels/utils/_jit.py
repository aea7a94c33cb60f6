"""numba's ``njit`` with its on-disk cache in the user's cache folder.

``njit(cache=True)`` alone writes compiled kernels beside the source files (the
``__pycache__`` folders of an installed package; numba falls back to its own user folder
only where those are not writable).  Here the cache goes to
``user_cache_dir("numba")`` (:func:`structkernels.utils.user_cache_dir`): one place
per user, kept across runs and across re-installs of the same version, and writable
on a read-only install.  A ``$NUMBA_CACHE_DIR`` that the user set wins.  numba keys
each entry by the source file's path, its modification time and the function, so a
changed or re-installed source is compiled again, never served stale.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numba
from numba.core import config

from structkernels.utils._cache import user_cache_dir

__all__ = ["njit", "numba_cache_dir"]


def numba_cache_dir() -> str:
    """Where compiled kernels are cached: ``$NUMBA_CACHE_DIR`` if the user set one, else
    ``user_cache_dir("numba")``."""
    return config.CACHE_DIR or os.environ.get("NUMBA_CACHE_DIR") or os.fspath(
        user_cache_dir("numba"))


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit``; with ``cache=True`` the cache is :func:`numba_cache_dir`.

    numba fixes a function's cache folder when it is decorated, from
    ``numba.config.CACHE_DIR``; that setting is changed only while our function is
    decorated and put back after, so other numba code of the process keeps its own.

    Examples
    --------
    >>> from structkernels.utils import njit
    >>> @njit(nogil=True)
    ... def twice(x):
    ...     return 2 * x
    >>> twice(21)
    42
    """
    if args and callable(args[0]) and not options:
        return numba.njit(args[0])
    if not options.get("cache"):
        return numba.njit(*args, **options)

    def decorate(fn: Callable) -> Any:
        own = config.CACHE_DIR
        config.CACHE_DIR = numba_cache_dir()
        try:
            return numba.njit(*args, **options)(fn)
        finally:
            config.CACHE_DIR = own

    return decorate
