"""The ``structkernels`` command line.

Sub-commands are discovered through the entry-point group
``structkernels.commands`` (name -> ``add_parser(subparsers)`` function), so a
plugin such as ``structkernels-hsic`` adds its own.  User errors (bad input,
unknown kernel, bad parameter) print one line and exit with status 2; they
never show a traceback (set ``STRUCTKERNELS_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from structkernels.registry import Registry

__all__ = ["main", "CommandError", "commands"]


class CommandError(Exception):
    """A user error: printed as one line, exit status 2."""


#: Sub-command registry (entry-point group ``structkernels.commands``).
commands = Registry("structkernels.commands", "command")

USER_ERRORS = (CommandError, ValueError, TypeError, KeyError, FileNotFoundError, OSError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="structkernels",
        description="Structured kernels over natural language.",
    )
    parser.add_argument("--version", action="version", version="structkernels 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, add_parser in sorted(commands.load_all().items()):
            p = add_parser(sub)
            if p is not None and p.get_default("func") is None:
                raise RuntimeError(f"command {name!r} did not set a func default")
    for w in caught:
        print(f"structkernels: warning: {w.message}", file=sys.stderr)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("structkernels: interrupted", file=sys.stderr)
        return 130
    except USER_ERRORS as exc:
        if os.environ.get("STRUCTKERNELS_DEBUG"):
            raise
        message = str(exc) if not isinstance(exc, KeyError) else str(exc.args[0])
        print(f"structkernels {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
