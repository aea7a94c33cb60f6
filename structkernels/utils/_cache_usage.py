"""What the user's cache folder holds, kind by kind, and clearing what the project wrote.

A cache folder (:func:`~structkernels.utils.user_cache_dir`, or a command's ``--cache-dir``)
has one sub-folder per kind (:data:`~structkernels.utils.CACHE_KINDS`): ``parses``,
``grams`` (Grams and σ), ``datasets`` (binary copies) and ``numba`` (compiled kernels);
anything else in it is ``other``, shown but never removed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from structkernels.utils._cache import user_cache_dir
from structkernels.utils._cache_limit import CACHE_KINDS, folder_bytes, forget_cache_sizes
from structkernels.utils._errors import StructkernelsError

__all__ = ["CacheUsage", "CacheClearError", "cache_usage", "clear_cache"]

#: The kind of everything in a cache folder outside the project's own sub-folders.
OTHER = "other"


class CacheClearError(StructkernelsError, OSError):
    """Some cache files could not be removed (the message names how many and the first)."""


class CacheUsage(NamedTuple):
    """One kind of cache entries: its name, what it holds, its folder, bytes and files."""

    kind: str
    what: str
    path: Path
    bytes: int
    files: int


def _root(root: str | os.PathLike | None) -> Path:
    return user_cache_dir() if root is None else Path(root)


def cache_usage(root: str | os.PathLike | None = None) -> list[CacheUsage]:
    """The size of each kind of cache entries under ``root``.

    Parameters
    ----------
    root : path, optional
        The cache folder (default :func:`~structkernels.utils.user_cache_dir`).

    Returns
    -------
    list of CacheUsage
        One per kind of :data:`~structkernels.utils.CACHE_KINDS`, in that order, then
        ``other`` (files of the folder outside those sub-folders); a folder that does not
        exist counts 0 bytes and 0 files.

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import cache_usage
    >>> [(u.kind, u.bytes) for u in cache_usage(tempfile.mkdtemp())][:2]
    [('parses', 0), ('grams', 0)]
    """
    base = _root(root)
    out = []
    for kind, what in CACHE_KINDS.items():
        size, files = folder_bytes(base / kind)
        out.append(CacheUsage(kind, what, base / kind, size, files))
    size = files = 0
    if base.is_dir() and not base.is_symlink():
        for entry in os.scandir(base):
            if entry.name in CACHE_KINDS and entry.is_dir(follow_symlinks=False):
                continue
            if entry.is_dir(follow_symlinks=False):
                more, n = folder_bytes(entry.path)
            elif entry.is_file(follow_symlinks=False):
                more, n = entry.stat(follow_symlinks=False).st_size, 1
            else:
                continue
            size, files = size + more, files + n
    out.append(CacheUsage(OTHER, "other files (never removed)", base, size, files))
    return out


def _remove_tree(folder: Path, failed: list[tuple[str, str]]) -> tuple[int, int]:
    """Remove the files under ``folder`` (entries before their ``.sum`` check files), then
    the folders left empty; ``(bytes, files)`` removed.  Links are removed, not followed."""
    removed = count = 0
    if folder.is_symlink() or not folder.is_dir():
        return 0, 0
    walked = list(os.walk(folder, topdown=False, followlinks=False))
    for dirpath, dirnames, filenames in walked:
        # an entry goes before its check file: a reader meanwhile finds it absent, never
        # an entry without its check
        names = sorted(filenames, key=lambda n: n.endswith(".sum"))
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in [*names, *links]:
            path = os.path.join(dirpath, name)
            try:
                size = 0 if os.path.islink(path) else os.lstat(path).st_size
                os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                failed.append((path, exc.strerror or type(exc).__name__))
                continue
            removed += size
            count += name not in links
    for dirpath, _, _ in walked:  # bottom-up: a folder after its sub-folders
        try:
            os.rmdir(dirpath)
        except OSError:
            pass  # not empty (a file that could not go, or one written meanwhile)
    return removed, count


def clear_cache(kinds: Iterable[str] | None = None,
                root: str | os.PathLike | None = None) -> list[CacheUsage]:
    """Remove the cache entries of ``kinds`` under ``root``; what was removed, per kind.

    Only the project's own sub-folders are touched (:data:`~structkernels.utils.CACHE_KINDS`);
    files of ``other`` are never removed.  Within a kind, files go first (a Gram before its
    ``.sum`` check file), then the folders left empty, so a run reading the cache meanwhile
    finds an entry whole or absent; every entry is written atomically, so none is half
    written either.

    Parameters
    ----------
    kinds : iterable of str, optional
        Some of ``parses``, ``grams``, ``datasets``, ``numba`` (default: all of them).
    root : path, optional
        The cache folder (default :func:`~structkernels.utils.user_cache_dir`).

    Returns
    -------
    list of CacheUsage
        Bytes and files removed, one per kind cleared.

    Raises
    ------
    ValueError
        An unknown kind.
    CacheClearError
        Some files could not be removed (an ``OSError``); the others were.

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import clear_cache
    >>> [u.files for u in clear_cache(["parses"], root=tempfile.mkdtemp())]
    [0]
    """
    chosen = list(CACHE_KINDS) if kinds is None else list(dict.fromkeys(kinds))
    unknown = [k for k in chosen if k not in CACHE_KINDS]
    if unknown:
        raise ValueError(f"unknown cache kind {unknown[0]!r}; the kinds are "
                         f"{', '.join(CACHE_KINDS)} (other files are never removed)")
    base = _root(root)
    failed: list[tuple[str, str]] = []
    out = []
    for kind in chosen:
        size, files = _remove_tree(base / kind, failed)
        out.append(CacheUsage(kind, CACHE_KINDS[kind], base / kind, size, files))
    forget_cache_sizes()  # sizes are measured again at the next write
    if failed:
        path, reason = failed[0]
        raise CacheClearError(f"{len(failed)} cache file(s) could not be removed "
                              f"(first: {path}: {reason}); the others were")
    return out
