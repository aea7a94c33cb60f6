"""``structkernels gram``: a Gram matrix from a JSON Lines file of structures."""

from __future__ import annotations

import argparse
import os

from structkernels.cli import CommandError, build_kernel, check_structures, parse_params
from structkernels.cli._common import check_outputs
from structkernels.kernels.names import kernels
from structkernels.utils import npy_path


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("gram", help="compute a Gram matrix from a JSON Lines file",
                       description="Compute the Gram matrix of the structures in a JSON Lines "
                       "file (square), or between two files (rectangular, with --against), "
                       "under a registered kernel, and save it as a .npy file.")
    p.add_argument("input", help="JSON Lines file of structures (vector/path/tree/pair "
                   "records, or a key of an installed record reader such as 'text')")
    p.add_argument("--field", default=None, metavar="KEY",
                   help="read this key of each record (path, tree, pair, vector or a "
                   "reader's key) when records hold several, as the shipped interaction "
                   "records do (path and tree) (default: the one structure of each record)")
    p.add_argument("--against", default=None, help="second JSON Lines file: the Gram between "
                   "INPUT (rows) and it (columns) (default: INPUT against itself)")
    p.add_argument("--kernel", required=True, help="registered kernel name (a plugin's "
                   "duplicate of a built-in name: dist:name)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="kernel parameter, repeatable; VALUE is read as JSON when it parses "
                   "(--param lam=0.5 --param 'sigma={\"ARG0\": 0}'), else as a string "
                   "(default: the kernel's defaults)")
    p.add_argument("-o", "--output", required=True,
                   help="output .npy file; '.npy' is appended to a name without it, as "
                   "numpy.save does (-o K writes K.npy), with or without --memmap. It is "
                   "written under a temporary name in the same folder and renamed when "
                   "complete: an interrupted run leaves an existing file intact. It may not "
                   "be an input file")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel workers computing the "
                   "Gram blocks (default: the cores this process may use)")
    p.add_argument("--normalize", action="store_true",
                   help="cosine-normalise: K[i, j] / sqrt(K[i, i] K[j, j])")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="folder caching computed Gram matrices (checked .npy files, never "
                   "pickles): a repeated run reads the matrix back (default: no cache)")
    p.add_argument("--memmap", action="store_true", help="write through a memory map (for "
                   "matrices larger than memory; built under a temporary name too)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from structkernels.engine.gram import gram
    from structkernels.formats.structures import InputError, read_structures
    from structkernels.utils import save_npy

    final = npy_path(args.output)  # the file -o writes ('.npy' appended as numpy.save does)
    check_outputs(args, ["--output"], [args.input, args.against],
                  writes=lambda option, value: final)
    k = build_kernel(args.kernel, parse_params(args.param))

    def read(file: str):
        try:
            found = read_structures(file, kernel=k, field=args.field)
        except InputError as exc:
            several = args.field is None and "; found [" in str(exc)
            raise CommandError(f"{exc}{'; choose one with --field' if several else ''}"
                               ) from None
        check_structures(k, found.structures, file, found.kind, args.kernel)
        return found.structures

    X = read(args.input)
    Y = None if args.against is None else read(args.against)
    K, info = gram(k, X, Y, n_jobs=args.n_jobs, normalize=args.normalize, cache=args.cache,
                   out=final if args.memmap else None, return_info=True,
                   progress=False if getattr(args, "quiet", False) else None)
    if not args.memmap:
        final = save_npy(final, K)
    print(f"wrote {os.fspath(final)}: shape {info.shape[0]}x{info.shape[1]}, "
          f"{info.n_evaluations} kernel evaluations, {info.seconds:.2f} s, "
          f"kernel {args.kernel} = {kernels.describe(args.kernel)}"
          + (" (cache hit)" if info.cache_hit else ""))
    return 0
