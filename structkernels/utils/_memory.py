"""Giving freed memory back to the operating system."""

from __future__ import annotations

import ctypes
import gc

__all__ = ["release_free_memory"]


def release_free_memory() -> bool:
    """Collect garbage and ask the C allocator to return its free memory to the system.

    After a parse that built and dropped many objects, glibc keeps the freed heap
    for later use and the process's resident size stays at its peak; ``malloc_trim(0)``
    gives it back.  Returns whether the allocator was asked (False where the C library
    has no ``malloc_trim``, e.g. macOS or musl).

    Examples
    --------
    >>> from structkernels.utils import release_free_memory
    >>> release_free_memory() in (True, False)
    True
    """
    gc.collect()
    try:  # the symbols already loaded in this process (the C library among them)
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
    return True
