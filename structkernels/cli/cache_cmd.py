"""``structkernels cache``: what the cache folder holds, by kind, and clearing the entries
the project wrote (recognised file by file, never a folder wholesale, never through a link;
a folder that is not a cache is refused)."""

from __future__ import annotations

import argparse
import json
import os

from structkernels.utils import CACHE_KINDS

__all__ = ["add_parser", "run"]


def add_parser(sub) -> argparse.ArgumentParser:
    """Add ``structkernels cache [info|clear] [--kind KIND ...] [--cache-dir DIR] [--json]``."""
    p = sub.add_parser(
        "cache", help="show the cache folder's size by kind, or clear it",
        description=(
            "Show what the cache folder holds (parses, Grams and σ, binary datasets, compiled "
            "kernels, other files), its size limit ($STRUCTKERNELS_CACHE_LIMIT: 2G, 500M, "
            "bytes, or none; default 4G), or clear the entries the project wrote (recognised "
            "one by one; links are never followed). Other files in the folder are shown but "
            "never removed; a folder that is not a cache is refused."),
    )
    p.add_argument("action", nargs="?", choices=("info", "clear"), default="info",
                   help="info: sizes by kind; clear: remove the entries (default: %(default)s)")
    p.add_argument("--kind", action="append", choices=tuple(CACHE_KINDS), default=None,
                   metavar="KIND",
                   help=f"only this kind ({', '.join(CACHE_KINDS)}); repeat for several "
                   "(default: all)")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="the cache folder (default: $STRUCTKERNELS_CACHE, else "
                   "$XDG_CACHE_HOME/structkernels or ~/.cache/structkernels)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print the cache folder's usage, or clear it; 0, or a user error (exit 2)."""
    from structkernels.utils import (
        CACHE_LIMIT_ENV,
        cache_limit,
        cache_usage,
        check_cache_dir,
        clear_cache,
        format_bytes,
        user_cache_dir,
    )

    root = check_cache_dir(args.cache_dir, "--cache-dir") or user_cache_dir()
    limit = cache_limit()  # a bad $STRUCTKERNELS_CACHE_LIMIT: one line, exit 2
    clear = args.action == "clear"
    if clear:
        usage = clear_cache(args.kind, root=root)
    else:
        usage = [u for u in cache_usage(root) if not args.kind or u.kind in args.kind]
    total, files = sum(u.bytes for u in usage), sum(u.files for u in usage)
    if args.json:
        head = ({"freed_bytes": total, "freed_files": files} if clear
                else {"limit": limit, "total_bytes": total, "total_files": files})
        kinds = [{"kind": u.kind, "what": u.what, "path": os.fspath(u.path), "bytes": u.bytes,
                  "files": u.files} for u in usage]
        print(json.dumps({"root": os.fspath(root), **head, "kinds": kinds}))
        return 0
    if clear:
        parts = ", ".join(f"{u.kind} {format_bytes(u.bytes)}" for u in usage)
        print(f"freed {format_bytes(total)} ({files:,} files) in {root}: {parts}")
        return 0
    shown = "none" if limit is None else format_bytes(limit)
    print(f"cache folder {root} (limit {shown}; set {CACHE_LIMIT_ENV}: 2G, 500M, none)")
    for u in usage:
        print(f"  {u.kind:<9} {format_bytes(u.bytes):>10} {u.files:>9,} files  {u.what}")
    print(f"  {'total':<9} {format_bytes(total):>10} {files:>9,} files")
    if limit is not None and total > limit:
        print(f"past the limit of {format_bytes(limit)}: `structkernels cache clear` removes "
              "the entries (--kind KIND for some)")
    return 0
