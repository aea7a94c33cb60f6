"""Writing files: atomic writes, and the output rule that a file a command writes never
destroys an input or a special file.

An atomic write renames a complete temporary file of the destination's folder over it, so
an interrupt, a kill or a full disk leaves the old file intact.  Every option that names a
file to write goes through :func:`check_output` before any work; :func:`open_output` opens
what it allowed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from structkernels.utils._errors import StructkernelsError
from structkernels.utils._interrupt import check_interrupt

__all__ = [
    "WriteError", "atomic_path", "atomic_open", "save_npy", "npy_path", "atomic_memmap",
    "move_into_place", "destination", "file_kind", "open_side_file", "OutputError",
    "BRAT_SIBLINGS", "check_output", "check_folder_output", "open_output", "same_file",
]

_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG}
#: Groups of endings an input format reads together: an input ending in one of a group
#: also reads the files beside it with the others (BRAT: a ``.txt`` and its ``.ann``).
BRAT_SIBLINGS: tuple[tuple[str, ...], ...] = ((".txt", ".ann"),)


class WriteError(StructkernelsError, OSError):
    """A file could not be written (the message names it and why); it is unchanged."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _explain(exc: OSError, final: Path) -> WriteError:
    reason = "no space left on the device" if exc.errno in _NO_SPACE else exc.strerror or exc
    return WriteError(f"{final}: cannot write: {reason} (file unchanged)")


_KINDS = ((stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISCHR, "character device"),
          (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "folder"),
          (stat.S_ISREG, "file"))


def file_kind(path: str | os.PathLike) -> str:
    """What ``path`` is, followed through links, without opening it (a FIFO would block):
    ``"missing"``, ``"file"``, ``"folder"`` or a special kind."""
    try:
        return _kind(os.stat(path).st_mode)
    except (OSError, ValueError):
        return "missing"


def _kind(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "special file")


def open_side_file(path: str | os.PathLike, *, append: bool = False) -> int:
    """A file descriptor (the caller closes it) for writing the side file ``path``
    (``OUT.partial``), never through a symbolic link: an old file or a stale link there is
    removed and a fresh file created, or, with ``append`` (``--resume``), a regular file is
    opened for appending.

    A link to resume through, a folder, a special file, or a file
    that cannot be created is a :class:`WriteError` naming ``path``; nothing is written.

    Examples
    --------
    >>> import os, tempfile, pathlib
    >>> from structkernels.utils import open_side_file
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "in.xml").write_text("input")
    >>> (d / "o.jsonl.partial").symlink_to(d / "in.xml")
    >>> os.close(open_side_file(d / "o.jsonl.partial")), (d / "in.xml").read_text()
    (None, 'input')
    """
    final = destination(path, follow_links=False)
    nofollow = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    if append and os.path.islink(final):
        raise WriteError(f"{final}: cannot write: it is a symbolic link; a side file is "
                         "never written through a link (remove it and start again)")
    try:
        if append:
            fd = os.open(final, os.O_RDWR | os.O_APPEND | nofollow)
        else:
            final.unlink(missing_ok=True)
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


def destination(path: str | os.PathLike, *, follow_links: bool = True) -> Path:
    """The file an atomic write of ``path`` renames over: symbolic links followed, or, for a
    side file (``follow_links=False``), ``path`` itself (a link there is replaced).

    A link loop, or a FIFO, a device or a socket, which a rename would replace (for a side file: a
    folder or a special file), is a :class:`WriteError`.

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
    if not follow_links:
        try:
            mode = os.lstat(final).st_mode
        except FileNotFoundError:
            return final
        except OSError as exc:
            raise _explain(exc, final) from None
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            return final
        raise WriteError(f"{final}: cannot write: it is a {_kind(mode)}; a side file replaces "
                         "regular files and links only (nothing written)")
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

    ``src`` gets the permissions of the file it replaces (or the umask's) and is flushed
    with ``sync``; ``follow_links`` as in :func:`atomic_path`.  A :class:`WriteError` names
    ``path``, which is then unchanged.
    """
    final = destination(path, follow_links=follow_links)
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

    The temporary file lies in the folder of ``path``, which must exist; it is flushed
    first with ``sync``, and removed on an exception (``KeyboardInterrupt`` included),
    leaving ``path`` as it was.  A link at ``path`` is written through (its target
    replaced), or with ``follow_links=False`` (a side file) replaced itself; a FIFO, a
    device or a socket is refused.  A :class:`WriteError` names ``path``.

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
    final = destination(path, follow_links=follow_links)
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
    """Open a temporary file for writing (``mode`` ``"w"`` or ``"wb"``); it replaces
    ``path`` when the block ends cleanly.  ``follow_links`` as in :func:`atomic_path`.

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
    """:func:`numpy.save` through :func:`atomic_open` (``.npy`` appended to a name without
    it); the path written.  Object arrays are refused: they could only be read with pickle."""
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
    """A writable ``.npy`` memory map to fill, flushed and renamed to ``path`` (used as
    given) when the block ends cleanly; ``follow_links`` as in :func:`atomic_path`.

    The file's blocks are reserved before mapping (``posix_fallocate`` where available), so
    a full disk raises :class:`WriteError` here rather than ``SIGBUS`` later.
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


class OutputError(StructkernelsError, ValueError):
    """An output path the rule refuses, naming the option and the path (exit status 2)."""


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether ``a`` and ``b`` name one file: the same resolved path or the same inode.

    Examples
    --------
    >>> from structkernels.utils import same_file
    >>> same_file("a/../b.txt", "b.txt"), same_file("a.txt", "b.txt")
    (True, False)
    """
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _inside(path: str, folder: str) -> bool:
    """Whether the resolved ``path`` lies in the resolved ``folder`` (at any depth)."""
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives
        return False


def _links_in(folder: str) -> Iterator[tuple[str, str]]:
    """``(link, where it leads)`` for every symbolic link inside ``folder`` (not followed)."""
    for root, dirs, names in os.walk(folder, followlinks=False):
        for name in [*dirs, *names]:
            entry = os.path.join(root, name)
            if os.path.islink(entry):
                yield entry, os.path.realpath(entry)


def _siblings(name: str, groups: Sequence[Sequence[str]]) -> list[str]:
    """The files the format of input ``name`` reads beside it."""
    out: list[str] = []
    for source in dict.fromkeys([name, os.path.realpath(name)]):
        root, ext = os.path.splitext(source)
        for group in groups:
            if ext.lower() in group:
                out += [root + other for other in group if other != ext.lower()]
    return list(dict.fromkeys(out))


def check_output(
    path: str | os.PathLike,
    inputs: Iterable[str | os.PathLike | None] = (),
    *,
    what: str,
    stream_ok: bool = False,
    siblings: Sequence[Sequence[str]] = BRAT_SIBLINGS,
    writes: str | os.PathLike | None = None,
) -> Path | None:
    """Check an output path against the output rule; the file to write, or None for stdout.

    Refused: ``-`` where the output is not a stream (it would create a file named ``-``);
    a folder, or a file whose folder does not exist; an input itself (by resolved path or
    inode); a path inside an input folder, or one a link inside such a folder leads to; a
    sibling an input's format reads beside it (BRAT); a FIFO, a device or a socket unless
    the output is a stream (the atomic writer would replace it by a regular file).

    Parameters
    ----------
    path : path-like
        The output as the user gave it.
    inputs : iterable of path-like or None
        Every file and folder the command reads (``None`` entries are passed over).
    what : str
        The option that names ``path`` (``"--save-model"``), the start of every message.
    stream_ok : bool, default False
        The output is a stream (JSON Lines, lines of text): ``-`` means standard output
        and a FIFO, device or socket is written directly.  Otherwise both are refused.
    siblings : sequence of sequences of str, default :data:`BRAT_SIBLINGS`
        Endings an input format reads together (``()``: none).
    writes : path-like, optional
        The file actually written when it differs from ``path`` (``-o K`` writes ``K.npy``).

    Returns
    -------
    pathlib.Path or None
        The file that will be written, symbolic links followed; ``None`` for ``-``.  An
        :class:`OutputError` (one line, ``"{what} {path}: ..."``) says why not.

    Examples
    --------
    >>> from structkernels.utils import check_output
    >>> check_output("-", [], what="--save-model")
    Traceback (most recent call last):
    ...
    structkernels.utils._atomic.OutputError: --save-model -: standard output cannot hold this file; give a file name
    """
    given = os.fspath(path)
    head = f"{what} {given}"
    if given == "-":
        if stream_ok:
            return None
        raise OutputError(f"{head}: standard output cannot hold this file; give a file name")
    final = os.fspath(writes) if writes is not None else given
    extra = "" if writes is None or os.fspath(writes) == given else f" (it writes {final!r})"
    target = final
    if os.path.islink(final):
        target = os.path.realpath(final)
        if os.path.islink(target):
            raise OutputError(f"{head}: cannot write: a symbolic link that leads to itself "
                              "(a loop)")
    if os.path.isdir(target):
        raise OutputError(f"{head}: cannot write: it is a folder")
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        state = "is not a folder" if os.path.exists(folder) else "does not exist"
        via = "" if target == final else f" (the symbolic link leads to {target!r})"
        raise OutputError(f"{head}: cannot write: folder {folder!r} {state}{via}")
    kind = file_kind(target)
    if kind not in ("missing", "file") and not stream_ok:
        raise OutputError(f"{head}: cannot write: it is a {kind}, and {what} writes a regular "
                          "file (renaming over it would replace it)")
    written = [target, given] if writes is not None else [target]
    reals = list(dict.fromkeys(os.path.realpath(name) for name in written))
    for item in inputs:
        name = None if item is None else os.fspath(item)
        if name in (None, "-"):
            continue
        if os.path.isdir(name):
            base = os.path.realpath(name)
            if any(_inside(real, base) for real in reals):
                raise OutputError(f"{head}{extra}: is inside the input folder {name!r}; "
                                  "choose another output")
            for link, leads in _links_in(name):
                if any(_inside(real, leads) for real in reals):
                    raise OutputError(f"{head}{extra}: the input folder {name!r} reads it "
                                      f"through the link {link!r}; choose another output")
            continue
        if any(same_file(real, name) for real in reals):
            raise OutputError(f"{head}{extra}: is the input file {name!r}; choose another output")
        for sib in _siblings(name, siblings):
            if any(same_file(real, sib) for real in reals):
                noun = "text" if sib.endswith(".txt") else "file"
                raise OutputError(f"{head}{extra}: is the {noun} the input {name!r} reads "
                                  "beside it (a BRAT document); choose another output")
    return Path(target)


def check_folder_output(value: str, names: Sequence[str],
                        inputs: Iterable[str | os.PathLike | None], *, what: str) -> None:
    """The output rule on a folder an option writes ``names`` into (``--plot DIR``): not a
    file, not an input folder nor inside one, and each file written there allowed by
    :func:`check_output` (a missing folder is created: its nearest existing parent must be
    a folder); else an :class:`OutputError`."""
    ins = [os.fspath(i) for i in inputs if i is not None and os.fspath(i) != "-"]
    head = f"{what} {value}"
    if os.path.lexists(value) and not os.path.isdir(value):
        raise OutputError(f"{head}: cannot write: it is a file, and {what} names a folder")
    real = os.path.realpath(value)
    for name in ins:
        if os.path.isdir(name) and _inside(real, os.path.realpath(name)):
            raise OutputError(f"{head}: is inside the input folder {name!r}; choose another "
                              "output")
    parent = real
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise OutputError(f"{head}: cannot write: {parent!r} is not a folder")
    if parent == real:
        for name in names:
            check_output(os.path.join(value, name), ins, what=what)


@contextlib.contextmanager
def open_output(
    path: str | os.PathLike | None, mode: str = "w", *, stream_ok: bool = False,
    encoding: str | None = "utf-8",
) -> Iterator[IO[Any]]:
    """Open an output :func:`check_output` allowed: stdout, a stream's special file, or atomically.

    ``None`` or ``"-"`` is standard output (left open); a FIFO, device or socket is opened
    directly when ``stream_ok`` (there is nothing to rename over); anything else goes
    through :func:`atomic_open`.

    Examples
    --------
    >>> import os, tempfile
    >>> from structkernels.utils import open_output
    >>> out = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
    >>> with open_output(out, stream_ok=True) as fh:
    ...     _ = fh.write('{"a": 1}\\n')
    >>> open(out).read()
    '{"a": 1}\\n'
    """
    if mode not in ("w", "wb", "wt"):
        raise ValueError(f"open_output writes: mode must be 'w' or 'wb', got {mode!r}")
    if path is None or os.fspath(path) == "-":
        if not stream_ok:
            raise OutputError("standard output cannot hold this file; give a file name")
        yield sys.stdout.buffer if "b" in mode else sys.stdout
        return
    if stream_ok and file_kind(path) not in ("missing", "file", "folder"):
        # a FIFO, a device or a socket: written in place, never renamed
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
        return
    with atomic_open(path, mode, encoding=encoding) as fh:
        yield fh
