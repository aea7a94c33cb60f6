"""Paraphrase and entailment classification with a string re-writing kernel (Bu et al.
2012): what ``structkernels paraphrase`` runs."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

__all__ = ["classify_rewritings"]


def classify_rewritings(train: Any, test: Any, kern: Any, *, kmax: int, lam: float,
                        pr: bool = False, tfkld: bool = False, cv: int | None = None,
                        C: float = 1.0,
                        lowercase: bool = True, stem: bool = True, n_jobs: int | None = None,
                        cache: Any = None, progress: bool | None = None,
                        random_state: int = 0, name: str = "srk",
                        started: float | None = None) -> tuple[dict[str, Any], np.ndarray]:
    """``(result, predictions)`` of the SVM on the sum of normalised per-k Grams of
    ``kern`` (a string re-writing kernel) up to ``kmax``, plus the PR feature's Gram with
    ``pr`` and the normalised TF-KLD kernel (:class:`~structkernels.kernels.tfkld.TfKld`:
    weights from the labels of ``train``, the training pairs' features out of fold, the
    factorisation over the sentences of ``train`` and ``test`` as the paper does, their
    labels unread) with ``tfkld``; with ``cv`` folds,
    k_max, PR and (when ``tfkld``) TF-KLD on/off are chosen by cross-validated accuracy on
    ``train`` (``result["cv"]``; TF-KLD's weights are refitted on each fold's training
    part, so no fold's held-out labels shape its features).  The test labels are read
    only to score.
    ``result`` holds the settings, sizes, seconds since ``started`` and, when ``test`` is
    labelled, its accuracy and F1 in percent."""
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.svm import SVC

    from structkernels.engine.checks import ZeroSelfSimilarityWarning
    from structkernels.kernels.srk.common import srk_gram_stack, sum_normalized
    from structkernels.kernels.srk.pr import pr_features
    from structkernels.text.tokenize import TextPipeline

    t0 = time.perf_counter() if started is None else started
    pipe = TextPipeline(lowercase=lowercase, stem=stem)
    Xtr, Xte = train.tokenized(pipe), test.tokenized(pipe)
    S_tr, d_tr, _ = srk_gram_stack(kern, Xtr, n_jobs=n_jobs, cache=cache,
                                   progress=progress)
    S_te, d_te, _ = srk_gram_stack(kern, Xte, Xtr, n_jobs=n_jobs, cache=cache,
                                   progress=progress)
    pr_tr = pr_te = None
    if pr or cv is not None:
        f_tr, f_te = pr_features(Xtr), pr_features(Xte)
        pr_tr, pr_te = f_tr @ f_tr.T, f_te @ f_tr.T

    folds = None
    if cv is not None:
        folds = list(StratifiedKFold(n_splits=cv, shuffle=True, random_state=random_state)
                     .split(np.zeros(len(train)), train.labels))
    tf_tr = tf_te = None
    tf_fold: list[np.ndarray] = []
    if tfkld:
        y = np.asarray(train.labels)
        F, F_te = _tfkld_features(Xtr, y, np.arange(len(Xtr)), list(Xte), random_state)
        tf_tr, tf_te = F @ F.T, F_te @ F.T
        for fit_idx, _ in folds or ():
            G, _ = _tfkld_features(Xtr, y, fit_idx, list(Xte), random_state)
            tf_fold.append(G @ G.T)

    def grams(k: int, with_pr: bool) -> tuple[np.ndarray, np.ndarray]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ZeroSelfSimilarityWarning)
            K_tr = sum_normalized(S_tr[:k], d_tr[:k], d_tr[:k])
            K_te = sum_normalized(S_te[:k], d_te[:k], d_tr[:k])
        if with_pr:
            K_tr, K_te = K_tr + pr_tr, K_te + pr_te
        return K_tr, K_te

    max_k, use_pr, use_tf = kmax, bool(pr), bool(tfkld)
    cv_result = None
    if folds is not None:
        scores = []
        for j in range(1, max_k + 1):
            for with_pr in (False, True):
                K_tr, _ = grams(j, with_pr)
                for with_tf in (False, True) if tfkld else (False,):
                    if with_tf:  # TF-KLD's Gram differs per fold (its weights read labels)
                        acc = []
                        for f, (a, b) in enumerate(folds):
                            K = K_tr + tf_fold[f]
                            clf = SVC(kernel="precomputed", C=C).fit(K[np.ix_(a, a)],
                                                                     train.labels[a])
                            acc.append(accuracy_score(train.labels[b],
                                                      clf.predict(K[np.ix_(b, a)])))
                    else:
                        acc = cross_val_score(SVC(kernel="precomputed", C=C), K_tr,
                                              train.labels, cv=folds, scoring="accuracy",
                                              error_score="raise")
                    row = {"kmax": j, "pr": with_pr,
                           "cv_accuracy_pct": round(100 * np.mean(acc), 2),
                           "cv_std_pct": round(100 * np.std(acc), 2)}
                    if tfkld:
                        row["tfkld"] = with_tf
                    scores.append(row)
        best = max(scores, key=lambda r: (r["cv_accuracy_pct"], -r["kmax"], not r["pr"],
                                          not r.get("tfkld", False)))
        kmax, use_pr, use_tf = best["kmax"], best["pr"], best.get("tfkld", False)
        chosen = {"kmax": kmax, "pr": use_pr}
        if tfkld:
            chosen["tfkld"] = use_tf
        cv_result = {"folds": cv, "settings": scores, "chosen": chosen}
    K_tr, K_te = grams(kmax, use_pr)
    if use_tf:
        K_tr, K_te = K_tr + tf_tr, K_te + tf_te
    clf = SVC(kernel="precomputed", C=C).fit(K_tr, train.labels)
    pred = clf.predict(K_te)
    result = {
        "kernel": name, "kmax": kmax, "lam": lam, "pr": use_pr, "tfkld": use_tf,
        "n_train": len(train), "n_test": len(test), "seconds": round(time.perf_counter() - t0, 2),
        "units": {"accuracy": "%", "f1": "%", "seconds": "s"},
    }
    if cv_result is not None:
        result["cv"] = cv_result
    if (test.labels >= 0).all():
        result["accuracy"] = round(100 * accuracy_score(test.labels, pred), 2)
        result["f1"] = round(100 * f1_score(test.labels, pred), 2)
    return result, pred


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
