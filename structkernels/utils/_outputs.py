"""The output rule: a file a command writes never destroys an input or a special file.

Every option that names a file to write goes through :func:`check_output` before any work;
:func:`open_output` opens what it allowed.  A symbolic link at the output path is written
*through* (the checks apply to the file it leads to; the link stays a link).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from structkernels.utils._atomic import atomic_open, file_kind, open_special
from structkernels.utils._compressed import read_once
from structkernels.utils._errors import StructkernelsError

__all__ = ["OutputError", "BRAT_SIBLINGS", "check_output", "check_folder_output", "open_output"]

#: Groups of endings an input format reads together: an input ending in one of a group
#: also reads the files beside it with the others (BRAT: a ``.txt`` and its ``.ann``).
BRAT_SIBLINGS: tuple[tuple[str, ...], ...] = ((".txt", ".ann"),)


class OutputError(StructkernelsError, ValueError):
    """An output path the rule refuses; the message names the option and the path.

    A ``ValueError``: the command line prints it as one line, exit status 2.
    """


def _real(path: str) -> str:
    return os.path.realpath(path)


def _same(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name one file: the same resolved path or the same inode."""
    if _real(a) == _real(b):
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
                yield entry, _real(entry)


def _siblings(name: str, groups: Sequence[Sequence[str]]) -> list[str]:
    """The files the format of input ``name`` reads beside it."""
    out: list[str] = []
    for source in dict.fromkeys([name, _real(name)]):
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
        The file that will be written, symbolic links followed; ``None`` for ``-``.

    Raises
    ------
    OutputError
        One line, ``"{what} {path}: ..."``, saying why.

    Examples
    --------
    >>> import os, tempfile
    >>> from structkernels.utils import check_output
    >>> d = tempfile.mkdtemp()
    >>> for name in ("doc.txt", "doc.ann"):
    ...     open(os.path.join(d, name), "a").close()
    >>> check_output(os.path.join(d, "scores.jsonl"), [os.path.join(d, "doc.ann")],
    ...              what="-o").name
    'scores.jsonl'
    >>> check_output(os.path.join(d, "doc.txt"), [os.path.join(d, "doc.ann")], what="-o")
    Traceback (most recent call last):
    ...
    structkernels.utils._outputs.OutputError: -o .../doc.txt: is the text the input '.../doc.ann' reads beside it (a BRAT document); choose another output
    >>> check_output("-", [], what="--save-model")
    Traceback (most recent call last):
    ...
    structkernels.utils._outputs.OutputError: --save-model -: standard output cannot hold this file; give a file name
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
        target = _real(final)
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
    reals = list(dict.fromkeys([_real(target), *([_real(given)] if writes is not None else [])]))
    for item in inputs:
        if item is None:
            continue
        name = os.fspath(item)
        if name == "-":
            continue
        if os.path.isdir(name):
            base = _real(name)
            if any(_inside(real, base) for real in reals):
                raise OutputError(f"{head}{extra}: is inside the input folder {name!r}; "
                                  "choose another output")
            for link, leads in _links_in(name):
                if any(_inside(real, leads) for real in reals):
                    raise OutputError(f"{head}{extra}: the input folder {name!r} reads it "
                                      f"through the link {link!r}; choose another output")
            continue
        if any(_same(real, name) for real in reals):
            raise OutputError(f"{head}{extra}: is the input file {name!r}; choose another output")
        for sib in _siblings(name, siblings):
            if any(_same(real, sib) for real in reals):
                noun = "text" if sib.endswith(".txt") else "file"
                raise OutputError(f"{head}{extra}: is the {noun} the input {name!r} reads "
                                  "beside it (a BRAT document); choose another output")
    return Path(target)


def check_folder_output(value: str, names: Sequence[str],
                        inputs: Iterable[str | os.PathLike | None], *, what: str) -> None:
    """The output rule on a folder an option writes ``names`` into (``--plot DIR``): not a
    file, not an input folder nor inside one, and each file written there allowed by
    :func:`check_output` (a missing folder is created: its nearest existing parent must be
    a folder).

    Raises
    ------
    OutputError
        One line naming the option and the path.
    """
    ins = [os.fspath(i) for i in inputs if i is not None and os.fspath(i) != "-"]
    head = f"{what} {value}"
    if os.path.lexists(value) and not os.path.isdir(value):
        raise OutputError(f"{head}: cannot write: it is a file, and {what} names a folder")
    real = _real(value)
    for name in ins:
        if os.path.isdir(name) and _inside(real, _real(name)):
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
    through :func:`structkernels.utils.atomic_open` (written whole or not at all, through
    a symbolic link to its target).

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
    if stream_ok and read_once(path):
        with open_special(path, mode, encoding=encoding) as fh:
            yield fh
        return
    with atomic_open(path, mode, encoding=encoding) as fh:
        yield fh
