"""Unigram precision and recall of a re-writing (the PR features of Wan et al., 2006).

Clipped unigram matches ``m``: precision ``m / |t|``, recall ``m / |s|``;
``Normalized(kb) + kernel("pr")`` is "kb-SRK + PR" of Bu, Li & Zhu (ACL 2012, Sec. 6).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.kernels.srk.common import FeatureKernel, Rewriting, check_rewritings

__all__ = ["overlap_features", "pr_features", "PRKernel"]


def _ngram_precision_recall(s: Sequence[str], t: Sequence[str], n: int) -> tuple[float, float]:
    """Clipped ``n``-gram matches over the target's and over the source's n-grams (0 when a
    side has none)."""
    cs = Counter(tuple(s[i:i + n]) for i in range(len(s) - n + 1))
    ct = Counter(tuple(t[i:i + n]) for i in range(len(t) - n + 1))
    m = sum((cs & ct).values())
    ns, nt = max(len(s) - n + 1, 0), max(len(t) - n + 1, 0)
    return (m / nt if nt else 0.0), (m / ns if ns else 0.0)


def overlap_features(X: Any, ngram_max: int = 3) -> np.ndarray:
    """Fine-grained overlap features of re-writings (Wan et al., 2006), one row per pair.

    For ``n = 1..ngram_max``: the clipped n-gram precision, recall and their harmonic
    mean; then the length difference ``|s| - |t|``, its absolute value and the length
    ratio ``min / max``.  Ji & Eisenstein (EMNLP 2013, Sec. 5) add such features, on
    words and on stems, to the TF-KLD features; call it on each token form and stack.

    Examples
    --------
    >>> overlap_features([(("a", "b", "c"), ("a", "b", "d", "e"))], 2).round(3).tolist()
    [[0.5, 0.667, 0.571, 0.333, 0.5, 0.4, -1.0, 1.0, 0.75]]
    """
    X = check_rewritings(X, "overlap_features")
    if not (isinstance(ngram_max, int) and ngram_max >= 1):
        raise ValueError(f"overlap_features: ngram_max must be an int >= 1, got {ngram_max!r}")
    out = np.zeros((len(X), 3 * ngram_max + 3))
    for i, (s, t) in enumerate(X):
        for n in range(1, ngram_max + 1):
            p, r = _ngram_precision_recall(s, t, n)
            out[i, 3 * n - 3:3 * n] = p, r, (2 * p * r / (p + r) if p + r else 0.0)
        d = len(s) - len(t)
        out[i, -3:] = d, abs(d), min(len(s), len(t)) / max(len(s), len(t), 1)
    return out


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
        out[i] = _ngram_precision_recall(s, t, 1)
    return out


class PRKernel(FeatureKernel):
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

    def features(self, X: Sequence[Rewriting]) -> np.ndarray:
        return pr_features(X)
