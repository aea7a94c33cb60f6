"""The size limit of the user's cache folder (``$STRUCTKERNELS_CACHE_LIMIT``) and the one
warning past it; the marker of a cache folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
import warnings
from pathlib import Path

from structkernels.utils._errors import StructkernelsError, StructkernelsWarning

__all__ = [
    "CACHE_KINDS",
    "CACHE_LIMIT_ENV",
    "CACHE_MARKER",
    "DEFAULT_CACHE_LIMIT",
    "CacheLimitError",
    "CacheSizeWarning",
    "cache_limit",
    "cache_root_of",
    "folder_bytes",
    "forget_cache_sizes",
    "format_bytes",
    "is_marked_cache",
    "mark_cache_folder",
    "note_cache_write",
    "parse_cache_limit",
]

#: Environment variable holding the cache folder's size limit.
CACHE_LIMIT_ENV = "STRUCTKERNELS_CACHE_LIMIT"
#: The limit when ``$STRUCTKERNELS_CACHE_LIMIT`` is not set: 4 GiB.
DEFAULT_CACHE_LIMIT = 4 << 30
#: The sub-folders of a cache folder that the project writes: kind -> what it holds.
CACHE_KINDS: dict[str, str] = {
    "parses": "parsed sentences (spaCy)",
    "grams": "Grams and σ (evaluate)",
    "datasets": "binary copies of datasets",
    "numba": "compiled kernels (numba)",
}
#: The file that marks a folder as a cache of structkernels (a cache directory tag, which
#: backup tools skip): written at the cache folder's root by its first write.
CACHE_MARKER = "CACHEDIR.TAG"
_MARKER_TEXT = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
                b"# This file is a cache directory tag created by structkernels.\n"
                b"# `structkernels cache clear` removes only the entries it wrote here.\n"
                b"# See https://bford.info/cachedir/\n")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


class CacheLimitError(StructkernelsError, ValueError):
    """A cache size limit that is not a size."""


class CacheSizeWarning(StructkernelsWarning):
    """The cache folder has grown past its size limit."""


def parse_cache_limit(text: str | None) -> int | None:
    """The limit ``text`` gives in bytes; None for no limit (``"0"``, ``"none"``, ``"off"``).

    Bytes, or a number with a K, M, G or T suffix in binary units (``"2G"``, ``"500M"``);
    an empty or absent value is :data:`DEFAULT_CACHE_LIMIT`.

    Raises
    ------
    CacheLimitError
        ``text`` is not a size (a ``ValueError``; one line naming the variable).

    Examples
    --------
    >>> from structkernels.utils import parse_cache_limit
    >>> parse_cache_limit("2G"), parse_cache_limit("500M"), parse_cache_limit("none")
    (2147483648, 524288000, None)
    """
    if text is None or not text.strip():
        return DEFAULT_CACHE_LIMIT
    if text.strip().lower() in ("none", "off", "unlimited"):
        return None
    m = _SIZE.match(text)
    if m is None:
        raise CacheLimitError(
            f"{CACHE_LIMIT_ENV}={text!r} is not a size: give bytes or a number with K, M, G "
            "or T (2G, 500M), or 0 or none for no limit")
    value = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    return None if value == 0 else value


def cache_limit() -> int | None:
    """The cache folder's size limit in bytes from ``$STRUCTKERNELS_CACHE_LIMIT`` (None: no
    limit); read at each call.

    Raises
    ------
    CacheLimitError
        The variable holds something that is not a size.

    Examples
    --------
    >>> from structkernels.utils import cache_limit
    >>> cache_limit() is None or cache_limit() > 0
    True
    """
    return parse_cache_limit(os.environ.get(CACHE_LIMIT_ENV))


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units, three significant digits.

    Examples
    --------
    >>> from structkernels.utils import format_bytes
    >>> format_bytes(0), format_bytes(1536), format_bytes(4 << 30)
    ('0 B', '1.5 KiB', '4 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} TiB"


def folder_bytes(path: str | os.PathLike) -> tuple[int, int]:
    """``(bytes, files)`` of the regular files under ``path`` (links not followed; 0, 0
    when it does not exist).

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import folder_bytes
    >>> folder_bytes(tempfile.mkdtemp())
    (0, 0)
    """
    total = files = 0
    if os.path.islink(path) or not os.path.isdir(path):
        return 0, 0
    for folder, _, names in os.walk(path, followlinks=False):
        for name in names:
            with contextlib.suppress(OSError):  # removed meanwhile
                st = os.lstat(os.path.join(folder, name))
                if not stat.S_ISLNK(st.st_mode):
                    total += st.st_size
                    files += 1
    return total, files


def cache_root_of(folder: str | os.PathLike) -> Path:
    """The cache folder that ``folder`` (where a cache writes) belongs to.

    ``ROOT/grams`` and ``ROOT/parses/PIPELINE`` belong to ``ROOT`` (a kind of
    :data:`CACHE_KINDS` is a sub-folder of its cache folder, or the parent of one); any
    other folder is its own.

    Examples
    --------
    >>> from structkernels.utils import cache_root_of
    >>> cache_root_of("/c/parses/en_core_web_sm-3.8.0").as_posix(), cache_root_of("/c/grams").as_posix()
    ('/c', '/c')
    """
    path = Path(folder)
    for level in (path, path.parent):
        if level.name in CACHE_KINDS:
            return level.parent
    return path


def mark_cache_folder(root: str | os.PathLike) -> None:
    """Write the marker :data:`CACHE_MARKER` in cache folder ``root`` if it has none
    (created, never written through a link; a failure is silent: the marker is a hint).

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils._cache_limit import is_marked_cache, mark_cache_folder
    >>> root = tempfile.mkdtemp(); mark_cache_folder(root); is_marked_cache(root)
    True
    """
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(os.path.join(root, CACHE_MARKER), flags, 0o644)
    except OSError:
        return  # there already (or a link, or no folder): nothing written
    with contextlib.suppress(OSError):
        os.write(fd, _MARKER_TEXT)
    os.close(fd)


def is_marked_cache(root: str | os.PathLike) -> bool:
    """Whether ``root`` holds the marker of a structkernels cache (a regular file, not a
    link, with the tag's signature and the project's name)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.path.join(root, CACHE_MARKER), flags)
    except OSError:
        return False
    try:
        head = os.read(fd, 256)
    except OSError:
        return False
    finally:
        os.close(fd)
    return head.startswith(_MARKER_TEXT[:44]) and b"structkernels" in head


class _Meter:
    """Bytes of each cache folder this process wrote in: measured once, then added to."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sizes: dict[str, int] = {}
        self.warned: set[str] = set()
        self.marked: set[str] = set()
        self.bad_limit_said = False

    def limit(self) -> int | None:
        try:
            return cache_limit()
        except CacheLimitError as exc:
            if not self.bad_limit_said:
                self.bad_limit_said = True
                warnings.warn(CacheSizeWarning(
                    f"{exc}; the default limit of {format_bytes(DEFAULT_CACHE_LIMIT)} is used"),
                    stacklevel=4)
            return DEFAULT_CACHE_LIMIT

    def add(self, folder: str | os.PathLike, nbytes: int) -> None:
        root = cache_root_of(folder)
        key = os.path.abspath(root)
        if key not in self.marked:
            self.marked.add(key)
            mark_cache_folder(root)
        limit = self.limit()
        if limit is None:
            return
        with self.lock:
            if key in self.sizes:
                self.sizes[key] += max(int(nbytes), 0)
            else:  # the first write here: the walk counts what was just written too
                self.sizes[key] = folder_bytes(root)[0]
            size = self.sizes[key]
            if size <= limit or key in self.warned:
                return
            self.warned.add(key)
        message = (
            f"the cache folder {root} holds {format_bytes(size)}, past its limit of "
            f"{format_bytes(limit)}: free it with `structkernels cache clear` (see "
            f"`structkernels cache`), or set {CACHE_LIMIT_ENV} (2G, 500M, none)")
        # explicit place, no source line: the warning prints as one line
        warnings.warn_explicit(CacheSizeWarning(message), CacheSizeWarning,
                               filename="structkernels", lineno=0)

    def forget(self) -> None:
        with self.lock:
            self.sizes.clear()
            self.warned.clear()
            self.marked.clear()
            self.bad_limit_said = False


_METER = _Meter()


def note_cache_write(folder: str | os.PathLike, nbytes: int) -> None:
    """Count ``nbytes`` just written in cache ``folder``; warn once past the limit.

    The first call of a process for a cache folder (:func:`cache_root_of`) marks it as one
    (:data:`CACHE_MARKER`) and measures it (the bytes just written included), so a write
    costs no walk of the tree; later calls add ``nbytes``.  When the total passes
    :func:`cache_limit`, one :class:`CacheSizeWarning` (one line: the size, the limit, how
    to change it and how to free it) is given, once per process and cache folder.  A limit
    that is not a size gives one warning and the default is used.

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import note_cache_write
    >>> note_cache_write(tempfile.mkdtemp(), 10)
    """
    _METER.add(folder, nbytes)


def forget_cache_sizes() -> None:
    """Forget the sizes :func:`note_cache_write` measured and the warnings it gave (after a
    cache is cleared; the next write measures again).

    Examples
    --------
    >>> from structkernels.utils import forget_cache_sizes
    >>> forget_cache_sizes()
    """
    _METER.forget()
