"""Relation extraction evaluated as the BioNLP literature does it.

Every model sees the same folds in the same run: document-level cross-validation
(:func:`document_folds`: all pairs of a document in one fold) or one train/test split
(held-out or cross-corpus, :func:`evaluate_relations` with ``splits=[(train, test)]``).
Precision, recall and F1 are those of the positive class in percent, pooled over the
folds (every pair is predicted once, by the model that did not see its document), with the
spread of the per-fold F1 (``f1_sd``); ROC AUC is pooled over the folds' decision values.
Everything a model learns (σ, the SVM, the k-NN threshold, the forest) is fitted on the
training folds only; no hyper-parameter is tuned on test folds (the SVMs use C = 1).

The models, each named by its kernel first:

``NPK SVM``
    The composite kernel ``Normalized(NPK on the shortest dependency path) +
    Normalized(bag of context features) + Normalized(all-paths graph kernel)``: σ is
    learned on the training folds' paths by :class:`~structkernels.NonstationaryLearner`;
    an SVM on the precomputed Gram.  The path carries what σ weighs; the context and the
    all-paths graph carry the sentence around it (the words between and around the pair,
    the linear order, the rest of the parse) that the path alone loses.
``NPK k-NN``, ``NPK hash-RF``
    The same kernel with the main job's k-NN classifier, and with kernelised hash codes and
    a random forest (Garg et al. 2019).
``NPK path SVM``
    NPK on the path alone (what σ does, without the context).
``PK SVM``
    The normalised path kernel without σ (λ 0.8, node mismatch 0.9).
``APG SVM``
    The all-paths graph kernel (Airola et al. 2008), normalised.
``n-gram SVM``
    A linear SVM on the context features alone (path n-grams, words between and around).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from structkernels.classifiers import HashForestClassifier
from structkernels.kernels.base import Kernel, Normalized
from structkernels.kernels.names import kernel as make_kernel
from structkernels.neighbors.classifier import KernelKNNClassifier
from structkernels.npk.learner import NonstationaryLearner
from structkernels.utils import tqdm

__all__ = [
    "MODELS",
    "PATH_PARAMS",
    "document_folds",
    "evaluate_corpora",
    "evaluate_relations",
    "format_table",
    "needed_views",
    "pooled_scores",
]

#: Path kernel parameters of every path-based model.
PATH_PARAMS: dict[str, Any] = {"lam": 0.8, "node_mismatch": 0.9}
#: The models :func:`evaluate_relations` knows, in report order.
MODELS = ("NPK SVM", "NPK k-NN", "NPK hash-RF", "NPK path SVM", "PK SVM", "APG SVM",
          "n-gram SVM")
_NEEDS = {  # the views each model reads
    "NPK SVM": ("path", "context", "apg"), "NPK k-NN": ("path", "context", "apg"),
    "NPK hash-RF": ("path", "context", "apg"), "NPK path SVM": ("path",), "PK SVM": ("path",),
    "APG SVM": ("apg",), "n-gram SVM": ("context",),
}


def needed_views(models: Sequence[str]) -> tuple[str, ...]:
    """The views the ``models`` read (for :func:`~structkernels.relations.structures.pair_views`)."""
    out: list[str] = []
    for m in models:
        if m not in _NEEDS:
            raise ValueError(f"unknown model {m!r}; the models are {', '.join(MODELS)}")
        out += [v for v in _NEEDS[m] if v not in out]
    return tuple(out)


def document_folds(
    groups: Sequence[str], y: Sequence[int], n_splits: int = 10, random_state: Any = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Cross-validation folds with every document's pairs in one fold.

    Stratified on the labels as far as whole documents allow
    (:class:`sklearn.model_selection.StratifiedGroupKFold`, shuffled with ``random_state``).

    Raises
    ------
    ValueError
        Fewer documents than folds.

    Examples
    --------
    >>> docs = ["d1", "d1", "d2", "d3", "d3", "d4"]
    >>> folds = document_folds(docs, [1, 0, 1, 0, 1, 0], 2)
    >>> [sorted({docs[i] for i in te}) for _, te in folds]
    [['d3', 'd4'], ['d1', 'd2']]
    """
    from sklearn.model_selection import StratifiedGroupKFold

    groups = np.asarray(groups)
    y = np.asarray(y)
    n_docs = len(np.unique(groups))
    if n_docs < n_splits:
        raise ValueError(f"{n_docs} documents cannot fill {n_splits} folds")
    cv = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=random_state)
    return [(tr, te) for tr, te in cv.split(np.zeros(len(y)), y, groups)]


def pooled_scores(
    y: np.ndarray, pred: np.ndarray, score: np.ndarray, splits: Sequence[tuple[np.ndarray, np.ndarray]]
) -> dict[str, float | None]:
    """Precision, recall, F1 (positive class, percent) and ROC AUC pooled over the test
    folds, and the standard deviation of the per-fold F1 (None for one split)."""
    from sklearn.metrics import f1_score, precision_recall_fscore_support, roc_auc_score

    test = np.concatenate([te for _, te in splits])
    p, r, f, _ = precision_recall_fscore_support(
        y[test], pred[test], average="binary", zero_division=0
    )
    auc = roc_auc_score(y[test], score[test]) if len(np.unique(y[test])) == 2 else None
    per_fold = [f1_score(y[te], pred[te], zero_division=0) for _, te in splits]
    return {
        "precision": round(100 * p, 2), "recall": round(100 * r, 2), "f1": round(100 * f, 2),
        "roc_auc": None if auc is None else round(100 * auc, 2),
        "f1_sd": round(100 * float(np.std(per_fold)), 2) if len(splits) > 1 else None,
    }


def _rows(K: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return np.take(np.take(K, rows, axis=0), cols, axis=1)


class _Grams:
    """Full Grams over all pairs, computed once per kernel and reused by every fold."""

    def __init__(self, items: Sequence[dict], n_jobs: int):
        self.items = items
        self.n_jobs = n_jobs
        self._cache: dict[str, np.ndarray] = {}
        self.seconds = 0.0

    def get(self, key: str, view: str, kern: Kernel) -> np.ndarray:
        if key not in self._cache:
            t = time.perf_counter()
            structures = [item[view] for item in self.items]
            self._cache[key] = Normalized(kern).gram(structures, n_jobs=self.n_jobs)
            self.seconds += time.perf_counter() - t
        return self._cache[key]

    def drop(self, prefix: str) -> None:
        for key in [k for k in self._cache if k.startswith(prefix)]:
            del self._cache[key]


def _path_kernel(sigma: dict[str, float] | None) -> Kernel:
    params = dict(PATH_PARAMS)
    if sigma:
        params["sigma"] = dict(sigma)
    return make_kernel("path", **params)


def evaluate_relations(
    items: Sequence[dict[str, Any]],
    y: Sequence[int],
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    models: Sequence[str] = MODELS,
    C: float = 1.0,
    sigma_params: dict[str, Any] | None = None,
    n_jobs: int | None = None,
    random_state: Any = 0,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Evaluate every model on the same splits.

    Parameters
    ----------
    items : sequence of dict
        One dict of views per pair (:func:`~structkernels.relations.structures.pair_views`).
    y : sequence of int
        1 for an interacting pair.
    splits : sequence of (train indices, test indices)
        :func:`document_folds`, or one held-out split.
    models : sequence of str, default :data:`MODELS`
    C : float, default 1.0
        The SVMs' C (not tuned).
    sigma_params : dict, optional
        Keywords of :class:`~structkernels.NonstationaryLearner` (default: its own).
    n_jobs : int, optional
        Workers for the Grams and the σ learner (default: the cores this process may use).
    random_state : int
    progress : bool
    log : callable, optional
        Receives a line per step (progress on stderr from the command line).

    Returns
    -------
    dict
        ``{"pairs", "positives", "folds", "seconds", "models": {name: {"precision",
        "recall", "f1", "roc_auc", "f1_sd"}}, "sigma": [zeroed labels per split]}``.
    """
    import joblib
    from sklearn.svm import SVC

    t0 = time.perf_counter()
    models = list(models)
    needed_views(models)
    y = np.asarray(y, dtype=np.int64)
    n = len(y)
    if len(items) != n:
        raise ValueError(f"{len(items)} items but {n} labels")
    n_jobs = joblib.cpu_count() if n_jobs is None else n_jobs
    say = log or (lambda line: None)
    grams = _Grams(items, n_jobs)
    preds = {m: np.zeros(n, dtype=np.int64) for m in models}
    scores = {m: np.zeros(n) for m in models}
    zeroed: list[list[str]] = []
    uses_npk = any(m.startswith("NPK") for m in models)

    def svm(K: np.ndarray, tr: np.ndarray, te: np.ndarray, name: str) -> None:
        clf = SVC(kernel="precomputed", C=C, class_weight="balanced")
        clf.fit(_rows(K, tr, tr), y[tr])
        s = clf.decision_function(_rows(K, te, tr))
        scores[name][te] = s
        preds[name][te] = (s > 0).astype(np.int64)

    spent: dict[str, float] = {m: 0.0 for m in models}
    spent["σ learner"] = 0.0
    bar = tqdm(splits, desc="folds", unit="fold", disable=not progress)
    for k, (tr, te) in enumerate(bar):
        sigma: dict[str, float] = {}
        tick = time.perf_counter()
        if uses_npk:
            learner = NonstationaryLearner(
                "path", dict(PATH_PARAMS), n_jobs=n_jobs, random_state=random_state,
                progress=False, **(sigma_params or {}),
            )
            learner.fit([items[i]["path"] for i in tr], y[tr])
            sigma = {lab: v for lab, v in learner.sigma_.items() if v != 1.0}
            zeroed.append(sorted(sigma))
            say(f"split {k + 1}: σ learned on {len(tr)} training paths, zeroed "
                f"{', '.join(sorted(sigma)) or 'no label'}")
        key = "npk:" + repr(sorted(sigma.items()))
        spent["σ learner"] += time.perf_counter() - tick
        K_path = grams.get(key, "path", _path_kernel(sigma)) if uses_npk else None
        K_comp = None
        for name in models:
            tick_model, in_grams = time.perf_counter(), grams.seconds
            if name == "NPK path SVM":
                svm(K_path, tr, te, name)
            elif name == "PK SVM":
                svm(grams.get("npk:[]", "path", _path_kernel(None)), tr, te, name)
            elif name == "APG SVM":
                svm(grams.get("apg", "apg", make_kernel("all-paths-graph")), tr, te, name)
            elif name == "n-gram SVM":
                svm(grams.get("context", "context", make_kernel("bag")), tr, te, name)
            else:  # composite NPK + context + all-paths graph
                if K_comp is None:
                    K_comp = K_path + grams.get("context", "context", make_kernel("bag"))
                    K_comp += grams.get("apg", "apg", make_kernel("all-paths-graph"))
                K = K_comp
                if name == "NPK SVM":
                    svm(K, tr, te, name)
                elif name == "NPK k-NN":
                    clf = KernelKNNClassifier(kernel="precomputed", random_state=random_state)
                    clf.fit(_rows(K, tr, tr), y[tr])
                    Kte = _rows(K, te, tr)
                    scores[name][te] = clf.predict_proba(Kte)[:, 1]
                    preds[name][te] = clf.predict(Kte)
                elif name == "NPK hash-RF":
                    clf = HashForestClassifier(kernel="precomputed", random_state=random_state,
                                               n_jobs=n_jobs)
                    clf.fit(_rows(K, tr, tr), y[tr])
                    Kte = _rows(K, te, tr)
                    scores[name][te] = clf.decision_function(Kte)
                    preds[name][te] = clf.predict(Kte)
            spent[name] += time.perf_counter() - tick_model - (grams.seconds - in_grams)
        if key != "npk:[]":
            grams.drop(key)
        say(f"split {k + 1}/{len(splits)} done ({time.perf_counter() - t0:.0f} s)")
    bar.close()
    result = {
        "pairs": n,
        "positives": int(y.sum()),
        "folds": len(splits),
        "seconds": round(time.perf_counter() - t0, 1),
        "models": {m: pooled_scores(y, preds[m], scores[m], splits) for m in models},
        "step_seconds": {**{m: round(v, 1) for m, v in spent.items()},
                         "Grams": round(grams.seconds, 1)},
    }
    if uses_npk:
        result["sigma_zeroed"] = zeroed
    return result


def evaluate_corpora(
    train: Any,
    test: Any = None,
    *,
    cv: int = 10,
    models: Sequence[str] = MODELS,
    parser: Any = None,
    blind: bool = True,
    C: float = 1.0,
    sigma_params: dict[str, Any] | None = None,
    n_jobs: int | None = None,
    random_state: Any = 0,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Parse, build the pairs' structures and evaluate every model on the same splits.

    Parameters
    ----------
    train : RelationCorpus
        The corpus (``test`` None: ``cv``-fold document-level cross-validation over it) or
        the training corpus.
    test : RelationCorpus, optional
        The test corpus (held-out or cross-corpus evaluation); no document may be in both.
    cv : int, default 10
    models : sequence of str, default :data:`MODELS`
    parser : DependencyParser, optional
        Default: ``DependencyParser()`` (spaCy's ``en_core_web_sm``, parses cached).
    blind : bool, default True
        Entity blinding in the structures.
    C, sigma_params, n_jobs, random_state, progress, log
        As :func:`evaluate_relations`.

    Returns
    -------
    dict
        :func:`evaluate_relations`'s result, with ``"seconds"`` counting the parse too and
        ``"parse_seconds"``, ``"sentences"``, ``"documents"`` added.
    """
    from structkernels.relations.parse import DependencyParser
    from structkernels.relations.structures import pair_views

    t0 = time.perf_counter()
    say = log or (lambda line: None)
    sentences = list(train) + (list(test) if test is not None else [])
    if test is not None:
        shared = set(train.documents()) & set(test.documents())
        if shared:
            raise ValueError(
                f"{len(shared)} documents are in both the training and the test corpus "
                f"(e.g. {sorted(shared)[0]}): a held-out evaluation needs them apart"
            )
    parser = parser if parser is not None else DependencyParser(progress=progress)
    parsed = parser.parse(sentences)
    parse_seconds = time.perf_counter() - t0
    say(f"parsed {len(sentences)} sentences in {parse_seconds:.1f} s")
    train_pairs = train.pairs()
    pairs = train_pairs + (test.pairs() if test is not None else [])
    for p in pairs:
        if p.label is None:
            raise ValueError(f"sentence {p.sentence.id} has no gold interactions: "
                             "evaluation needs labelled corpora")
    items = pair_views(parsed, pairs, views=needed_views(models), blind=blind)
    y = np.array([int(p.label) for p in pairs], dtype=np.int64)
    if test is None:
        splits = document_folds([p.sentence.document for p in pairs], y, cv, random_state)
    else:
        n_tr = len(train_pairs)
        splits = [(np.arange(n_tr), np.arange(n_tr, len(pairs)))]
    say(f"{len(pairs)} pairs ({int(y.sum())} positive), {len(splits)} split(s), "
        f"models: {', '.join(models)}")
    result = evaluate_relations(
        items, y, splits, models=models, C=C, sigma_params=sigma_params, n_jobs=n_jobs,
        random_state=random_state, progress=progress, log=log,
    )
    docs = {s.document for s in sentences}
    result.update(
        seconds=round(time.perf_counter() - t0, 1), parse_seconds=round(parse_seconds, 1),
        sentences=len(sentences), documents=len(docs),
    )
    return result


def format_table(result: dict[str, Any]) -> str:
    """The result as a plain-text table (one row per model)."""
    lines = [
        f"{result['pairs']} pairs, {result['positives']} positive, "
        f"{result['folds']} fold(s), {result['seconds']} s",
        f"{'model':<14} {'P':>6} {'R':>6} {'F1':>6} {'± sd':>6} {'AUC':>6}",
    ]
    for name, s in result["models"].items():
        sd = "" if s["f1_sd"] is None else f"{s['f1_sd']:.1f}"
        auc = "" if s["roc_auc"] is None else f"{s['roc_auc']:.1f}"
        lines.append(f"{name:<14} {s['precision']:>6.1f} {s['recall']:>6.1f} {s['f1']:>6.1f} "
                     f"{sd:>6} {auc:>6}")
    return "\n".join(lines)
