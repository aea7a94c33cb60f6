"""What a cache folder holds, kind by kind, and clearing it (``structkernels cache``).

An entry counts as the cache's, and is cleared, only when it is recognised as one the project
wrote (:func:`_is_entry`).  Everything else is ``other``: shown, never removed.  Links are
never followed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickletools
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from structkernels.utils._cache import (
    CACHE_KINDS,
    CACHE_MARKER,
    ENTRY_FORMAT,
    CacheClearError,
    NotACacheError,
    file_head,
    forget_cache_sizes,
    is_marked_cache,
    user_cache_dir,
)

__all__ = ["CacheUsage", "cache_usage", "clear_cache"]

_DATASET = re.compile(r"interactions-[0-9a-f]{32}\.npz")
_NUMBA_DATA = re.compile(r"(.+)\.\d+\.nbc")
_NUMBA_VERSION = re.compile(r"\d+\.\d+[0-9A-Za-z.+-]*")
#: The kind of everything in a cache folder that is not a recognised entry.
OTHER = "other"


class CacheUsage(NamedTuple):
    """One kind of cache entries: its name, what it holds, its folder, bytes and files."""

    kind: str
    what: str
    path: Path
    bytes: int
    files: int


def _root(root: str | os.PathLike | None) -> Path:
    return user_cache_dir() if root is None else Path(root)


def _is_header(raw: bytes | None) -> bool:
    """Whether ``raw`` starts with the header line of a checked cache entry."""
    try:
        head = json.loads((raw or b"").partition(b"\n")[0].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(head, dict) and head.get("format") == ENTRY_FORMAT


def _is_numba_index(raw: bytes | None) -> bool:
    """Whether ``raw`` is numba's cache index: a pickled version string (read, not unpickled)."""
    if not raw or raw[:1] != b"\x80":
        return False
    allowed = {"PROTO", "FRAME", "SHORT_BINUNICODE", "BINUNICODE", "MEMOIZE", "BINPUT"}
    texts = []
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(raw)):
            if op.name == "STOP":
                return len(texts) == 1 and _NUMBA_VERSION.fullmatch(texts[0]) is not None
            if op.name not in allowed or len(texts) > 1:
                return False
            if isinstance(arg, str):
                texts.append(arg)
    except ValueError:  # not a pickle, or cut short
        return False
    return False


def _is_entry(dirfd: int, name: str) -> bool:
    """Whether file ``name`` of folder ``dirfd`` is an entry the project wrote: a checked
    entry by its header, a large one by its ``NAME.sum``, a dataset copy by its name and zip
    magic, a compiled kernel by numba's index (``NAME.nbi``, read without unpickling) and
    its ``NAME.N.nbc`` files."""
    raw = file_head(dirfd, name)
    if raw is None:
        return False
    if _is_header(raw) or _is_header(file_head(dirfd, name + ".sum")):
        return True  # a checked entry, its check file, or a large entry beside its check
    if _DATASET.fullmatch(name):
        return raw[:4] == b"PK\x03\x04"
    if name.endswith(".nbi"):
        return _is_numba_index(raw)
    data = _NUMBA_DATA.fullmatch(name)
    return data is not None and raw[:1] == b"\x80" and _is_numba_index(
        file_head(dirfd, data.group(1) + ".nbi"))


class _Folder(NamedTuple):
    """One folder of a cache; its regular files as ``(name, bytes, kind)``."""

    parts: tuple[str, ...]
    fd: int
    subfolders: list[str]
    files: list[tuple[str, int, str]]


def _scan(root: Path) -> Iterator[_Folder]:
    """Every folder under ``root``, bottom-up, links never followed but ``root`` itself."""
    try:
        rootfd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                         | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        for dirpath, dirnames, names, dirfd in os.fwalk(
                ".", topdown=False, follow_symlinks=False, dir_fd=rootfd):
            parts = Path(dirpath).parts
            kind = parts[0] if parts and parts[0] in CACHE_KINDS else None
            files = []
            for name in names:
                try:
                    st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                except OSError:
                    continue  # removed meanwhile
                if stat.S_ISREG(st.st_mode):
                    is_entry = kind is not None and _is_entry(dirfd, name)
                    files.append((name, st.st_size, kind if is_entry else OTHER))
            yield _Folder(parts, dirfd, dirnames, files)
    finally:
        os.close(rootfd)


def cache_usage(root: str | os.PathLike | None = None) -> list[CacheUsage]:
    """The size of each kind of cache entries under ``root``.

    ``root`` defaults to :func:`~structkernels.utils.user_cache_dir`.  One
    :class:`CacheUsage` per kind of :data:`CACHE_KINDS`, in that order (what
    :func:`clear_cache` removes), then ``other``; a missing folder counts 0 bytes, 0 files.

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import cache_usage
    >>> [(u.kind, u.bytes) for u in cache_usage(tempfile.mkdtemp())][:2]
    [('parses', 0), ('grams', 0)]
    """
    base = _root(root)
    sizes = {kind: [0, 0] for kind in [*CACHE_KINDS, OTHER]}
    for folder in _scan(base):
        for _, size, kind in folder.files:
            sizes[kind][0] += size
            sizes[kind][1] += 1
    out = [CacheUsage(kind, what, base / kind, *sizes[kind]) for kind, what in CACHE_KINDS.items()]
    out.append(CacheUsage(OTHER, "other files (never removed)", base, *sizes[OTHER]))
    return out


def _check_is_cache(base: Path) -> bool:
    """Whether ``base`` exists; NotACacheError when it is there but not a cache."""
    if not os.path.lexists(base):
        return False
    if is_marked_cache(base):
        return True
    if any(u.files for u in cache_usage(base)[:-1]):
        return True  # a cache of before the marker: it holds entries the project wrote
    raise NotACacheError(
        f"{base} is not a structkernels cache (no {CACHE_MARKER} and no cache entry in it): "
        "nothing removed")


def clear_cache(kinds: Iterable[str] | None = None,
                root: str | os.PathLike | None = None) -> list[CacheUsage]:
    """Remove the cache entries of ``kinds`` under ``root``; what was removed, per kind.

    Only recognised entries in the project's own sub-folders are removed (an entry before
    its ``.sum``: a run reading meanwhile finds it whole or absent), then the folders emptied.

    ``kinds``: some of :data:`CACHE_KINDS` (default all); ``root`` as in
    :func:`cache_usage`.  A ``root`` with no marker of a cache and no entry is a
    :class:`NotACacheError`; files that could not be removed give one
    :class:`CacheClearError` after the others are.

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import CacheFolder, clear_cache
    >>> root = tempfile.mkdtemp()
    >>> CacheFolder(root + "/parses", "parse cache").write("a.json", "key", b"{}")
    True
    >>> [u.files for u in clear_cache(["parses"], root=root)]
    [1]
    """
    chosen = list(CACHE_KINDS) if kinds is None else list(dict.fromkeys(kinds))
    unknown = [k for k in chosen if k not in CACHE_KINDS]
    if unknown:
        raise ValueError(f"unknown cache kind {unknown[0]!r}; the kinds are "
                         f"{', '.join(CACHE_KINDS)} (other files are never removed)")
    base = _root(root)
    freed = {kind: [0, 0] for kind in chosen}
    failed: list[tuple[str, str]] = []
    emptied: set[tuple[str, ...]] = set()
    if _check_is_cache(base):
        for folder in _scan(base):
            # an entry goes before its check file: a reader meanwhile finds it absent,
            # never an entry without its check
            files = sorted((f for f in folder.files if f[2] in freed),
                           key=lambda f: f[0].endswith(".sum"))
            for name, size, kind in files:
                try:
                    os.unlink(name, dir_fd=folder.fd)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    failed.append((os.path.join(base, *folder.parts, name),
                                   exc.strerror or type(exc).__name__))
                    continue
                freed[kind][0] += size
                freed[kind][1] += 1
                emptied.add(folder.parts)
            for name in folder.subfolders:
                if (*folder.parts, name) in emptied:
                    # only a folder this emptied, and only when empty now
                    with contextlib.suppress(OSError):
                        os.rmdir(name, dir_fd=folder.fd)
                        emptied.add(folder.parts)
    forget_cache_sizes()  # sizes are measured again at the next write
    if failed:
        path, reason = failed[0]
        raise CacheClearError(f"{len(failed)} cache file(s) could not be removed "
                              f"(first: {path}: {reason}); the others were")
    return [CacheUsage(kind, CACHE_KINDS[kind], base / kind, *freed[kind]) for kind in chosen]
