"""The user's cache folder of structkernels, and checked cache entries that cannot change a
result.

Every entry carries the SHA-256 of its key and a keyed digest of key and content
(HMAC-SHA-256 under the folder's secret ``.hmac-key``: 32 random bytes, mode 0600, trusted
only as a regular file of this user that no one else can read or write), in a one-line JSON
header before the content or, for a large entry (a Gram ``.npy``), in a sidecar
``NAME.sum``.  An entry edited by someone who cannot read the secret fails its check even
with its SHA-256 recomputed (the threat model is in ``docs/reliability.md``); it is
discarded and computed again with one :class:`CacheWarning`.  Side files are never written
through a link.  A folder that cannot be written turns the cache's writes off with one
warning; the work goes on.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from structkernels.utils._atomic import atomic_open
from structkernels.utils._cache_usage import (
    ENTRY_FORMAT,
    mark_cache_folder,
    note_cache_write,
    user_cache_dir,
)
from structkernels.utils._errors import StructkernelsError, StructkernelsWarning
from structkernels.utils._records import one_line

__all__ = [
    "NO_CACHE_ENV",
    "CacheDirError",
    "CacheEntryError",
    "CacheFolder",
    "CacheWarning",
    "cache_dir_problem",
    "cache_writes_disabled",
    "usable_cache_dir",
    "check_cache_dir",
]

#: Set (to anything but ``""`` or ``"0"``) to write no cache at all, compiled kernels
#: included; the commands' ``--no-cache`` sets it for their run and their workers.
NO_CACHE_ENV = "STRUCTKERNELS_NO_CACHE"
_FORMAT = ENTRY_FORMAT
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


def cache_writes_disabled() -> bool:
    """Whether ``$STRUCTKERNELS_NO_CACHE`` asks for no cache writes at all.

    Examples
    --------
    >>> import os
    >>> from structkernels.utils import cache_writes_disabled
    >>> cache_writes_disabled() == (os.environ.get("STRUCTKERNELS_NO_CACHE", "") not in ("", "0"))
    True
    """
    return os.environ.get(NO_CACHE_ENV, "") not in ("", "0")


def check_cache_dir(path: str | os.PathLike | None, option: str = "cache_dir") -> Path | None:
    """``path`` as a cache folder; an empty string is refused (it would mean the current
    folder).  None stays None.

    Raises
    ------
    CacheDirError
        ``path`` is empty (a ``ValueError``).

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

    The folder is created if needed (and then marked as a cache) and a small file is
    written in it and removed: a read-only folder, a file in the way or a full disk is
    found before the work starts.

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
        return (str(exc) or type(exc).__name__).splitlines()[0]
    return None



def usable_cache_dir(cache_dir: Any, warn: Callable[[str], None]) -> Any:
    """The parse cache to use: False for ``False`` or a folder that cannot be written (said
    through ``warn``), else ``cache_dir`` (None: the default folder)."""
    if cache_dir is False:
        return False
    where = cache_dir or user_cache_dir()
    problem = cache_dir_problem(where)
    if problem is not None:
        warn(f"warning: {where}: the cache folder cannot be written ({one_line(problem)}); "
             "caching is off for this run")
        return False
    return cache_dir


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mac(secret: bytes, key: str) -> hmac.HMAC:
    """The keyed digest of an entry for ``key``, its content still to be fed."""
    return hmac.new(secret, _sha256(key.encode()).encode() + b"\n", hashlib.sha256)


def _header(key: str, digest: str, size: int) -> bytes:
    return json.dumps({"format": _FORMAT, "version": _VERSION, "key": _sha256(key.encode()),
                       "hmac": digest, "bytes": size}, sort_keys=True).encode()


def _check_header(raw: bytes, key: str) -> tuple[str, int]:
    """The keyed digest and size a header promises, or CacheEntryError."""
    try:
        head = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CacheEntryError("no readable check header") from None
    if not isinstance(head, dict) or head.get("format") != _FORMAT:
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
    """The secret in ``file``; None when absent; CacheEntryError when it cannot be trusted
    (a link, not a regular file, another user's, readable by others, the wrong size)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file, flags)
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
    """Create ``folder/.hmac-key`` (mode 0600): written under a fresh name (``O_EXCL``,
    ``O_NOFOLLOW``), then linked into place, so a reader never sees half a secret and a
    concurrent creator's secret wins whole."""
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

    Parameters
    ----------
    path : path or None
        The folder (created on the first write); None: a cache that keeps nothing.
    what : str
        What the entries are, for the messages (``"parse cache"``).

    Notes
    -----
    Reads never raise: an absent entry is None, a damaged one is discarded with one
    :class:`CacheWarning` naming it.  The first write that fails with an ``OSError``
    turns writing off for this object with one warning; entries already there are still
    read, after their check.  With ``$STRUCTKERNELS_NO_CACHE`` nothing is written.

    Examples
    --------
    >>> import tempfile
    >>> from structkernels.utils import CacheFolder
    >>> cache = CacheFolder(tempfile.mkdtemp(), "demo cache")
    >>> cache.write("a.json", "key of a", b'{"x": 1}')
    True
    >>> cache.read("a.json", "key of a")
    b'{"x": 1}'
    >>> cache.read("a.json", "another key") is None  # doctest: +SKIP
    True
    """

    def __init__(self, path: str | os.PathLike | None, what: str = "cache"):
        self.path = None if path is None else Path(path)
        self.what = what
        self.writable = self.path is not None and not cache_writes_disabled()
        self._key: bytes | None = None
        self._untrusted = False

    def file(self, name: str) -> Path:
        """The path of entry ``name`` (a relative path)."""
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

    # ------------------------------------------------------------------ messages
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
            reason = (str(exc) or type(exc).__name__).splitlines()[0]
            warnings.warn(CacheWarning(
                f"{self.path}: the {self.what} cannot be written ({reason}); "
                "its writes are off for this run, results are computed as without it"),
                stacklevel=3)
            return False
        written = 0
        for path in (file, file.with_name(file.name + ".sum")):
            with contextlib.suppress(OSError):
                written += path.stat().st_size
        note_cache_write(self.path, written)  # one warning past the cache's size limit
        return True

    # ------------------------------------------------------------------ small entries
    def _checked(self, name: str, check: Callable[[], Any]) -> Any:
        """``check()``; None for an entry of an older version, None and one warning for
        a damaged or unreadable one."""
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

    # ------------------------------------------------------------------ large entries
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
