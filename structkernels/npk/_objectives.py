"""What decides each label's σ in :class:`~structkernels.npk.learner.NonstationaryLearner`: one
strategy per ``objective=``.  Random draws follow the algorithm: the global graph's seed, then
each label's subsets and their trials' seeds (``"loss1"``); the sample (``"knn-ap"``).
"""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone
from sklearn.metrics import average_precision_score
from sklearn.model_selection import GroupShuffleSplit, StratifiedShuffleSplit
from sklearn.svm import SVC

from structkernels.engine.parallel import map_tasks
from structkernels.kernels.base import Kernel, Normalized
from structkernels.kernels.path import PathKernel
from structkernels.neighbors.classifier import stratified_rows
from structkernels.neighbors.graph import knn_graph
from structkernels.npk._trials import trial_cost
from structkernels.npk.loss import TrialResult, subset_losses, with_sigma
from structkernels.npk.sigma_knn import SigmaKNNSearch
from structkernels.structures import Path, take
from structkernels.utils import Interval, effective_n_jobs, tqdm

__all__ = [
    "FitData", "FitReport", "LabelDecision", "Objective", "Loss1Objective",
    "KnnAPObjective", "labels_by_frequency", "neighbourhood_sample",
]


@dataclass(frozen=True)
class LabelDecision:
    """The value chosen for one label in one pass, with the trials that decided it."""

    label: str
    pass_index: int
    loss: tuple[float, float]  # summed over the trials, at σ = 0 and σ = 1
    chosen: float
    trials: tuple[TrialResult, ...]

    def summary(self) -> dict[str, Any]:
        """The learner's ``losses_`` entry: ``{"0": ..., "1": ..., "chosen": ..., "pass": ...}``."""
        return {"0": self.loss[0], "1": self.loss[1], "chosen": self.chosen,
                "pass": self.pass_index}

    def log_entries(self) -> list[dict[str, Any]]:
        """The learner's ``log_`` entries: one per trial and value."""
        return [
            {"pass": self.pass_index, "label": self.label, "trial": j, "value": v,
             "size": t.size, "loss": t.loss[v], "penalty": t.penalty[v], "reward": t.reward[v]}
            for j, t in enumerate(self.trials)
            for v in (0, 1)
        ]


@dataclass
class FitReport:
    """What a fit has spent so far: the learner's counters (``budget_``, ``n_evaluations_``, ...)."""

    budget: int | None = None
    n_evaluations: int = 0
    n_evaluations_graph: int = 0
    n_evaluations_reused: int = 0
    n_trimmed: int = 0
    subset_sizes: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class FitData:
    """What every objective learns from; ``learned`` is the learner's ``sigma_``, updated by
    the learner after each label."""

    base: Kernel
    normalize: bool
    fixed: dict[str, float]
    learned: dict[str, float]
    X: Sequence
    y: np.ndarray
    labels: list[str]
    members: dict[str, np.ndarray]  # label -> indices of the structures that contain it
    has: dict[str, np.ndarray]  # label -> boolean mask of the same
    rng: np.random.RandomState

    @classmethod
    def of(cls, *, base: Kernel, normalize: bool, fixed: dict[str, float],
           learned: dict[str, float], X: Sequence, y: np.ndarray, labels: Sequence[str],
           edge_sets: Sequence[frozenset[str]], rng: np.random.RandomState) -> FitData:
        """The data of a fit; ``edge_sets``: the edge labels of each structure."""
        has = {lab: np.array([lab in s for s in edge_sets], dtype=bool) for lab in labels}
        members = {lab: np.flatnonzero(has[lab]) for lab in labels}
        return cls(base=base, normalize=normalize, fixed=fixed, learned=learned, X=X, y=y,
                   labels=list(labels), members=members, has=has, rng=rng)

    def current_sigma(self) -> dict[str, float]:
        return {**self.fixed, **self.learned}


def labels_by_frequency(counts: Mapping[str, int], labels: Sequence[str] | None,
                        top_fraction: float) -> list[str]:
    """The labels to learn, most frequent first (``counts``: structures with each label):
    ``labels`` (each must occur), or the ``top_fraction`` most frequent ones."""
    if labels is None:
        ranked = sorted(counts, key=lambda lab: (-counts[lab], lab))
        return ranked[: int(np.ceil(top_fraction * len(ranked)))] if ranked else []
    if isinstance(labels, str):
        raise TypeError("NonstationaryLearner.labels must be a list of labels, not a str")
    missing = [lab for lab in labels if lab not in counts]
    if missing:
        raise ValueError(
            f"NonstationaryLearner.labels: {missing} occur in no training structure")
    return sorted(dict.fromkeys(labels), key=lambda lab: (-counts[lab], lab))


@dataclass(kw_only=True)
class Objective:
    """The interface the learner's ``fit`` drives (progress: ``steps_per_label`` per label):
    ``set_up(data)`` (False: nothing to learn, every σ stays 1), then per pass
    ``start_pass(it)`` and ``learn_label(it, label) -> LabelDecision`` for each label."""

    desc: ClassVar[str] = "learning σ"
    unit: ClassVar[str] = "trial"
    steps_per_label: ClassVar[int] = 1
    counters: FitReport = field(default_factory=FitReport, init=False)

    def start_pass(self, it: int) -> None:
        """Before pass ``it`` over the labels."""


def _budget(max_evaluations: int | str | None, n: int) -> int | None:
    """``max_evaluations`` for ``n`` training structures: ``"gram"`` is one Gram matrix."""
    if max_evaluations is None:
        return None
    return n * (n + 1) // 2 if max_evaluations == "gram" else int(max_evaluations)


def neighbourhood_sample(rng: np.random.RandomState, members: np.ndarray, graph: Any,
                         beta: int) -> np.ndarray:
    """Lines 6-10 of Algorithm 1: the indices ``a = r ∪ n ∪ n̄ ∪ nn``, ``r`` the ``beta``
    inducing points drawn among ``members``, ``graph`` the global graph's ``(indices,
    reverse)`` (None: the inducing points alone)."""
    r = members if len(members) <= beta else rng.choice(members, beta, replace=False)
    if graph is None:
        return np.unique(r)
    indices, reverse = graph
    fwd = indices[r].ravel()
    fwd = fwd[fwd >= 0]
    back = [j for i in r for j in reverse[i]]
    nbrs = np.unique(np.concatenate([fwd, np.asarray(back, dtype=np.int64)]).astype(np.int64))
    nn = indices[nbrs, 0] if len(nbrs) else np.empty(0, dtype=np.int64)
    nn = nn[nn >= 0]
    # inducing points first, then their neighbours (the order a budget cut keeps)
    order = np.concatenate([r, nbrs, nn]).astype(np.int64)
    _, first = np.unique(order, return_index=True)
    return order[np.sort(first)]


@dataclass(kw_only=True)
class Loss1Objective(Objective):
    """Loss Function 1 on sampled neighbourhoods: Algorithm 1 of Garg et al. (2018), Sec. 6.2.

    Per pass a global k-NN graph ``G``; per label ``t``, ``α`` trials each draw ``β`` inducing
    points among the structures with ``t`` plus their neighbourhood in ``G`` (none with
    ``sampling="random"``, Table 4b); the losses of the subset's 1-NN graphs at ``σ_t = 0``
    and ``σ_t = 1``, summed over the trials, decide (a tie keeps σ_t = 1).
    """

    alpha: int
    beta: int
    k: int
    n_iter: int
    sampling: str
    hashing: str | None
    n_bits: int | None
    exact_below: int
    chain_bound: bool
    max_evaluations: int | str | None
    n_jobs: int | None
    exact_trials: Callable[..., list[TrialResult]]

    @property
    def steps_per_label(self) -> int:  # type: ignore[override]
        return self.alpha

    @property
    def neighbourhood(self) -> bool:
        return self.sampling != "random"

    def set_up(self, data: FitData) -> bool:
        self.data = data
        if self.max_evaluations == "gram" and self.hashing is None and self.neighbourhood:
            self.counters.budget = None  # an exact global graph alone is one Gram matrix
        else:
            self.counters.budget = _budget(self.max_evaluations, len(data.X))
        self.charged = 0  # evaluations as computed without reuse: what the budget counts
        self.trials_left = self.n_iter * len(data.labels) * self.alpha
        self.graph = None
        return True

    def start_pass(self, it: int) -> None:
        budget = self.counters.budget
        self.graph = None
        if self.neighbourhood and not (budget is not None and self.charged >= budget):
            self.graph = self._global_graph()
            if budget is not None and self.counters.n_evaluations > budget:
                warnings.warn(
                    f"NonstationaryLearner: the global k-NN graph alone took "
                    f"{self.counters.n_evaluations:,} kernel evaluations, over the budget "
                    f"max_evaluations={budget:,}; the trials get none",
                    RuntimeWarning, stacklevel=3)

    def _global_graph(self) -> tuple[np.ndarray, list]:
        d = self.data
        kern = with_sigma(d.base, d.current_sigma())
        if d.normalize:
            kern = Normalized(kern)
        seed = int(d.rng.randint(np.iinfo(np.int32).max))
        hashed = {} if self.hashing is None else {"n_bits": self.n_bits, "random_state": seed}
        graph = knn_graph(d.X, kern, k=self.k, hashing=self.hashing, n_jobs=self.n_jobs,
                          progress=False, **hashed)
        self.counters.n_evaluations += int(graph.n_evaluations)
        self.counters.n_evaluations_graph += int(graph.n_evaluations)
        self.charged += int(graph.n_evaluations)
        return np.asarray(graph.indices), graph.reverse()

    def _fit_budget(self, a: np.ndarray, has: np.ndarray, share: int) -> np.ndarray:
        """The longest prefix of ``a`` whose exact trial cost fits in ``share``."""
        costs = trial_cost(np.arange(1, len(a) + 1), np.cumsum(has[a]))
        fit = int(np.searchsorted(costs, share, side="right"))
        if fit >= len(a):
            return a
        self.counters.n_trimmed += 1
        return a[:fit]

    def _trials(self, lab: str) -> list[TrialResult]:
        """The ``alpha`` trials of label ``lab`` (lines 5-16 of Algorithm 1)."""
        d = self.data
        base, normalize, X, y = d.base, d.normalize, d.X, d.y
        members, has, rng = d.members[lab], d.has[lab], d.rng
        budget = self.counters.budget
        subsets = [neighbourhood_sample(rng, members, self.graph, self.beta)
                   for _ in range(self.alpha)]
        if budget is not None:
            share = max(0, budget - self.charged) // max(1, self.trials_left)
            subsets = [self._fit_budget(a, has, share) for a in subsets]
        self.trials_left -= self.alpha
        subsets = [np.unique(a) for a in subsets]
        seeds = rng.randint(np.iinfo(np.int32).max, size=self.alpha)
        sigma = d.current_sigma()
        exact = [
            j for j, a in enumerate(subsets) if self.hashing is None or len(a) < self.exact_below
        ]
        hashed = [j for j in range(self.alpha) if j not in set(exact)]
        # exact trials: every kernel value of the label computed once, reused across trials
        results = dict(zip(exact, self.exact_trials(
            base, sigma, lab, X, y, [subsets[j] for j in exact], has, normalize, self.n_jobs,
            bool(self.chain_bound)), strict=True))
        # only the sampled structures go to a trial; their hash tables take the default bits
        tasks = [(base, sigma, lab, take(X, subsets[j]), y[subsets[j]], normalize, self.hashing,
                  None, int(seeds[j])) for j in hashed]
        done = map_tasks(_subset_losses_of, tasks, n_jobs=self.n_jobs, backend="processes")
        results.update(zip(hashed, done, strict=True))
        return [results[j] for j in range(self.alpha)]

    def learn_label(self, it: int, label: str) -> LabelDecision:
        trials = self._trials(label)
        summed = {0: 0.0, 1: 0.0}
        for t in trials:
            self.counters.n_evaluations += t.n_evaluations
            self.counters.n_evaluations_reused += t.n_nominal - t.n_evaluations
            self.charged += t.n_nominal
            self.counters.subset_sizes.append(t.size)
            for v in (0, 1):
                summed[v] += t.loss[v]
        # line 17: argmin over v of the summed loss; a tie keeps the baseline σ = 1
        chosen = 0.0 if summed[0] < summed[1] else 1.0
        return LabelDecision(label, it, (summed[0], summed[1]), chosen, tuple(trials))


@dataclass(kw_only=True)
class KnnAPObjective(Objective):
    """The k-NN classifier's leave-one-out average precision on a stratified sample of
    ``objective_sample`` structures (fewer when over the budget): :class:`SigmaKNNSearch`."""

    desc = "learning σ (k-NN AP)"
    unit = "label"

    objective_sample: int
    n_neighbors: int
    min_gain: float
    n_iter: int
    max_evaluations: int | str | None
    n_jobs: int | None

    def _sample_rows(self, d: FitData) -> np.ndarray:
        """The sorted rows of the sample, shrunk to fit the budget."""
        n = len(d.X)
        size = min(int(self.objective_sample), n)
        if self.counters.budget is not None:
            # the sample's Gram S (S + 1) / 2 and, per pass, each label's block, about
            # (p_l S)^2 / 2 for a label in a share p_l of the structures: the largest S that fits
            p = np.array([d.has[lab].mean() for lab in d.labels])
            per_pair = 1.0 + self.n_iter * float((p**2).sum())
            fits = int(np.sqrt(2.0 * self.counters.budget / per_pair))
            if fits < size:
                size = max(2, fits)
                self.counters.n_trimmed = 1
        if size >= n:
            return np.arange(n)
        return stratified_rows(d.y, size, d.rng.randint(np.iinfo(np.int32).max))

    def set_up(self, d: FitData) -> bool:
        self.counters.budget = _budget(self.max_evaluations, len(d.X))
        rows = self._sample_rows(d)
        ys = d.y[rows]
        if not ys.any() or ys.all():
            warnings.warn(
                "NonstationaryLearner(objective='knn-ap'): the sample holds one class only; "
                "every σ stays 1", RuntimeWarning, stacklevel=3)
            return False
        self.counters.subset_sizes = [int(len(rows))]
        self.search = SigmaKNNSearch(
            lambda sig: with_sigma(d.base, sig), take(d.X, rows), ys,
            {lab: d.has[lab][rows] for lab in d.labels}, d.current_sigma(),
            int(self.n_neighbors), d.normalize, self.n_jobs)
        self.counters.n_evaluations = self.search.n_evaluations
        return True

    def learn_label(self, it: int, label: str) -> LabelDecision:
        res = self.search.decide(label, float(self.min_gain))
        self.counters.n_evaluations = self.search.n_evaluations
        # the average precision is the reward, its negation the loss (lower is better)
        trial = TrialResult(res["size"], (-res["0"], -res["1"]), (0.0, 0.0), (res["0"], res["1"]),
                            res["n_evaluations"], res["n_evaluations"])
        return LabelDecision(label, it, trial.loss, res["chosen"], (trial,))


def _subset_losses_of(args: tuple) -> dict:
    """:func:`~structkernels.npk.loss.subset_losses` of one trial's arguments (a worker's task)."""
    return subset_losses(*args)


#: The gradient objectives (:class:`GradientObjective`, :mod:`structkernels.npk.gradient`).
OBJECTIVES = ("svm", "alignment")
#: Every σ objective of :class:`~structkernels.NonstationaryLearner`: Algorithm 1's binary σ
#: (``"loss1"``, ``"knn-ap"``) and the gradient ones (:data:`OBJECTIVES`).
SIGMA_OBJECTIVES = ("loss1", "knn-ap", *OBJECTIVES)
#: The smallest λ a gradient step may reach.
LAM_MIN = 0.05

Offset = Callable[[np.ndarray, np.ndarray], np.ndarray]


#: The learner's parameters of the gradient objectives, with their constraints.
PARAMETERS = {
    "min_count": [Interval(numbers.Integral, 1, None, closed="left")],
    "learn_lam": ["boolean"],
    "n_samples": [Interval(numbers.Integral, 10, None, closed="left")],
    "max_steps": [Interval(numbers.Integral, 0, None, closed="left")],
    "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
    "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
    "C": [Interval(numbers.Real, 0, None, closed="neither")],
}


@dataclass
class GradientObjective:
    """σ ∈ [0, 1] per edge label (and λ) of the path kernel by exact projected Adam steps, with
    :class:`~structkernels.NonstationaryLearner`'s settings of the same names."""


    objective: str
    min_count: int
    learn_lam: bool
    n_samples: int
    max_steps: int
    learning_rate: float
    validation_fraction: float
    C: float
    n_jobs: int | None
    progress: bool

    def labels(self, counts: Mapping[str, int], labels: Sequence[str] | None) -> list[str]:
        """``labels``, or every label on at least ``min_count`` structures, most frequent first."""
        if labels is not None:
            return [str(lab) for lab in labels]
        return sorted((lab for lab, c in counts.items() if c >= self.min_count),
                      key=lambda lab: (-counts[lab], lab))

    def fit(self, base: PathKernel, start: dict[str, float], labels: list[str],
            X: Sequence[Path], y: np.ndarray, groups: Any, offset: Offset | None,
            rng: np.random.RandomState
            ) -> tuple[dict[str, float], float, int, list[dict[str, Any]]]:
        """``(σ, λ, the step kept, every step's record)`` learned for ``labels`` from
        ``base``'s λ and the σ ``start`` on ``X``, ``y`` (``groups``, ``offset``: ``fit``'s)."""
        if len(np.unique(y)) < 2:
            raise ValueError("NonstationaryLearner.fit: y has one class only")
        lam = float(base.lam)
        tr, va = self._split(y, groups, rng)
        S = _stratified(tr, y, self.n_samples, rng)
        H = _stratified(va, y, self.n_samples, rng)
        XS, XH, yS, yH = [X[i] for i in S], [X[i] for i in H], y[S], y[H]
        off_S = np.zeros((len(S), len(S))) if offset is None else np.asarray(offset(S, S))
        off_H = np.zeros((len(H), len(S))) if offset is None else np.asarray(offset(H, S))
        theta = np.array([float(start.get(lab, 1.0)) for lab in labels])
        n_jobs = effective_n_jobs(self.n_jobs)
        adam_m = np.zeros(len(theta) + 1)
        adam_v = np.zeros(len(theta) + 1)
        history: list[dict[str, Any]] = []
        best = (-np.inf, 0, theta.copy(), lam)
        bar = tqdm(range(self.max_steps + 1), desc="σ steps", disable=not self.progress)
        for step in bar:
            t0 = time.perf_counter()
            kern = clone(base).set_params(
                lam=lam, sigma={**start, **dict(zip(labels, theta.tolist(), strict=True))})
            K = kern.gram(XS, n_jobs=n_jobs, progress=False)
            d = np.where(np.diag(K) > 0, np.diag(K), 1.0)
            Kn = K / np.sqrt(np.outer(d, d))
            G = Kn + off_S
            dH = kern.diag(XH)
            dH = np.where(dH > 0, dH, 1.0)
            GH = kern.gram(XH, XS, n_jobs=n_jobs, progress=False) / np.sqrt(np.outer(dH, d))
            GH += off_H
            svc = SVC(kernel="precomputed", C=self.C, class_weight="balanced").fit(G, yS)
            ap = float(average_precision_score(yH, svc.decision_function(GH)))
            value, V = self._objective(G, yS, svc)
            history.append({"step": step, "objective": round(value, 6), "val_ap": round(ap, 6),
                            "lam": round(lam, 6),
                            "sigma": dict(zip(labels, np.round(theta, 6).tolist(), strict=True))})
            if ap > best[0] + 1e-9:
                best = (ap, step, theta.copy(), lam)
            if step < self.max_steps:  # Adam ascent, projected on the box
                g = self._gradient(kern, XS, Kn, d, V, labels)
                adam_m = 0.9 * adam_m + 0.1 * g
                adam_v = 0.999 * adam_v + 0.001 * g * g
                mh = adam_m / (1 - 0.9 ** (step + 1))
                vh = adam_v / (1 - 0.999 ** (step + 1))
                move = self.learning_rate * mh / (np.sqrt(vh) + 1e-12)
                theta = np.clip(theta + move[:-1], 0.0, 1.0)
                if self.learn_lam:
                    lam = float(np.clip(lam + move[-1], LAM_MIN, 1.0))
            history[-1]["seconds"] = round(time.perf_counter() - t0, 3)
        sigma = {lab: float(v) for lab, v in zip(labels, best[2], strict=True)}
        return sigma, float(best[3]), best[1], history

    def _split(self, y: np.ndarray, groups: Any, rng: np.random.RandomState):
        seed = rng.randint(2**31 - 1)
        idx = np.arange(len(y))
        if groups is not None:
            groups = np.asarray(groups)
            if len(groups) != len(y):
                raise ValueError(f"NonstationaryLearner.fit: {len(groups)} groups for "
                                 f"{len(y)} structures")
            if len(np.unique(groups)) >= 4:
                cut = GroupShuffleSplit(1, test_size=self.validation_fraction, random_state=seed)
                tr, va = next(cut.split(idx, y, groups))
                if len(np.unique(y[tr])) == 2 and len(np.unique(y[va])) == 2:
                    return tr, va
        cut = StratifiedShuffleSplit(1, test_size=self.validation_fraction, random_state=seed)
        return next(cut.split(idx, y))

    def _objective(self, G: np.ndarray, y: np.ndarray, svc: SVC) -> tuple[float, np.ndarray]:
        """The objective to *maximise* and its gradient in the Gram ``G``."""
        if self.objective == "svm":
            a = np.zeros(len(y))
            a[svc.support_] = svc.dual_coef_[0]
            # the dual's optimum J = Σ|α| - ½ aᵀ G a is minimised: ascend -J
            value = -(np.abs(a).sum() - 0.5 * float(a @ G @ a))
            return value, 0.5 * np.outer(a, a)
        t = np.where(y == 1, 1.0, -1.0)
        t -= t.mean()
        Yc = np.outer(t, t)
        Gc = G - G.mean(0) - G.mean(1)[:, None] + G.mean()
        ng, ny = np.linalg.norm(Gc), np.linalg.norm(Yc)
        A = float((Gc * Yc).sum() / (ng * ny))
        return A, Yc / (ng * ny) - A * Gc / ng**2

    def _gradient(self, kern: PathKernel, XS: Sequence[Path], Kn: np.ndarray, d: np.ndarray,
                  V: np.ndarray, labels: list[str]) -> np.ndarray:
        """``∂J/∂θ`` through the normalisation ``K_ij / sqrt(K_ii K_jj)``."""
        W = V / np.sqrt(np.outer(d, d))
        VK = V * Kn
        w = -0.5 * (VK.sum(1) + VK.sum(0)) / d
        g = kern.weighted_gradient(XS, W, labels, lam=self.learn_lam, n_jobs=self.n_jobs)
        g += kern.weighted_gradient(XS, w, labels, diagonal=True, lam=self.learn_lam,
                                    n_jobs=self.n_jobs)
        return g


def _stratified(idx: np.ndarray, y: np.ndarray, n: int, rng: np.random.RandomState) -> np.ndarray:
    """At most ``n`` of ``idx``, the class shares kept (sorted)."""
    if len(idx) <= n:
        return np.sort(idx)
    take = []
    for c in (0, 1):
        mine = idx[y[idx] == c]
        k = max(1, int(round(n * len(mine) / len(idx))))
        take.append(rng.choice(mine, size=min(k, len(mine)), replace=False))
    return np.sort(np.concatenate(take))
