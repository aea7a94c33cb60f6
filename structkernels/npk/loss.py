"""Loss Function 1 of Garg et al. (2018, Sec. 6.1) and its value on one sampled subset.

``L = Σ_i K(S_i, S_1nn(i); σ) I(y_i ≠ y_1nn(i)) - Σ_i K(S_i, S_1nn(i); σ) I(y_i = y_1nn(i) = 1)``
on the 1-NN graph of a subset, for ``σ_t = 0`` and ``σ_t = 1`` (one trial of Algorithm 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import clone

from structkernels.engine.checks import normalization_scales
from structkernels.engine.gram import gram
from structkernels.kernels.base import Kernel, Normalized
from structkernels.neighbors.graph import knn_graph
from structkernels.structures import Path, Tree

__all__ = ["loss_function_1", "structure_edge_labels"]


# --------------------------------------------------------------------- helpers
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
        f"got {type(x).__name__}"
    )


def binary_labels(y: Any, n: int, method: str) -> np.ndarray:
    """``y`` as 0/1 int64, one label per structure; anything else raises naming ``method``."""
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n:
        raise ValueError(
            f"NonstationaryLearner.{method}: y must be 1-D with one label per structure; got "
            f"{n} structures and y of shape {y.shape}"
        )
    if y.dtype == bool:
        y = y.astype(np.int64)
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
    loss : float
        ``penalty - reward``.
    penalty : float
        ``Σ K(S_i, S_1nn(i)) I(y_i ≠ y_1nn(i))``.
    reward : float
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
    """Index and similarity of each row's most similar other column (self excluded).

    Ties go to the lowest index, so the result does not depend on anything but the matrix.
    """
    S = np.array(S, dtype=np.float64, copy=True)
    np.fill_diagonal(S, -np.inf)
    nn = np.argmax(S, axis=1)
    return nn, S[np.arange(len(S)), nn]


def with_sigma(base: Kernel, sigma: dict[str, float]) -> Kernel:
    """A copy of ``base`` whose ``sigma`` parameter is ``sigma``."""
    out = clone(base)
    out.set_params(sigma=dict(sigma))
    return out


# ------------------------------------------------------------------ one trial
def subset_losses(base: Kernel, sigma: dict[str, float], label: str, X: Sequence, y: np.ndarray,
                  subset: np.ndarray, has_label: np.ndarray, normalize: bool, hashing: str | None,
                  n_bits: int | None, exact_below: int, seed: int) -> dict[str, Any]:
    """Loss of the 1-NN graph on ``X[subset]`` for ``σ_label = 0`` and ``σ_label = 1``.

    Exact subsets compute the Gram matrix once for ``σ_label = 1`` and
    recompute, for ``σ_label = 0``, only the block of the structures that
    contain the label: by Eq. (1) no other value depends on ``σ_label``.
    """
    Xa = [X[i] for i in subset]
    ya = y[subset]
    if len(subset) < 2:
        return no_trial(len(subset))
    kernels_v = {v: with_sigma(base, {**sigma, label: float(v)}) for v in (0, 1)}
    if hashing is None or len(subset) < exact_below:
        raw1, info = gram(kernels_v[1], Xa, return_info=True)
        n_eval = info.n_evaluations
        raw0 = raw1.copy()
        inside = np.flatnonzero(has_label[subset])
        if len(inside):
            block, info = gram(kernels_v[0], [Xa[i] for i in inside], return_info=True)
            n_eval += info.n_evaluations
            raw0[np.ix_(inside, inside)] = block
        return trial_result(len(subset), raw0, raw1, ya, normalize, n_eval)
    out = no_trial(len(subset))
    for v in (0, 1):
        kv = Normalized(kernels_v[v]) if normalize else kernels_v[v]
        g = knn_graph(
            Xa, kv, k=1, hashing=hashing, n_bits=n_bits, n_jobs=1, random_state=seed,
            progress=False,
        )
        out["n_evaluations"] += int(g.n_evaluations)
        nn = np.asarray(g.indices)[:, 0]
        s = np.asarray(g.similarities, dtype=np.float64)[:, 0]
        found = nn >= 0
        loss, pen, rew = loss_function_1(s[found], ya[found], ya[nn[found]])
        out["loss"][v], out["penalty"][v], out["reward"][v] = loss, pen, rew
    return out


def no_trial(size: int) -> dict[str, Any]:
    """The record of a trial on ``size`` structures, every loss 0 and nothing evaluated."""
    zeros = {0: 0.0, 1: 0.0}
    return {"size": int(size), "loss": dict(zeros), "penalty": dict(zeros),
            "reward": dict(zeros), "n_evaluations": 0}


def trial_result(size: int, raw0: np.ndarray, raw1: np.ndarray, ya: np.ndarray,
                 normalize: bool, n_eval: int) -> dict[str, Any]:
    """The record of an exact trial from its raw σ_t = 0 and σ_t = 1 subset Gram matrices."""
    out = no_trial(size)
    for v, raw in ((0, raw0), (1, raw1)):
        out["loss"][v], out["penalty"][v], out["reward"][v] = losses_of(raw, ya, normalize)
    out["n_evaluations"] = int(n_eval)
    return out


def losses_of(raw: np.ndarray, ya: np.ndarray, normalize: bool) -> tuple[float, float, float]:
    """Loss Function 1 of the exact 1-NN graph of a raw (unnormalised) subset Gram matrix."""
    if normalize:
        # pruned pairs hold -inf (they cannot be a first neighbour) and stay -inf when
        # scaled; normalize_gram would refuse them as overflow
        d = np.diag(raw).copy()
        s, _ = normalization_scales(d, d, warn=False)
        K = raw * (s[:, None] * s[None, :])
    else:
        K = raw
    nn, s = _first_neighbours(K)
    return loss_function_1(s, ya, ya[nn])
