"""``structkernels kernels``: list the registered kernels and their parameters."""

from __future__ import annotations

import argparse

from structkernels.registry import kernels


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("kernels", help="list registered kernels with their parameters")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    for name, cls in sorted(kernels.load_all().items()):
        params = ", ".join(f"{k}={v!r}" for k, v in cls().get_params(deep=False).items())
        doc = (cls.__doc__ or "").strip().splitlines()
        print(f"{name:16s} {cls.__module__}.{cls.__name__}({params})")
        if doc:
            print(f"{'':16s}   {doc[0]}")
    for name, message in sorted(kernels.errors.items()):
        print(f"{name:16s} BROKEN: {message}")
    return 0
