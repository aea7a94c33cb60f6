"""What several commands share: checks on their arguments.  Commands import from here,
never from each other."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from pathlib import Path as FilePath

from structkernels.cli import CommandError
from structkernels.utils import OutputError, check_output

__all__ = [
    "same_file", "refuse_output_over_input", "check_output_folder", "check_outputs",
    "writes_files",
    "load_graph_labels", "cache_options", "CACHE_DIR_HELP", "NO_CACHE_HELP",
]

#: The help of a command's ``--cache-dir``: the one cache folder of every kind of entry.
CACHE_DIR_HELP = (
    "the cache folder: parses, and what the command computes once and reuses (Grams and σ "
    "for evaluate); default $STRUCTKERNELS_CACHE, else $XDG_CACHE_HOME/structkernels or "
    "~/.cache/structkernels. Entries are checked when read; `structkernels cache` shows "
    "and clears it, $STRUCTKERNELS_CACHE_LIMIT (default 4G) bounds it with a warning")
#: The help of a command's ``--no-cache``.
NO_CACHE_HELP = (
    "read and write no cache (parses, Grams and σ, compiled kernels): everything is "
    "computed again and nothing is written but the outputs asked for")


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
    writes: str | os.PathLike | None = None, option: str = "output",
) -> None:
    """Raise :class:`CommandError` when ``output`` (or the file it ``writes``) is an input.

    The output rule (:func:`structkernels.utils.check_output`) for a stream output:
    an input file, a file inside an input folder or a BRAT sibling of an input is
    refused; ``"-"`` (standard output) passes.
    """
    if os.fspath(output) == "-":
        return
    try:
        check_output(output, inputs, what=option, stream_ok=True, writes=writes)
    except OutputError as exc:
        raise CommandError(str(exc)) from None


def check_output_folder(
    output: str | os.PathLike | None, option: str, *, writes: str | os.PathLike | None = None,
) -> None:
    """Raise :class:`CommandError` when ``option OUTPUT`` names a file that cannot be created.

    Its folder must exist: no command creates folders (a mistyped folder would
    otherwise appear silently).  ``writes`` is the file actually written when it
    differs from ``output`` (``-o K`` writes ``K.npy``).  ``None`` and ``"-"``
    (standard output) pass.  The folder part of the output rule
    (:func:`structkernels.utils.check_output`, which :func:`writes_files` applies whole).
    """
    if output is None or os.fspath(output) == "-":
        return
    try:
        check_output(output, (), what=option, stream_ok=True, writes=writes)
    except OutputError as exc:
        raise CommandError(str(exc)) from None


def _option_dest(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def check_outputs(
    args: argparse.Namespace, options: Sequence[str],
    inputs: Iterable[str | os.PathLike | None], *, streams: Sequence[str] = (),
    writes: Callable[[str, str], str | os.PathLike | None] | None = None,
) -> None:
    """The output rule on every option of ``args`` that names a file to write.

    Each option's value goes through :func:`structkernels.utils.check_output` against
    ``inputs`` (a stream when the option is in ``streams``: ``-`` and FIFOs allowed), and
    two options naming one file are refused.  ``writes(option, value)`` gives the file
    actually written when it differs from the value.

    Raises
    ------
    CommandError
        One line naming the option and the path.

    Examples
    --------
    >>> import argparse, os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> data = os.path.join(d, "in.jsonl")
    >>> open(data, "a").close()
    >>> check_outputs(argparse.Namespace(out=data), ["--out"], [data])
    Traceback (most recent call last):
    ...
    structkernels.cli.CommandError: --out .../in.jsonl: is the input file '.../in.jsonl'; choose another output
    """
    ins = list(inputs)
    seen: list[tuple[str, Path]] = []
    for option in options:
        value = getattr(args, _option_dest(option), None)
        if value is None:
            continue
        actual = writes(option, value) if writes is not None else None
        try:
            target = check_output(value, ins, what=option, stream_ok=option in streams,
                                  writes=actual)
        except OutputError as exc:
            raise CommandError(str(exc)) from None
        if target is None:
            continue
        for other, earlier in seen:
            if same_file(target, earlier):
                raise CommandError(f"{option} {value}: is also the {other} output; give each "
                                   "output its own file")
        seen.append((option, target))


def writes_files(
    run: Callable[[argparse.Namespace], int], *options: str,
    inputs: Callable[[argparse.Namespace], Iterable[str | os.PathLike | None]] | None = None,
    streams: Sequence[str] = (),
):
    """``run`` preceded by the output rule (:func:`check_outputs`) on each option that writes.

    ``options`` are the flags (``"--out"``, ``"--plot"``); ``inputs(args)`` lists every
    file and folder the command reads; ``streams`` are the options whose output is a
    stream (``-`` is standard output, a FIFO is written in place).  Each is checked before
    any work, so a bad output costs nothing.  Use as ``p.set_defaults(func=writes_files(run,
    "--out", inputs=lambda a: [a.data]))``.
    """

    @functools.wraps(run)
    def checked(args: argparse.Namespace) -> int:
        check_outputs(args, options, inputs(args) if inputs is not None else (),
                      streams=streams)
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


@contextlib.contextmanager
def cache_options(args: argparse.Namespace) -> Iterator[None]:
    """``--cache-dir`` checked and ``--no-cache`` in force for the run of a command.

    An empty ``--cache-dir`` is refused, and a ``$STRUCTKERNELS_CACHE_LIMIT`` that is not a
    size (:class:`~structkernels.utils.CacheLimitError`, exit 2); a cache folder that cannot be written turns
    caching off (``args.no_cache``); with ``--no-cache`` the environment says so where
    compiled kernels are decorated (here and in worker processes), so numba writes no cache
    either.  The environment is restored afterwards.
    """
    from structkernels.utils import (
        NO_CACHE_ENV,
        cache_limit,
        cache_writes_disabled,
        check_cache_dir,
    )

    if getattr(args, "cache_dir", None) is not None:
        check_cache_dir(args.cache_dir, "--cache-dir")
    cache_limit()  # a $STRUCTKERNELS_CACHE_LIMIT that is not a size: one line before any work
    args.no_cache = bool(getattr(args, "no_cache", False) or cache_writes_disabled())
    previous = os.environ.get(NO_CACHE_ENV)
    if args.no_cache:
        os.environ[NO_CACHE_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(NO_CACHE_ENV, None)
        else:
            os.environ[NO_CACHE_ENV] = previous
