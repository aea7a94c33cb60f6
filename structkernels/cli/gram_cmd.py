"""``structkernels gram``: a Gram matrix from a JSON Lines file of structures."""

from __future__ import annotations

import argparse
import json

from structkernels.cli import CommandError
from structkernels.registry import kernels


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


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("gram", help="compute a Gram matrix from a JSON Lines file")
    p.add_argument(
        "input",
        help="JSON Lines file of structures (vector/path/tree/pair records, or a key of an "
        "installed record reader such as 'text')",
    )
    p.add_argument("--against", help="second JSON Lines file (rectangular Gram)")
    p.add_argument(
        "--kernel", required=True,
        help="registered kernel name (a plugin's duplicate of a built-in name: dist:name)",
    )
    p.add_argument("--param", action="append", metavar="KEY=VALUE", help="kernel parameter")
    p.add_argument("-o", "--output", required=True, help="output .npy file")
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--normalize", action="store_true")
    p.add_argument("--cache", help="cache directory (joblib.Memory)")
    p.add_argument("--memmap", action="store_true", help="write through a memory map")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from structkernels.gram import gram
    from structkernels.io import read_structures

    k = kernels.get(args.kernel)(**parse_params(args.param))
    X = read_structures(args.input, kernel=k).structures
    Y = None if args.against is None else read_structures(args.against, kernel=k).structures
    options = dict(
        n_jobs=args.n_jobs, normalize=args.normalize, cache=args.cache, return_info=True,
        progress=False if getattr(args, "quiet", False) else None,
    )
    if args.memmap:
        K, info = gram(k, X, Y, out=args.output, **options)
    else:
        K, info = gram(k, X, Y, **options)
        np.save(args.output, K)
    print(
        f"wrote {args.output}: shape {info.shape[0]}x{info.shape[1]}, "
        f"{info.n_evaluations} kernel evaluations, {info.seconds:.2f} s, "
        f"kernel {args.kernel} = {kernels.describe(args.kernel)}"
        + (" (cache hit)" if info.cache_hit else "")
    )
    return 0
