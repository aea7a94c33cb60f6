"""What several commands share: checks on their arguments.  Commands import from here,
never from each other."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from structkernels.cli import CommandError

__all__ = ["same_file", "refuse_output_over_input"]


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether ``a`` and ``b`` name one file (resolved paths, or the same inode)."""
    pa, pb = Path(a), Path(b)
    try:
        if pa.resolve() == pb.resolve():
            return True
    except (OSError, RuntimeError):  # pragma: no cover - symlink loops
        pass
    try:
        return os.path.samefile(pa, pb)
    except OSError:
        return False


def refuse_output_over_input(
    output: str | os.PathLike, inputs: Iterable[str | os.PathLike | None], *,
    writes: str | os.PathLike | None = None,
) -> None:
    """Raise :class:`CommandError` when ``output`` (or the file it ``writes``) is an input.

    Writing it would destroy the data being read.  ``"-"`` (standard output)
    is never an input.
    """
    if os.fspath(output) == "-":
        return
    candidates = list(dict.fromkeys([os.fspath(output)] + ([os.fspath(writes)] if writes else [])))
    for name in inputs:
        if name is None:
            continue
        for candidate in candidates:
            if same_file(candidate, name):
                extra = "" if writes is None else f" (it writes {os.fspath(writes)!r})"
                raise CommandError(
                    f"output {os.fspath(output)!r} is the input file {os.fspath(name)!r}"
                    f"{extra}: choose another output"
                )
