"""Relation extraction evaluated as the BioNLP literature does it: every model of
:mod:`structkernels.relations.models` on the same document-level folds, everything learned
on the training folds only, scores pooled over the folds, each ``NPK`` model compared fold
by fold with its σ ≡ 1 twin.  Each structure view's normalised Gram is computed once into a
float32 file (:mod:`structkernels.experiments._gram_files`) each fold reads its rows from.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from structkernels.classifiers import HashForestClassifier, KernelSVC, select_by_inner_cv
from structkernels.engine.parallel import call_in_child, map_tasks
from structkernels.experiments._gram_files import GramFile, RelationGrams, fold_slices
from structkernels.experiments.relation_checks import (
    FoldError,
    check_fold_memory,
    check_folds,
    check_models,
    fits_at_once,
    fold_bytes,
    slice_budget,
)
from structkernels.neighbors.classifier import KernelKNNClassifier
from structkernels.npk.gradient import (
    DEFAULT_SIGMA_OBJECTIVE,
    OBJECTIVES,
    SIGMA_OBJECTIVES,
    learn_path_weights,
)
from structkernels.relations.decision import THRESHOLD_RULES, fit_decision
from structkernels.relations.models import (
    DEFAULT_MODELS,
    MODELS,
    PATH_PARAMS,
    PRECOMPUTED_SVC_PARAMS,
    RelationModel,
    StructureKernel,
    needed_views,
    relation_model,
    twin_of,
)
from structkernels.utils import effective_n_jobs, tqdm

__all__ = ["DEFAULT_MODELS", "MODELS", "PATH_PARAMS", "FoldError", "check_fold_memory",
           "check_folds", "check_models", "document_folds", "fold_bytes", "evaluate_corpora",
           "evaluate_relations", "format_table", "describe_sigma", "needed_views",
           "pooled_scores", "twin_comparison"]


#: The values of C that ``C="auto"`` chooses from (grouped inner cross-validation, F1).
C_GRID = (0.1, 1.0, 10.0)


def document_folds(
    groups: Sequence[str], y: Sequence[int], n_splits: int = 10, random_state: Any = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Cross-validation folds with every document's pairs in one fold, stratified as far as
    whole documents allow (:class:`sklearn.model_selection.StratifiedGroupKFold`, shuffled).

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
    folds, the standard deviation of the per-fold F1 (None for one split), and the percent
    of tested pairs predicted positive beside the percent gold positive."""
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
        "f1_folds": [round(100 * float(v), 2) for v in per_fold],
        "predicted_rate": round(100 * float(np.mean(pred[test])), 2),
        "gold_rate": round(100 * float(np.mean(y[test])), 2),
    }


def twin_comparison(models: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each σ-learning model against its σ ≡ 1 twin (both evaluated), fold by fold.

    Returns
    -------
    dict
        ``{NPK model: {"twin", "f1_diff", "f1_diff_folds", "better_folds", "worse_folds"}}``
        (differences model − twin, in points).

    Examples
    --------
    >>> rows = {"NPK SVM": {"f1": 70.0, "f1_folds": [70.0, 72.0]},
    ...         "PK SVM": {"f1": 69.0, "f1_folds": [69.0, 72.0]}}
    >>> twin_comparison(rows)["NPK SVM"]["f1_diff_folds"]
    [1.0, 0.0]
    """
    out = {}
    for name, row in models.items():
        twin = twin_of(name)
        if twin is None or twin not in models:
            continue
        diffs = [round(a - b, 2) for a, b in zip(row["f1_folds"], models[twin]["f1_folds"],
                                                 strict=True)]
        out[name] = {"twin": twin, "f1_diff": round(row["f1"] - models[twin]["f1"], 2),
                     "f1_diff_folds": diffs, "better_folds": sum(d > 0 for d in diffs),
                     "worse_folds": sum(d < 0 for d in diffs)}
    return out


def evaluate_relations(
    items: Sequence[dict[str, Any]], y: Sequence[int],
    splits: Sequence[tuple[np.ndarray, np.ndarray]], *, groups: Sequence[str] | None = None,
    models: Sequence[str] = DEFAULT_MODELS, C: float | str = 1.0,
    sigma_params: dict[str, Any] | None = None, n_jobs: int | None = None,
    random_state: Any = 0, progress: bool = True, log: Callable[[str], None] | None = None,
    cache_dir: str | os.PathLike | None = None, work_dir: str | os.PathLike | None = None,
    slice_bytes: int | None = None, return_scores: bool = False, threshold: str = "inner-cv",
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
    groups : sequence of str, optional
        The document of each pair, kept whole by inner folds (None: each pair its own).
    C : float or "auto", default 1.0
        The SVMs' C; ``"auto"``: chosen on each training fold from :data:`C_GRID` by grouped
        3-fold inner cross-validation for F1, each fold's choice listed under ``"chosen"``.
    sigma_params : dict, optional
        The σ learner's keywords; ``"objective"`` one of
        :data:`~structkernels.npk.gradient.SIGMA_OBJECTIVES` (default ``"svm"``).
    n_jobs : int, optional
        Workers for the Grams and the σ learner (default: the cores this process may use).
    log : callable, optional
        Receives a line per step.
    cache_dir : str or path, optional
        Keep the Grams and each split's σ there, keyed by content, kernel and parameters.
    work_dir : str or path, optional
        Where the Grams not kept in ``cache_dir`` are written meanwhile (default: ``$TMPDIR``).
    slice_bytes : int, optional
        The most bytes of fold slices held at once (default:
        :func:`~structkernels.experiments.relation_checks.slice_budget`); the evaluation's
        memory is about :func:`fold_bytes` plus the structures and the classifiers.
    return_scores : bool, default False
        Add ``"pair_scores"``: ``{"fold": the split that tested each pair (-1: none),
        model name: its score for each pair}`` (arrays, in pair order).
    threshold : one of :data:`~structkernels.relations.decision.THRESHOLD_RULES`
        The SVM rows' decision threshold, chosen on each training fold
        (:func:`structkernels.relations.decision.fit_decision`).

    Returns
    -------
    dict
        ``{"pairs", "positives", "folds", "seconds", "models": {name: pooled_scores},
        "twins", "step_seconds"}``, with σ's ``"sigma_objective"``, ``"sigma_zeroed"``,
        ``"sigma_learned"`` and the SVM rows' ``"threshold_rule"`` and ``"thresholds"``.

    Raises
    ------
    FoldError
        A split whose training pairs hold one class only (:func:`check_folds`).
    MemoryBudgetError
        The Grams would not fit the memory budget (:func:`check_fold_memory`).
    """
    t0 = time.perf_counter()
    models = check_models(models)  # checks the names first
    if threshold not in THRESHOLD_RULES:
        raise ValueError(f"threshold must be one of {', '.join(THRESHOLD_RULES)}, got "
                         f"{threshold!r}")
    if C != "auto" and (isinstance(C, (bool, str)) or not isinstance(C, (int, float, np.number))
                        or not np.isfinite(C) or C <= 0):
        raise ValueError(f"C must be a finite number > 0 or 'auto', got {C!r}")
    specs = [relation_model(m) for m in models]
    y = np.asarray(y, dtype=np.int64)
    n = len(y)
    if len(items) != n:
        raise ValueError(f"{len(items)} items but {n} labels")
    n_jobs = effective_n_jobs(n_jobs)
    check_folds(y, splits, groups)
    slice_bytes = slice_budget(splits, n_jobs, slice_bytes)
    check_fold_memory(n, splits, models, n_jobs, slice_bytes)
    say = log or (lambda line: None)
    grams = RelationGrams(items, n_jobs, cache_dir, work_dir, progress=progress)
    fold_of = np.full(n, -1, dtype=np.int64)
    preds = {m: np.zeros(n, dtype=np.int64) for m in models}
    scores = {m: np.zeros(n) for m in models}
    weights: list[dict[str, Any]] = []
    chosen: list[str] = []
    thresholds: dict[str, list[float]] = {m.name: [] for m in specs if m.classifier == "SVM"}
    learner_model = next((m for m in specs if m.learns_sigma), None)
    learns = None if learner_model is None else learner_model.sigma_part
    sigma_settings = dict(sigma_params or {})
    objective = sigma_settings.pop("objective", DEFAULT_SIGMA_OBJECTIVE)
    if objective not in SIGMA_OBJECTIVES:
        raise ValueError(f"sigma_params['objective'] must be one of "
                         f"{', '.join(SIGMA_OBJECTIVES)}, got {objective!r}")
    settings = {"random_state": random_state, "objective": objective, **sigma_settings}
    docs = None if groups is None else np.asarray(groups)

    spent: dict[str, float] = dict.fromkeys([*models, "σ learner"], 0.0)
    try:
        bar = tqdm(splits, desc="folds", unit="fold", disable=not progress)
        for k, (tr, te) in enumerate(bar):
            learned: dict[str, Any] = {}
            tick = time.perf_counter()
            doc_groups = None if docs is None else docs[tr]
            if learns is not None:
                def learn(tr: np.ndarray = tr, part: StructureKernel = learns,
                          doc_groups: np.ndarray | None = doc_groups) -> dict[str, Any]:
                    offset = None
                    if objective in OBJECTIVES:
                        # σ learned for the model that uses it: the other views' kernels
                        # are added to the path kernel's inside the objective
                        offset = learner_model.fixed_views_gram([items[i] for i in tr], n_jobs)
                    return learn_path_weights(
                        dict(part.params), [items[i][part.view] for i in tr], y[tr],
                        objective=objective, groups=doc_groups,
                        offset=offset, n_jobs=n_jobs, random_state=random_state,
                        **sigma_settings)

                learned = grams.sigma(learns, tr, y, settings, learn)
                weights.append(learned)
                say(f"split {k + 1}: σ learned on {len(tr)} training {learns.view}s "
                    f"({objective}): {describe_sigma(learned)}")
            spent["σ learner"] += time.perf_counter() - tick
            # every Gram file this split needs, each once (σ's for this split only); then the
            # models by groups that read the same Gram, sharing its fold slices, in threads
            files: dict[StructureKernel, GramFile] = {}
            for part in dict.fromkeys(part for spec in specs for part in spec.parts):
                files[part] = grams.file(
                    part.view, part.normalized(*_learned_kernel(part, learned)),
                    keep=not (part.learns_sigma and learned))
            try:
                one = 8 * len(tr) * (len(tr) + len(te))  # a Gram's fold slices, bytes
                for batch in _batches(specs, one, slice_bytes):
                    jobs = []
                    for parts, members in batch:
                        K_tr, K_te = fold_slices([files[p] for p in parts], tr, te)
                        jobs += [(spec, K_tr, K_te) for spec in members]
                        del K_tr, K_te
                    jobs.sort(key=lambda job: job[0].classifier not in ("hash-RF", "chosen"))
                    done = list(map_tasks(
                        lambda job, tr=tr, g=doc_groups: _fit_score(
                            job[0], job[1], job[2], y[tr], C, g, random_state, threshold),
                        jobs, n_jobs=fits_at_once(one, slice_bytes, n_jobs, len(jobs)),
                    ))
                    del jobs
                    for name, s_te, p_te, seconds, best, cut in done:
                        if cut is not None:
                            thresholds[name].append(round(cut, 6))
                        scores[name][te] = s_te
                        preds[name][te] = p_te
                        fold_of[te] = k
                        spent[name] += seconds
                        if best is not None:
                            chosen.append(best)
                            say(f"split {k + 1}: inner CV chose {best}")
            finally:
                for f in files.values():
                    f.remove()
            del files
            say(f"split {k + 1}/{len(splits)} done ({time.perf_counter() - t0:.0f} s)")
        bar.close()
    finally:
        grams.close()
    pooled = {m: pooled_scores(y, preds[m], scores[m], splits) for m in models}
    result = {
        "pairs": n, "positives": int(y.sum()), "folds": len(splits),
        "seconds": round(time.perf_counter() - t0, 1),
        "models": pooled, "twins": twin_comparison(pooled),
        "step_seconds": {**{m: round(v, 1) for m, v in spent.items()},
                         "Grams": round(grams.seconds, 1)},
    }
    if learns is not None:
        result["sigma_objective"] = objective
        result["sigma_zeroed"] = [sorted(lab for lab, v in w.get("sigma", {}).items() if v == 0.0)
                                  for w in weights]
        result["sigma_learned"] = weights
    if chosen:
        result["chosen"] = chosen
    if thresholds:
        result["threshold_rule"] = threshold
        result["thresholds"] = thresholds
    if return_scores:
        result["pair_scores"] = {"fold": fold_of, **{m: scores[m] for m in models}}
    return result


def _learned_kernel(part: StructureKernel, learned: dict[str, Any]
                    ) -> tuple[dict[str, float] | None, dict[str, Any] | None]:
    """``(sigma, params)`` of ``part`` under what a σ learner learned (None for a twin)."""
    if not part.learns_sigma or not learned:
        return None, None
    extra = {k: v for k, v in learned.items() if k != "sigma"}
    return learned.get("sigma") or None, ({**part.params, **extra} if extra else None)


def describe_sigma(learned: dict[str, Any]) -> str:
    """What a σ learner learned, as the commands say it: the lowest σ first (eight; ties by
    label), then λ.

    Examples
    --------
    >>> describe_sigma({"sigma": {"agent": 0.16, "nummod": 0.0}, "lam": 1.0})
    'nummod 0.00, agent 0.16; λ 1.00'
    """
    ranked = sorted(learned.get("sigma", {}).items(), key=lambda kv: (kv[1], kv[0]))
    low, rest = ranked[:8], ranked[8:]
    text = ", ".join(f"{lab} {v:.2f}" for lab, v in low) or "σ ≡ 1"
    if rest:
        text += f" (and {len(rest)} more{' below 1' if all(v < 1 for _, v in rest) else ''})"
    if "lam" in learned:
        text += f"; λ {learned['lam']:.2f}"
    return text


def _batches(specs: Sequence[RelationModel], slice_bytes: int, limit: int
             ) -> list[list[tuple[tuple[StructureKernel, ...], list[RelationModel]]]]:
    """The models grouped by the Gram they read (its parts), in batches whose fold slices
    (``slice_bytes`` each) stay within ``limit`` (at least one group): held and fitted at once.

    Examples
    --------
    >>> from structkernels.relations.models import relation_model
    >>> specs = [relation_model(m) for m in ("NPK SVM", "NPK k-NN", "PK path SVM", "APG SVM")]
    >>> [[[m.name for m in ms] for _, ms in b] for b in _batches(specs, 10, 25)]
    [[['NPK SVM', 'NPK k-NN'], ['PK path SVM']], [['APG SVM']]]
    """
    groups: dict[tuple[StructureKernel, ...], list[RelationModel]] = {}
    for spec in specs:
        groups.setdefault(spec.parts, []).append(spec)
    out: list[list[tuple[tuple[StructureKernel, ...], list[RelationModel]]]] = []
    held = limit + 1
    for parts, members in groups.items():
        if held + slice_bytes > limit:
            out.append([])
            held = 0
        out[-1].append((parts, members))
        held += slice_bytes
    return out


def _fit_score(model: RelationModel, K_tr: np.ndarray, K_te: np.ndarray, y_tr: np.ndarray,
               C: float | str, groups: np.ndarray | None, random_state: Any,
               threshold: str = "inner-cv",
               ) -> tuple[str, np.ndarray, np.ndarray, float, str | None, float | None]:
    """Fit ``model``'s classifier on a fold's training Gram, score its test rows."""
    from sklearn.svm import SVC

    t = time.perf_counter()
    best = cut = None
    if model.classifier != "SVM":  # k-NN, hash-RF, or the one inner CV chooses
        if model.classifier == "chosen":  # the best grouped 3-fold inner F1
            best, _ = select_by_inner_cv(
                _classifiers(random_state, 1), K_tr, y_tr,
                groups=groups if groups is not None else np.arange(len(y_tr)), cv=3,
                scoring="f1", random_state=random_state)
        clf = _classifiers(random_state, 1)[best or model.classifier]
        clf.fit(K_tr, y_tr)
        score = (clf.predict_proba(K_te)[:, 1] if isinstance(clf, KernelKNNClassifier)
                 else clf.decision_function(K_te))
        pred = clf.predict(K_te)
    else:  # an SVM on the precomputed Gram
        if C == "auto":  # the C of the best grouped inner-CV F1 (ties: nearest 1)
            inner = {c: fit_decision(K_tr, y_tr, groups, C=c, random_state=random_state,
                                     threshold="inner-cv", calibration=None).inner_f1 or 0.0
                     for c in C_GRID}
            C = max(C_GRID, key=lambda c: (inner[c], -abs(np.log10(c))))
            best = f"C={C:g}"
        clf = SVC(kernel="precomputed", C=C, **PRECOMPUTED_SVC_PARAMS).fit(K_tr, y_tr)
        score = clf.decision_function(K_te)
        cut = fit_decision(K_tr, y_tr, groups, C=C, random_state=random_state,
                           threshold=threshold, calibration=None).threshold
        pred = (score > cut).astype(np.int64)
    return model.name, np.asarray(score, dtype=np.float64), np.asarray(pred, dtype=np.int64), \
        time.perf_counter() - t, best, cut


def _classifiers(random_state: Any, n_jobs: int) -> dict[str, Any]:
    return {
        "SVM": KernelSVC(kernel="precomputed", C=1.0, random_state=random_state),
        "k-NN": KernelKNNClassifier(kernel="precomputed", random_state=random_state),
        "hash-RF": HashForestClassifier(kernel="precomputed", random_state=random_state,
                                        n_jobs=n_jobs),
    }


def evaluate_corpora(
    train: Any, test: Any = None, *, cv: int = 10, models: Sequence[str] = DEFAULT_MODELS,
    parser: Any = None, blind: bool = True, n_jobs: int | None = None, random_state: Any = 0,
    progress: bool = True, log: Callable[[str], None] | None = None,
    parse_in_child: bool = False, **options: Any,
) -> dict[str, Any]:
    """Parse, build the pairs' structures and evaluate every model on the same splits.

    Parameters
    ----------
    train : RelationCorpus
        The corpus (``test`` None: ``cv``-fold document-level cross-validation over it) or
        the training corpus.
    test : RelationCorpus, optional
        The test corpus; no document may be in both.
    parser : DependencyParser, optional
        Default: ``DependencyParser()``.
    blind : bool, default True
        Entity blinding in the structures.
    n_jobs, random_state, progress, log, **options
        As :func:`evaluate_relations`.
    parse_in_child : bool, default False
        Parse in a child process (:func:`structkernels.engine.parallel.call_in_child`), so
        that spaCy never enters this one (``parser`` must pickle; a script needs the
        ``if __name__ == "__main__":`` guard).

    Returns
    -------
    dict
        :func:`evaluate_relations`'s result, with ``"seconds"`` counting the parse too and
        ``"parse_seconds"``, ``"sentences"``, ``"documents"`` added.
    """
    from structkernels.relations.parse import DependencyParser, parse_without_torch
    from structkernels.relations.structures import pair_views

    t0 = time.perf_counter()
    say = log or (lambda line: None)
    models = check_models(models)
    sentences = list(train) + (list(test) if test is not None else [])
    if test is not None:
        shared = set(train.documents()) & set(test.documents())
        if shared:
            raise ValueError(f"{len(shared)} documents are in both the training and the test "
                             f"corpus (e.g. {sorted(shared)[0]}): a held-out evaluation needs "
                             "them apart")
    train_pairs = train.pairs()
    pairs = train_pairs + (test.pairs() if test is not None else [])
    for p in pairs:
        if p.label is None:
            raise ValueError(f"sentence {p.sentence.id} has no gold interactions: "
                             "evaluation needs labelled corpora")
    y = np.array([int(p.label) for p in pairs], dtype=np.int64)
    docs_of = [p.sentence.document for p in pairs]
    if test is None:
        splits = document_folds(docs_of, y, cv, random_state)
    else:
        n_tr = len(train_pairs)
        splits = [(np.arange(n_tr), np.arange(n_tr, len(pairs)))]
    # what evaluate_relations refuses, refused before the parse
    check_folds(y, splits, docs_of)
    check_fold_memory(len(pairs), splits, models, effective_n_jobs(n_jobs),
                      options.get("slice_bytes"))
    parser = parser if parser is not None else DependencyParser(progress=progress)
    if parse_in_child:
        # the child is this call's own: PyTorch stays out of it when the pipeline allows
        parsed = (call_in_child(parse_without_torch, parser, sentences)
                  if isinstance(parser, DependencyParser)
                  else call_in_child(parser.parse, sentences))
    else:
        parsed = parser.parse(sentences)
    parse_seconds = time.perf_counter() - t0
    say(f"parsed {len(sentences)} sentences in {parse_seconds:.1f} s")
    items = pair_views(parsed, pairs, views=needed_views(models), blind=blind)
    del parsed  # the graphs are in the items now
    say(f"{len(pairs)} pairs ({int(y.sum())} positive), {len(splits)} split(s), "
        f"models: {', '.join(models)}")
    result = evaluate_relations(items, y, splits, groups=docs_of, models=models, n_jobs=n_jobs,
                                random_state=random_state, progress=progress, log=log, **options)
    result.update(seconds=round(time.perf_counter() - t0, 1),
                  parse_seconds=round(parse_seconds, 1), sentences=len(sentences),
                  documents=len({s.document for s in sentences}))
    return result


def format_table(result: dict[str, Any]) -> str:
    """The result as a plain-text table (one row per model)."""
    lines = [
        f"{result['pairs']} pairs, {result['positives']} positive, "
        f"{result['folds']} fold(s), {result['seconds']} s",
        f"{'model':<14} {'P':>6} {'R':>6} {'F1':>6} {'± sd':>6} {'AUC':>6} {'pos%':>6}",
    ]
    for name, s in result["models"].items():
        sd = "" if s["f1_sd"] is None else f"{s['f1_sd']:.1f}"
        auc = "" if s["roc_auc"] is None else f"{s['roc_auc']:.1f}"
        lines.append(f"{name:<14} {s['precision']:>6.1f} {s['recall']:>6.1f} {s['f1']:>6.1f} "
                     f"{sd:>6} {auc:>6} {s.get('predicted_rate', 0):>6.1f}")
        gold = s.get("gold_rate")  # the same tested pairs for every model
    if result["models"] and gold is not None:
        lines.append(f"pos%: tested pairs predicted positive (gold: {gold:.1f}%)")
    for name, t in result.get("twins", {}).items():
        n = len(t["f1_diff_folds"])
        lines.append(f"{name} - {t['twin']} (σ ≡ 1): {t['f1_diff']:+.1f} F1, better in "
                     f"{t['better_folds']} of {n} fold(s), worse in {t['worse_folds']}")
    return "\n".join(lines)
