"""Memory: how much one computation may take (:func:`memory_budget`, checked before
allocating in one piece), giving freed memory back to the operating system, and keeping
long-lived objects out of the cyclic garbage collector's scans.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import re
from collections.abc import Iterator

__all__ = ["MEMORY_BUDGET_ENV", "memory_budget", "format_gib", "parse_size", "release_free_memory",
           "long_lived"]

#: Environment variable holding the memory budget of one computation
#: (bytes, or a number with a K, M, G or T suffix, e.g. ``"16G"``).
MEMORY_BUDGET_ENV = "STRUCTKERNELS_MEMORY_BUDGET"

_CGROUP_ROOT = "/sys/fs/cgroup"
_PROC_CGROUP = "/proc/self/cgroup"
_UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a number near 2**63
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """Bytes of ``text``: bytes, or a number with K, M, G or T in binary units (``"2G"``,
    ``"1.5k"``, ``"500MiB"``); None when it is not a size."""
    m = _SIZE.match(text)
    return None if m is None else int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            value = int(fh.read().strip())
    except (OSError, UnicodeDecodeError, ValueError):  # "max" (cgroup v2): no limit
        return None
    return None if value >= _UNLIMITED else value


def _pages_bytes(name: str) -> int | None:
    """``os.sysconf(name)`` pages in bytes (``"SC_PHYS_PAGES"``: physical memory)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf(name))
    except (AttributeError, ValueError, OSError):
        return None


def _available_bytes() -> int | None:
    """Memory available to a new allocation now (``MemAvailable``), where known."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    return _pages_bytes("SC_AVPHYS_PAGES")


def _rlimit_room() -> int | None:
    """Address space left under the soft ``RLIMIT_AS`` (None: no limit)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = 0
    with contextlib.suppress(OSError, ValueError, IndexError, AttributeError):
        with open("/proc/self/statm", encoding="ascii") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    return max(int(soft) - used, 0)


def _cgroup_room() -> int | None:
    """Memory left under this process's cgroup limit (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``; None: no limit found)."""
    v1 = v2 = ""
    with contextlib.suppress(OSError):
        with open(_PROC_CGROUP, encoding="utf-8") as fh:
            for line in fh:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) != 3:
                    continue
                if parts[0] == "0" and parts[1] == "":
                    v2 = parts[2].lstrip("/")
                elif "memory" in parts[1].split(","):
                    v1 = parts[2].lstrip("/")
    rooms = []
    mem = os.path.join(_CGROUP_ROOT, "memory")
    for root, own, limit_file, used_file in (
            (_CGROUP_ROOT, v2, "memory.max", "memory.current"),
            (mem, v1, "memory.limit_in_bytes", "memory.usage_in_bytes")):
        # the process's own cgroup, else the root of the mount (a container sees its own as root)
        for folder in dict.fromkeys((os.path.join(root, own), root)):
            limit = _read_int(os.path.join(folder, limit_file))
            if limit is not None:
                rooms.append(max(limit - (_read_int(os.path.join(folder, used_file)) or 0), 0))
                break
    return min(rooms) if rooms else None


def memory_budget() -> int:
    """Bytes one SRK computation may plan to use, read at each call.

    ``$STRUCTKERNELS_MEMORY_BUDGET`` if set (``"8G"``, ``"512M"``, bytes).  Otherwise half
    of the smallest of: the physical memory, the memory available now, the address space
    left under the soft ``RLIMIT_AS`` (``ulimit -v``), and the memory left under this
    process's cgroup limit (containers, batch schedulers); 8 GiB where none is known.

    Examples
    --------
    >>> memory_budget() > 0
    True
    """
    value = os.environ.get(MEMORY_BUDGET_ENV, "").strip()
    if value:
        budget = parse_size(value)
        if not budget:
            raise ValueError(
                f"{MEMORY_BUDGET_ENV}={value!r}: give a positive size such as 8G, 512M or bytes"
            )
        return budget
    readings = (_pages_bytes("SC_PHYS_PAGES"), _available_bytes(), _rlimit_room(),
                _cgroup_room())
    known = [v for v in readings if v is not None]
    if not known:
        return 8 << 30
    return max(min(known) // 2, 1)


def format_gib(n: float) -> str:
    return f"{n / (1 << 30):.3g} GiB"


@contextlib.contextmanager
def long_lived() -> Iterator[None]:
    """The objects alive on entry (a loaded model, say) left out of the cyclic garbage
    collector's scans until the block ends (:func:`gc.freeze`, then :func:`gc.unfreeze`;
    nothing where the process already keeps objects frozen): a stream of many small
    objects per batch runs the collector often, and each full pass would walk the model.

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
    """Collect garbage and ask the C allocator to return its free memory (``malloc_trim``:
    glibc keeps a freed heap, so the resident size stays at its peak); whether it was asked.

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
