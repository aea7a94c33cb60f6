"""Unigram precision and recall of a re-writing (the PR features of Wan et al., 2006).

Clipped unigram matches ``m``: precision ``m / |t|``, recall ``m / |s|``;
``Normalized(kb) + kernel("pr")`` is "kb-SRK + PR" of Bu, Li & Zhu (ACL 2012, Sec. 6).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.kernels.base import Kernel
from structkernels.kernels.srk.common import Rewriting, check_rewritings

__all__ = ["pr_features", "PRKernel"]


def pr_features(X: Any) -> np.ndarray:
    """``[[precision, recall], ...]`` of a list of token re-writings (0 for an empty side).

    Examples
    --------
    >>> pr_features([(("a", "b", "b", "c"), ("b", "a", "d"))]).round(4).tolist()
    [[0.6667, 0.5]]
    """
    X = check_rewritings(X, "pr_features")
    out = np.zeros((len(X), 2))
    for i, (s, t) in enumerate(X):
        cs, ct = Counter(s), Counter(t)
        m = sum(min(c, ct[w]) for w, c in cs.items())
        out[i, 0] = m / len(t) if t else 0.0
        out[i, 1] = m / len(s) if s else 0.0
    return out


class PRKernel(Kernel):
    """Kernel on the unigram precision/recall features of re-writings.

    Parameters
    ----------
    gamma : float, optional
        None: the linear kernel ``f(x) . f(y)``; else ``exp(-gamma ||f(x) - f(y)||^2)``.

    Examples
    --------
    >>> k = PRKernel()
    >>> k.value((("a", "b"), ("a", "c")), (("a",), ("a",)))
    1.0
    """

    name = "pr"

    def __init__(self, gamma: float | None = None):
        self.gamma = gamma

    def validate_params(self) -> None:
        g = self.gamma
        if g is not None and (isinstance(g, bool) or not isinstance(g, (int, float)) or not g > 0):
            raise ValueError(f"PRKernel.gamma must be None or a float > 0, got {self.gamma!r}")

    def check_input(self, X: Any) -> list[Rewriting]:
        return check_rewritings(X, "PRKernel")

    def gram_block(self, X: Sequence[Rewriting], Y: Sequence[Rewriting]) -> np.ndarray:
        fx, fy = pr_features(X), pr_features(Y)
        if self.gamma is None:
            return fx @ fy.T
        d2 = ((fx[:, None, :] - fy[None, :, :]) ** 2).sum(-1)
        return np.exp(-float(self.gamma) * d2)

    def diag_block(self, X: Sequence[Rewriting]) -> np.ndarray:
        if self.gamma is not None:
            return np.ones(len(X))
        f = pr_features(X)
        return (f * f).sum(1)
