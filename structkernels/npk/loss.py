"""Loss Function 1 of Garg et al. (2018, Sec. 6.1) on the 1-NN graph of a sampled subset, for
``σ_t = 0`` and ``σ_t = 1`` (one trial of Algorithm 1), and the learner's input checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone

from structkernels.engine.checks import normalization_scales
from structkernels.kernels.base import Kernel, Normalized
from structkernels.neighbors.graph import knn_graph
from structkernels.structures import Path, Tree

__all__ = ["loss_function_1", "structure_edge_labels"]


def structure_edge_labels(x: Any) -> frozenset[str]:
    """The distinct edge labels of a :class:`Path` or :class:`Tree` (the root's ``None`` left out).

    Examples
    --------
    >>> from structkernels import Path
    >>> sorted(structure_edge_labels(Path([(None, "bind-01"), ("ARG1", "enzyme")])))
    ['ARG1']
    """
    if isinstance(x, Path):
        return frozenset(e for e in x.edges if e is not None)
    if isinstance(x, Tree):
        return frozenset(e for e, _ in x.preorder() if e is not None)
    raise TypeError(
        f"NonstationaryLearner learns σ over edge labels of Path or Tree structures, "
        f"got {type(x).__name__}")


def binary_labels(y: Any, n: int, method: str) -> np.ndarray:
    """``y`` as 0/1 int64, one label per structure; anything else raises naming ``method``."""
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n:
        raise ValueError(
            f"NonstationaryLearner.{method}: y must be 1-D with one label per structure; got "
            f"{n} structures and y of shape {y.shape}")
    bad = ~np.isin(y, [0, 1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"NonstationaryLearner.{method}: labels must be 0/1; y[{i}] = {y[i]!r}")
    return y.astype(np.int64)


def loss_function_1(
    similarities: np.ndarray, y: np.ndarray, y_nn: np.ndarray
) -> tuple[float, float, float]:
    """Loss Function 1 of Garg et al. (2018), Sec. 6.1, on a 1-NN graph.

    Parameters
    ----------
    similarities : ndarray of shape (n,)
        ``K(S_i, S_1nn(i); σ)`` of each structure and its first neighbour.
    y, y_nn : ndarray of shape (n,)
        Binary labels of the structures and of their first neighbours.

    Returns
    -------
    loss, penalty, reward : float
        ``penalty - reward``, ``Σ K(S_i, S_1nn(i)) I(y_i ≠ y_1nn(i))`` and
        ``Σ K(S_i, S_1nn(i)) I(y_i = y_1nn(i) = 1)``.

    Examples
    --------
    >>> import numpy as np
    >>> loss_function_1(np.array([0.5, 0.9, 0.2]), np.array([1, 1, 0]), np.array([0, 1, 0]))
    (-0.4, 0.5, 0.9)
    """
    s = np.asarray(similarities, dtype=np.float64)
    y = np.asarray(y)
    y_nn = np.asarray(y_nn)
    penalty = float(s[y != y_nn].sum())
    reward = float(s[(y == 1) & (y_nn == 1)].sum())
    return penalty - reward, penalty, reward


def _first_neighbours(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index and similarity of each row's most similar other column (ties: the lowest)."""
    S = np.array(S, dtype=np.float64, copy=True)
    np.fill_diagonal(S, -np.inf)
    nn = np.argmax(S, axis=1)
    return nn, S[np.arange(len(S)), nn]


def with_sigma(base: Kernel, sigma: dict[str, float]) -> Kernel:
    """A copy of ``base`` whose ``sigma`` parameter is ``sigma``."""
    out = clone(base)
    out.set_params(sigma=dict(sigma))
    return out


@dataclass(frozen=True)
class TrialResult:
    """One trial of one label: the losses of σ_t = 0 and σ_t = 1 (indexed by the value) on
    one sampled subset; ``n_nominal``: the evaluations from scratch (what the budget counts)."""

    size: int
    loss: tuple[float, float] = (0.0, 0.0)
    penalty: tuple[float, float] = (0.0, 0.0)
    reward: tuple[float, float] = (0.0, 0.0)
    n_evaluations: int = 0
    n_nominal: int = 0


def trial_result(size: int, losses: Sequence[tuple[float, float, float]], n_eval: int,
                 n_nominal: int | None = None) -> TrialResult:
    """The record of a trial from ``(loss, penalty, reward)`` at σ_t = 0 and σ_t = 1."""
    loss, penalty, reward = zip(*losses, strict=True)
    return TrialResult(int(size), loss, penalty, reward, int(n_eval),
                       int(n_eval) if n_nominal is None else int(n_nominal))


def subset_losses(base: Kernel, sigma: dict[str, float], label: str, X: Sequence, y: np.ndarray,
                  normalize: bool, hashing: str, n_bits: int | None, seed: int) -> TrialResult:
    """Loss of the hashed 1-NN graph on the sampled ``X`` for ``σ_label = 0`` and ``1``
    (exact trials are :func:`~structkernels.npk._trials.exact_trials`')."""
    if len(X) < 2:
        return TrialResult(len(X))
    Xa, losses, n_eval = list(X), [], 0
    for v in (0, 1):
        kv = with_sigma(base, {**sigma, label: float(v)})
        g = knn_graph(Xa, Normalized(kv) if normalize else kv, k=1, hashing=hashing,
                      n_bits=n_bits, n_jobs=1, random_state=seed, progress=False)
        n_eval += int(g.n_evaluations)
        nn = np.asarray(g.indices)[:, 0]
        s = np.asarray(g.similarities, dtype=np.float64)[:, 0]
        found = nn >= 0
        losses.append(loss_function_1(s[found], y[found], y[nn[found]]))
    return trial_result(len(X), losses, n_eval)


def losses_of(raw: np.ndarray, ya: np.ndarray, normalize: bool) -> tuple[float, float, float]:
    """Loss Function 1 of the exact 1-NN graph of a raw (unnormalised) subset Gram matrix."""
    if normalize:
        # pruned pairs hold -inf, which normalize_gram would refuse as overflow
        d = np.diag(raw).copy()
        s, _ = normalization_scales(d, d, warn=False)
        K = raw * (s[:, None] * s[None, :])
    else:
        K = raw
    nn, s = _first_neighbours(K)
    return loss_function_1(s, ya, ya[nn])
