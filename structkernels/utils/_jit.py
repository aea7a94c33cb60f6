"""numba's ``njit`` with its on-disk cache in the user's cache folder.

numba alone writes compiled kernels beside the source files (or, where it cannot, falls
back to them); here they go to one place per user, writable on a read-only install.  numba
keys each entry by the source file's path, its modification time and the function, so a
changed source is compiled again, never served stale.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numba
from numba.core import config

from structkernels.utils._cache import cache_writes_disabled, user_cache_dir

__all__ = ["njit", "numba_cache_dir"]


def numba_cache_dir() -> str:
    """Where compiled kernels are cached: ``$NUMBA_CACHE_DIR`` if the user set one, else
    ``user_cache_dir("numba")``."""
    return config.CACHE_DIR or os.environ.get("NUMBA_CACHE_DIR") or os.fspath(
        user_cache_dir("numba"))


def _writable(folder: str) -> bool:
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    return os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)


def _save_softly(dispatcher: Any) -> None:
    """A failed write of numba's cache (a full disk: numba lets the ``OSError`` escape into
    the call) turns the function's cache off instead."""
    cache = getattr(dispatcher, "_cache", None)
    save, disable = getattr(cache, "save_overload", None), getattr(cache, "disable", None)
    if not callable(save) or not callable(disable):
        return

    def save_overload(sig: Any, data: Any) -> None:
        try:
            save(sig, data)
        except OSError:
            disable()

    cache.save_overload = save_overload


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit``; with ``cache=True`` the cache is :func:`numba_cache_dir`.

    ``numba.config.CACHE_DIR`` is changed only while the function is decorated, so other
    numba code of the process keeps its own.  With ``$STRUCTKERNELS_NO_CACHE`` set, or a
    cache folder that cannot be written, nothing is written.

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
        folder = None if cache_writes_disabled() else numba_cache_dir()
        if folder is None or not _writable(folder):
            return numba.njit(*args, **{**options, "cache": False})(fn)
        own = config.CACHE_DIR
        config.CACHE_DIR = folder
        try:
            dispatcher = numba.njit(*args, **options)(fn)
        finally:
            config.CACHE_DIR = own
        _save_softly(dispatcher)
        return dispatcher

    return decorate
