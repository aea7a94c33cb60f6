"""What several commands share: checks on their arguments.  Commands import from here,
never from each other."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from pathlib import Path as FilePath

from structkernels.cli import CommandError

__all__ = [
    "same_file", "refuse_output_over_input", "check_output_folder", "writes_files",
    "load_graph_labels",
]


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


def check_output_folder(
    output: str | os.PathLike | None, option: str, *, writes: str | os.PathLike | None = None,
) -> None:
    """Raise :class:`CommandError` when ``option OUTPUT`` names a file that cannot be created.

    Its folder must exist: no command creates folders (a mistyped folder would
    otherwise appear silently).  ``writes`` is the file actually written when it
    differs from ``output`` (``-o K`` writes ``K.npy``).  ``None`` and ``"-"``
    (standard output) pass.
    """
    if output is None or os.fspath(output) == "-":
        return
    final = Path(os.fspath(output if writes is None else writes))
    folder = final.parent  # "." for a bare name
    if final.is_dir():
        raise CommandError(f"{option} {os.fspath(output)}: cannot write: it is a folder")
    if not folder.is_dir():
        state = "is not a folder" if folder.exists() else "does not exist"
        raise CommandError(
            f"{option} {os.fspath(output)}: cannot write: folder {str(folder)!r} {state}"
        )


def writes_files(run: Callable[[argparse.Namespace], int], *options: str):
    """``run`` preceded by :func:`check_output_folder` on each option that names a file to write.

    ``options`` are the flags (``"--out"``, ``"--plot"``); each is checked before any
    work, so a missing folder costs nothing.  Use as ``p.set_defaults(func=writes_files(run,
    "--out"))``.
    """

    @functools.wraps(run)
    def checked(args: argparse.Namespace) -> int:
        for option in options:
            dest = option.lstrip("-").replace("-", "_")
            check_output_folder(getattr(args, dest, None), option)
        return run(args)

    return checked


def load_graph_labels(args: argparse.Namespace):
    """``train-npk --graphs DIR --graph-labels FILE``: the labelled candidates of a user's graphs.

    Loads with :func:`structkernels.datasets.load_pubmed45`, reports every
    unresolved record on stderr, and sets ``args.data`` to the labels file
    (the run's data source in the summary and the model file).
    """
    from structkernels.datasets import load_pubmed45

    if args.graph_labels is None:
        raise CommandError("--graphs needs --graph-labels FILE.json (the labelled interaction tuples)")
    if getattr(args, "data", None) is not None:
        raise CommandError("give either DATA or --graphs/--graph-labels, not both")
    if not FilePath(args.graph_labels).is_file():
        raise CommandError(f"no such file: {args.graph_labels}")
    if args.graphs is not None and not FilePath(args.graphs).is_dir():
        raise CommandError(f"no such folder: {args.graphs}")
    ds = load_pubmed45(
        args.graph_labels,
        args.graphs,
        swapped="negative",  # σ is learned for the binary task
        on_error="skip" if args.skip_bad else "raise",
    )
    cmd = getattr(args, "command", None) or "train-npk"
    for rec in ds.skipped:
        print(f"structkernels {cmd}: unresolved {rec}", file=sys.stderr)
    if ds.skipped:
        print(
            f"structkernels {cmd}: {len(ds.skipped)} record(s) unresolved, "
            f"{len(ds)} loaded",
            file=sys.stderr,
        )
    args.data = f"{args.graph_labels} over {args.graphs or FilePath(args.graph_labels).parent}"
    return ds
