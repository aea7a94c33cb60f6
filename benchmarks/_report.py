"""What every benchmark does last: print its JSON document and, with ``--out``, write it.

Imported by the scripts beside it (``python benchmarks/bench_x.py`` puts this folder first
on the path).  The file is written atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
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


# a fresh process that runs the command after its first argument (a file for the result),
# waits for it, and writes its wall seconds and RUSAGE_CHILDREN's ru_maxrss: the largest
# resident size of every process the command started (each waited for), not a sample
MEASURE = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "rc = subprocess.call(sys.argv[2:])\n"
    "s = time.perf_counter() - t\n"
    "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "with open(sys.argv[1], 'w') as fh:\n"
    "    json.dump({'rc': rc, 'seconds': s, 'max_rss_mib': rss / 1024}, fh)\n")


def measured(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """``cmd`` run to its end in a fresh process that waits for it (:data:`MEASURE`):
    ``rc``, ``seconds``, ``max_rss_mib`` (the largest ``ru_maxrss`` of every process the
    command started), ``stdout`` and the end of ``stderr``."""
    with tempfile.TemporaryDirectory(prefix="bench-measure-") as folder:
        into = os.path.join(folder, "rusage.json")
        out = subprocess.run([sys.executable, "-c", MEASURE, into, *cmd], env=env,
                             capture_output=True, text=True)
        with open(into, encoding="utf-8") as fh:
            doc = json.load(fh)
    return {**doc, "stdout": out.stdout, "stderr": out.stderr[-2000:]}


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
