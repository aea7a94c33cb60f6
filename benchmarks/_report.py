"""What every benchmark does last: print its JSON document and, with ``--out``, write it.

Imported by the scripts beside it (``python benchmarks/bench_x.py`` puts this folder first
on the path).  The file is written atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from structkernels.utils import atomic_open


def report(doc: Any, out: str | os.PathLike | None = None, *, indent: int = 2,
           make_folder: bool = False) -> None:
    """Print ``doc`` as JSON; with ``out``, also write it there (its folder made first when
    ``make_folder``, else a missing folder is an error)."""
    text = json.dumps(doc, indent=indent)
    print(text)
    if out:
        if make_folder:
            Path(out).parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(out) as fh:
            fh.write(text + "\n")


def child_json(code: str, env: dict[str, str]) -> dict:
    """Run ``python -c code`` in a fresh process with ``env`` and return the JSON document it
    prints, with ``process_s``: the process's wall seconds, start-up and imports included."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    doc = json.loads(out.stdout)
    doc["process_s"] = time.perf_counter() - t
    return doc


def tree_rss(proc: Any) -> dict[int, int]:
    """Resident bytes of ``proc`` (a ``psutil.Process``) and of each of its descendants, by
    pid; ``{}`` when ``proc`` has ended, and a descendant that ends meanwhile left out."""
    import psutil  # only the benchmarks that sample memory need it

    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return {}
    rss = {}
    for p in procs:
        try:
            rss[p.pid] = p.memory_info().rss
        except psutil.Error:
            pass
    return rss
