"""``structkernels predict`` at scale: ``--pairs`` candidate pairs through the command, one machine.

Writes a JSON Lines input of sentences drawn with replacement from ``--corpus`` (each under a
new id and document, so nothing comes from the parse cache) until they hold ``--pairs``
candidate pairs, then runs ``python -m structkernels predict MODEL INPUT -o OUTPUT`` as a user
would (its own process: spaCy without PyTorch, parsing processes as the command chooses) and
samples the resident memory of the command's process tree every 0.2 s.  Reports the input's
size, the wall seconds, pairs and sentences per second, the peak resident memory (the main
process and the whole tree), the command's batch lines (sentences, pairs and seconds of each
batch: memory and speed over the run), and the load average before and after.  The time per
stage (parse, views, kernel side) on the same kind of text is ``bench_predict.py``'s.

    python benchmarks/bench_predict_scale.py --model /tmp/bioinfer.json.gz --pairs 1000000 \\
        --out benchmarks/results/predict_scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
from _report import report, tree_rss

from structkernels.relations import read_relations

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"
BATCH = re.compile(r"batch (\d+): ([\d,]+) sentences, ([\d,]+) pairs in ([\d.]+) s")


def write_input(corpus: str, pairs: int, path: Path, seed: int) -> tuple[int, int]:
    """Sentences drawn with replacement until ``pairs`` candidate pairs; (sentences, pairs)."""
    sents = [s for s in read_relations([corpus]) if len(s.entities) >= 2]
    rng = random.Random(seed)
    n = got = 0
    with open(path, "w", encoding="utf-8") as fh:
        while got < pairs:
            s = rng.choice(sents)
            k = len(s.entities)
            ents = [{"id": e.id, "spans": [list(sp) for sp in e.spans]} for e in s.entities]
            fh.write(json.dumps({"id": f"x{n}", "document": f"d{n}", "text": s.text,
                                 "entities": ents}) + "\n")
            n += 1
            got += k * (k - 1) // 2
    return n, got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a saved extractor (train-extractor)")
    ap.add_argument("--corpus", default=str(PPI / "BioInfer-test.xml"))
    ap.add_argument("--pairs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=None,
                    help="predict's --batch-size (default: the command's own)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="predict-scale-"))
    src, dst = work / "input.jsonl", work / "pairs.jsonl"
    sentences, pairs = write_input(args.corpus, args.pairs, src, args.seed)
    doc = {"benchmark": "predict-scale", "cores": os.cpu_count(), "model": args.model,
           "sentences": sentences, "pairs": pairs, "input_bytes": src.stat().st_size,
           "load_before": list(os.getloadavg())}
    cmd = [sys.executable, "-m", "structkernels", "predict", args.model, str(src), "-o", str(dst)]
    if args.batch_size is not None:
        cmd += ["--batch-size", str(args.batch_size)]
        doc["batch_size"] = args.batch_size
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, bufsize=1)
    batches: list[dict] = []
    tail: list[str] = []

    def read_stderr() -> None:
        for line in proc.stderr:
            m = BATCH.search(line)
            if m:
                batches.append({"batch": int(m[1]), "sentences": int(m[2].replace(",", "")),
                                "pairs": int(m[3].replace(",", "")), "seconds": float(m[4]),
                                "at": round(time.perf_counter() - t0, 1)})
            tail[:] = (tail + [line.rstrip()])[-5:]

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    root = psutil.Process(proc.pid)
    peak_main = peak_tree = 0
    rss_at: list[tuple[float, int]] = []
    while proc.poll() is None:
        rss = tree_rss(root)
        if rss:
            peak_main = max(peak_main, rss.get(proc.pid, 0))
            tree = sum(rss.values())
            peak_tree = max(peak_tree, tree)
            if not rss_at or time.perf_counter() - t0 - rss_at[-1][0] >= 30:
                rss_at.append((round(time.perf_counter() - t0, 1), tree >> 20))
        time.sleep(0.2)
    reader.join(timeout=5)
    seconds = time.perf_counter() - t0
    doc.update(returncode=proc.returncode, seconds=round(seconds, 1),
               pairs_per_second=round(pairs / seconds, 1),
               sentences_per_second=round(sentences / seconds, 1),
               peak_rss_main_mb=peak_main >> 20, peak_rss_tree_mb=peak_tree >> 20,
               rss_tree_mb_every_30s=rss_at, batches=batches, stderr_tail=tail,
               output_lines=sum(1 for _ in open(dst, encoding="utf-8")) if dst.exists() else 0,
               load_after=list(os.getloadavg()))
    report(doc, args.out)


if __name__ == "__main__":
    main()
