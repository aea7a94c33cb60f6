"""What several commands share: checks on their arguments, reading a relation corpus, lines
on stderr.  Commands import from here, never from each other."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from structkernels.cli import CommandError
from structkernels.utils import (
    OutputError,
    cache_limit,
    cache_writes_disabled,
    check_cache_dir,
    check_folder_output,
    check_output,
    run_settings,
    same_file,
)

__all__ = ["check_outputs", "writes_files", "cache_options", "read_corpus",
           "stderr_log"]

def _option_dest(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def check_outputs(
    args: argparse.Namespace, options: Sequence[str],
    inputs: Iterable[str | os.PathLike | None], *, streams: Sequence[str] = (),
    writes: Callable[[str, str], str | os.PathLike | None] | None = None,
) -> None:
    """The output rule (:func:`structkernels.utils.check_output` against ``inputs``; ``-`` and
    FIFOs allowed for ``streams``) on every option of ``args`` that names a file to write,
    and two options naming one file refused; ``writes(option, value)`` gives the file
    written when it differs from the value.

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
    streams: Sequence[str] = (), folders: dict[str, Sequence[str]] | None = None,
):
    """``run`` preceded by the output rule (:func:`check_outputs`) on the ``options`` that
    write, against every file and folder ``inputs(args)`` lists, before any work;
    ``folders`` maps an option naming a folder to the files written there
    (:func:`check_folder_output`).  Use as
    ``p.set_defaults(func=writes_files(run, "--out", inputs=lambda a: [a.data]))``.
    """

    @functools.wraps(run)
    def checked(args: argparse.Namespace) -> int:
        ins = list(inputs(args)) if inputs is not None else []
        check_outputs(args, options, ins, streams=streams)
        for option, names in (folders or {}).items():
            value = getattr(args, _option_dest(option), None)
            if value is not None:
                try:
                    check_folder_output(value, names, ins, what=option)
                except OutputError as exc:
                    raise CommandError(str(exc)) from None
        return run(args)

    return checked


@contextlib.contextmanager
def cache_options(args: argparse.Namespace) -> Iterator[None]:
    """``--cache-dir`` checked (and ``$STRUCTKERNELS_CACHE_LIMIT``) and ``--no-cache`` in
    force for the run of a command, in worker processes too
    (:func:`structkernels.utils.run_settings`), so numba writes no cache either.
    """
    if getattr(args, "cache_dir", None) is not None:
        check_cache_dir(args.cache_dir, "--cache-dir")
    cache_limit()  # a $STRUCTKERNELS_CACHE_LIMIT that is not a size: one line before any work
    args.no_cache = bool(getattr(args, "no_cache", False) or cache_writes_disabled())
    with run_settings(no_cache=args.no_cache):
        yield


def stderr_log(args: argparse.Namespace) -> Callable[[str], None]:
    """A line printed on stderr, unless ``--quiet``."""

    def log(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    return log


def read_corpus(files: Sequence[str], skip_bad: bool, purpose: str):
    """The relation corpus of ``files``, each record left out (``--skip-bad``) said on stderr;
    a :class:`CommandError` when it holds no entity pair (to ``purpose``)."""
    from structkernels.relations import read_relations

    corpus = read_relations(files, on_error="skip" if skip_bad else "raise")
    for s in corpus.skipped:
        print(f"skipped: {s.file}:{s.line}: {s.record}: {s.reason}", file=sys.stderr)
    if not corpus.pairs():
        raise CommandError(f"{', '.join(files)}: no entity pair to {purpose}")
    return corpus
