"""``structkernels kernels``: the registered kernels, their parameters and defaults read from
each class (or, with ``--load``, an instance built with its defaults); a plugin that fails in
any way is listed as ``BROKEN`` with its error and the listing goes on."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

from structkernels.kernels.names import kernels


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("kernels", help="list registered kernels with their parameters")
    p.add_argument("--load", action="store_true",
                   help="build every kernel with its defaults (reports plugins that fail to build)")
    p.set_defaults(func=run)
    return p


def _entry(cls: Any, build: bool) -> tuple[str, str]:
    sig = list(inspect.signature(cls).parameters.values())
    if build or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig):
        params = ", ".join(f"{k}={v!r}" for k, v in cls().get_params(deep=False).items())
    else:
        params = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}"
                           for p in sig)
    doc = (cls.__doc__ or "").strip().splitlines()
    return f"{cls.__module__}.{cls.__name__}({params})", (doc[0] if doc else "")


def run(args: argparse.Namespace) -> int:
    unbuildable: dict[str, str] = {}
    for name in kernels.names():
        try:
            cls = kernels.get(name)
        except ImportError:
            continue  # reported below
        try:
            head, doc = _entry(cls, args.load)
        except (Exception, SystemExit) as exc:  # a constructor that fails is a broken plugin
            unbuildable[name] = (
                f"kernel plugin {name!r} cannot be built with its default parameters: "
                f"{type(exc).__name__}: {exc}"
            )
            continue
        print(f"{name:16s} {head}")
        if doc:
            print(f"{'':16s}   {doc}")
    for name, message in sorted({**unbuildable, **kernels.errors}.items()):
        print(f"{name:16s} BROKEN: {message}")
    return 0
