"""The user's cache folder of structkernels: where it is, its checked entries that cannot
change a result, and its size limit.

Every entry carries the SHA-256 of its key and a keyed digest of key and content
(HMAC-SHA-256 under the folder's secret ``.hmac-key``: 32 random bytes, mode 0600, trusted
only as a regular file of this user that no one else can read or write), in a one-line
JSON header before the content or, for a large entry (a Gram ``.npy``), in a sidecar
``NAME.sum``.  An entry edited by someone who cannot read the secret fails its check even
with its SHA-256 recomputed (the threat model is in ``docs/reliability.md``); it is
discarded and computed again with one :class:`CacheWarning`.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from structkernels.utils._atomic import atomic_open
from structkernels.utils._errors import StructkernelsError, StructkernelsWarning
from structkernels.utils._memory import parse_size
from structkernels.utils._records import one_line

__all__ = [
    "CACHE_KINDS", "CACHE_LIMIT_ENV", "CACHE_MARKER", "DEFAULT_CACHE_LIMIT", "ENTRY_FORMAT",
    "NO_CACHE_ENV", "CacheClearError", "CacheDirError", "CacheEntryError", "CacheFolder",
    "CacheLimitError", "CacheSizeWarning", "CacheWarning", "NotACacheError",
    "cache_dir_problem", "cache_limit", "cache_root_of", "cache_writes_disabled",
    "check_cache_dir", "forget_cache_sizes", "format_bytes", "note_cache_write",
    "parse_cache_limit", "usable_cache_dir", "user_cache_dir",
]

#: Set (to anything but ``""`` or ``"0"``) to write no cache at all, compiled kernels
#: included; the commands' ``--no-cache`` sets it for their run and their workers.
NO_CACHE_ENV = "STRUCTKERNELS_NO_CACHE"

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
    "prepared": "extractors' references prepared for scoring",
}
#: The file that marks a folder as a cache of structkernels (a cache directory tag, which
#: backup tools skip): written at the cache folder's root by its first write.
CACHE_MARKER = "CACHEDIR.TAG"
_MARKER_TEXT = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
                b"# This file is a cache directory tag created by structkernels.\n"
                b"# `structkernels cache clear` removes only the entries it wrote here.\n"
                b"# See https://bford.info/cachedir/\n")
_HEAD = 4096
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

_VERSION = 2  # 1: unkeyed SHA-256 (read as a miss)
_KEY_FILE = ".hmac-key"
_KEY_BYTES = 32
_MAX_HEADER = 4096
_CHUNK = 1 << 20


class CacheEntryError(StructkernelsError, ValueError):
    """A cache entry that fails its check (its message says why); it is computed again."""


class _OldEntry(CacheEntryError):
    """An entry of an older cache version: a miss, not damage."""


class CacheDirError(StructkernelsError, ValueError):
    """A cache folder that cannot be one (an empty name)."""


class CacheWarning(StructkernelsWarning):
    """A cache entry discarded, or a cache folder whose writes are turned off."""


class CacheLimitError(StructkernelsError, ValueError):
    """A cache size limit that is not a size."""


class CacheSizeWarning(StructkernelsWarning):
    """The cache folder has grown past its size limit."""


class CacheClearError(StructkernelsError, OSError):
    """Some cache files could not be removed (the message names how many and the first)."""


class NotACacheError(StructkernelsError, ValueError):
    """A folder to clear that is not a structkernels cache (no marker, no entry in it)."""


def user_cache_dir(*parts: str) -> Path:
    """The cache folder of structkernels, or the folder ``parts`` inside it.

    ``$STRUCTKERNELS_CACHE`` when set, else ``$XDG_CACHE_HOME/structkernels``, else
    ``~/.cache/structkernels``.  Nothing is created here: writers create what they use.

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
    """
    path = Path(folder)
    for level in (path, path.parent):
        if level.name in CACHE_KINDS:
            return level.parent
    return path


def mark_cache_folder(root: str | os.PathLike) -> None:
    """Write the marker :data:`CACHE_MARKER` in cache folder ``root`` if it has none (never
    through a link; a failure is silent: the marker is a hint)."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(os.path.join(root, CACHE_MARKER), flags, 0o644)
    except OSError:
        return  # there already (or a link, or no folder): nothing written
    with contextlib.suppress(OSError):
        os.write(fd, _MARKER_TEXT)
    os.close(fd)


def file_head(dirfd: int | None, name: str, n: int = _HEAD) -> bytes | None:
    """The first ``n`` bytes of regular file ``name`` in folder ``dirfd`` (links not
    followed); None for anything else or a file that cannot be read."""
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


def is_marked_cache(root: str | os.PathLike) -> bool:
    """Whether ``root`` holds the marker of a structkernels cache (a regular file, not a link)."""
    head = file_head(None, os.path.join(root, CACHE_MARKER), 256) or b""
    return head.startswith(_MARKER_TEXT[:44]) and b"structkernels" in head


def cache_writes_disabled() -> bool:
    """Whether ``$STRUCTKERNELS_NO_CACHE`` asks for no cache writes at all.

    Examples
    --------
    >>> from structkernels.utils import cache_writes_disabled
    >>> cache_writes_disabled() in (True, False)
    True
    """
    return os.environ.get(NO_CACHE_ENV, "") not in ("", "0")


def check_cache_dir(path: str | os.PathLike | None, option: str = "cache_dir") -> Path | None:
    """``path`` as a cache folder; None stays None, an empty string (it would mean the
    current folder) is a :class:`CacheDirError`.

    Examples
    --------
    >>> from structkernels.utils import check_cache_dir
    >>> check_cache_dir("/tmp/c").name
    'c'
    """
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path).strip():
        raise CacheDirError(f"{option} is empty: give a folder (an empty name would cache in "
                              "the current folder), or turn the cache off")
    return Path(path)


def cache_dir_problem(path: str | os.PathLike) -> str | None:
    """Why no cache can be written in folder ``path`` (None when one can).

    The folder is created (and marked as a cache) if needed and a small file is written in
    it and removed, so a read-only folder or a full disk is found before the work starts.

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import cache_dir_problem
    >>> cache_dir_problem(tempfile.mkdtemp()) is None
    True
    """
    folder = Path(path)
    probe = folder / f".write-test-{os.getpid()}"
    try:
        if not folder.is_dir():  # created here: marked as a cache (CACHEDIR.TAG)
            folder.mkdir(parents=True, exist_ok=True)
            mark_cache_folder(folder)
        with atomic_open(probe, "wb", follow_links=False) as fh:
            fh.write(b"structkernels cache write test\n")
        probe.unlink()
    except OSError as exc:
        return _reason(exc)
    return None


def _reason(exc: OSError) -> str:
    return (str(exc) or type(exc).__name__).splitlines()[0]


def usable_cache_dir(cache_dir: Any, warn: Callable[[str], None]) -> Any:
    """The cache to use: False for ``False`` or a folder that cannot be written (said through
    ``warn``), else ``cache_dir`` (None: the default folder)."""
    if cache_dir is False:
        return False
    where = cache_dir or user_cache_dir()
    problem = cache_dir_problem(where)
    if problem is not None:
        warn(f"warning: {where}: the cache folder cannot be written ({one_line(problem)}); "
             "caching is off for this run")
        return False
    return cache_dir


def parse_cache_limit(text: str | None) -> int | None:
    """The limit ``text`` gives in bytes; None for no limit (``"0"``, ``"none"``, ``"off"``).

    Bytes, or a number with a K, M, G or T suffix in binary units (``"2G"``, ``"500M"``);
    an empty or absent value is :data:`DEFAULT_CACHE_LIMIT`; anything else a
    :class:`CacheLimitError` naming the variable.

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
    value = parse_size(text)
    if value is None:
        raise CacheLimitError(
            f"{CACHE_LIMIT_ENV}={text!r} is not a size: give bytes or a number with K, M, G "
            "or T (2G, 500M), or 0 or none for no limit")
    return None if value == 0 else value


def cache_limit() -> int | None:
    """The cache folder's size limit in bytes from ``$STRUCTKERNELS_CACHE_LIMIT`` (None: no
    limit; :func:`parse_cache_limit`), read at each call.

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


def _folder_bytes(path: str | os.PathLike) -> int:
    """Bytes of the regular files under ``path`` (links not followed; 0 when absent)."""
    total = 0
    if os.path.islink(path) or not os.path.isdir(path):
        return 0
    for folder, _, names in os.walk(path, followlinks=False):
        for name in names:
            with contextlib.suppress(OSError):  # removed meanwhile
                st = os.lstat(os.path.join(folder, name))
                if not stat.S_ISLNK(st.st_mode):
                    total += st.st_size
    return total


# what this process measured of each cache folder it wrote in, and said about it
_LOCK = threading.Lock()
_SIZES: dict[str, int] = {}
_MARKED: set[str] = set()
_WARNED: set[str] = set()  # cache folders past their limit; CACHE_LIMIT_ENV: a bad limit


def _limit() -> int | None:
    """:func:`cache_limit`; the default, after one warning, for a limit that is not a size."""
    try:
        return cache_limit()
    except CacheLimitError as exc:
        if CACHE_LIMIT_ENV not in _WARNED:
            _WARNED.add(CACHE_LIMIT_ENV)
            warnings.warn(CacheSizeWarning(
                f"{exc}; the default limit of {format_bytes(DEFAULT_CACHE_LIMIT)} is used"),
                stacklevel=3)
        return DEFAULT_CACHE_LIMIT


def note_cache_write(folder: str | os.PathLike, nbytes: int) -> None:
    """Count ``nbytes`` just written in cache ``folder``; warn once past the limit.

    The first call of a process for a cache folder (:func:`cache_root_of`) marks it as one
    and measures it; later calls add ``nbytes``, so a write costs no walk of the tree.  Past
    :func:`cache_limit`, one :class:`CacheSizeWarning` line per process and cache folder.

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import note_cache_write
    >>> note_cache_write(tempfile.mkdtemp(), 10)
    """
    root = cache_root_of(folder)
    key = os.path.abspath(root)
    if key not in _MARKED:
        _MARKED.add(key)
        mark_cache_folder(root)
    limit = _limit()
    if limit is None:
        return
    with _LOCK:
        if key in _SIZES:
            _SIZES[key] += max(int(nbytes), 0)
        else:  # the first write here: the walk counts what was just written too
            _SIZES[key] = _folder_bytes(root)
        size = _SIZES[key]
        if size <= limit or key in _WARNED:
            return
        _WARNED.add(key)
    message = (
        f"the cache folder {root} holds {format_bytes(size)}, past its limit of "
        f"{format_bytes(limit)}: free it with `structkernels cache clear` (see "
        f"`structkernels cache`), or set {CACHE_LIMIT_ENV} (2G, 500M, none)")
    # explicit place, no source line: the warning prints as one line
    warnings.warn_explicit(CacheSizeWarning(message), CacheSizeWarning,
                           filename="structkernels", lineno=0)


def forget_cache_sizes() -> None:
    """Forget the sizes :func:`note_cache_write` measured and the warnings it gave (after a
    cache is cleared; the next write measures again).

    Examples
    --------
    >>> from structkernels.utils import forget_cache_sizes
    >>> forget_cache_sizes()
    """
    with _LOCK:
        for seen in (_SIZES, _MARKED, _WARNED):
            seen.clear()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mac(secret: bytes, key: str) -> hmac.HMAC:
    return hmac.new(secret, _sha256(key.encode()).encode() + b"\n", hashlib.sha256)


def _header(key: str, digest: str, size: int) -> bytes:
    return json.dumps({"format": ENTRY_FORMAT, "version": _VERSION, "key": _sha256(key.encode()),
                       "hmac": digest, "bytes": size}, sort_keys=True).encode()


def _check_header(raw: bytes, key: str) -> tuple[str, int]:
    """The keyed digest and size a header promises, or CacheEntryError."""
    try:
        head = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CacheEntryError("no readable check header") from None
    if not isinstance(head, dict) or head.get("format") != ENTRY_FORMAT:
        raise CacheEntryError("no check header (an entry of an older version or another tool)")
    if head.get("version") == 1:
        raise _OldEntry("an unkeyed entry of version 1")
    if head.get("version") != _VERSION:
        raise CacheEntryError(f"check header of version {head.get('version')!r}, not {_VERSION}")
    digest, size = head.get("hmac"), head.get("bytes")
    if (not isinstance(digest, str) or len(digest) != 64 or not isinstance(size, int)
            or isinstance(size, bool) or size < 0):
        raise CacheEntryError("damaged check header")
    if head.get("key") != _sha256(key.encode()):
        raise CacheEntryError("written for another key")
    return digest, size


def _compare(found: str, n: int, digest: str, size: int) -> None:
    """CacheEntryError unless ``n`` bytes of digest ``found`` are what the header promised."""
    if n != size:
        raise CacheEntryError(f"{n} bytes where {size} were written")
    if not hmac.compare_digest(found, digest):
        raise CacheEntryError("its content is not the content written (digest differs)")


def _file_digest(fh: IO[bytes], limit: int, mac: hmac.HMAC) -> tuple[str, int]:
    n = 0
    while chunk := fh.read(_CHUNK):
        n += len(chunk)
        if n > limit:
            break
        mac.update(chunk)
    return mac.hexdigest(), n


def _read_secret(file: Path) -> bytes | None:
    """The secret in ``file``; None when absent; CacheEntryError when it cannot be trusted."""
    try:
        fd = os.open(file, _FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheEntryError(f"{file}: cannot read the cache's secret "
                              f"({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        secret = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode) or len(secret) != _KEY_BYTES:
        raise CacheEntryError(f"{file}: not a secret of this cache")
    if hasattr(os, "geteuid") and (st.st_uid != os.geteuid() or st.st_mode & 0o077):
        raise CacheEntryError(f"{file}: the cache's secret belongs to another user or "
                              "others may read or write it")
    return secret


def _new_secret(folder: Path) -> None:
    """Create ``folder/.hmac-key`` (mode 0600) under a fresh name, then link it into place:
    a reader never sees half a secret, and a concurrent creator's secret wins whole."""
    fd, tmp = tempfile.mkstemp(prefix=f"{_KEY_FILE}.", suffix=".tmp", dir=folder)
    try:
        os.write(fd, os.urandom(_KEY_BYTES))
        os.fsync(fd)
        os.close(fd)
        fd = -1
        with contextlib.suppress(FileExistsError):
            os.link(tmp, folder / _KEY_FILE)
    finally:
        if fd >= 0:
            os.close(fd)
        os.unlink(tmp)


class CacheFolder:
    """A folder of checked cache entries whose writes fail softly.

    ``path``: the folder (created on the first write; None: a cache that keeps nothing);
    ``what``: what the entries are, for the messages (``"parse cache"``).  Reads never
    raise (a damaged entry is None, with one :class:`CacheWarning`); the first failed write
    turns writing off for this object.  With ``$STRUCTKERNELS_NO_CACHE`` nothing is written.

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import CacheFolder
    >>> cache = CacheFolder(tempfile.mkdtemp(), "demo cache")
    >>> cache.write("a.json", "key of a", b'{"x": 1}')
    True
    >>> cache.read("a.json", "key of a")
    b'{"x": 1}'
    """

    def __init__(self, path: str | os.PathLike | None, what: str = "cache"):
        self.path = None if path is None else Path(path)
        self.what = what
        self.writable = self.path is not None and not cache_writes_disabled()
        self._key: bytes | None = None
        self._untrusted = False

    def file(self, name: str) -> Path:
        """The path of entry ``name``."""
        if self.path is None:
            raise ValueError(f"the {self.what} keeps nothing")
        return self.path / name

    def _secret(self, create: bool) -> bytes | None:
        """The folder's secret (made when ``create`` and absent); None when there is none
        or it cannot be trusted (then one warning, and the cache is off for this object)."""
        if self._key is not None or self._untrusted or self.path is None:
            return self._key
        file = self.path / _KEY_FILE
        try:
            self._key = _read_secret(file)
            if self._key is None and create:
                _new_secret(self.path)
                self._key = _read_secret(file)
        except CacheEntryError as exc:
            self._untrusted, self.writable = True, False
            warnings.warn(CacheWarning(f"{exc}; the {self.what} is off for this run, results "
                                       "are computed as without it"), stacklevel=4)
        return self._key

    def discard(self, name: str, reason: str) -> None:
        """Say, in one warning line, that entry ``name`` failed its check and is recomputed."""
        warnings.warn(CacheWarning(
            f"{self.file(name)}: {self.what} entry failed its check ({reason}); discarded, "
            "computed again and rewritten"), stacklevel=3)

    def _guarded(self, name: str, write: Callable[[bytes, Path], None]) -> bool:
        if not self.writable:
            return False
        file = self.file(name)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            secret = self._secret(create=True)
            if secret is None:
                return False
            for side in (file, file.with_name(file.name + ".sum")):
                if side.is_symlink():  # a stale link is replaced, never written through
                    side.unlink()
            write(secret, file)
        except OSError as exc:
            self.writable = False
            warnings.warn(CacheWarning(
                f"{self.path}: the {self.what} cannot be written ({_reason(exc)}); "
                "its writes are off for this run, results are computed as without it"),
                stacklevel=3)
            return False
        written = 0
        for side in (file, file.with_name(file.name + ".sum")):
            with contextlib.suppress(OSError):
                written += side.stat().st_size
        note_cache_write(self.path, written)  # one warning past the cache's size limit
        return True

    def _checked(self, name: str, check: Callable[[], Any]) -> Any:
        """``check()``; None for an old entry, and with one warning for a damaged one."""
        try:
            return check()
        except _OldEntry:
            return None
        except CacheEntryError as exc:
            self.discard(name, str(exc))
        except OSError as exc:
            self.discard(name, f"cannot be read: {exc.strerror or exc}")
        return None

    def read(self, name: str, key: str, max_bytes: int = 4 << 20) -> bytes | None:
        """The content of entry ``name`` written for ``key``; None when absent, of an older
        version or damaged (then one warning names it)."""
        if self.path is None:
            return None
        try:
            with open(self.file(name), "rb") as fh:
                raw = fh.read(_MAX_HEADER + max_bytes + 2)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None  # absent (a file in the way of the folder holds no entry)
        except OSError as exc:
            self.discard(name, f"cannot be read: {exc.strerror or exc}")
            return None

        def check() -> bytes | None:
            head, sep, payload = raw.partition(b"\n")
            if not sep:
                raise CacheEntryError("no check header")
            digest, size = _check_header(head, key)
            secret = self._secret(create=False)
            if secret is None:
                return None  # no secret (yet, or not trusted): nothing can be checked
            mac = _mac(secret, key)
            mac.update(payload)
            _compare(mac.hexdigest(), len(payload), digest, size)
            return payload

        return self._checked(name, check)

    def write(self, name: str, key: str, payload: bytes) -> bool:
        """Write entry ``name`` for ``key`` (header and content, atomically); False when
        the cache keeps nothing or its writes are off."""

        def write(secret: bytes, file: Path) -> None:
            mac = _mac(secret, key)
            mac.update(payload)
            with atomic_open(file, "wb", follow_links=False) as fh:
                fh.write(_header(key, mac.hexdigest(), len(payload)) + b"\n" + payload)

        return self._guarded(name, write)

    def check_file(self, name: str, key: str, max_bytes: int) -> bool:
        """Whether entry file ``name`` exists and matches its sidecar ``NAME.sum`` for
        ``key``; a damaged one is reported (one warning) and False."""
        if self.path is None:
            return False
        file = self.file(name)
        if not file.is_file():
            return False

        def check() -> bool:
            try:
                with open(file.with_name(file.name + ".sum"), "rb") as fh:
                    head = fh.read(_MAX_HEADER)
            except FileNotFoundError:
                raise CacheEntryError("its check file NAME.sum is missing") from None
            digest, size = _check_header(head.strip(), key)
            secret = self._secret(create=False)
            if secret is None:
                return False
            with open(file, "rb") as fh:
                _compare(*_file_digest(fh, max(size, 0) + 1, _mac(secret, key)), digest, size)
            return True

        return bool(self._checked(name, check))

    def write_file(self, name: str, key: str, write: Callable[[Path], Any]) -> bool:
        """Write entry file ``name`` with ``write(path)`` (an atomic writer of
        :mod:`structkernels.utils`), then its sidecar; False when nothing was kept."""

        def both(secret: bytes, file: Path) -> None:
            write(file)
            with open(file, "rb") as fh:
                digest, size = _file_digest(fh, 1 << 62, _mac(secret, key))
            with atomic_open(file.with_name(file.name + ".sum"), "wb", follow_links=False) as fh:
                fh.write(_header(key, digest, size) + b"\n")

        return self._guarded(name, both)
