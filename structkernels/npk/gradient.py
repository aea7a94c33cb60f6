"""The gradient strategy of :class:`~structkernels.NonstationaryLearner`: real σ (and λ).

``objective="svm"`` and ``"alignment"`` treat the weights of Eq. 1 of Garg et al. (2018) as
real numbers: σ ∈ [0, 1] per edge label (and λ) follow the exact gradient
(``PathKernel.weighted_gradient``) of an objective of a sample's normalised Gram matrix:

- ``"svm"``: the SVM's dual objective at its optimum, minimised as multiple-kernel learning
  does (Rakotomamonjy et al. 2008, SimpleMKL): ``∂J/∂K_ij = -½ α_i y_i α_j y_j`` (Danskin);
- ``"alignment"``: centred kernel-target alignment (Cortes, Mohri & Rostamizadeh 2012, Eq. 2).

Projected Adam steps (Kingma & Ba 2015); the step kept is the one with the best average
precision on held-out training documents, step 0 being σ ≡ 1 and λ as given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from structkernels.npk._objectives import OBJECTIVES, SIGMA_OBJECTIVES, Offset
from structkernels.npk.learner import NonstationaryLearner
from structkernels.structures import Path

__all__ = ["DEFAULT_SIGMA_OBJECTIVE", "OBJECTIVES", "SIGMA_OBJECTIVES", "learn_path_weights"]

#: The σ objective of the relation models (``structkernels evaluate``, ``train-extractor``):
#: the SVM's own (``benchmarks/results/sigma_objectives.json`` compares them).
DEFAULT_SIGMA_OBJECTIVE = "svm"


def learn_path_weights(kernel_params: dict[str, Any], X: Sequence[Path], y: Any, *,
                       objective: str = DEFAULT_SIGMA_OBJECTIVE, groups: Any = None,
                       offset: Offset | None = None, prior: dict[str, Any] | None = None,
                       n_jobs: int | None = None, random_state: Any = None,
                       progress: bool = False, **params: Any) -> dict[str, Any]:
    """The path kernel parameters a σ objective learns on ``X``: ``{"sigma": {...}}`` (the
    labels whose weight is not 1), and ``"lam"`` from the gradient objectives.

    :class:`NonstationaryLearner` with ``objective`` and ``params``; ``groups``, ``offset``
    and ``prior`` are for the gradient objectives.  ``prior``: this function's result on
    another corpus, the starting point and step 0, refined only when this corpus's held-out
    documents say so (transfer from a large corpus to a small one).

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
    start, gradient = dict(kernel_params), objective in OBJECTIVES
    if gradient and prior:
        start["sigma"] = {**(start.get("sigma") or {}), **prior.get("sigma", {})}
        if "lam" in prior:
            start["lam"] = prior["lam"]
    learner = NonstationaryLearner("path", start, objective=objective, n_jobs=n_jobs,
                                   random_state=random_state, progress=progress, **params)
    learner.fit(X, y, groups=groups, offset=offset)  # both used by the gradient objectives only
    sigma, extra = ((learner.kernel_sigma_, {"lam": learner.lam_}) if gradient
                    else (learner.sigma_, {}))
    # a model keeps the labels whose weight is not 1
    return {"sigma": {k: float(v) for k, v in sigma.items() if v != 1.0}, **extra}
