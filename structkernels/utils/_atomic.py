"""Atomic writes: a file appears complete under its name, or not at all.

The content goes to a temporary file in the destination's folder, flushed, and is renamed
over the destination only when complete, so an interrupt, a kill or a full disk leaves the
old file intact.  A symbolic link at the destination is written *through* (the link stays a
link); a FIFO, a device or a socket is refused (renaming over it would replace the special
file itself).  A *side file* (``OUT.partial``, a checksum file) is never written through a
link: a stale link there is replaced itself, and one taken up again is opened with
``O_NOFOLLOW``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from structkernels.utils._errors import StructkernelsError
from structkernels.utils._interrupt import check_interrupt

__all__ = [
    "WriteError", "atomic_path", "atomic_open", "save_npy", "npy_path", "atomic_memmap",
    "move_into_place", "destination", "file_kind", "open_special", "open_side_file",
]

_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG}


class WriteError(StructkernelsError, OSError):
    """A file could not be written; the message names the file and the reason.

    The destination, if it existed, is unchanged.
    """


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _explain(exc: OSError, final: Path) -> WriteError:
    if exc.errno in _NO_SPACE:
        return WriteError(f"{final}: cannot write: no space left on the device (file unchanged)")
    reason = exc.strerror or str(exc)
    return WriteError(f"{final}: cannot write: {reason} (file unchanged)")


_KINDS = ((stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISCHR, "character device"),
          (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "folder"),
          (stat.S_ISREG, "file"))


def file_kind(path: str | os.PathLike) -> str:
    """What ``path`` is, followed through links, without opening it.

    ``"missing"``, ``"file"``, ``"folder"``, ``"FIFO (named pipe)"``,
    ``"character device"``, ``"block device"``, ``"socket"`` or ``"special file"``.
    A FIFO is never opened, so one without a reader does not block.

    Examples
    --------
    >>> from structkernels.utils import file_kind
    >>> file_kind("/dev/null"), file_kind("/no/such/file")
    ('character device', 'missing')
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return "missing"
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "special file"  # pragma: no cover - doors, event ports


def _side_destination(path: str | os.PathLike) -> Path:
    """``path`` itself (a link there is replaced, never followed); a folder or a special
    file is refused."""
    final = Path(os.fspath(path))
    try:
        mode = os.lstat(final).st_mode
    except FileNotFoundError:
        return final
    except OSError as exc:
        raise _explain(exc, final) from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        kind = next((k for test, k in _KINDS if test(mode)), "special file")
        raise WriteError(f"{final}: cannot write: it is a {kind}; a side file replaces "
                         "regular files and links only (nothing written)")
    return final


def open_side_file(path: str | os.PathLike, *, append: bool = False) -> int:
    """A file descriptor for writing the side file ``path`` (``OUT.partial``), never
    through a symbolic link.

    New: an old file or a stale link at ``path`` is removed and a fresh file is created
    with ``O_EXCL`` and ``O_NOFOLLOW``.  With ``append`` (``--resume``): opened for
    appending with ``O_NOFOLLOW``; it must be a regular file.  The caller closes it.

    Raises
    ------
    WriteError
        Naming ``path``: a link to resume through, a folder, a special file, or the
        reason it cannot be created; nothing is written.

    Examples
    --------
    >>> import os, tempfile, pathlib
    >>> from structkernels.utils import open_side_file
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "in.xml").write_text("input")
    >>> (d / "o.jsonl.partial").symlink_to(d / "in.xml")
    >>> fd = open_side_file(d / "o.jsonl.partial")
    >>> os.write(fd, b"row"), os.close(fd), (d / "in.xml").read_text()
    (3, None, 'input')
    """
    final = _side_destination(path)
    nofollow = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    if append and os.path.islink(final):
        raise WriteError(f"{final}: cannot write: it is a symbolic link; a side file is "
                         "never written through a link (remove it and start again)")
    try:
        if append:
            fd = os.open(final, os.O_RDWR | os.O_APPEND | nofollow)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(final)
            fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteError(f"{final}: cannot write: it is a symbolic link; a side file "
                             "is never written through a link") from None
        raise _explain(exc, final) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WriteError(f"{final}: cannot write: not a regular file (nothing written)")
    return fd


def destination(path: str | os.PathLike) -> Path:
    """The file an atomic write of ``path`` renames over: symbolic links followed.

    Raises
    ------
    WriteError
        ``path`` is a link loop, or (followed) a FIFO, a device or a socket, which a
        rename would replace; nothing is written.

    Examples
    --------
    >>> import os, tempfile, pathlib
    >>> from structkernels.utils import destination
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "real.txt").write_text("old")
    >>> (d / "link.txt").symlink_to(d / "real.txt")
    >>> destination(d / "link.txt") == (d / "real.txt").resolve()
    True
    """
    given = Path(os.fspath(path))
    final = given
    if os.path.islink(given):
        final = Path(os.path.realpath(given))
        if os.path.islink(final):
            raise WriteError(f"{given}: cannot write: a symbolic link that leads to itself "
                             "(a loop); nothing written")
    kind = file_kind(final)
    if kind not in ("missing", "file", "folder"):
        raise WriteError(f"{given}: cannot write: it is a {kind}; an atomic write replaces "
                         "regular files only (nothing written)")
    return final


@contextlib.contextmanager
def open_special(path: str | os.PathLike, mode: str = "w", *,
                 encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a FIFO, device or socket for a stream of output: written in place, never renamed.

    Nothing is created or truncated: ``path`` must already be a special file.

    Raises
    ------
    WriteError
        ``path`` is a regular file, a folder or missing (use :func:`atomic_open`), or
        cannot be opened.

    Examples
    --------
    >>> from structkernels.utils import open_special
    >>> with open_special("/dev/null") as fh:
    ...     _ = fh.write("discarded")
    """
    kind = file_kind(path)
    if kind in ("missing", "file", "folder"):
        raise WriteError(f"{path}: cannot write: it is a {kind}, not a stream; "
                         "write it with atomic_open")
    binary = "b" in mode
    try:
        fh = open(path, "wb" if binary else "w", encoding=None if binary else encoding)
    except OSError as exc:
        raise _explain(exc, Path(os.fspath(path))) from None
    try:
        yield fh
        fh.flush()
    except OSError as exc:
        if isinstance(exc, (WriteError, BrokenPipeError)):  # a reader gone: the caller's
            raise
        raise _explain(exc, Path(os.fspath(path))) from None
    finally:
        with contextlib.suppress(OSError):
            fh.close()


def sync_folder(folder: str | os.PathLike) -> None:
    """Flush a folder's entries (files just renamed into it) to disk, where the platform can."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    with contextlib.suppress(OSError):
        os.fsync(fd)
    os.close(fd)


def move_into_place(src: str | os.PathLike, path: str | os.PathLike, *, sync: bool = True,
                    follow_links: bool = True) -> None:
    """Rename the complete file ``src`` over ``path``, the last step of every atomic write.

    ``src`` gets the permissions of the file it replaces (or the umask's), is flushed to
    disk with ``sync``, and is renamed (:func:`os.replace`).  For a file built over several
    runs (a resumable Gram); ``follow_links`` as in :func:`atomic_path`.

    Raises
    ------
    WriteError
        Naming ``path``, which is unchanged.
    """
    final = destination(path) if follow_links else _side_destination(path)
    try:
        if final.exists() and not final.is_symlink():
            os.chmod(src, final.stat().st_mode & 0o7777)
        else:
            os.chmod(src, 0o666 & ~_umask())
        if sync:
            with open(src, "rb+") as fh:
                os.fsync(fh.fileno())
        check_interrupt()  # an interrupt swallowed on the way replaces nothing
        os.replace(src, final)
    except OSError as exc:
        raise _explain(exc, final) from None
    if sync:
        sync_folder(final.parent if str(final.parent) else Path("."))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, sync: bool = True,
                follow_links: bool = True) -> Iterator[Path]:
    """A temporary path to write; renamed to ``path`` when the block ends without error.

    Parameters
    ----------
    path : path-like
        The destination; its folder must exist (the rename never crosses file systems).
    sync : bool, default True
        Flush the temporary file to disk before the rename.
    follow_links : bool, default True
        Whether a link at ``path`` is written through; False for a side file: the link
        itself is replaced.

    Yields
    ------
    pathlib.Path
        Where to write.  On an exception (``KeyboardInterrupt`` included) it is removed
        and ``path`` is left as it was.

    Raises
    ------
    WriteError
        The folder is missing or not writable, or the disk is full, naming ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from structkernels.utils import atomic_path
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "result.txt"
    >>> with atomic_path(out) as tmp:
    ...     _ = tmp.write_text("complete")
    >>> out.read_text()
    'complete'
    """
    # through a symbolic link (a side file: the link replaced); a special file refused
    final = destination(path) if follow_links else _side_destination(path)
    folder = final.parent if str(final.parent) else Path(".")
    if final.is_dir():
        raise WriteError(f"{final}: cannot write: it is a folder")
    if not folder.is_dir():
        raise WriteError(f"{final}: cannot write: folder {str(folder)!r} does not exist")
    try:
        fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _explain(exc, final) from None
    tmp = Path(name)
    try:
        os.close(fd)
        yield tmp
        move_into_place(tmp, final, sync=sync, follow_links=follow_links)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise _explain(exc, final) from None
        raise


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike, mode: str = "w", *, encoding: str | None = "utf-8",
    follow_links: bool = True, **kwargs: Any
) -> Iterator[IO[Any]]:
    """Open a temporary file for writing; it replaces ``path`` when the block ends cleanly.

    ``mode`` is ``"w"`` (text, ``encoding`` applies) or ``"wb"``; ``follow_links`` as in
    :func:`atomic_path` (False for a side file).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from structkernels.utils import atomic_open
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "lines.jsonl"
    >>> with atomic_open(out) as fh:
    ...     _ = fh.write('{"a": 1}\\n')
    >>> out.read_text()
    '{"a": 1}\\n'
    """
    if mode not in ("w", "wb", "wt"):
        raise ValueError(f"atomic_open writes a new file: mode must be 'w' or 'wb', got {mode!r}")
    binary = "b" in mode
    with atomic_path(path, follow_links=follow_links) as tmp:
        with open(tmp, mode, encoding=None if binary else encoding, **kwargs) as fh:
            yield fh


def npy_path(path: str | os.PathLike) -> Path:
    """``path`` with ``.npy`` appended when it has another ending, as :func:`numpy.save` does."""
    p = Path(os.fspath(path))
    return p if p.name.endswith(".npy") else p.with_name(p.name + ".npy")


def save_npy(path: str | os.PathLike, array: Any, *, follow_links: bool = True) -> Path:
    """:func:`numpy.save` through a temporary file; returns the path written.

    ``.npy`` is appended to a name without it.  Object arrays are refused: they could only
    be read back with pickle.  ``follow_links`` as in :func:`atomic_path`."""
    import numpy as np

    arr = np.asanyarray(array)
    if arr.dtype.hasobject:
        raise TypeError("save_npy writes numeric arrays only (an object array needs pickle)")
    final = npy_path(path)
    with atomic_open(final, "wb", follow_links=follow_links) as fh:
        np.save(fh, arr, allow_pickle=False)
    return final


@contextlib.contextmanager
def atomic_memmap(
    path: str | os.PathLike, shape: tuple[int, ...], dtype: Any = "float64", *,
    follow_links: bool = True,
) -> Iterator[Any]:
    """A writable ``.npy`` memory map built under a temporary name.

    The file's blocks are reserved before mapping (``posix_fallocate`` where available), so
    a full disk raises :class:`WriteError` here rather than ``SIGBUS`` later.  When the
    block ends cleanly the map is flushed and renamed to ``path`` (used as given);
    ``follow_links`` as in :func:`atomic_path`.

    Yields
    ------
    numpy.memmap
        The array to fill; after the block, reopen ``path`` to read it.
    """
    import numpy as np

    final = Path(os.fspath(path))
    with atomic_path(final, follow_links=follow_links) as tmp:
        try:
            mm = np.lib.format.open_memmap(os.fspath(tmp), mode="w+", dtype=dtype, shape=shape)
            size = os.path.getsize(tmp)
            if hasattr(os, "posix_fallocate") and size:
                fd = os.open(tmp, os.O_RDWR)
                try:
                    os.posix_fallocate(fd, 0, size)
                except OSError as exc:
                    if exc.errno in _NO_SPACE:
                        raise
                    # file systems without fallocate (EOPNOTSUPP/EINVAL): write as usual
                finally:
                    os.close(fd)
        except OSError as exc:
            raise _explain(exc, final) from None
        yield mm
        mm.flush()
        del mm
