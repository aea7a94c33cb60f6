"""Real-valued σ (and λ) of the path kernel, learned by gradient for the classifier that uses it.

:class:`~structkernels.NonstationaryLearner` (Garg et al. 2018, Algorithm 1) keeps or zeroes
each edge label by a k-NN objective.  :class:`GradientSigmaLearner` instead treats the weights
as what they are in Eq. 1 of that paper, real numbers, and the kernel as what it is, a
polynomial in them: σ ∈ [0, 1] per edge label (and the decay λ) follow the exact gradient
(:meth:`~structkernels.kernels.path.PathKernel.weighted_gradient`) of a differentiable
objective of the normalised Gram matrix of a sample of training structures, possibly inside
a sum with other views' kernels (``offset``):

- ``objective="svm"``: the SVM's own dual objective at its optimum, minimised as
  multiple-kernel learning does (Rakotomamonjy et al. 2008, SimpleMKL; Chapelle et al. 2002):
  alternate an SVM fit and a σ step, ``∂J/∂K_ij = -½ α_i y_i α_j y_j`` (Danskin's theorem);
- ``objective="alignment"``: centred kernel-target alignment (Cortes, Mohri & Rostamizadeh
  2012, Eq. 2), maximised.

The number of steps is chosen on held-out training documents (a grouped split of the training
data, never the test fold): after every step the SVM trained on the sample scores the held-out
pairs, and the σ of the step with the best average precision is kept.  Step 0 is σ ≡ 1 and λ
as given, so when no step helps on the held-out documents the learned kernel is the stationary
one.  Adam steps (Kingma & Ba 2015) are projected onto ``σ ∈ [0, 1]``, ``λ ∈ [0.05, 1]``.
"""

from __future__ import annotations

import numbers
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.metrics import average_precision_score
from sklearn.model_selection import GroupShuffleSplit, StratifiedShuffleSplit
from sklearn.svm import SVC
from sklearn.utils import check_random_state

from structkernels.kernels.path import PathKernel
from structkernels.npk.learner import NonstationaryLearner
from structkernels.npk.loss import _binary_labels, structure_edge_labels
from structkernels.structures import Path
from structkernels.utils import N_JOBS, Interval, Options, effective_n_jobs, tqdm, validate_params

__all__ = [
    "DEFAULT_SIGMA_OBJECTIVE", "GradientSigmaLearner", "OBJECTIVES", "SIGMA_OBJECTIVES",
    "learn_path_weights",
]

#: The objectives ``objective=`` selects.
OBJECTIVES = ("svm", "alignment")
#: The smallest λ a step may reach.
LAM_MIN = 0.05

Offset = Callable[[np.ndarray, np.ndarray], np.ndarray]


class GradientSigmaLearner(BaseEstimator):
    """Learn σ ∈ [0, 1] per edge label (and λ) of the path kernel by exact gradient steps.

    Parameters
    ----------
    kernel_params : dict, optional
        Parameters of the :class:`~structkernels.kernels.path.PathKernel` (``lam`` is the
        starting λ; a ``sigma`` here is the starting σ of the labels it names).
    labels : list of str, optional
        The edge labels to learn σ for.  Default: every label on at least ``min_count``
        training structures.
    min_count : int, default 5
    objective : {"svm", "alignment"}, default "svm"
        The SVM's dual objective (multiple-kernel learning's alternation) or centred
        kernel-target alignment.
    learn_lam : bool, default True
        Learn λ too.
    n_samples : int, default 800
        Training structures the objective is computed on (stratified sample of the
        training part), and at most as many held-out ones that choose the step.
    max_steps : int, default 30
    learning_rate : float, default 0.05
        Adam's step size.
    validation_fraction : float, default 0.25
        Share of the training documents (``groups``; pairs without ``groups``) held out to
        choose the number of steps.
    C : float, default 1.0
        The SVM's C (``class_weight="balanced"``), in the objective and the step choice.
    random_state : int, RandomState or None, default None
    n_jobs : int, optional
        Threads of the Gram blocks (default: the cores the process may use).
    progress : bool, default False

    Attributes
    ----------
    sigma_ : dict str -> float
        The learned weight of every learned label.
    lam_ : float
    labels_ : list of str
    best_step_ : int
        The step kept (0: σ ≡ 1, the stationary kernel).
    history_ : list of dict
        Per step: ``step``, ``objective`` (maximised), ``val_ap`` (the held-out average
        precision), ``lam``, ``sigma`` (every learned label's), ``seconds``.

    Examples
    --------
    >>> from structkernels import Path
    >>> X = [Path([(None, "P1"), ("good", "w"), ("noise", f"n{i % 3}")]) for i in range(20)]
    >>> X += [Path([(None, "P1"), ("bad", "w"), ("noise", f"n{i % 3}")]) for i in range(20)]
    >>> y = [1] * 20 + [0] * 20
    >>> lr = GradientSigmaLearner(max_steps=5, random_state=0).fit(X, y)
    >>> sorted(lr.sigma_) == ["bad", "good", "noise"]
    True
    """

    _parameter_constraints = {
        "kernel_params": [dict, None],
        "labels": [list, tuple, None],
        "min_count": [Interval(numbers.Integral, 1, None, closed="left")],
        "objective": [Options(list(OBJECTIVES))],
        "learn_lam": ["boolean"],
        "n_samples": [Interval(numbers.Integral, 10, None, closed="left")],
        "max_steps": [Interval(numbers.Integral, 0, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS,
        "progress": ["boolean"],
    }

    def __init__(self, kernel_params: dict[str, Any] | None = None,
                 labels: Sequence[str] | None = None, min_count: int = 5,
                 objective: str = "svm", learn_lam: bool = True, n_samples: int = 800,
                 max_steps: int = 30, learning_rate: float = 0.05,
                 validation_fraction: float = 0.25, C: float = 1.0, random_state: Any = None,
                 n_jobs: int | None = None, progress: bool = False):
        self.kernel_params = kernel_params
        self.labels = labels
        self.min_count = min_count
        self.objective = objective
        self.learn_lam = learn_lam
        self.n_samples = n_samples
        self.max_steps = max_steps
        self.learning_rate = learning_rate
        self.validation_fraction = validation_fraction
        self.C = C
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.progress = progress

    # ------------------------------------------------------------------ fit
    def fit(self, X: Sequence[Path], y: Any, groups: Any = None,
            offset: Offset | None = None) -> GradientSigmaLearner:
        """Learn σ (and λ) on the paths ``X`` with labels ``y`` (0/1).

        Parameters
        ----------
        X : sequence of Path
        y : array of 0/1
        groups : array, optional
            The document of each structure: the held-out part that chooses the number of
            steps is whole documents.
        offset : callable, optional
            ``offset(rows, cols)`` -> the sum of the other views' normalised kernels between
            ``X[rows]`` and ``X[cols]``: σ is then learned for the sum (the model that uses
            it), not for the path view alone.

        Returns
        -------
        self
        """
        validate_params(self, self.get_params(deep=False), self._parameter_constraints)
        X = list(X)
        for i, x in enumerate(X):
            if not isinstance(x, Path):
                raise TypeError(f"GradientSigmaLearner.fit: item {i} is a {type(x).__name__}, "
                                "not a Path")
        y = _binary_labels(y, len(X), "fit")
        if len(np.unique(y)) < 2:
            raise ValueError("GradientSigmaLearner.fit: y has one class only")
        rng = check_random_state(self.random_state)
        params, start, lam = self._start()
        self.labels_ = self._labels(X)
        tr, va = self._split(y, groups, rng)
        S = _stratified(tr, y, self.n_samples, rng)
        H = _stratified(va, y, self.n_samples, rng)
        XS, XH, yS, yH = [X[i] for i in S], [X[i] for i in H], y[S], y[H]
        off_S = np.zeros((len(S), len(S))) if offset is None else np.asarray(offset(S, S))
        off_H = np.zeros((len(H), len(S))) if offset is None else np.asarray(offset(H, S))
        theta = np.array([float(start.get(lab, 1.0)) for lab in self.labels_])
        n_jobs = effective_n_jobs(self.n_jobs)
        adam_m = np.zeros(len(theta) + 1)
        adam_v = np.zeros(len(theta) + 1)
        self.history_: list[dict[str, Any]] = []
        best = (-np.inf, 0, theta.copy(), lam)
        bar = tqdm(range(self.max_steps + 1), desc="σ steps", disable=not self.progress)
        for step in bar:
            t0 = time.perf_counter()
            sigma = {**start, **dict(zip(self.labels_, theta.tolist(), strict=True))}
            kern = PathKernel(**params, lam=lam, sigma=sigma)
            K = kern.gram(XS, n_jobs=n_jobs, progress=False)
            d = np.diag(K).copy()
            if (d <= 0).any():
                d = np.where(d > 0, d, 1.0)
            Kn = K / np.sqrt(np.outer(d, d))
            G = Kn + off_S
            dH = kern.diag(XH)
            dH = np.where(dH > 0, dH, 1.0)
            GH = kern.gram(XH, XS, n_jobs=n_jobs, progress=False) / np.sqrt(np.outer(dH, d))
            GH += off_H
            svc = SVC(kernel="precomputed", C=self.C, class_weight="balanced").fit(G, yS)
            ap = float(average_precision_score(yH, svc.decision_function(GH)))
            value, V = self._objective(G, yS, svc)
            self.history_.append({"step": step, "objective": round(value, 6),
                                  "val_ap": round(ap, 6), "lam": round(lam, 6),
                                  "sigma": dict(zip(self.labels_, np.round(theta, 6).tolist(),
                                                    strict=True))})
            if ap > best[0] + 1e-9:
                best = (ap, step, theta.copy(), lam)
            if step == self.max_steps:
                self.history_[-1]["seconds"] = round(time.perf_counter() - t0, 3)
                break
            g = self._gradient(kern, XS, Kn, d, V)
            # Adam ascent, projected on the box
            adam_m = 0.9 * adam_m + 0.1 * g
            adam_v = 0.999 * adam_v + 0.001 * g * g
            mh = adam_m / (1 - 0.9 ** (step + 1))
            vh = adam_v / (1 - 0.999 ** (step + 1))
            move = self.learning_rate * mh / (np.sqrt(vh) + 1e-12)
            theta = np.clip(theta + move[:-1], 0.0, 1.0)
            if self.learn_lam:
                lam = float(np.clip(lam + move[-1], LAM_MIN, 1.0))
            self.history_[-1]["seconds"] = round(time.perf_counter() - t0, 3)
        self.best_step_ = best[1]
        self.sigma_ = {lab: float(v) for lab, v in zip(self.labels_, best[2], strict=True)}
        self.lam_ = float(best[3])
        return self

    # ------------------------------------------------------------- helpers
    def _labels(self, X: Sequence[Path]) -> list[str]:
        if self.labels is not None:
            return [str(lab) for lab in self.labels]
        counts = Counter(lab for x in X for lab in structure_edge_labels(x))
        return sorted((lab for lab, c in counts.items() if c >= self.min_count),
                      key=lambda lab: (-counts[lab], lab))

    def _split(self, y: np.ndarray, groups: Any, rng: np.random.RandomState):
        seed = rng.randint(2**31 - 1)
        idx = np.arange(len(y))
        if groups is not None:
            groups = np.asarray(groups)
            if len(groups) != len(y):
                raise ValueError(f"GradientSigmaLearner.fit: {len(groups)} groups for "
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
                  V: np.ndarray) -> np.ndarray:
        """``∂J/∂θ`` through the normalisation ``K_ij / sqrt(K_ii K_jj)``."""
        W = V / np.sqrt(np.outer(d, d))
        VK = V * Kn
        w = -0.5 * (VK.sum(1) + VK.sum(0)) / d
        labels = self.labels_
        g = kern.weighted_gradient(XS, W, labels, lam=self.learn_lam, n_jobs=self.n_jobs)
        g += kern.weighted_gradient(XS, w, labels, diagonal=True, lam=self.learn_lam,
                                    n_jobs=self.n_jobs)
        return g

    def kernel(self) -> PathKernel:
        """The path kernel with the learned σ and λ.

        Returns
        -------
        PathKernel
        """
        if not hasattr(self, "sigma_"):
            raise NotFittedError("GradientSigmaLearner is not fitted: call fit first")
        params, start, _ = self._start()
        return PathKernel(**params, lam=self.lam_, sigma={**start, **self.sigma_})

    def _start(self) -> tuple[dict[str, Any], dict[str, float], float]:
        """``(other parameters, starting σ, starting λ)`` of ``kernel_params``."""
        params = dict(self.kernel_params or {})
        sigma = dict(params.pop("sigma", None) or {})
        return params, sigma, float(params.pop("lam", PathKernel().lam))


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



#: Every σ objective: Algorithm 1's binary learner (:class:`~structkernels.NonstationaryLearner`:
#: ``"loss1"``, ``"knn-ap"``) and the gradient learner (:data:`OBJECTIVES`).
SIGMA_OBJECTIVES = ("loss1", "knn-ap", *OBJECTIVES)
#: The σ objective of the relation models (``structkernels evaluate``, ``train-extractor``):
#: the SVM's own objective, the one never more than 1 F1 below σ ≡ 1 on the four PPI corpora
#: (``benchmarks/results/sigma_objectives.json``).
DEFAULT_SIGMA_OBJECTIVE = "svm"


def learn_path_weights(kernel_params: dict[str, Any], X: Sequence[Path], y: Any, *,
                       objective: str = DEFAULT_SIGMA_OBJECTIVE, groups: Any = None,
                       offset: Offset | None = None, prior: dict[str, Any] | None = None,
                       n_jobs: int | None = None,
                       random_state: Any = None, progress: bool = False,
                       **params: Any) -> dict[str, Any]:
    """The path kernel parameters a σ objective learns on ``X``: ``{"sigma": {...}}`` (the
    labels whose weight is not 1), and ``"lam"`` from the gradient learner.

    ``objective`` selects the learner: ``"loss1"`` and ``"knn-ap"`` are Algorithm 1's binary
    σ (:class:`~structkernels.NonstationaryLearner`, which takes ``params``; ``groups``,
    ``offset`` and ``prior`` are not used), ``"svm"`` and ``"alignment"`` the gradient learner
    (:class:`GradientSigmaLearner`, likewise).  ``prior``: what was learned elsewhere (this
    function's result on another corpus), the gradient learner's starting point and step 0,
    so that the steps on this corpus refine it only when its held-out documents say so
    (transfer from a large corpus to a small one).

    Examples
    --------
    >>> from structkernels import Path
    >>> X = [Path([(None, "P1"), ("good" if i % 2 else "bad", "w")]) for i in range(40)]
    >>> learned = learn_path_weights({"lam": 0.8}, X, [i % 2 for i in range(40)],
    ...                              objective="alignment", max_steps=3, random_state=0)
    >>> sorted(learned)
    ['lam', 'sigma']
    """
    if objective not in SIGMA_OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(SIGMA_OBJECTIVES)}, "
                         f"got {objective!r}")
    if objective in OBJECTIVES:
        start = dict(kernel_params)
        if prior:
            start["sigma"] = {**(start.get("sigma") or {}), **prior.get("sigma", {})}
            if "lam" in prior:
                start["lam"] = prior["lam"]
        lr = GradientSigmaLearner(start, objective=objective, n_jobs=n_jobs,
                                  random_state=random_state, progress=progress, **params)
        lr.fit(X, y, groups=groups, offset=offset)
        sigma, extra = lr.kernel().sigma or {}, {"lam": lr.lam_}
    else:
        learner = NonstationaryLearner("path", dict(kernel_params), objective=objective,
                                       n_jobs=n_jobs, random_state=random_state,
                                       progress=progress, **params)
        learner.fit(X, y)
        sigma, extra = learner.sigma_, {}
    # a model keeps the labels whose weight is not 1
    return {"sigma": {k: float(v) for k, v in sigma.items() if v != 1.0}, **extra}
