"""The kernel k-nearest-neighbour classifier, exact or with kernel hashing (Garg et al. 2018,
Sec. 4.2 and Table 2), and the positive-class scores of the paper's tables.
"""

from __future__ import annotations

import numbers
import time
from typing import Any

import numpy as np
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import precision_recall_fscore_support
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from structkernels.engine.checks import diagonal_scales, probe_when_asked, validation_level
from structkernels.engine.gram import block_ranges
from structkernels.engine.source import check_precomputed_gram
from structkernels.kernels.base import Normalized
from structkernels.kernels.names import takes_arrays
from structkernels.neighbors.graph import (
    HASHINGS,
    bounded_k,
    build_tables,
    group_buckets,
    kernel_diagonal,
    line_topk,
    merge_topk,
    prepare_kernel,
    top_candidates,
)
from structkernels.neighbors.hashing import as_structures as _checked_structures
from structkernels.neighbors.hashing import check_n_features, codes_from_bits
from structkernels.neighbors.settings import (
    MAIN_JOB,
    MAIN_JOB_SETTINGS,
    PREVIOUS_DEFAULTS,
    classifier_kernel_params,
)
from structkernels.structures import take
from structkernels.utils import N_JOBS, Interval, Options, ValidatedParamsMixin

__all__ = [
    "KernelKNNClassifier", "positive_class_scores", "stratified_rows", "MAIN_JOB_SETTINGS",
    "PREVIOUS_DEFAULTS",
]



def positive_class_scores(y_true: Any, y_pred: Any, pos_label: Any = None) -> dict[str, float]:
    """F1, precision and recall of the positive class (``sklearn.metrics``), as in the paper.

    ``pos_label`` defaults to 1 when the labels are 0/1 (or -1/1), else to the larger of two
    labels in sorted order (``"yes"`` of ``"no"``/``"yes"``); with more than two labels it must
    be given.  A ``pos_label`` that occurs in neither ``y_true`` nor ``y_pred`` is an error.

    Examples
    --------
    >>> positive_class_scores([1, 1, 0, 0], [1, 0, 1, 0])
    {'f1': 0.5, 'precision': 0.5, 'recall': 0.5, 'support': 2}
    >>> positive_class_scores(["yes", "no"], ["yes", "yes"])["precision"]
    0.5
    """
    yt = np.asarray(y_true)
    yp = np.asarray(y_pred)
    labels = np.unique(np.concatenate([yt.ravel(), yp.ravel()]))
    if pos_label is None:
        if labels.dtype.kind in "iub" and set(labels.tolist()) <= {-1, 0, 1}:
            pos_label = 1
        elif len(labels) <= 2:
            pos_label = labels[-1] if len(labels) else 1
        else:
            raise ValueError(
                f"positive_class_scores: pos_label must be given with {len(labels)} distinct "
                f"labels {labels.tolist()[:10]}"
            )
    elif not (np.any(yt == pos_label) or np.any(yp == pos_label)):
        raise ValueError(
            f"positive_class_scores: pos_label={pos_label!r} is not among the labels "
            f"{labels.tolist()[:10]}"
        )
    p, r, f, s = precision_recall_fscore_support(
        yt, yp, pos_label=pos_label, average="binary", zero_division=0
    )
    support = int(np.sum(yt == pos_label))
    return {"f1": float(f), "precision": float(p), "recall": float(r), "support": support}


def stratified_rows(y: np.ndarray, size: int, seed: int) -> np.ndarray:
    """Sorted positions of ``size`` of the class labels ``y`` (``train_test_split`` seeded by
    ``seed``), stratified by class when each class holds at least 2."""
    from sklearn.model_selection import train_test_split

    stratify = y if np.bincount(y, minlength=2).min() >= 2 else None
    rows, _ = train_test_split(np.arange(len(y)), train_size=size, stratify=stratify,
                               random_state=seed)
    return np.sort(rows)


#: Bytes of the rows of a precomputed training Gram copied at a time for the
#: leave-one-out scores of ``threshold="auto"``.
_LOO_BAND_BYTES = 64 << 20


class KernelKNNClassifier(ValidatedParamsMixin, ClassifierMixin, BaseEstimator):
    """k-nearest-neighbour classifier under a kernel similarity.

    **The defaults are the main job's settings** (``structkernels train-npk``,
    :data:`MAIN_JOB_SETTINGS`): the path kernel with λ = 0.8 and partial credit
    0.9, cosine-normalised, 8 neighbours, similarity-weighted votes and an
    F1-tuned threshold; with hashing, 2 tables and 3 multi-probes.  **One default
    differs from the main job: the search is exact** (``hashing=None``), where the
    main job hashes to save kernel evaluations: pass ``hashing="random-knn"`` for it.
    :data:`PREVIOUS_DEFAULTS` are the defaults of structkernels 0.1.

    Parameters
    ----------
    kernel : str or Kernel, default "path"
        A registered kernel name (built with ``kernel_params``), a Kernel
        instance, or ``"precomputed"``: ``fit`` then takes the train x train
        Gram matrix and ``predict`` the test x train one.
    n_neighbors : int, default 8
        ``k`` (the paper's setting).
    hashing : None, "random-knn" or "klsh", default None
        None compares every test structure with every training structure
        (exact).  The main job uses ``"random-knn"`` (see above).
    weights : "uniform" or "similarity", default "similarity"
        Majority vote, or votes weighted by the (non-negative part of the) kernel value.
    threshold : None, float or "auto", default "auto"
        Decision rule of a binary problem, on the score ``s`` = the (weighted) share of
        neighbours of the positive class ``classes_[1]``: None predicts the most voted class
        (``s > 1/2``; ties to ``classes_[0]``); a number ``t`` predicts positive when
        ``s >= t``; ``"auto"`` chooses ``t`` on the training data only, as the value that
        maximises F1 of the training structures' leave-one-out scores (each scored by its own
        neighbours, itself excluded, found by the same search as ``predict``, hashed or exact).
        With one or more than two classes ``"auto"`` predicts the most voted class (a number is
        an error).
    threshold_sample : int or None, default 2000
        With ``threshold="auto"``: score at most this many training structures (a random subset,
        stratified by class, seeded by ``random_state``) to choose the threshold; None scores
        them all.  Their neighbours are still searched among all training structures.
    n_bits : int, optional
        Bits per hash code (default ``ceil(log2(N) / 2)``).
    n_tables : int or None, default None
        Independent hash tables; None: 2 with hashing (the main job's setting).
    probe : {0, 1} or None, default None
        1 also searches the training buckets at Hamming distance 1; None: 1
        with hashing (the main job's setting).
    n_probes : int, None or "auto", default "auto"
        With probing: how many of the Hamming-1 buckets each query searches per table, those
        across its least firm bits (multi-probe LSH, Lv et al., VLDB 2007; the hasher's
        ``margins_from_similarities``).  None searches all ``n_bits`` of them; ``"auto"``: 3
        (the main job's setting).
    normalize : bool or "auto", default "auto"
        Use ``k(x, y) / sqrt(k(x, x) k(y, y))``.  ``"auto"``: for kernels whose raw values grow
        with the structures' size (``Kernel.grows_with_size``: the path, tree and nonstationary
        kernels; the main job normalises); not for other kernels.  Does not apply to
        ``kernel="precomputed"``.
    n_jobs : int or None, default None
        joblib workers of the Gram engine.
    random_state : int, RandomState or None
        Seeds the hash tables and the ``threshold_sample`` subset.
    kernel_params : dict, optional
        Parameters of a kernel given by name (e.g. ``{"lam": 0.8}``).  None with
        ``kernel="path"``: :data:`~structkernels.neighbors.settings.PATH_PARTIAL_CREDIT`, the
        main job's partial credit; any dict is used as given.
    hash_params : dict, optional
        Extra hasher parameters (``n_reference``, ``subset_size`` for
        random-knn; ``n_sample``, ``n_per_bit`` for klsh).

    Attributes
    ----------
    classes_ : ndarray
    X_fit_ : list or ndarray
        The training structures (the training Gram matrix when precomputed).
    hashers_ : list
        Fitted hashers, one per table (empty without hashing).
    buckets_ : list of dict
        Per table, ``code -> training indices``.
    n_fit_evaluations_ : int
        Kernel evaluations made by ``fit``.
    n_evaluations_ : int
        Kernel evaluations made by the last ``predict``/``predict_proba``/``kneighbors``.
    threshold_ : float or None
        The positive-class score threshold used by ``predict`` (None: majority vote).
    train_scores_ : ndarray or None
        With ``threshold="auto"`` on a binary problem: the leave-one-out scores of the scored
        training structures (all, or ``threshold_sample`` of them).
    normalized_ : bool
        Whether the kernel is normalised (``normalize`` resolved).
    n_tables_, probe_, n_probes_ : int, int, int or None
        The hash settings in use (``None``/``"auto"`` resolved).

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import KernelKNNClassifier
    >>> X = np.array([[0.0], [0.2], [0.4], [5.0], [5.2], [5.4]])
    >>> y = np.array([0, 0, 0, 1, 1, 1])
    >>> clf = KernelKNNClassifier("rbf", n_neighbors=3).fit(X, y)
    >>> clf.predict(np.array([[0.1], [5.1]])).tolist()
    [0, 1]
    >>> clf.n_evaluations_
    12

    On paths the defaults are the main job's settings:

    >>> from structkernels import Path
    >>> paths = [Path([(None, "bind"), ("ARG0", a), ("ARG1", b)])
    ...          for a in ("kinase", "gene", "cell") for b in ("Raf", "Ras")]
    >>> y = [int(p[1][1] == "kinase") for p in paths]
    >>> clf = KernelKNNClassifier(n_neighbors=2).fit(paths, y)
    >>> clf.predict(paths).tolist()
    [1, 1, 0, 0, 0, 0]
    >>> clf.kernel_.node_mismatch, clf.normalized_
    (0.9, True)
    """

    def __init__(self, kernel: Any = "path", n_neighbors: int = 8, hashing: str | None = None,
                 weights: str = "similarity", threshold: Any = "auto",
                 threshold_sample: int | None = 2000, n_bits: int | None = None,
                 n_tables: int | None = None, probe: int | None = None,
                 n_probes: int | str | None = "auto", normalize: bool | str = "auto",
                 n_jobs: int | None = None, random_state: Any = None,
                 kernel_params: dict | None = None, hash_params: dict | None = None):
        self.kernel = kernel
        self.n_neighbors = n_neighbors
        self.hashing = hashing
        self.weights = weights
        self.threshold = threshold
        self.threshold_sample = threshold_sample
        self.n_bits = n_bits
        self.n_tables = n_tables
        self.probe = probe
        self.n_probes = n_probes
        self.normalize = normalize
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.kernel_params = kernel_params
        self.hash_params = hash_params

    def _precomputed(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    _param_constraints = {
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "hashing": [None, Options(sorted(HASHINGS))],
        "weights": [Options(["uniform", "similarity"])],
        "threshold": [None, Options(["auto"]), Interval(numbers.Real, 0, 1)],
        "threshold_sample": [None, Interval(numbers.Integral, 1, None)],
        "n_bits": [None, Interval(numbers.Integral, 1, None)],
        "n_tables": [None, Interval(numbers.Integral, 1, None)],
        "probe": [None, Options([0, 1])],
        "n_probes": [None, Options(["auto"]), Interval(numbers.Integral, 1, None)],
        "normalize": ["boolean", Options(["auto"])],
        "n_jobs": N_JOBS,
        "random_state": ["random_state"],
        "kernel_params": [None, dict],
        "hash_params": [None, dict],
    }

    def _validate_params(self) -> None:
        """Each parameter against its constraints, then the rules that join several."""
        super()._validate_params()
        if self.hashing is not None and self._precomputed():
            raise ValueError(
                "hashing needs kernel evaluations on new structures; it cannot be used with "
                "kernel='precomputed' (the test x train Gram matrix is already complete)"
            )
        hashed = self.hashing is not None
        if not hashed and (self.n_bits is not None or self.n_tables not in (None, 1)
                           or self.probe):
            raise ValueError("n_bits, n_tables and probe apply only with hashing='random-knn'/'klsh'")
        if not isinstance(self.n_probes, str) and self.n_probes is not None \
                and not self._hash_settings()[1]:
            raise ValueError("n_probes applies only with probe=1 (Hamming-1 buckets)")
        nz = self.normalize
        if self._precomputed() and (self.kernel_params or (not isinstance(nz, str) and bool(nz))):
            raise ValueError("kernel_params and normalize do not apply to kernel='precomputed'")

    def _hash_settings(self) -> tuple[int, int, int | None]:
        """``(n_tables, probe, n_probes)`` in use: None and "auto" are the main job's hash
        settings (:data:`~structkernels.neighbors.settings.MAIN_JOB`) with hashing."""
        hashed = self.hashing is not None
        main = MAIN_JOB["classifier"]
        n_tables = int(self.n_tables) if self.n_tables is not None else (
            main["n_tables"] if hashed else 1)
        probe = int(self.probe) if self.probe is not None else (main["probe"] if hashed else 0)
        if isinstance(self.n_probes, str):
            n_probes = main["n_probes"] if probe else None
        else:
            n_probes = None if self.n_probes is None else int(self.n_probes)
        return n_tables, probe, n_probes

    def fit(self, X: Any, y: Any) -> KernelKNNClassifier:
        """Store the training structures and labels; build the hash tables if any."""
        t0 = time.perf_counter()
        self._validate_params()
        self.n_tables_, self.probe_, self.n_probes_ = self._hash_settings()
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if self._precomputed():
            Xs = check_precomputed_gram(X, n_cols=None, label="the train Gram matrix")
            self.n_features_in_ = Xs.shape[1]
            self.normalized_ = False
        else:
            params = classifier_kernel_params(self.kernel, self.kernel_params)
            base, norm = prepare_kernel(self.kernel, params, self.normalize)
            Xs = as_structures(base, X)
            if isinstance(Xs, np.ndarray) and Xs.ndim == 2:
                self.n_features_in_ = Xs.shape[1]
            self.kernel_ = base
            self.normalized_ = norm
        if len(Xs) != len(y):
            raise ValueError(f"X has {len(Xs)} structures but y has {len(y)} labels")
        if len(Xs) == 0:
            raise ValueError("cannot fit on 0 structures")
        if self.hashing is not None and len(Xs) < 2:
            raise ValueError(f"hashing needs at least 2 training structures, got {len(Xs)} sample")
        if not self._precomputed() and validation_level(self.kernel_) == "full":
            # symmetry/PSD probe of plugin and user kernels (Kernel.output_validation);
            # the level first: built-in kernels' input is not checked again here
            Xc = self.kernel_.check_input(Xs)
            probe_when_asked(self.kernel_, Xc, len(Xc) * (len(Xc) + 1) // 2)
        self.X_fit_ = Xs
        self._y = y_enc.astype(np.int64)
        self.n_fit_evaluations_ = 0
        self.hashers_, self.buckets_, self._diag_fit = [], [], None
        if not self._precomputed():
            if self.normalized_:
                self._diag_fit, ne = kernel_diagonal(self.kernel_, Xs)
                self.n_fit_evaluations_ += ne
            if self.hashing is not None:
                hash_kernel = Normalized(self.kernel_) if self.normalized_ else self.kernel_
                hashers, codes, _, ne = build_tables(
                    Xs, hash_kernel, self.hashing, n_bits=self.n_bits,
                    n_tables=self.n_tables_, random_state=check_random_state(self.random_state),
                    n_jobs=self.n_jobs, hash_params=dict(self.hash_params or {}),
                )
                self.hashers_ = hashers
                self.buckets_ = [group_buckets(c) for c in codes]
                self.n_fit_evaluations_ += ne
        self.threshold_, self.train_scores_ = None, None
        auto = isinstance(self.threshold, str)
        # "auto" tunes the rule of a binary problem; other problems take the most voted class
        if self.threshold is not None and not (auto and len(self.classes_) != 2):
            if len(self.classes_) != 2:
                raise ValueError(
                    f"threshold={self.threshold!r} needs a binary problem; y has "
                    f"{len(self.classes_)} classes"
                )
            if auto:
                self.threshold_, self.train_scores_ = self._auto_threshold()
            else:
                self.threshold_ = float(self.threshold)
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _auto_threshold(self) -> tuple[float, np.ndarray]:
        """The F1-maximising threshold on the training data's leave-one-out scores."""
        # not sklearn's TunedThresholdClassifierCV: it refits the classifier on each
        # cross-validation fold (new hash tables and kernel evaluations per fold); here every
        # training structure is scored once by the fitted search, itself left out
        from sklearn.metrics import precision_recall_curve

        n_all = len(self.X_fit_)
        rows = np.arange(n_all)
        if self.threshold_sample is not None and self.threshold_sample < n_all:
            rows = stratified_rows(self._y, int(self.threshold_sample),
                                   check_random_state(self.random_state).randint(2**31 - 1))
        n = len(rows)
        if self._precomputed():
            # in bands of rows: a copy of the whole training Gram would double its memory
            band = max(1, _LOO_BAND_BYTES // (8 * max(n_all, 1)))
            found = []
            for s in range(0, n, band):
                r = rows[s:s + band]
                K = np.asarray(self.X_fit_[r], dtype=np.float64)  # a copy: rows taken
                K[np.arange(len(r)), r] = -np.inf
                found.append(self._neighbours_of(K, self.n_neighbors))
            idx, sims = (np.concatenate(part) for part in zip(*found, strict=True))
        else:
            # k + 1 neighbours by the predict-time search, then drop the structure itself
            k1 = min(int(self.n_neighbors), n_all - 1) + 1  # the predict-time k, plus itself
            idx, sims = self._neighbours_of(take(self.X_fit_, rows), k1)
            self.n_fit_evaluations_ += self.n_evaluations_
            own = idx == rows[:, None]
            # where the structure itself was not found, drop the last (weakest) neighbour
            drop = np.where(own.any(axis=1)[:, None], own, np.arange(idx.shape[1]) == idx.shape[1] - 1)
            keep = ~drop
            idx = idx[keep].reshape(n, -1)
            sims = sims[keep].reshape(n, -1)
        scores = self._scores_from(idx, sims)[:, 1]
        y = self._y[rows]
        if not y.any():
            return 1.0, scores
        p, r, t = precision_recall_curve(y, scores)
        f = 2 * p * r / np.maximum(p + r, 1e-300)
        best = int(np.argmax(f[:-1]))
        return float(t[best]), scores

    def kneighbors(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Training neighbours of ``X``: ``(indices, similarities)``, each (n, k).

        Indices are -1 (similarity ``-inf``) where fewer than ``k`` were found.
        """
        check_is_fitted(self, "classes_")
        if self._precomputed():
            X = check_precomputed_gram(
                X, n_cols=len(self.X_fit_), label="the test Gram matrix"
            )
        return self._neighbours_of(X, int(self.n_neighbors))

    def _neighbours_of(self, X: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        n_train = len(self.X_fit_)
        # at most n_train neighbours exist: a larger k would only allocate padding
        k = bounded_k(k, n_train, "n_neighbors", stacklevel=4)
        if self._precomputed():
            r, c, s = line_topk(X, k)
            self.n_evaluations_ = 0
            return merge_topk(len(X), k, r, c, s, exclude_self=False)
        Xq = as_structures(self.kernel_, X)
        check_n_features(self, Xq)
        m = len(Xq)
        n_evals = 0
        scales = None
        if self.normalized_:
            diag_q, ne = kernel_diagonal(self.kernel_, Xq)
            n_evals += ne
            scales = (diagonal_scales(diag_q), diagonal_scales(self._diag_fit))
        parts = []  # (rows, cols, sims) candidates
        if self.hashing is None:
            block = 512
            tasks = [
                (np.arange(r0, r1), np.arange(c0, c1), False)
                for r0, r1 in block_ranges(m, block)
                for c0, c1 in block_ranges(n_train, block)
            ]
        else:
            tasks = []
            for h, buckets in zip(self.hashers_, self.buckets_, strict=True):
                before = h.n_evaluations_
                S = h._similarities(Xq)
                n_evals += h.n_evaluations_ - before
                codes = codes_from_bits(h.bits_from_similarities(S))
                parts.append(line_topk(S, k, None, h.reference_indices_))
                if self.probe_ and self.n_probes_ is not None and self.n_probes_ < h.n_bits_:
                    # multi-probe: each query's own bucket and those across its least firm bits
                    weakest = np.argsort(h.margins_from_similarities(S), axis=1, kind="stable")
                    probes = [codes] + [
                        codes ^ np.left_shift(np.int64(1), weakest[:, j].astype(np.int64))
                        for j in range(int(self.n_probes_))
                    ]
                    for cs in probes:
                        for code, rows in group_buckets(cs).items():
                            if code in buckets:
                                tasks.append((rows, buckets[code], False))
                    continue
                for code, rows in group_buckets(codes).items():
                    cols = [buckets[code]] if code in buckets else []
                    if self.probe_:
                        cols += [
                            buckets[code ^ (1 << j)]
                            for j in range(h.n_bits_)
                            if code ^ (1 << j) in buckets
                        ]
                    if cols:
                        tasks.append((rows, np.concatenate(cols), False))
        *found, ne = top_candidates(self.kernel_, Xq, self.X_fit_, tasks, k, scales,
                                    n_jobs=self.n_jobs, desc="knn predict")
        n_evals += ne
        parts.append(found)
        self.n_evaluations_ = int(n_evals)
        rows, cols, sims = (np.concatenate(p) for p in zip(*parts, strict=True))
        return merge_topk(m, k, rows, cols, sims, exclude_self=False)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities: the (weighted) share of each class among the neighbours.

        A structure with no neighbour found (or zero total weight) gets the
        training class frequencies.
        """
        idx, sims = self.kneighbors(X)
        return self._scores_from(idx, sims)

    def _scores_from(self, idx: np.ndarray, sims: np.ndarray) -> np.ndarray:
        n_classes = len(self.classes_)
        found = idx >= 0
        if self.weights == "uniform":
            w = found.astype(np.float64)
        else:
            w = np.where(found, np.maximum(np.nan_to_num(sims, neginf=0.0), 0.0), 0.0)
        labels = np.where(found, self._y[np.maximum(idx, 0)], 0)
        votes = np.zeros((len(idx), n_classes), dtype=np.float64)
        np.add.at(votes, (np.repeat(np.arange(len(idx)), idx.shape[1]), labels.ravel()), w.ravel())
        total = votes.sum(axis=1, keepdims=True)
        prior = np.bincount(self._y, minlength=n_classes) / len(self._y)
        empty = total[:, 0] <= 0
        proba = np.where(total > 0, votes / np.where(total > 0, total, 1.0), 0.0)
        proba[empty] = prior
        return proba

    def predict(self, X: Any) -> np.ndarray:
        """Most voted class (ties to the first class in ``classes_``), or by ``threshold_``."""
        return self.decide(self.predict_proba(X))

    def decide(self, proba: np.ndarray) -> np.ndarray:
        """Class labels from :meth:`predict_proba` output, by the fitted decision rule."""
        check_is_fitted(self, "classes_")
        proba = np.asarray(proba, dtype=np.float64)
        if getattr(self, "threshold_", None) is not None:
            return self.classes_[(proba[:, 1] >= self.threshold_).astype(np.int64)]
        return self.classes_[np.argmax(proba, axis=1)]

    def positive_class_scores(self, X: Any, y: Any, pos_label: Any = None) -> dict[str, float]:
        """F1, precision and recall of ``pos_label`` on ``(X, y)`` (see :func:`positive_class_scores`).

        ``pos_label`` defaults to ``classes_[1]`` of a binary problem (1 for 0/1 labels).
        """
        check_is_fitted(self, "classes_")
        if pos_label is None:
            pos_label = self.classes_[-1]
        return positive_class_scores(y, self.predict(X), pos_label=pos_label)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._precomputed()
        # structures (paths, trees) are not 2-D float arrays: sklearn's checks skip them
        params = classifier_kernel_params(self.kernel, self.kernel_params)
        tags.input_tags.two_d_array = takes_arrays(self.kernel, params)
        return tags


def as_structures(kernel, X):
    """Structures checked by the kernel, in its checked form (an encoded ``PathList`` or
    ``TreeList`` for the compiled kernels: blocks cut from it are not encoded again);
    array-likes become arrays, sparse input is refused."""
    if issparse(X):
        raise TypeError(
            "KernelKNNClassifier: sparse input is not supported; pass a dense array, a "
            "sequence of structures, or kernel='precomputed' with a dense Gram matrix"
        )
    if not isinstance(X, (list, tuple, np.ndarray)) and hasattr(X, "__array__"):
        X = np.asarray(X)
    return _checked_structures(kernel, X, encode=True)
