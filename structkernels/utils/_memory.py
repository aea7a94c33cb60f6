"""Giving freed memory back to the operating system; keeping long-lived objects out of the
cyclic garbage collector's scans."""

from __future__ import annotations

import contextlib
import ctypes
import gc
from collections.abc import Iterator

__all__ = ["release_free_memory", "long_lived"]


@contextlib.contextmanager
def long_lived() -> Iterator[None]:
    """The objects alive on entry (a loaded model, say) left out of the cyclic garbage
    collector's scans until the block ends (:func:`gc.freeze`, then :func:`gc.unfreeze`).

    A stream that builds and drops many small objects per batch runs the collector often,
    and each full pass would walk the model again.  Where the process already keeps
    objects frozen, the block leaves that alone.

    Examples
    --------
    >>> import gc
    >>> from structkernels.utils import long_lived
    >>> with long_lived():
    ...     gc.get_freeze_count() > 0
    True
    >>> gc.get_freeze_count()
    0
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def release_free_memory() -> bool:
    """Collect garbage and ask the C allocator to return its free memory to the system.

    glibc keeps a freed heap for later use, so the resident size stays at its peak;
    ``malloc_trim(0)`` gives it back.  Returns whether the allocator was asked (False
    where the C library has no ``malloc_trim``).

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
