"""Learning the nonstationary weights σ of a convolution kernel (Algorithm 1).

Garg et al. (2018), Sec. 5-6: ``k_NS((e_i, n_i), (e_j, n_j)) = σ(e_i) k_e(e_i, e_j) σ(e_j)
k_n(n_i, n_j)`` (Eq. 1), one σ per edge label; the strategies of
:mod:`structkernels.npk._objectives` decide each σ without an N × N Gram matrix.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import average_precision_score
from sklearn.utils import check_random_state

from structkernels.engine.gram import gram
from structkernels.kernels.base import Kernel, Normalized
from structkernels.kernels.names import as_kernel
from structkernels.npk._objectives import (
    OBJECTIVES,
    PARAMETERS,
    SIGMA_OBJECTIVES,
    FitData,
    FitReport,
    GradientObjective,
    KnnAPObjective,
    Loss1Objective,
    Objective,
    Offset,
    labels_by_frequency,
)
from structkernels.npk._trials import exact_trials
from structkernels.npk.files import (
    MODEL_FORMAT,
    SIGMA_FORMAT,
    check_file_sigma,
    check_kernel_name,
    read_document,
    validate_model,
)
from structkernels.npk.loss import binary_labels, structure_edge_labels, with_sigma
from structkernels.npk.sigma_document import (
    learner_from_document,
    learner_from_json,
    learner_to_document,
)
from structkernels.npk.sigma_knn import loo_knn_scores
from structkernels.structures import Path
from structkernels.utils import (
    N_JOBS,
    Interval,
    Options,
    atomic_open,
    dumps_finite,
    tqdm,
    validate_params,
)

__all__ = ["NonstationaryLearner"]


class NonstationaryLearner(TransformerMixin, BaseEstimator):
    """Learn binary per-edge-label weights σ of a convolution kernel (Algorithm 1).

    Algorithm 1 and Loss Function 1 of Garg et al. (2018), Sec. 6: σ starts at 1; labels are
    visited in descending frequency, each decided between σ = 0 and σ = 1 by ``alpha`` noisy
    loss estimates on sampled neighbourhoods of a hashed global k-NN graph.

    Parameters
    ----------
    kernel : str or Kernel, default "path"
        The convolution kernel to make nonstationary, with a ``sigma`` parameter: a registered
        name (built with ``kernel_params``) or an instance (a :class:`~structkernels.Normalized`
        one is unwrapped, ``normalize`` then taken as True).
    kernel_params : dict, optional
        Parameters of the kernel (``{"lam": 0.8}``); a ``sigma`` fixes labels not learned.
    labels : list of str, optional
        Edge labels to learn σ for (default: the ``top_fraction`` most frequent ones).
    top_fraction : float, default 0.5
        Share of the distinct edge labels learned when ``labels`` is None (the paper's 50%).
    alpha, beta : int, default 10, 100
        Trials per label (α); inducing points per trial (β), among the structures with it.
    k : int, default 4
        Neighbours per structure in the global k-NN graph.
    n_iter : int, default 1
        Passes over the labels, each on a graph built with the σ learned so far (Sec. 7.1.3).
    sampling : {"neighbourhood", "random"}, default "neighbourhood"
        Algorithm 1's local neighbourhoods, or the ``β`` inducing points alone (Table 4(b)).
    hashing : {"random-knn", "klsh"} or None, default "random-knn"
        Kernel hashing of the global graph and of subsets of ``exact_below`` or more.
    n_bits : int, optional
        Hash bits (H) of the global graph (None: about sqrt(N) buckets).
    exact_below : int, default 2000
        Sampled subsets smaller than this get an exact 1-NN graph (no hashing noise).
    chain_bound : bool, default True
        Exact trials of the path kernel (indicator edges, node similarities at most 1)
        evaluate only the pairs the chain bound leaves as possible first neighbours (the same
        σ and log); ``False`` evaluates each subset's whole Gram.
    max_evaluations : "gram", int or None, default "gram"
        Budget of kernel evaluations for the whole fit (None: none); ``"gram"`` is one Gram
        matrix, ``N (N + 1) / 2``, and sets no budget when the exact global graph alone is one
        (``hashing=None``, neighbourhood sampling).  After the global graph, the rest is shared
        evenly among the trials: a subset whose from-scratch cost exceeds its share is cut,
        inducing points kept first (``n_trimmed_``); counting the from-scratch cost keeps σ
        independent of the reuse of values.  ``"knn-ap"`` shrinks its sample to fit.
    normalize : bool, default True
        Use the cosine-normalised kernel ``K(x, y) / sqrt(K(x, x) K(y, y))``.
    objective : {"loss1", "knn-ap", "svm", "alignment"}, default "loss1"
        ``"loss1"``: Loss Function 1 on the sampled neighbourhoods (Algorithm 1; ``alpha`` to
        ``hashing`` apply).  ``"knn-ap"``: the leave-one-out average precision of the
        similarity-weighted ``n_neighbors``-NN classifier on a stratified sample
        (:mod:`structkernels.npk.sigma_knn`); σ(l) = 0 is kept only when it raises the AP by
        more than ``min_gain`` on each of two stratified halves.  ``"svm"`` (the SVM's dual,
        as multiple-kernel learning) and ``"alignment"`` (centred kernel-target alignment):
        real σ ∈ [0, 1] and λ of the path kernel by projected Adam steps
        (:mod:`structkernels.npk.gradient`; ``min_count`` to ``C``, ``groups`` and ``offset``).
    objective_sample, n_neighbors, min_gain : default 8000, 8, 0.005
        With ``"knn-ap"``: training structures in the sample (all when fewer), k of the
        classifier whose scores are judged, and the AP gain σ(l) = 0 must exceed.
    min_count, learn_lam, n_samples, max_steps, learning_rate, validation_fraction, C
        Gradient objectives: with ``labels`` None, the labels on at least ``min_count``
        (default 5) training structures are learned; ``learn_lam`` (True): λ too;
        ``n_samples`` (800): structures of the objective (a stratified sample of the training
        part) and at most as many held-out ones that choose among ``max_steps`` (30) Adam steps
        of size ``learning_rate`` (0.05); ``validation_fraction`` (0.25): share of the
        training documents (``groups``) held out; ``C`` (1.0): the SVM's.
    n_jobs : int or None, default None
        Workers of the graphs and the trials (results do not depend on it).
    random_state : int, RandomState or None
        Seeds the inducing points and the hashing.
    progress : bool, optional
        Show a progress bar (default: when stderr is a terminal).

    Attributes
    ----------
    sigma_, ignored_labels_
        The learned weight (0.0 or 1.0) of each learned label; those with σ = 0, in order.
    labels_, label_counts_
        The learned labels, most frequent first, and how many training structures hold each.
    losses_ : dict of str to dict
        Per label: summed loss at σ = 0 and σ = 1 of the last pass, and the value chosen.
    log_ : list of dict
        One entry per (pass, label, trial, value): subset size, loss, penalty, reward.
    n_evaluations_, n_evaluations_graph_ : int
        Kernel evaluations made by ``fit`` (global graphs + subsets), and for the graphs.
    n_evaluations_reused_ : int
        Evaluations the exact trials saved by reuse (added to ``n_evaluations_``: from scratch).
    budget_, n_trimmed_
        The evaluation budget of ``max_evaluations`` for this N, and the subsets cut to it.
    n_train_ : int
        Number of training structures N (compare ``n_evaluations_`` with N²).
    fit_seconds_ : float
    lam_, best_step_, history_
        Gradient objectives: the learned λ, the step kept (0: σ ≡ 1) and per step ``step``,
        ``objective`` (maximised), ``val_ap`` (held-out AP), ``lam``, ``sigma``, ``seconds``.
    X_fit_ : sequence
        The training structures, for :meth:`transform` (not kept by :meth:`save`).

    Examples
    --------
    The class is carried by the ARG0 node; ``mod`` and ``time`` are noise:

    >>> import itertools
    >>> from structkernels import NonstationaryLearner, Path
    >>> paths = [Path([(None, "bind"), ("ARG0", a), ("mod", m), ("time", t)])
    ...          for a, m, t in itertools.product(("kinase", "gene"), "abc", "uvw")]
    >>> y = [int(p[1][1] == "kinase") for p in paths]
    >>> learner = NonstationaryLearner("path", {"lam": 0.8}, top_fraction=1.0, alpha=2,
    ...                                beta=5, hashing=None, random_state=0, progress=False)
    >>> learner.fit(paths, y).ignored_labels_
    ['mod', 'time']
    >>> npk = learner.get_kernel()  # Normalized(PathKernel(lam=0.8, sigma={...}))

    Fitted, it is a scikit-learn transformer (the Gram against the training structures, for
    ``kernel="precomputed"``) with a :meth:`score` for ``GridSearchCV``:

    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.svm import SVC
    >>> model = make_pipeline(learner, SVC(kernel="precomputed")).fit(paths, y)
    >>> model.predict(paths[:3]).tolist(), learner.transform(paths[:3]).shape
    ([1, 1, 1], (3, 18))
    >>> round(learner.score(paths, y), 3)
    1.0
    """

    def __init__(self, kernel: str | Kernel = "path", kernel_params: dict | None = None, *,
                 labels: Sequence[str] | None = None, top_fraction: float = 0.5, alpha: int = 10,
                 beta: int = 100, k: int = 4, n_iter: int = 1, sampling: str = "neighbourhood",
                 hashing: str | None = "random-knn", n_bits: int | None = None,
                 exact_below: int = 2000, chain_bound: bool = True,
                 max_evaluations: int | str | None = "gram", normalize: bool = True,
                 objective: str = "loss1", objective_sample: int = 8000, n_neighbors: int = 8,
                 min_gain: float = 0.005, min_count: int = 5, learn_lam: bool = True,
                 n_samples: int = 800, max_steps: int = 30, learning_rate: float = 0.05,
                 validation_fraction: float = 0.25, C: float = 1.0, n_jobs: int | None = None,
                 random_state: int | np.random.RandomState | None = None,
                 progress: bool | None = None):
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.labels = labels
        self.top_fraction = top_fraction
        self.alpha = alpha
        self.beta = beta
        self.k = k
        self.n_iter = n_iter
        self.sampling = sampling
        self.hashing = hashing
        self.n_bits = n_bits
        self.exact_below = exact_below
        self.chain_bound = chain_bound
        self.max_evaluations = max_evaluations
        self.normalize = normalize
        self.objective = objective
        self.objective_sample = objective_sample
        self.n_neighbors = n_neighbors
        self.min_gain = min_gain
        self.min_count = min_count
        self.learn_lam = learn_lam
        self.n_samples = n_samples
        self.max_steps = max_steps
        self.learning_rate = learning_rate
        self.validation_fraction = validation_fraction
        self.C = C
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.progress = progress

    def _validate_params(self) -> None:
        positive = [Interval(numbers.Integral, 1, None)]
        validate_params(self, self.get_params(deep=False), {
            **dict.fromkeys(("alpha", "beta", "k", "n_iter", "exact_below", "objective_sample",
                             "n_neighbors"), positive),
            "objective": [Options(list(SIGMA_OBJECTIVES))],
            **PARAMETERS,
            "chain_bound": ["boolean"],
            "min_gain": [Interval(numbers.Real, 0, 1, closed="left")],
            "sampling": [Options(["neighbourhood", "random"], hidden=["neighborhood"])],
            "hashing": [None, Options(["random-knn", "klsh"])],
            "top_fraction": [Interval(numbers.Real, 0, 1, closed="right")],
            "max_evaluations": [Options(["gram"]), *positive, None],
            "n_jobs": N_JOBS,
            "random_state": ["random_state"],
            "kernel_params": [dict, None],
        })

    def _base_kernel(self) -> tuple[Kernel, bool, dict[str, float]]:
        """(kernel without normalisation, normalise?, fixed σ of labels not learned)."""
        params = dict(self.kernel_params or {})
        fixed = dict(params.pop("sigma", None) or {})
        if isinstance(self.kernel, Kernel):
            base = clone(self.kernel)
            if params:
                base.set_params(**params)
        else:
            base = as_kernel(self.kernel, **params)
        normalize = bool(self.normalize)
        if isinstance(base, Normalized):
            base, normalize = base.kernel, True
        given = base.get_params(deep=False)
        if "bandwidth" in given:  # the RBF's and Laplacian's deprecated name of it
            given = {}
        if "sigma" not in given or not (given["sigma"] is None or isinstance(given["sigma"], Mapping)):
            what = ("has none" if "sigma" not in given else
                    f"has sigma={given['sigma']!r}, which is not a dict of edge-label weights")
            raise TypeError(
                f"NonstationaryLearner needs a convolution kernel with a 'sigma' parameter "
                f"(per-edge-label weights, e.g. 'path' or 'tree'); {type(base).__name__} {what}")
        fixed.update({str(k): float(v) for k, v in (base.get_params()["sigma"] or {}).items()})
        base.validate_params()
        return base, normalize, fixed

    def fit(self, X: Sequence, y: Any, groups: Any = None,
            offset: Offset | None = None) -> NonstationaryLearner:
        """Learn σ from labelled structures; returns the learner.

        Parameters
        ----------
        X : sequence of Path (or Tree)
        y : array-like of shape (n,)
            Binary labels (0/1, or booleans).
        groups : array, optional
            Gradient objectives: the document of each structure (the held-out part that
            chooses the number of steps is whole documents).
        offset : callable, optional
            Gradient objectives: ``offset(rows, cols)`` -> the sum of the other views'
            normalised kernels between ``X[rows]`` and ``X[cols]``, added inside the objective.
        """
        self._validate_params()
        base, normalize, fixed = self._base_kernel()
        if self.objective in OBJECTIVES:
            return self._fit_gradient(base, normalize, fixed, X, y, groups, offset)
        X = base.check_input(X)
        y = binary_labels(y, len(X), "fit")
        n = len(X)
        if n < 2:
            raise ValueError(f"NonstationaryLearner.fit needs at least 2 structures, got {n}")

        t0 = time.perf_counter()
        edge_sets = [structure_edge_labels(x) for x in X]
        counts = Counter(label for s in edge_sets for label in s)
        learn = labels_by_frequency(counts, self.labels, self.top_fraction)
        rng = check_random_state(self.random_state)

        self._start(X, learn, counts, fixed, normalize)
        self.sigma_ = {lab: 1.0 for lab in learn}
        data = FitData.of(base=base, normalize=normalize, fixed=fixed, learned=self.sigma_,
                          X=X, y=y, labels=learn, edge_sets=edge_sets, rng=rng)
        objective = self._objective()
        self._report(objective.counters)

        disable = None if self.progress is None else not self.progress
        bar = tqdm(total=self.n_iter * len(learn) * objective.steps_per_label,
                   desc=objective.desc, unit=objective.unit, disable=disable)
        with self._fitting(bar, learn, t0, objective):
            if objective.set_up(data):
                for it in range(self.n_iter):
                    objective.start_pass(it)
                    for lab in learn:
                        bar.set_postfix_str(f"{lab} (pass {it + 1})")
                        decision = objective.learn_label(it, lab)
                        self.sigma_[lab] = decision.chosen
                        self.losses_[lab] = decision.summary()
                        self.log_.extend(decision.log_entries())
                        bar.update(objective.steps_per_label)
        return self

    def _fit_gradient(self, base: Kernel, normalize: bool, fixed: dict[str, float], X: Any,
                      y: Any, groups: Any, offset: Offset | None) -> NonstationaryLearner:
        """:meth:`fit` with a :class:`GradientObjective`."""
        if not callable(getattr(base, "weighted_gradient", None)):
            raise TypeError(f"NonstationaryLearner(objective={self.objective!r}) learns σ of "
                            f"a kernel with a σ gradient (the path kernel), not of "
                            f"{type(base).__name__}")
        t0 = time.perf_counter()
        X = list(X)
        for i, x in enumerate(X):
            if not isinstance(x, Path):
                raise TypeError(f"NonstationaryLearner.fit: item {i} is a {type(x).__name__}, "
                                "not a Path")
        y = binary_labels(y, len(X), "fit")
        rng = check_random_state(self.random_state)
        strategy = GradientObjective(**self._settings("objective", *PARAMETERS, "n_jobs"),
                                     progress=bool(self.progress))
        counts = Counter(label for x in X for label in structure_edge_labels(x))
        labels = strategy.labels(counts, self.labels)
        self.sigma_, self.lam_, self.best_step_, self.history_ = strategy.fit(
            base, fixed, labels, X, y, groups, offset, rng)
        self._start(X, labels, counts, fixed, normalize)
        self.ignored_labels_ = [lab for lab in labels if self.sigma_[lab] == 0.0]
        self._report(FitReport())
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _start(self, X: Sequence, labels: list[str], counts: Counter, fixed: dict[str, float],
               normalize: bool) -> None:
        """The fitted attributes every objective sets the same way."""
        self.X_fit_, self.labels_, self.n_train_, self.fixed_sigma_ = X, list(labels), len(X), fixed
        self.label_counts_ = {lab: int(counts[lab]) for lab in labels}
        self.normalize_, self.interrupted_, self.ignored_labels_ = normalize, False, []
        self.losses_: dict[str, dict[str, Any]] = {}
        self.log_: list[dict[str, Any]] = []

    def _objective(self) -> Objective:
        """The strategy of ``objective=``, given its own parameters only."""
        if self.objective == "knn-ap":
            return KnnAPObjective(**self._settings(
                "objective_sample", "n_neighbors", "min_gain", "n_iter", "max_evaluations",
                "n_jobs"))
        # exact_trials is looked up here, at each fit: the tests put trials computed from
        # scratch in its place to check that reuse changes nothing
        return Loss1Objective(**self._settings(
            "alpha", "beta", "k", "n_iter", "sampling", "hashing", "n_bits", "exact_below",
            "chain_bound", "max_evaluations", "n_jobs"), exact_trials=exact_trials)

    def _settings(self, *names: str) -> dict[str, Any]:
        return {name: getattr(self, name) for name in names}

    def _report(self, report: FitReport) -> None:
        """The objective's counters as fitted attributes (``budget_``, ``n_evaluations_``...)."""
        for f in fields(report):
            setattr(self, f"{f.name}_", getattr(report, f.name))

    @contextlib.contextmanager
    def _fitting(self, bar, learn, t0, objective):
        """Around a fit's passes: Ctrl-C keeps the σ learned so far (``interrupted_``); the
        bar and the fitted counters are settled however it ends."""
        try:
            yield
        except KeyboardInterrupt:
            self.interrupted_ = True
            raise
        finally:
            bar.close()
            self._report(objective.counters)
            self.ignored_labels_ = [lab for lab in learn if self.sigma_[lab] == 0.0]
            self.fit_seconds_ = time.perf_counter() - t0

    _FITTED = (
        "sigma_", "ignored_labels_", "labels_", "label_counts_", "losses_", "log_",
        "n_evaluations_", "n_evaluations_graph_", "n_evaluations_reused_", "subset_sizes_",
        "n_train_", "fit_seconds_",
        "fixed_sigma_", "normalize_", "interrupted_", "budget_", "n_trimmed_",
    )

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails: a fitted attribute before fit
        if name in NonstationaryLearner._FITTED:
            raise NotFittedError(f"this NonstationaryLearner is not fitted yet ({name} is set "
                                 "by fit); call fit(X, y) or NonstationaryLearner.load(path) first")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _check_fitted(self) -> None:
        if "sigma_" not in self.__dict__:
            raise NotFittedError("this NonstationaryLearner is not fitted yet; call fit(X, y) "
                                 "or NonstationaryLearner.load(path) first")

    @property
    def kernel_sigma_(self) -> dict[str, float]:
        """The full ``sigma`` to give the kernel: fixed weights and learned ones."""
        self._check_fitted()
        return {**self.fixed_sigma_, **self.sigma_}

    def get_kernel(self, normalize: bool | None = None) -> Kernel:
        """The kernel with the learned σ (normalised when the learner was).

        Examples
        --------
        >>> learner = NonstationaryLearner.load("model.json")  # doctest: +SKIP
        >>> K = learner.get_kernel().gram(paths)                # doctest: +SKIP
        """
        self._check_fitted()
        base, norm, _ = self._base_kernel()
        kern = with_sigma(base, self.kernel_sigma_)
        if "lam_" in self.__dict__:
            kern.set_params(lam=self.lam_)
        norm = norm if normalize is None else normalize
        return Normalized(kern) if norm else kern

    def kernel_params_(self) -> dict[str, Any]:
        """``kernel_params`` with the learned ``sigma`` (for ``kernel(name, **params)``)."""
        self._check_fitted()
        lam = {"lam": self.lam_} if "lam_" in self.__dict__ else {}
        return {**(self.kernel_params or {}), **lam, "sigma": self.kernel_sigma_}

    def transform(self, X: Sequence) -> np.ndarray:
        """Gram matrix of ``X`` against the training structures under the learned kernel,
        shape ``(len(X), n_train_)``.

        The kernel is :meth:`get_kernel`'s, so an estimator with ``kernel="precomputed"``
        (e.g. ``SVC``) can follow the learner in a ``Pipeline``; a non-finite value is an error
        naming the pair.
        """
        self._check_fitted()
        if "X_fit_" not in self.__dict__:
            raise NotFittedError(
                "this NonstationaryLearner was read from a file, which keeps σ but not the "
                "training structures that transform needs: fit it, or compute Grams with "
                "get_kernel()")
        return gram(self.get_kernel(normalize=False), X, self.X_fit_, normalize=self.normalize_,
                    n_jobs=self.n_jobs, progress=self.progress)

    def fit_transform(self, X: Sequence, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Fit, then the symmetric Gram of the training structures (each pair computed once)."""
        if y is None:
            raise ValueError("NonstationaryLearner.fit_transform needs the labels y")
        self.fit(X, y, **fit_params)
        return gram(self.get_kernel(normalize=False), self.X_fit_, normalize=self.normalize_,
                    n_jobs=self.n_jobs, progress=self.progress)

    def score(self, X: Sequence, y: Any) -> float:
        """Leave-one-out average precision of the k-NN vote on ``(X, y)`` under the learned kernel.

        Each structure of ``X`` is scored by the similarity-weighted vote of its ``n_neighbors``
        most similar others, ranked against ``y`` (0/1 or booleans) by
        :func:`sklearn.metrics.average_precision_score`: what ``objective="knn-ap"`` maximises,
        in [0, 1] (0 when ``y`` has no positive); higher is better, for ``GridSearchCV``.
        """
        self._check_fitted()
        X = self._base_kernel()[0].check_input(X)
        y = binary_labels(y, len(X), "score")
        if not y.any():
            return 0.0
        R = gram(self.get_kernel(normalize=False), X, n_jobs=self.n_jobs, progress=self.progress)
        scores = loo_knn_scores(R, y, int(self.n_neighbors),
                                np.diag(R).copy() if self.normalize_ else None, n_jobs=self.n_jobs)
        return float(average_precision_score(y, scores))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # σ weighs the edge labels of paths or trees: never 2-D float arrays, so
        # scikit-learn's checks skip what needs them
        tags.input_tags.two_d_array = False
        tags.target_tags.required = True
        return tags

    def to_json(self) -> dict[str, Any]:
        """The fitted model as a JSON-ready dict (parameters, σ, losses, counters).

        Examples
        --------
        >>> from structkernels import NonstationaryLearner, Path
        >>> paths = [Path([(None, "bind"), ("ARG0", a)]) for a in ("kinase", "gene", "kinase")]
        >>> learner = NonstationaryLearner(hashing=None, top_fraction=1.0, alpha=1, beta=4,
        ...                                random_state=0, progress=False).fit(paths, [1, 0, 1])
        >>> doc = learner.to_json()
        >>> doc["format"], doc["kernel"], doc["sigma"]
        ('structkernels.nonstationary-sigma', 'path', {'ARG0': 1.0})
        """
        self._check_fitted()
        return learner_to_document(self)

    @classmethod
    def from_json(cls, obj: dict[str, Any] | str) -> NonstationaryLearner:
        """Inverse of :meth:`to_json` (also accepts a JSON string).

        Its ``"kernel"`` resolves through the kernel registry, never by import; σ must be
        finite and >= 0; anything wrong is a ``ValueError`` naming the field.

        Examples
        --------
        >>> doc = {"format": "structkernels.nonstationary-sigma", "version": 1, "kernel": "path",
        ...        "sigma": {"mod": 0.0}, "labels": ["mod"], "ignored_labels": ["mod"],
        ...        "n_train": 4, "n_evaluations": 10}
        >>> NonstationaryLearner.from_json(doc).kernel_sigma_
        {'mod': 0.0}
        """
        return learner_from_json(cls, obj)

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model to ``path`` as JSON, atomically.

        The kernel is saved by its registered name: an unregistered kernel class is refused
        (``structkernels.register(name, cls)`` or an entry point registers it), as is a NaN or
        infinity anywhere (named).
        """
        doc = self.to_json()
        try:
            text = dumps_finite(doc, what=f"{os.fspath(path)}: the σ model", indent=1)
        except TypeError as exc:
            raise TypeError(f"{os.fspath(path)}: the σ model is not JSON data: {exc}") from None
        with atomic_open(path) as fh:
            fh.write(text + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_bytes: int | None = None) -> NonstationaryLearner:
        """Read a model written by :meth:`save` or by ``structkernels train-npk``.

        Reading never runs code: the kernel resolves through the registry, ``max_bytes``
        bounds the size (default ``structkernels.npk.model.MAX_MODEL_BYTES``) and every
        error is one :class:`~structkernels.npk.model.ModelFormatError` line naming the file.
        """
        name = os.fspath(path)
        doc = read_document(path, max_bytes)
        if isinstance(doc, dict) and doc.get("format") == MODEL_FORMAT:
            doc = validate_model(doc, path)["learner"]
        elif isinstance(doc, dict) and doc.get("format") == SIGMA_FORMAT:
            if "kernel" in doc:
                doc["kernel"] = check_kernel_name(name, "", doc["kernel"])
            check_file_sigma(name, "sigma", doc.get("sigma"))
            check_file_sigma(name, "fixed_sigma", doc.get("fixed_sigma"))
        return learner_from_document(cls, doc, name)
