"""The ``structkernels`` command line: sub-commands from the entry-point group
``structkernels.commands`` (so a plugin adds its own); a user error prints one line and exits
with status 2, never a traceback (``STRUCTKERNELS_DEBUG=1`` shows one)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import warnings
from collections.abc import Iterator, Sequence

from structkernels import __version__
from structkernels.kernels.names import kernels
from structkernels.registry import CORE_DISTRIBUTION, Registry, distribution_name
from structkernels.utils import (
    StructkernelsError,
    interrupt_guard,
    interrupted,
    one_line,
    run_settings,
)

__all__ = ["main", "CommandError", "commands", "parse_params", "build_kernel", "check_structures"]


class CommandError(StructkernelsError):
    """A user error: printed as one line, exit status 2."""


#: Sub-command registry (entry-point group ``structkernels.commands``).
commands = Registry("structkernels.commands", "command")

#: What a command raises for bad input: one line, exit status 2.  The readers' and
#: checkers' errors are ValueError subclasses (InputError, StructureError, ModelFormatError,
#: ...); a file that cannot be read or written is an OSError.  Anything else, a TypeError
#: or KeyError included, is a bug and propagates with its traceback (exit status 1): a
#: command that meets bad input as one of those converts it where it arises.
USER_ERRORS = (CommandError, ValueError, OSError)


def parse_params(items: list[str] | None) -> dict:
    """``["lam=0.8", 'sigma={"ARG0": 0}']`` -> dict; values are JSON when they parse."""
    params = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"--param expects key=value, got {item!r}")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def build_kernel(name: str, params: dict, option: str = "--kernel",
                 param_option: str = "--param"):
    """The kernel ``--kernel NAME --param ...`` gives, its parameters checked: a parameter it
    does not take, or one of the wrong type, is a :class:`CommandError` naming it."""
    cls = kernels.get(name)
    try:
        k = cls(**params)
        k.validate_params()
    except TypeError as exc:
        raise CommandError(f"{option} {name}: bad {param_option}: {exc}") from None
    return k


def check_structures(k, structures, file: str, kind: str, name: str,
                     option: str = "--kernel") -> None:
    """Refuse, naming the file, structures the kernel does not take (``--kernel path`` on
    vectors); one file holds one kind of record, so its first structure stands for all."""
    try:
        k.check_input(structures[:1])
    except TypeError as exc:
        raise CommandError(f"{file}: {option} {name} does not take {kind} records ({exc})") from None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with ``only``, just that sub-command is loaded (a plugin's command
    may import heavy libraries at import time)."""
    parser = argparse.ArgumentParser(
        prog="structkernels",
        description="Structured kernels over natural language.",
    )
    parser.add_argument("--version", action="version", version=f"structkernels {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress output (results and errors are still printed)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    with warnings.catch_warnings():  # every plugin warning reaches the caller's handler
        warnings.simplefilter("always")
        loaded, stubs = {}, {}
        if only is not None:
            loaded[only] = commands.get(only)
        else:
            # the top-level help imports only the core's commands; a plugin's when it is run
            for name, ep in commands.entry_points().items():
                dist = distribution_name(ep)
                if dist != CORE_DISTRIBUTION:
                    stubs[name] = dist
                    continue
                with contextlib.suppress(ImportError):  # one that fails to import is left out
                    loaded[name] = commands.get(name)
        for name in sorted({**loaded, **stubs}):
            if name not in loaded:
                sub.add_parser(
                    name, add_help=False,
                    help=f"(plugin {stubs[name]}; see `structkernels {name} --help`)",
                )
                continue
            p = loaded[name](sub)
            if p is not None and p.get_default("func") is None:
                raise RuntimeError(f"command {name!r} did not set a func default")
    return parser


@contextlib.contextmanager
def _one_line_warnings(said: set[str], command: str | None = None) -> Iterator[None]:
    """Each warning of the block printed as one line on stderr naming the command, once
    (``said`` holds the lines printed): never Python's format with a source line."""
    prefix = f"structkernels {command}" if command else "structkernels"

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = one_line(message)
        if text not in said:
            said.add(text)
            print(f"{prefix}: warning: {text}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _command_of(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv`` when it is a registered one, else None."""
    for token in argv:
        if token in ("-q", "--quiet"):
            continue
        if token.startswith("-"):
            return None
        return token if token in commands.names() else None
    return None


def _silence_stdout() -> None:
    """Point standard output at the null device (its reader is gone)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without a file
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    # called without argv: this process is the command's own (the console script or
    # ``python -m structkernels``), not a caller's that may go on to other work
    own_process = argv is None
    try:
        # a Ctrl-C that a finaliser swallowed (numba's, NumPy's) is recorded and raised again
        # at the next progress update or atomic rename, and ends the command here in any case
        with interrupt_guard():
            status = _main(list(sys.argv[1:] if argv is None else argv), own_process)
            if interrupted():
                raise KeyboardInterrupt
            return status
    except KeyboardInterrupt:
        print("structkernels: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str], own_process: bool) -> int:
    only = _command_of(argv)
    said: set[str] = set()
    with _one_line_warnings(said):
        try:
            parser = build_parser(only)
        except ImportError:
            parser = build_parser()  # a broken command: the full parser reports it
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    args.own_process = own_process
    # a command's own --no-progress hides every bar of its work, the inner ones too
    quiet = bool(args.quiet or getattr(args, "no_progress", False))
    try:
        with run_settings(progress=False if quiet else None), \
                _one_line_warnings(said, args.command):
            return int(args.func(args) or 0)
    except BrokenPipeError:
        # the reader of standard output went away (``| head``): stop quietly, as a command
        # killed by SIGPIPE does, and keep Python from failing again when it flushes at exit
        _silence_stdout()
        return 141  # 128 + SIGPIPE
    except USER_ERRORS as exc:
        if os.environ.get("STRUCTKERNELS_DEBUG"):
            raise
        if isinstance(exc, FileNotFoundError) and exc.filename:
            exc = CommandError(f"no such file: {exc.filename}")  # not Python's [Errno 2]
        print(f"structkernels {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
