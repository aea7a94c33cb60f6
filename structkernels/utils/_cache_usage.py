"""The user's cache folder: where it is, what it holds kind by kind, its size limit
(``$STRUCTKERNELS_CACHE_LIMIT``) with the one warning past it, and clearing what the
project wrote.

A cache folder has one sub-folder per kind (:data:`CACHE_KINDS`).  An entry counts as the
cache's, and is cleared, only when it is recognised as one the project wrote: a checked
entry by its header (:data:`ENTRY_FORMAT`), a large one (a Gram ``.npy``) by its
``NAME.sum`` check file, a dataset copy by its name and zip magic, a compiled kernel by
numba's index (``NAME.nbi``, a pickled version string, read without unpickling) and its
``NAME.N.nbc`` files.  Everything else is ``other``: shown, never removed.  Links are never
followed.  A folder that carries no marker of a cache (``CACHEDIR.TAG``, written by the
cache's first write) and holds no recognised entry is refused (:class:`NotACacheError`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickletools
import re
import stat
import threading
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from structkernels.utils._errors import StructkernelsError, StructkernelsWarning

__all__ = [
    "CACHE_KINDS", "CACHE_LIMIT_ENV", "CACHE_MARKER", "DEFAULT_CACHE_LIMIT", "ENTRY_FORMAT",
    "CacheLimitError", "CacheSizeWarning", "CacheUsage", "CacheClearError", "NotACacheError",
    "cache_limit", "cache_root_of", "cache_usage", "clear_cache", "folder_bytes",
    "forget_cache_sizes", "format_bytes", "is_marked_cache", "mark_cache_folder",
    "note_cache_write", "parse_cache_limit", "user_cache_dir",
]

#: The ``format`` of every checked entry's header (how ``cache clear`` recognises one).
ENTRY_FORMAT = "structkernels.cache-entry"

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
#: The kind of everything in a cache folder that is not a recognised entry.
OTHER = "other"
_DATASET = re.compile(r"interactions-[0-9a-f]{32}\.npz")
_NUMBA_DATA = re.compile(r"(.+)\.\d+\.nbc")
_VERSION = re.compile(r"\d+\.\d+[0-9A-Za-z.+-]*")
_HEAD = 4096
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


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
    >>> cache_root_of("/c/parses/en_core_web_sm-3.8.0").as_posix()
    '/c'
    >>> cache_root_of("/c/grams").as_posix()
    '/c'
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
    >>> from structkernels.utils._cache_usage import is_marked_cache, mark_cache_folder
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
    head = _head(None, os.path.join(root, CACHE_MARKER), 256) or b""
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


def user_cache_dir(*parts: str) -> Path:
    """The cache folder of structkernels, or a folder inside it.

    ``$STRUCTKERNELS_CACHE`` when set, else ``$XDG_CACHE_HOME/structkernels``, else
    ``~/.cache/structkernels``.  Nothing is created here: writers create what they use.

    Parameters
    ----------
    *parts : str
        Sub-folders (``user_cache_dir("numba")``).

    Examples
    --------
    >>> from structkernels.utils import user_cache_dir
    >>> user_cache_dir("numba").name
    'numba'
    """
    own = os.environ.get("STRUCTKERNELS_CACHE")
    if own:
        base = Path(own)
    else:
        root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = Path(root) / "structkernels"
    return base.joinpath(*parts)




class CacheClearError(StructkernelsError, OSError):
    """Some cache files could not be removed (the message names how many and the first)."""


class NotACacheError(StructkernelsError, ValueError):
    """A folder to clear that is not a structkernels cache (no marker, no entry in it)."""


class CacheUsage(NamedTuple):
    """One kind of cache entries: its name, what it holds, its folder, bytes and files."""

    kind: str
    what: str
    path: Path
    bytes: int
    files: int


def _root(root: str | os.PathLike | None) -> Path:
    return user_cache_dir() if root is None else Path(root)


def _head(dirfd: int | None, name: str, n: int = _HEAD) -> bytes | None:
    """The first ``n`` bytes of regular file ``name`` in folder ``dirfd`` (None: ``name`` as
    it is); None for a link, anything not a regular file, or a file that cannot be read."""
    try:
        fd = os.open(name, _FLAGS, dir_fd=dirfd)
    except OSError:
        return None
    try:
        return os.read(fd, n) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _is_header(raw: bytes | None) -> bool:
    """Whether ``raw`` starts with the header line of a checked cache entry."""
    try:
        head = json.loads((raw or b"").partition(b"\n")[0].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(head, dict) and head.get("format") == ENTRY_FORMAT


def _is_numba_index(raw: bytes | None) -> bool:
    """Whether ``raw`` starts as numba's cache index does: a pickled version string (its
    opcodes read, nothing unpickled)."""
    if not raw or raw[:1] != b"\x80":
        return False
    allowed = {"PROTO", "FRAME", "SHORT_BINUNICODE", "BINUNICODE", "MEMOIZE", "BINPUT"}
    texts = []
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(raw)):
            if op.name == "STOP":
                return len(texts) == 1 and _VERSION.fullmatch(texts[0]) is not None
            if op.name not in allowed or len(texts) > 1:
                return False
            if isinstance(arg, str):
                texts.append(arg)
    except ValueError:  # not a pickle, or cut short
        return False
    return False


def _is_entry(dirfd: int, name: str) -> bool:
    """Whether file ``name`` of folder ``dirfd`` is an entry one of the project's caches
    wrote (see the module's docstring for how each is recognised)."""
    raw = _head(dirfd, name)
    if raw is None:
        return False
    if _is_header(raw) or _is_header(_head(dirfd, name + ".sum")):
        return True  # a checked entry, its check file, or a large entry beside its check
    if _DATASET.fullmatch(name):
        return raw[:4] == b"PK\x03\x04"
    if name.endswith(".nbi"):
        return _is_numba_index(raw)
    data = _NUMBA_DATA.fullmatch(name)
    return data is not None and raw[:1] == b"\x80" and _is_numba_index(
        _head(dirfd, data.group(1) + ".nbi"))


class _Folder(NamedTuple):
    """One folder of a cache: its path from the root, its descriptor, its sub-folders, and
    its regular files as ``(name, bytes, kind)``."""

    parts: tuple[str, ...]
    fd: int
    subfolders: list[str]
    files: list[tuple[str, int, str]]


def _scan(root: Path) -> Iterator[_Folder]:
    """Every folder under ``root``, bottom-up, links never followed (``root`` itself is,
    as the user named it); nothing when ``root`` is absent or not a folder."""
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

    Parameters
    ----------
    root : path, optional
        The cache folder (default :func:`~structkernels.utils.user_cache_dir`).

    Returns
    -------
    list of CacheUsage
        One per kind of :data:`CACHE_KINDS`, in that order (what :func:`clear_cache`
        removes), then ``other``; a folder that does not exist counts 0 bytes and 0 files.

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

    Only recognised entries in the project's own sub-folders are removed, one file at a
    time (an entry before its ``.sum`` check file, so a run reading the cache meanwhile
    finds it whole or absent); a folder that this emptied is removed.

    Parameters
    ----------
    kinds : iterable of str, optional
        Some of ``parses``, ``grams``, ``datasets``, ``numba`` (default: all of them).
    root : path, optional
        The cache folder (default :func:`~structkernels.utils.user_cache_dir`).

    Returns
    -------
    list of CacheUsage
        Bytes and files removed, one per kind cleared (all 0 when ``root`` is absent).

    Raises
    ------
    ValueError
        An unknown kind.
    NotACacheError
        ``root`` carries no marker of a cache and holds no entry (a ``ValueError``).
    CacheClearError
        Some files could not be removed (an ``OSError``); the others were.

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
                    try:  # only a folder this emptied, and only when empty now
                        os.rmdir(name, dir_fd=folder.fd)
                        emptied.add(folder.parts)
                    except OSError:
                        pass
    forget_cache_sizes()  # sizes are measured again at the next write
    if failed:
        path, reason = failed[0]
        raise CacheClearError(f"{len(failed)} cache file(s) could not be removed "
                              f"(first: {path}: {reason}); the others were")
    return [CacheUsage(kind, CACHE_KINDS[kind], base / kind, *freed[kind]) for kind in chosen]
