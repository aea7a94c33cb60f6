"""Paraphrase and entailment classification with a string re-writing kernel (Bu et al.
2012): what ``structkernels paraphrase`` runs."""

from __future__ import annotations

import itertools
import time
import warnings
from typing import Any

import numpy as np

__all__ = ["C_GRID", "PR_WEIGHTS", "TREE_LAM", "TREE_WEIGHTS", "classify_rewritings"]


#: The choices of the cross-validated default: the PR kernel's weight in the sum (0: none) and
#: the SVM's C (when the caller fixes none).
PR_WEIGHTS = (0.0, 0.5, 1.0, 2.0)
C_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
#: The pair tree kernel's weights the cross-validation chooses from, and its decay.
TREE_WEIGHTS = (0.0, 0.5, 1.0)
TREE_LAM = 0.8


def classify_rewritings(train: Any, test: Any, kern: Any, *, kmax: int, lam: float,
                        pr: bool = False, tfkld: bool = False, trees: bool = False,
                        nlp: Any = None, cv: int | None = 5,
                        C: float | None = None,
                        lowercase: bool = True, stem: bool = True, n_jobs: int | None = None,
                        cache: Any = None, progress: bool | None = None,
                        random_state: int = 0, name: str = "srk",
                        started: float | None = None) -> tuple[dict[str, Any], np.ndarray]:
    """``(result, predictions)`` of an SVM on a sum of normalised kernels of re-writings.

    The sum: the normalised per-window Grams of ``kern`` (a string re-writing kernel)
    ``K̂_1 + … + K̂_k``, plus the PR features' Gram times a weight, plus, with ``tfkld``, the
    normalised TF-KLD kernel (:class:`~structkernels.kernels.tfkld.TfKld`: weights from the
    labels of ``train``, the training pairs' features out of fold, the factorisation over the
    sentences of ``train`` and ``test`` as the paper does, their labels unread), plus, with
    ``trees``, the pair tree kernel: the normalised tree kernel (λ = :data:`TREE_LAM`) of each
    side's dependency tree with the pair's aligned words marked
    (:func:`~structkernels.datasets.rewriting.aligned_trees`, parsed by the spaCy pipeline
    ``nlp``, by default ``en_core_web_sm``), the two sides averaged.

    With ``cv`` folds (the default, 5) every setting is chosen by cross-validated accuracy on
    ``train`` alone: ``k`` in ``1..kmax``, the PR weight in :data:`PR_WEIGHTS`, the pair
    trees' weight in :data:`TREE_WEIGHTS` (with ``trees``), TF-KLD on or off (with ``tfkld``;
    refitted on each fold's training part, so no held-out label shapes its
    own features) and ``C`` in :data:`C_GRID` (unless ``C`` is given); ties go to the smaller
    ``k``, the smaller PR weight, the smaller tree weight, no TF-KLD, the ``C`` nearest 1.  Every Gram is computed once
    and the choices are sums of it.  The folds are at most the smaller class's size; with
    fewer than 2 pairs in a class the settings are the given ones (``result["cv"]`` says why).
    ``cv=None`` uses the given settings: ``kmax``, PR weight 1 with ``pr``, the pair trees'
    weight 1 with ``trees``, ``C`` (1 if None).
    The test labels are read only to score.

    ``result`` holds the settings, sizes, seconds since ``started``, with CV every setting's
    accuracy on each fold (the same folds for all), and, when ``test`` is labelled, its
    accuracy and F1 in percent.
    """
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import SVC

    from structkernels.engine.checks import ZeroSelfSimilarityWarning
    from structkernels.kernels.srk.common import srk_gram_stack, sum_normalized
    from structkernels.kernels.srk.pr import pr_features
    from structkernels.text.tokenize import TextPipeline

    t0 = time.perf_counter() if started is None else started
    y = np.asarray(train.labels)
    folds, cv_result = None, None
    if cv is not None:
        n_folds = min(cv, int(np.bincount(y).min()))
        if n_folds >= 2:
            folds = list(StratifiedKFold(n_splits=n_folds, shuffle=True,
                                         random_state=random_state).split(np.zeros(len(y)), y))
        else:
            cv_result = {"folds": 0, "skipped": "a class has fewer than 2 training pairs: "
                         "the settings given are used"}
    pipe = TextPipeline(lowercase=lowercase, stem=stem)
    Xtr, Xte = train.tokenized(pipe), test.tokenized(pipe)
    S_tr, d_tr, _ = srk_gram_stack(kern, Xtr, n_jobs=n_jobs, cache=cache, progress=progress)
    S_te, d_te, _ = srk_gram_stack(kern, Xte, Xtr, n_jobs=n_jobs, cache=cache, progress=progress)
    f_tr, f_te = pr_features(Xtr), pr_features(Xte)
    pr_tr, pr_te = f_tr @ f_tr.T, f_te @ f_tr.T
    tree_tr = tree_te = 0.0
    if trees:
        tree_tr, tree_te = _pair_tree_grams(train, test, nlp, n_jobs=n_jobs, cache=cache,
                                            progress=progress)
    tf_tr = tf_te = None
    tf_fold: list[np.ndarray] = []
    if tfkld:
        F, F_te = _tfkld_features(Xtr, y, np.arange(len(Xtr)), list(Xte), random_state)
        tf_tr, tf_te = F @ F.T, F_te @ F.T
        for fit_idx, _ in folds or ():
            G, _ = _tfkld_features(Xtr, y, fit_idx, list(Xte), random_state)
            tf_fold.append(G @ G.T)

    def windows(S: np.ndarray, d: np.ndarray, k: int) -> np.ndarray:
        """``K̂_1 + … + K̂_k`` of one side against the training pairs."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ZeroSelfSimilarityWarning)
            return sum_normalized(S[:k], d[:k], d_tr[:k])

    chosen = {"kmax": kmax, "pr": 1.0 if pr else 0.0, "trees": 1.0 if trees else 0.0,
              "tfkld": bool(tfkld), "C": 1.0 if C is None else float(C)}
    if folds is not None:
        rows: list[dict[str, Any]] = []
        cs = C_GRID if C is None else (float(C),)
        for k in range(1, kmax + 1):
            W = windows(S_tr, d_tr, k)  # once per k: the weights below only add to it
            for w_pr, w_tree in itertools.product(PR_WEIGHTS, TREE_WEIGHTS if trees else (0.0,)):
                K = W + w_pr * pr_tr + w_tree * tree_tr
                for with_tf in (False, True) if tfkld else (False,):
                    acc: dict[float, list[float]] = {c: [] for c in cs}
                    for f, (a, b) in enumerate(folds):
                        Kf = K + tf_fold[f] if with_tf else K  # TF-KLD differs per fold
                        K_aa, K_ba = Kf[np.ix_(a, a)], Kf[np.ix_(b, a)]
                        for c in cs:
                            clf = SVC(kernel="precomputed", C=c).fit(K_aa, y[a])
                            acc[c].append(accuracy_score(y[b], clf.predict(K_ba)))
                    rows += [{"kmax": k, "pr": w_pr, "trees": w_tree, "tfkld": with_tf, "C": c,
                              "cv_accuracy_pct": round(100 * float(np.mean(acc[c])), 2),
                              "cv_std_pct": round(100 * float(np.std(acc[c])), 2),
                              "cv_folds_pct": [round(100 * float(v), 2) for v in acc[c]]}
                             for c in cs]
        best = max(rows, key=lambda r: (r["cv_accuracy_pct"], -r["kmax"], -r["pr"],
                                        -r["trees"], not r["tfkld"], -abs(np.log(r["C"]))))
        chosen = {key: best[key] for key in ("kmax", "pr", "trees", "tfkld", "C")}
        cv_result = {"folds": len(folds), "settings": rows, "chosen": chosen}
    w_pr, w_tree = chosen["pr"], chosen["trees"]
    K_tr = windows(S_tr, d_tr, chosen["kmax"]) + w_pr * pr_tr + w_tree * tree_tr
    K_te = windows(S_te, d_te, chosen["kmax"]) + w_pr * pr_te + w_tree * tree_te
    if chosen["tfkld"]:
        K_tr, K_te = K_tr + tf_tr, K_te + tf_te
    pred = SVC(kernel="precomputed", C=chosen["C"]).fit(K_tr, y).predict(K_te)
    result = {
        "kernel": name, **chosen, "lam": lam,
        "n_train": len(train), "n_test": len(test), "seconds": round(time.perf_counter() - t0, 2),
        "units": {"accuracy": "%", "f1": "%", "seconds": "s"},
    }
    if cv_result is not None:
        result["cv"] = cv_result
    if (test.labels >= 0).all():
        result["accuracy"] = round(100 * accuracy_score(test.labels, pred), 2)
        result["f1"] = round(100 * f1_score(test.labels, pred), 2)
    return result, pred


def _pair_tree_grams(train: Any, test: Any, nlp: Any, *, n_jobs: int | None, cache: Any,
                     progress: bool | None) -> tuple[np.ndarray, np.ndarray]:
    """The pair tree kernel's Grams train x train and test x train, halved so that the
    diagonal is 1: each distinct sentence parsed once by ``nlp`` (None: ``en_core_web_sm``)."""
    from structkernels.datasets.rewriting import aligned_trees
    from structkernels.engine.gram import gram
    from structkernels.kernels.base import Normalized
    from structkernels.kernels.tree import TreeKernel
    from structkernels.kernels.views import ViewSum
    from structkernels.relations.parse import load_pipeline

    both = aligned_trees(train + test, load_pipeline() if nlp is None else nlp,
                         progress=progress)
    T_tr, T_te = both[:len(train)], both[len(train):]
    side = Normalized(TreeKernel(lam=TREE_LAM))
    pair = ViewSum([(0, side), (1, side)])
    options = {"n_jobs": n_jobs, "cache": cache, "progress": progress}
    return 0.5 * gram(pair, T_tr, **options), 0.5 * gram(pair, T_te, T_tr, **options)


def _tfkld_features(X: list, y: np.ndarray, fit_idx: np.ndarray, test: list,
                    random_state: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit-row TF-KLD features of the pairs ``X`` and ``test``: the weights from the labels
    of ``X[fit_idx]`` only, those pairs' own features out of fold (``TfKld(cross_fit=)``:
    a pair whose label shaped its own weights looks more separable than any new pair), the
    factorisation over every sentence (no other label read)."""
    from structkernels.kernels.tfkld import TfKld

    held = np.setdiff1d(np.arange(len(X)), fit_idx)
    smallest = int(np.bincount(y[fit_idx]).min())
    model = TfKld(random_state=random_state, cross_fit=min(5, smallest) if smallest >= 2 else None)
    F_fit = model.fit_transform([X[i] for i in fit_idx], y[fit_idx],
                                unlabeled=[X[i] for i in held] + test)
    F = np.empty((len(X), F_fit.shape[1]))
    F[fit_idx] = F_fit
    if len(held):
        F[held] = model.transform([X[i] for i in held])
    return _unit_rows(F), _unit_rows(model.transform(test))


def _unit_rows(F: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays 0): their products are cosines."""
    n = np.linalg.norm(F, axis=1)
    return F / np.where(n > 0, n, 1.0)[:, None]
