"""Start-up time of the command line, as JSON.

Runs ``structkernels --help`` and ``structkernels kernels`` (and, as the
baseline measured in the same run, ``python -c "import sklearn.base"``, what
every command paid before imports were made lazy) several times in fresh
processes, in ABBA order, and prints the median wall seconds, the summed
top-level ``-X importtime`` figures and the load average.

With ``--model`` (a relation extractor, e.g. one trained on BioInfer-train), the whole
``structkernels predict`` command too, each run with an empty parse cache and the model's
references prepared by an earlier run (``predict_one_first``: not prepared, as the first
run after training): on one BioInfer-test sentence and on ``--sentences`` sentences drawn
from BioInfer-test (new ids), each 2,000-sentence run paired with a whole ``nlp.pipe``
command on the same texts (spaCy imported, the pipeline loaded, the texts parsed:
``spacy_pipe``), in ABBA order.  Every
run goes in a fresh process that starts the command and waits for it, so that its
``RUSAGE_CHILDREN`` ``ru_maxrss`` is the largest resident size of every process the
command started (the parsing child included), not a sample.  ``--compare`` adds the
one-sentence run of a second model file (the same model in another file version, say).
The model files' sizes (on disk and decompressed) are reported.

Usage::

    python benchmarks/bench_startup.py [--repeat 5]
    python benchmarks/bench_startup.py --model bioinfer.json.gz --repeat 5 \
        --out benchmarks/results/startup_predict.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _report import measured, report

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"
# the whole nlp.pipe command: spaCy imported, the extractor's pipeline loaded as predict
# loads it (PyTorch kept out, the entity recogniser left out), every text parsed
SPACY_PIPE = (
    "import json, sys, time\n"
    "from structkernels.relations.pipelines import keep_torch_out\n"
    "keep_torch_out('en_core_web_sm')\n"
    "from structkernels.relations.parse import load_pipeline\n"
    "nlp = load_pipeline('en_core_web_sm')\n"
    "texts = [json.loads(line)['text'] for line in open(sys.argv[1], encoding='utf-8')]\n"
    "t = time.perf_counter()\n"
    "for _ in nlp.pipe(texts, batch_size=128):\n"
    "    pass\n"
    "print(time.perf_counter() - t)\n")

CASES = {
    "help": [sys.executable, "-m", "structkernels", "--help"],
    "kernels": [sys.executable, "-m", "structkernels", "kernels"],
    "baseline_import_sklearn_base": [sys.executable, "-c", "import sklearn.base"],
}


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def importtime_ms(cmd: list[str]) -> float:
    proc = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], capture_output=True, text=True)
    total = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        _, cumulative, name = line.split("|")
        if name.startswith(" ") and not name.startswith("  "):  # top level only
            try:
                total += int(cumulative)
            except ValueError:
                continue
    return total / 1000.0


def sentences(path: Path, n: int, seed: int = 0) -> None:
    """``n`` BioInfer-test sentences with two entities or more, drawn with replacement,
    each under a new id and document, as JSON Lines."""
    from structkernels.relations import read_relations

    pool = [s for s in read_relations(PPI / "BioInfer-test.xml") if len(s.entities) > 1]
    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for k, i in enumerate(rng.integers(0, len(pool), size=n)):
            s = pool[int(i)]
            ents = [{"id": e.id, "spans": [list(sp) for sp in e.spans]} for e in s.entities]
            fh.write(json.dumps({"id": f"b{k}", "text": s.text, "document": f"bd{k}",
                                 "entities": ents}) + "\n")


def model_sizes(path: str) -> dict:
    raw = Path(path).read_bytes()
    inflated = len(gzip.decompress(raw)) if path.endswith(".gz") else len(raw)
    return {"file": path, "bytes": len(raw), "decompressed_bytes": inflated}


def predict_runs(args: argparse.Namespace) -> dict:
    """The whole ``structkernels predict`` command on one sentence and on
    ``--sentences``, each beside a whole ``nlp.pipe`` command on the same texts."""
    folder = Path(tempfile.mkdtemp(prefix="bench_startup_"))
    one, many = folder / "one.jsonl", folder / "many.jsonl"
    sentences(many, args.sentences)
    one.write_text(many.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    models = {"model": args.model, **({"compare": args.compare} if args.compare else {})}

    def predict(model: str, texts: Path, run: int, prepared: bool = True) -> dict:
        # no parse cached: every sentence parsed; the references prepared by the warm-up
        # run (its cache folder but the parses, the folder's key included), or not
        cache = folder / f"cache{run}-{model.replace('/', '_')}-{texts.stem}-{prepared}"
        if prepared:
            shutil.copytree(folder / f"warm-{model.replace('/', '_')}", cache,
                            ignore=shutil.ignore_patterns("parses"))
        return measured([sys.executable, "-m", "structkernels", "predict", model, str(texts),
                         "-o", str(folder / "out.jsonl"), "--cache-dir", str(cache), "-q"])

    for model in models.values():  # compiled kernels cached, files read, references prepared
        measured([sys.executable, "-m", "structkernels", "predict", model, str(one), "-o",
                  str(folder / "out.jsonl"), "--cache-dir",
                  str(folder / f"warm-{model.replace('/', '_')}"), "-q"])
    cases = {"predict_one": lambda r: predict(args.model, one, r),
             "predict_one_first": lambda r: predict(args.model, one, r, prepared=False),
             "predict_many": lambda r: predict(args.model, many, r),
             "spacy_pipe_many": lambda r: measured([sys.executable, "-c", SPACY_PIPE,
                                                    str(many)])}
    if args.compare:
        cases["predict_one_compare"] = lambda r: predict(args.compare, one, r)
    runs: dict[str, list[dict]] = {n: [] for n in cases}
    names = list(cases)
    for r in range(args.repeat):
        for n in names if r % 2 == 0 else names[::-1]:  # ABBA
            got = cases[n](r)
            got["stdout"] = got["stdout"][-200:]
            got["load_average"] = os.getloadavg()
            runs[n].append(got)
            print(n, json.dumps(got), file=sys.stderr)
    ratios = [p["seconds"] / s["seconds"]
              for p, s in zip(runs["predict_many"], runs["spacy_pipe_many"], strict=True)]
    return {
        "sentences": args.sentences,
        "models": {k: model_sizes(v) for k, v in models.items()},
        "median_seconds": {n: round(statistics.median(x["seconds"] for x in v), 3)
                           for n, v in runs.items()},
        "largest_max_rss_mib": {n: round(max(x["max_rss_mib"] for x in v), 1)
                                for n, v in runs.items()},
        "spacy_pipe_only_seconds_median": round(statistics.median(
            float(x["stdout"].split()[-1]) for x in runs["spacy_pipe_many"] if not x["rc"]), 3),
        "predict_over_spacy_pipe_paired": {"median": round(statistics.median(ratios), 3),
                                           "range": [round(min(ratios), 3),
                                                     round(max(ratios), 3)]},
        "failed_runs": sum(x["rc"] != 0 for v in runs.values() for x in v),
        "runs": runs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--model", help="a relation extractor file: time structkernels predict")
    ap.add_argument("--compare", help="a second extractor file, its one-sentence run")
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--no-cli", action="store_true", help="only the predict runs")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    if args.model:
        load_before = os.getloadavg()
        doc = {"python": platform.python_version(), "repeat": args.repeat,
               "cores": len(os.sched_getaffinity(0)), "load_average_before": load_before,
               "predict": predict_runs(args), "load_average_after": os.getloadavg()}
        if args.no_cli:
            report(doc, args.out)
            return
    else:
        doc = {}
    load_before = os.getloadavg()
    names = list(CASES)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.repeat):
        order = names if r % 2 == 0 else names[::-1]  # ABBA
        for n in order:
            times[n].append(wall(CASES[n]))
    result = {
        **doc,
        "python": platform.python_version(),
        "repeat": args.repeat,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "median_seconds": {n: round(statistics.median(v), 3) for n, v in times.items()},
        "importtime_top_level_ms": {n: round(importtime_ms(c), 1) for n, c in CASES.items()},
    }
    base = result["median_seconds"]["baseline_import_sklearn_base"]
    result["ratio_to_baseline"] = {
        n: round(result["median_seconds"][n] / base, 3) for n in ("help", "kernels")
    }
    report(result, args.out, indent=1)


if __name__ == "__main__":
    main()
