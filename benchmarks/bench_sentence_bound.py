"""What ``structkernels predict`` costs on ONE sentence at the per-sentence limits.

The worst case the readers let through: one sentence of ``--chars`` characters, one-letter
words joined by hyphens (``a-a-a``: spaCy makes every character a token, the most tokens,
hence the longest dependency paths and the largest all-paths graph), holding
``--entities`` one-letter entities spread evenly over it (every pair a candidate).
Each size is one ``structkernels predict MODEL sentence.jsonl -o OUT --no-cache`` in a fresh
process (as a user runs it), under ``--timeout`` seconds; the document gives per size the
characters, letters, entities, pairs, wall seconds (``null`` past the timeout), the peak
resident memory of the process tree (psutil, every 0.2 s), the exit status, and the load
average before and after.  The machine's load is in the document: read the seconds as an
upper bound for that load.

    python benchmarks/bench_sentence_bound.py MODEL.json.gz --sizes 1000:100,2000:100 \
        --out benchmarks/results/sentence_bound.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
from _report import report, tree_rss


def sentence(chars: int, entities: int) -> tuple[dict, int]:
    """The JSON record of the worst-case sentence and its number of letters (its tokens
    are the letters and the hyphens between them)."""
    words = max(chars // 2, entities)
    text = "-".join("a" for _ in range(words))[:chars]
    step = max(1, words // entities)
    ents = [{"id": f"e{k}", "start": 2 * k * step, "end": 2 * k * step + 1}
            for k in range(entities)]
    return {"id": "s0", "document": "d0", "text": text, "entities": ents,
            "interactions": []}, words


def run(model: str, chars: int, entities: int, timeout: float) -> dict:
    """One ``predict`` of one worst-case sentence of ``chars`` characters, ``entities``
    entities."""
    rec, words = sentence(chars, entities)
    with tempfile.TemporaryDirectory(prefix="bench-sentence-") as tmp:
        src = Path(tmp, "s.jsonl")
        src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "structkernels", "predict", model, str(src),
               "-o", str(Path(tmp, "out.jsonl")), "--no-cache"]
        load0 = [round(x, 2) for x in os.getloadavg()]
        peak = {"tree": 0}
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        watched = psutil.Process(proc.pid)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak["tree"] = max(peak["tree"], sum(tree_rss(watched).values()))
                done.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            _, err = proc.communicate(timeout=timeout)
            seconds = time.perf_counter() - t0
        except subprocess.TimeoutExpired:
            for p in [*watched.children(recursive=True), watched]:
                try:
                    p.kill()
                except psutil.Error:
                    pass
            _, err = proc.communicate()
            seconds = None
        done.set()
        sampler.join()
        return {"chars": len(rec["text"]), "letters": words, "entities": entities,
                "pairs": entities * (entities - 1) // 2, "seconds": seconds,
                "timed_out": seconds is None, "returncode": proc.returncode,
                "peak_rss_mib": round(peak["tree"] / 2**20, 1),
                "load_before": load0, "load_after": [round(x, 2) for x in os.getloadavg()],
                "stderr_tail": err.strip().splitlines()[-3:]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="a relation extractor (train-extractor's output)")
    ap.add_argument("--sizes", default="1000:100,2000:100,2000:21",
                    help="CHARS:ENTITIES,... (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per size")
    ap.add_argument("--out", help="also write the JSON document here")
    args = ap.parse_args(argv)
    rows = []
    for size in args.sizes.split(","):
        chars, entities = (int(x) for x in size.split(":"))
        rows.append(run(args.model, chars, entities, args.timeout))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    report({"model": args.model, "cpus": os.cpu_count(), "runs": rows}, args.out)


if __name__ == "__main__":
    main()
