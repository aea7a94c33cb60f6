"""Does σ earn its name? Each σ objective against its σ ≡ 1 twin, fold by fold, and transfer.

For each corpus (the train and test files together, document-level 10-fold CV, the same
folds for every run: ``random_state=0``), one ``evaluate_corpora`` run per σ objective
(``--objectives``; ``loss1`` is Algorithm 1, ``svm`` and ``alignment`` the gradient learner)
over the models that learn σ and their twins (``NPK SVM``/``PK SVM``, ``NPK path SVM``/``PK
path SVM``).  With ``--transfer``, σ and λ are first learned (``objective="svm"``) on every
pair of ``--source`` (BioInfer), inside the sum of views as ``NPK SVM`` uses it, and each
other corpus is evaluated again with them as the prior (``sigma_params["prior"]``): the
gradient steps start from them and step 0 is them.  The per-fold F1 of every model is in
``"f1_folds"``; ``"twins"`` gives NPK − PK per fold; ``"transfer"`` gives NPK with the prior
− NPK learned on the corpus alone, per fold.

    python benchmarks/bench_sigma.py --corpora HPRD50,IEPA,LLL --objectives svm,alignment \\
        --transfer --out benchmarks/results/sigma_objectives.json

Give the load average beside the figures (``load_before``/``load_after``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _report import report

from structkernels.experiments.relations import evaluate_corpora
from structkernels.npk.gradient import learn_path_weights
from structkernels.relations import read_relations
from structkernels.relations.models import relation_model
from structkernels.relations.parse import DependencyParser
from structkernels.relations.structures import pair_views

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"
MODELS = ["NPK SVM", "PK SVM", "NPK path SVM", "PK path SVM"]


def corpus(name: str):
    return read_relations([PPI / f"{name}-train.xml", PPI / f"{name}-test.xml"])


def slim(result: dict) -> dict:
    keep = ("pairs", "positives", "seconds", "models", "twins", "sigma_objective",
            "sigma_learned", "step_seconds")
    return {k: result[k] for k in keep if k in result}


def learn_prior(name: str, parser: DependencyParser, n_jobs: int | None) -> dict:
    c = corpus(name)
    pairs = c.pairs()
    items = pair_views(parser.parse(list(c)), pairs, views=("path", "context", "apg"))
    y = np.array([int(p.label) for p in pairs])
    model = relation_model("NPK SVM")
    part = model.sigma_part
    t0 = time.perf_counter()
    learned = learn_path_weights(dict(part.params), [it[part.view] for it in items], y,
                                 objective="svm", groups=[p.sentence.document for p in pairs],
                                 offset=model.fixed_views_gram(items), n_jobs=n_jobs,
                                 random_state=0)
    return {"source": name, "pairs": len(pairs), "seconds": round(time.perf_counter() - t0, 1),
            "learned": learned}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", default="HPRD50,IEPA,LLL")
    ap.add_argument("--objectives", default="svm,alignment")
    ap.add_argument("--transfer", action="store_true")
    ap.add_argument("--source", default="BioInfer")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    parser = DependencyParser(cache_dir=args.cache_dir, progress=False)
    doc: dict = {"benchmark": "sigma-objectives", "cores": os.cpu_count(),
                 "load_before": list(os.getloadavg()), "models": MODELS, "runs": {}}
    prior = None
    if args.transfer:
        doc["prior"] = learn_prior(args.source, parser, args.n_jobs)
        prior = doc["prior"]["learned"]
    for name in args.corpora.split(","):
        runs = doc["runs"].setdefault(name, {})
        settings = [(o, {"objective": o}) for o in args.objectives.split(",")]
        if prior is not None and name != args.source:
            settings.append(("svm+prior", {"objective": "svm", "prior": prior}))
        for label, sigma_params in settings:
            r = evaluate_corpora(corpus(name), cv=10, models=MODELS, parser=parser,
                                 sigma_params=sigma_params, n_jobs=args.n_jobs,
                                 random_state=0, progress=False, cache_dir=args.cache_dir)
            runs[label] = slim(r)
        if "svm+prior" in runs and "svm" in runs:
            a = runs["svm+prior"]["models"]["NPK SVM"]["f1_folds"]
            b = runs["svm"]["models"]["NPK SVM"]["f1_folds"]
            diff = [round(x - z, 2) for x, z in zip(a, b, strict=True)]
            runs["transfer"] = {"NPK SVM prior − alone": diff,
                                "better": sum(d > 0 for d in diff),
                                "worse": sum(d < 0 for d in diff)}
    doc["load_after"] = list(os.getloadavg())
    report(doc, args.out)


if __name__ == "__main__":
    main()
