"""The main job of the nonstationary kernels paper (Garg et al. 2018, Sec. 6-7) and its
model: what ``structkernels train-npk`` runs, and ``structkernels predict`` with its model."""

from __future__ import annotations

import time
from pathlib import Path as FilePath
from typing import Any

import numpy as np

from structkernels.formats.structures import InputError
from structkernels.npk.files import MODEL_FORMAT, MODEL_VERSION

__all__ = ["main_job", "format_summary", "evaluate", "fmt_f1", "build_classifier", "record_id",
           "load_graph_labels", "label_candidates"]


def record_id(record: Any, i: int) -> Any:
    """A record's ``id`` (a dict's key or an object's attribute), else its index."""
    if isinstance(record, dict):
        return record.get("id", i)
    return getattr(record, "id", i)


def _positive(clf: Any, proba: np.ndarray) -> np.ndarray:
    """The class 1 column of ``clf``'s probabilities ``proba`` (zeros without that class)."""
    classes = list(clf.classes_)
    return proba[:, classes.index(1)] if 1 in classes else np.zeros(len(proba))


def evaluate(train_X, train_y, test_X, test_y, kernel_params, settings
             ) -> tuple[dict, Any, np.ndarray, np.ndarray]:
    """Fit the k-NN classifier on the training half and score the other half: the figures,
    the classifier, its predictions and its positive-class scores."""
    from sklearn.metrics import average_precision_score

    from structkernels.neighbors.classifier import KernelKNNClassifier, positive_class_scores

    clf = KernelKNNClassifier(kernel="path", kernel_params=kernel_params, **settings)
    clf.fit(train_X, train_y)
    t0 = time.perf_counter()
    proba = clf.predict_proba(test_X)
    pred = clf.decide(proba)  # = clf.predict(test_X)
    out = positive_class_scores(test_y, pred)
    score = _positive(clf, proba)
    # threshold-free: how well the share of positive neighbours ranks the positives
    out["average_precision"] = (float(average_precision_score(test_y, score))
                                if np.any(test_y == 1) else 0.0)
    out["n_evaluations"] = int(clf.n_fit_evaluations_ + clf.n_evaluations_)
    out["seconds"] = time.perf_counter() - t0 + float(getattr(clf, "fit_seconds_", 0.0))
    return out, clf, np.asarray(pred), np.asarray(score)


def fmt_f1(s: dict[str, Any]) -> str:
    return f"{100 * s['f1']:.1f} ({100 * s['precision']:.1f}, {100 * s['recall']:.1f})"


def load_graph_labels(labels: str, graphs: str | None, *, skip_bad: bool = False,
                      log: Any = None) -> Any:
    """The labelled candidates of a user's graphs (``train-npk --graphs DIR --graph-labels
    FILE``): :func:`structkernels.datasets.load_pubmed45`, label 2 (roles swapped) a
    negative, each unresolved record said through ``log``."""
    from structkernels.datasets import load_pubmed45

    if not FilePath(labels).is_file():
        raise InputError(f"no such file: {labels}")
    if graphs is not None and not FilePath(graphs).is_dir():
        raise InputError(f"no such folder: {graphs}")
    ds = load_pubmed45(labels, graphs, swapped="negative",  # σ is learned for the binary task
                       on_error="skip" if skip_bad else "raise")
    log = log or (lambda line: None)
    for rec in ds.skipped:
        log(f"unresolved {rec}")
    if ds.skipped:
        log(f"{len(ds.skipped)} record(s) unresolved, {len(ds)} loaded")
    return ds


def main_job(train: Any, test: Any, learn_set: Any, *, pk_params: dict[str, Any],
             learner_params: dict[str, Any], settings: dict[str, Any],
             table: dict[str, Any] | None, data: str, options: dict[str, Any],
             started: float) -> dict[str, Any]:
    """Learn σ on ``learn_set``, classify ``test`` with the k-NN classifier trained on
    ``train`` under PK and NPK, with the linear baselines and, given ``table`` (``n_train``,
    ``n_test``, ``seeds``), the baselines table.  Returns ``{"summary", "model", "learner",
    "pred", "score", "classifier"}``: the run's figures (``options`` its settings,
    ``started`` its :func:`time.perf_counter`), the model file's document, NPK's test
    predictions and scores and its classifier.
    """
    from structkernels.experiments.baselines import baselines_table, linear_baselines
    from structkernels.npk.learner import NonstationaryLearner

    learner = NonstationaryLearner(kernel="path", kernel_params=pk_params, **learner_params)
    learner.fit(learn_set.paths, np.asarray(learn_set.labels))
    # the classifier normalises as the learner did (known once σ is learned)
    settings = {k: learner.normalize_ if k == "normalize" else v for k, v in settings.items()}
    y_train, y_test = np.asarray(train.labels), np.asarray(test.labels)
    pk, *_ = evaluate(train.paths, y_train, test.paths, y_test, pk_params, settings)
    npk, npk_clf, npk_pred, npk_score = evaluate(train.paths, y_train, test.paths, y_test,
                                                 learner.kernel_params_(), settings)
    # the obvious-feature baselines on the same full split as PK and NPK (no kernel evaluation)
    linear = linear_baselines(train.paths, y_train, test.paths, y_test) if len(y_test) else {}
    if table is not None:
        t0 = time.perf_counter()
        table = baselines_table(
            train, test, pk_params, learner.kernel_params_(), **table,
            n_jobs=settings["n_jobs"],
            hash_settings={k: settings[k] for k in ("n_tables", "probe", "n_probes", "n_bits")},
        )
        table["seconds"] = time.perf_counter() - t0
    n_learn = len(learn_set.paths)
    gram_evaluations = n_learn * (n_learn + 1) // 2
    summary = {
        "data": data, "n_train": len(train.paths), "n_learn": n_learn, "n_test": len(test.paths),
        "positive_rate_test": float(np.mean(y_test)) if len(y_test) else 0.0,
        "settings": options,
        "learned_labels": learner.labels_, "zeroed_labels": learner.ignored_labels_,
        "PK": pk, "NPK": npk, "linear_baselines": linear, "baselines": table,
        "learning": {
            "n_evaluations": learner.n_evaluations_,
            "n_evaluations_graph": learner.n_evaluations_graph_,
            # one Gram matrix of the structures σ was learned on: N (N + 1) / 2 evaluations
            "gram_evaluations": gram_evaluations,
            "fraction_of_gram": learner.n_evaluations_ / float(gram_evaluations),
            "budget": learner.budget_, "n_trimmed": learner.n_trimmed_,
            "seconds": learner.fit_seconds_,
        },
        "seconds": time.perf_counter() - started,
    }
    model = {
        "format": MODEL_FORMAT, "version": MODEL_VERSION, "learner": learner.to_json(),
        "classifier": {k: v for k, v in settings.items() if k != "n_jobs"},
        "kernel": "path", "kernel_params": learner.kernel_params_(),
        "train": {
            "source": data,
            "ids": [record_id(r, i) for i, r in enumerate(train.records)],
            "paths": [p.to_json() for p in train.paths],
            "labels": [int(v) for v in y_train],
        },
        "evaluation": {k: summary[k] for k in ("n_test", "PK", "NPK", "seconds")},
    }
    return {"summary": summary, "model": model, "learner": learner, "pred": npk_pred,
            "score": npk_score, "classifier": npk_clf}


def format_summary(s: dict[str, Any], out: Any, plot: str | None) -> str:
    """The summary of :func:`main_job` as text: the data, σ, PK and NPK, the baselines."""
    lines: list[str] = []
    w = lines.append
    lrn = s["learning"]
    w(f"data: {s['data']}: {s['n_train']} training / {s['n_test']} test candidates "
      f"({100 * s['positive_rate_test']:.1f}% positive in test)\n")
    st = s["settings"]
    if st.get("objective", "loss1") == "knn-ap":
        how = (f"objective: leave-one-out AP of the {st['n_neighbors']}-NN classifier on a "
               f"stratified sample of {min(st['objective_sample'], s['n_learn']):,}")
    else:
        how = (f"α={st['alpha']}, β={st['beta']}, k={st['k']}, {st['sampling']} sampling, "
               f"{st['hashing']} hashing")
    w(f"σ learned on {s['n_learn']} structures for {len(s['learned_labels'])} edge labels "
      f"({how})\n")
    zeroed = ", ".join(s["zeroed_labels"]) or "(none)"
    w(f"labels σ zeroed ({len(s['zeroed_labels'])}): {zeroed}\n")
    w(f"{'kernel':<6} {'F1 (precision, recall)':<24} {'avg. precision':>14} "
      f"{'kernel evaluations':>18} {'seconds':>8}\n")
    for name in ("PK", "NPK"):
        r = s[name]
        w(f"{name:<6} {fmt_f1(r):<24} {100 * r['average_precision']:>14.1f} "
          f"{r['n_evaluations']:>18,} {r['seconds']:>8.1f}\n")
    if s.get("linear_baselines"):
        w("obvious features on the same split (class_weight balanced):\n")
    for name, r in (s.get("linear_baselines") or {}).items():
        w(f"{name:<36} {fmt_f1(r):<24} {100 * r['average_precision']:>14.1f} "
          f"{r['n_evaluations']:>18,} {r['seconds']:>8.1f}\n")
    w(f"learning: {lrn['n_evaluations']:,} kernel evaluations on N = {s['n_learn']:,} "
      f"structures ({100 * lrn['fraction_of_gram']:.1f}% of one Gram matrix, "
      f"N (N + 1) / 2 = {lrn['gram_evaluations']:,}; {lrn['n_trimmed']} subsets cut to the "
      f"budget), {lrn['seconds']:.1f} s\n")
    t = s.get("baselines")
    if t:
        from structkernels.experiments.baselines import format_table

        w(f"\nbaselines (Table 6 analogue): the same {t['n_train']:,} training / {t['n_test']:,} "
          f"test sub-samples for every model, mean ± sd over {len(t['seeds'])} seeds "
          f"(seeds {t['seeds'][0]}-{t['seeds'][-1]}), {t['seconds']:.1f} s\n")
        w(format_table(t) + "\n")
        beats = t["npk_beats_pk_every_seed"]
        w("NPK beats PK on F1 and AP in every seed: "
          + ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in beats.items()) + "\n")
    w(f"total time {s['seconds']:.1f} s; model written to {out}")
    w(f"; plot written to {plot}\n" if plot else "\n")
    return "".join(lines)


def build_classifier(model: dict[str, Any], use: str = "npk", n_jobs: int | None = None):
    """The fitted k-NN classifier a train-npk model describes (a document checked by
    :func:`structkernels.npk.files.validate_model`); ``use="pk"`` drops σ."""
    from structkernels.neighbors.classifier import KernelKNNClassifier
    from structkernels.structures import Path

    params = dict(model["kernel_params"])
    if use == "pk":
        params.pop("sigma", None)
    train = model["train"]
    clf = KernelKNNClassifier(kernel=model.get("kernel", "path"), kernel_params=params,
                              n_jobs=n_jobs, **model["classifier"])
    return clf.fit([Path.from_json(p) for p in train["paths"]],
                   np.asarray(train["labels"], dtype=np.int64))


def label_candidates(model: dict[str, Any], paths: list, *, use: str = "npk",
                     n_jobs: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """``(labels, positive-class scores, kernel evaluations)`` of ``paths`` under the
    classifier of a train-npk ``model`` (:func:`build_classifier`)."""
    clf = build_classifier(model, use, n_jobs)
    proba = clf.predict_proba(paths)
    return clf.classes_[np.argmax(proba, axis=1)], _positive(clf, proba), clf.n_evaluations_
