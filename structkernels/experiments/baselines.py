"""PK and NPK beside simple baselines on the same split: the analogue of Table 6 of Garg et
al. (2018).  :func:`baselines_table` runs, on sub-samples of both halves (one per seed, the
same for every model), k-NN (k = 8) under PK and NPK, exact and with both kernel hashes, an
SVM on the normalised Grams, logistic regression on bags of path tuples
(:func:`linear_baselines`) and chance.  The hashed classifiers read the Grams' values
through :class:`~structkernels.kernels.lookup.GramLookup`, each counting the values it reads
and adding the Gram's time in proportion to them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from structkernels.structures import take

__all__ = [
    "baselines_table", "edge_tuple_features", "format_table", "linear_baselines", "tuple_features",
]

K_NEIGHBOURS = 8


def tuple_features(path: Any) -> list[str]:
    """The bag-of-tuples features of a path: ``edge|node`` tuples and their bigrams."""
    toks = [f"{e}|{n}" for e, n in path]
    return toks + [a + ">" + b for a, b in zip(toks, toks[1:], strict=False)]


def edge_tuple_features(path: Any) -> list[str]:
    """:func:`tuple_features` plus the edge labels and edge-label bigrams alone."""
    edges = [f"{e}|" for e, _ in path]
    bigrams = [a + ">" + b for a, b in zip(edges, edges[1:], strict=False)]
    return tuple_features(path) + edges + bigrams


LINEAR_FEATURES = {
    "logistic regression, bag of tuples": tuple_features,
    "logistic regression, tuples + edges": edge_tuple_features,
}


def linear_baselines(X_tr: Sequence, y_tr: np.ndarray, X_te: Sequence,
                     y_te: np.ndarray) -> dict[str, dict[str, float]]:
    """Logistic regression (``class_weight="balanced"``) on each of :data:`LINEAR_FEATURES`:
    one row per feature set, the scores with ``n_evaluations`` (0) and ``seconds``."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    rows = {}
    for name, features in LINEAR_FEATURES.items():
        t0 = time.perf_counter()
        vec = CountVectorizer(analyzer=features)
        A = vec.fit_transform(list(X_tr))
        lr = LogisticRegression(class_weight="balanced", max_iter=3000).fit(A, y_tr)
        s = lr.decision_function(vec.transform(list(X_te)))
        rows[name] = _row(np.asarray(y_te), (s > 0).astype(int), s, 0, t0)
    return rows


def _scores(y: np.ndarray, pred: np.ndarray, score: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import average_precision_score

    from structkernels.neighbors.classifier import positive_class_scores

    out = positive_class_scores(y, pred, pos_label=1)
    out["average_precision"] = float(average_precision_score(y, score)) if y.any() else 0.0
    return out


def _row(y: np.ndarray, pred: np.ndarray, score: np.ndarray, n_evaluations: int, t0: float,
         offset: float = 0.0) -> dict[str, float]:
    """The scores, ``n_evaluations`` and the seconds since ``t0`` plus ``offset``."""
    out = _scores(y, pred, score)
    return {**out, "n_evaluations": n_evaluations, "seconds": offset + time.perf_counter() - t0}


def _knn_scores(clf, X_te, y_te) -> dict[str, float]:
    proba = clf.predict_proba(X_te)
    return _scores(y_te, clf.decide(proba), proba[:, 1])


def _one_seed(train, test, pk_params, npk_params, n_train, n_test, seed, n_jobs,
              hash_settings) -> dict[str, dict[str, float]]:
    from sklearn.svm import SVC

    from structkernels.engine.gram import gram
    from structkernels.kernels.lookup import GramLookup
    from structkernels.kernels.names import kernel
    from structkernels.neighbors.classifier import KernelKNNClassifier

    rng = np.random.RandomState(seed)
    i_tr = np.sort(rng.choice(len(train.paths), min(n_train, len(train.paths)), replace=False))
    i_te = np.sort(rng.choice(len(test.paths), min(n_test, len(test.paths)), replace=False))
    X_tr = take(train.paths, i_tr)  # encoded sub-lists: not encoded again by the Grams
    X_te = take(test.paths, i_te)
    y_tr = np.asarray(train.labels)[i_tr]
    y_te = np.asarray(test.labels)[i_te]
    rows: dict[str, dict[str, float]] = {}
    rate = float(y_te.mean()) if len(y_te) else 0.0
    rows["chance (all positive)"] = {
        **_scores(y_te, np.ones_like(y_te), np.zeros(len(y_te))),
        "average_precision": rate, "n_evaluations": 0, "seconds": 0.0,
    }
    for name, params in (("PK", pk_params), ("NPK", npk_params)):
        k = kernel("path", **params)
        t0 = time.perf_counter()
        K_tr, info_tr = gram(k, X_tr, normalize=True, n_jobs=n_jobs, return_info=True)
        K_te, info_te = gram(k, X_te, X_tr, normalize=True, n_jobs=n_jobs, return_info=True)
        gram_s = time.perf_counter() - t0
        gram_n = int(info_tr.n_evaluations + info_te.n_evaluations)
        t0 = time.perf_counter()
        knn = KernelKNNClassifier("precomputed", n_neighbors=K_NEIGHBOURS, weights="similarity",
                                  threshold="auto", random_state=seed).fit(K_tr, y_tr)
        rows[f"{name} k-NN, exact"] = {**_knn_scores(knn, K_te, y_te), "n_evaluations": gram_n,
                                        "seconds": gram_s + time.perf_counter() - t0}
        t0 = time.perf_counter()
        svc = SVC(kernel="precomputed", class_weight="balanced").fit(K_tr, y_tr)
        s = svc.decision_function(K_te)
        rows[f"{name} SVM (precomputed Gram)"] = _row(y_te, (s > 0).astype(int), s, gram_n,
                                                      t0, gram_s)
        # the hashed classifiers read their kernel values from the Grams just computed
        # (GramLookup): the same values, counted as the evaluations they would cost
        look = GramLookup(np.vstack([K_tr, K_te]))
        ids_tr, ids_te = np.arange(len(X_tr)), np.arange(len(X_tr), len(X_tr) + len(X_te))
        for hashing in ("random-knn", "klsh"):
            t0 = time.perf_counter()
            clf = KernelKNNClassifier(look, n_neighbors=K_NEIGHBOURS, hashing=hashing,
                                      weights="similarity", threshold="auto",
                                      random_state=seed, **hash_settings).fit(ids_tr, y_tr)
            r = _knn_scores(clf, ids_te, y_te)
            n_evals = int(clf.n_fit_evaluations_ + clf.n_evaluations_)
            rows[f"{name} k-NN, {hashing} hashing"] = {
                **r, "n_evaluations": n_evals,
                # its own work, plus the Gram's time for the values it read
                "seconds": time.perf_counter() - t0 + gram_s * n_evals / max(gram_n, 1),
            }
    rows.update(linear_baselines(X_tr, y_tr, X_te, y_te))
    return rows


def baselines_table(train: Any, test: Any, pk_params: dict[str, Any],
                    npk_params: dict[str, Any], *, n_train: int = 2000, n_test: int = 3000,
                    seeds: Iterable[int] = range(5), n_jobs: int | None = None,
                    hash_settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every model of the table on the same sub-samples, one per seed.

    Parameters
    ----------
    train, test : InteractionDataset
        The two halves (``paths`` and 0/1 ``labels``).
    pk_params, npk_params : dict
        ``kernel("path", **params)`` of the stationary and the learned kernel.
    n_train, n_test : int
        Sub-sample sizes of the halves (natural positive rate).
    seeds : iterable of int
        One sub-sample and hash seed each.
    n_jobs : int or None, default None
        Gram-engine workers (None: the cores this process may use); the figures
        do not depend on it.
    hash_settings : dict, optional
        ``n_tables``/``probe``/``n_bits`` of the hashed classifiers.

    Returns
    -------
    dict
        ``{"rows": {model: {metric: {"mean", "sd", "values"}}}, "n_train", "n_test",
        "seeds", "npk_beats_pk_every_seed"}``.
    """
    seeds = list(seeds)
    # one seed at a time (what a seed's Grams, classifiers and copies hold is freed before
    # the next), its Grams computed by the engine's n_jobs workers
    settings = dict(hash_settings or {})
    per_seed = [_one_seed(train, test, pk_params, npk_params, n_train, n_test, s, n_jobs,
                          settings) for s in seeds]
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for name, first in per_seed[0].items():
        rows[name] = {}
        for metric in first:
            vals = [float(r[name][metric]) for r in per_seed]
            rows[name][metric] = {"mean": float(np.mean(vals)), "sd": float(np.std(vals)),
                                  "values": vals}
    return {"rows": rows, "n_train": min(n_train, len(train.paths)),
            "n_test": min(n_test, len(test.paths)), "seeds": seeds,
            "npk_beats_pk_every_seed": _npk_beats_pk(per_seed)}


def _npk_beats_pk(per_seed: Sequence[dict]) -> dict[str, bool]:
    return {variant: all(r[f"NPK {variant}"][m] > r[f"PK {variant}"][m]
                         for r in per_seed for m in ("f1", "average_precision"))
            for variant in ("k-NN, exact", "k-NN, random-knn hashing", "k-NN, klsh hashing",
                            "SVM (precomputed Gram)")}


def format_table(table: dict[str, Any]) -> str:
    """The table as fixed-width text (percentages, mean ± sd over the seeds)."""

    def pm(cell: dict[str, Any], scale: float = 100.0, fmt: str = ".1f") -> str:
        return f"{scale * cell['mean']:{fmt}} ± {scale * cell['sd']:{fmt}}"

    lines = [f"{'model':<36} {'F1 (precision, recall)':<28} {'avg. precision':>14} "
             f"{'kernel evaluations':>18} {'seconds':>8}"]
    for name, r in table["rows"].items():
        f1 = f"{pm(r['f1'])} ({100 * r['precision']['mean']:.1f}, {100 * r['recall']['mean']:.1f})"
        lines.append(f"{name:<36} {f1:<28} {pm(r['average_precision']):>14} "
                     f"{int(r['n_evaluations']['mean']):>18,} {r['seconds']['mean']:>8.1f}")
    return "\n".join(lines)
