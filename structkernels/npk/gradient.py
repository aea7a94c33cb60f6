"""The gradient strategy of :class:`~structkernels.NonstationaryLearner`: real σ (and λ).

Algorithm 1 (``objective="loss1"``, ``"knn-ap"``) keeps or zeroes each edge label by a k-NN
objective.  ``objective="svm"`` and ``"alignment"`` (:class:`GradientObjective`) instead treat
the weights as what they are in Eq. 1 of Garg et al. (2018), real numbers, and the path kernel
as what it is, a polynomial in them: σ ∈ [0, 1] per edge label (and the decay λ) follow the
exact gradient (:meth:`~structkernels.kernels.path.PathKernel.weighted_gradient`) of a
differentiable objective of the normalised Gram matrix of a sample of training structures,
possibly inside a sum with other views' kernels (``offset``):

- ``"svm"``: the SVM's own dual objective at its optimum, minimised as multiple-kernel
  learning does (Rakotomamonjy et al. 2008, SimpleMKL; Chapelle et al. 2002): alternate an
  SVM fit and a σ step, ``∂J/∂K_ij = -½ α_i y_i α_j y_j`` (Danskin's theorem);
- ``"alignment"``: centred kernel-target alignment (Cortes, Mohri & Rostamizadeh 2012,
  Eq. 2), maximised.

The number of steps is chosen on held-out training documents (a grouped split of the training
data, never the test fold): after every step the SVM trained on the sample scores the held-out
pairs, and the σ of the step with the best average precision is kept.  Step 0 is σ ≡ 1 and λ
as given, so when no step helps on the held-out documents the learned kernel is the stationary
one.  Adam steps (Kingma & Ba 2015) are projected onto ``σ ∈ [0, 1]``, ``λ ∈ [0.05, 1]``.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.metrics import average_precision_score
from sklearn.model_selection import GroupShuffleSplit, StratifiedShuffleSplit
from sklearn.svm import SVC

from structkernels.kernels.path import PathKernel
from structkernels.structures import Path
from structkernels.utils import Interval, effective_n_jobs, tqdm

__all__ = ["DEFAULT_SIGMA_OBJECTIVE", "GradientObjective", "OBJECTIVES", "SIGMA_OBJECTIVES"]

#: The gradient objectives (:class:`GradientObjective`).
OBJECTIVES = ("svm", "alignment")
#: Every σ objective of :class:`~structkernels.NonstationaryLearner`: Algorithm 1's binary σ
#: (``"loss1"``, ``"knn-ap"``) and the gradient ones (:data:`OBJECTIVES`).
SIGMA_OBJECTIVES = ("loss1", "knn-ap", *OBJECTIVES)
#: The σ objective of the relation models (``structkernels evaluate``, ``train-extractor``):
#: the SVM's own objective, the one never more than 1 F1 below σ ≡ 1 on the four PPI corpora
#: (``benchmarks/results/sigma_objectives.json``).
DEFAULT_SIGMA_OBJECTIVE = "svm"
#: The smallest λ a step may reach.
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
class GradientResult:
    """What a gradient fit learns: σ of each label, λ, the step kept and every step's record
    (``step``, ``objective`` (maximised), ``val_ap`` (held-out average precision), ``lam``,
    ``sigma``, ``seconds``)."""

    sigma: dict[str, float]
    lam: float
    best_step: int
    history: list[dict[str, Any]]


@dataclass
class GradientObjective:
    """σ ∈ [0, 1] per edge label (and λ) of the path kernel by exact projected Adam steps.

    The settings are :class:`~structkernels.NonstationaryLearner`'s of the same names.
    """

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
            rng: np.random.RandomState) -> GradientResult:
        """Learn σ of ``labels`` (and λ) from ``base``'s λ and the σ ``start``, on ``X``, ``y``.

        ``groups``: the document of each structure (the held-out part that chooses the number
        of steps is whole documents).  ``offset(rows, cols)``: the sum of the other views'
        normalised kernels between ``X[rows]`` and ``X[cols]``: σ is then learned for the sum
        (the model that uses it), not for the path view alone.
        """
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
            history.append({"step": step, "objective": round(value, 6), "val_ap": round(ap, 6),
                            "lam": round(lam, 6),
                            "sigma": dict(zip(labels, np.round(theta, 6).tolist(), strict=True))})
            if ap > best[0] + 1e-9:
                best = (ap, step, theta.copy(), lam)
            if step == self.max_steps:
                history[-1]["seconds"] = round(time.perf_counter() - t0, 3)
                break
            g = self._gradient(kern, XS, Kn, d, V, labels)
            # Adam ascent, projected on the box
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
        return GradientResult(sigma, float(best[3]), best[1], history)

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
