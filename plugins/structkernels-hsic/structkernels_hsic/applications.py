"""Applications of PHSIC (Yokoi et al. 2018, Sec. 6).

- Response selection (Sec. 6.2): each test context gets ``n_choices``
  candidate responses, its own and ``n_choices - 1`` drawn from the other test
  pairs ("shuffling the combinations of context and response"); a scorer ranks
  them; :func:`response_selection_metrics` reports ROC-AUC, MRR and
  Recall@1, 2 as in Table 5 (chance: .50; .29; .10, .20 with 10 choices).
- Data selection (Sec. 6.3): score every pair of a parallel corpus by PHSIC
  learned on the corpus itself and keep the top K (:func:`select_pairs`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_random_state

from structkernels.structures import take

__all__ = [
    "make_choice_questions",
    "score_choices",
    "response_selection_metrics",
    "ResponseSelectionResult",
    "select_pairs",
    "ranking_auc",
]


def make_choice_questions(n_pairs: int, n_choices: int = 10, random_state: Any = None) -> np.ndarray:
    """Candidate indices of shape (n_pairs, n_choices); column 0 is the true response.

    Negatives for pair ``i`` are ``n_choices - 1`` distinct responses of other
    pairs, drawn uniformly with ``random_state``.

    Examples
    --------
    >>> q = make_choice_questions(5, n_choices=3, random_state=0)
    >>> q.shape, q[:, 0].tolist()
    ((5, 3), [0, 1, 2, 3, 4])
    >>> bool(all(i not in row[1:] for i, row in enumerate(q)))
    True
    """
    if n_choices < 2 or n_pairs < n_choices:
        raise ValueError(f"need n_pairs >= n_choices >= 2, got {n_pairs} pairs, {n_choices} choices")
    rng = check_random_state(random_state)
    out = np.empty((n_pairs, n_choices), dtype=np.intp)
    out[:, 0] = np.arange(n_pairs)
    for i in range(n_pairs):
        neg = rng.choice(n_pairs - 1, n_choices - 1, replace=False)
        neg[neg >= i] += 1  # skip i itself
        out[i, 1:] = neg
    return out


def score_choices(
    scorer: Callable[[Any, Any], np.ndarray], X: Any, Y: Any, choices: np.ndarray
) -> np.ndarray:
    """Scores (n_questions, n_choices) of every (context, candidate) pair in one call.

    ``scorer(X_pairs, Y_pairs)`` scores paired inputs (e.g. ``PHSIC.score``);
    ``X``/``Y`` are the encoded contexts and responses of the test pairs.
    """
    q, c = choices.shape
    rows = np.repeat(np.arange(q), c)
    s = np.asarray(scorer(take(X, rows), take(Y, choices.ravel())), dtype=np.float64)
    if s.shape != (q * c,):
        raise ValueError(f"the scorer returned shape {s.shape}, expected ({q * c},)")
    return s.reshape(q, c)


@dataclass
class ResponseSelectionResult:
    """ROC-AUC, MRR and Recall@k of a multiple-choice ranking (Table 5's columns)."""

    roc_auc: float
    mrr: float
    recall: dict[int, float]
    n_questions: int
    n_choices: int

    def as_dict(self) -> dict[str, float]:
        out = {"roc_auc": self.roc_auc, "mrr": self.mrr}
        out.update({f"recall@{k}": v for k, v in self.recall.items()})
        out.update({"n_questions": self.n_questions, "n_choices": self.n_choices})
        return out


def response_selection_metrics(scores: np.ndarray, true_index: int = 0, ks=(1, 2)) -> ResponseSelectionResult:
    """ROC-AUC (all candidates pooled), MRR and Recall@k of multiple-choice scores.

    The rank of the true candidate counts ties against it (1 + the number of
    other candidates scoring at least as high), so a constant scorer gets the
    worst rank rather than a lucky one; ROC-AUC counts ties as one half.

    Examples
    --------
    >>> import numpy as np
    >>> r = response_selection_metrics(np.array([[3.0, 1.0, 2.0], [0.0, 1.0, 2.0]]))
    >>> r.mrr, r.recall[1]
    (0.6666666666666666, 0.5)
    """
    S = np.asarray(scores, dtype=np.float64)
    if S.ndim != 2 or S.shape[1] < 2:
        raise ValueError(f"scores must have shape (n_questions, n_choices >= 2), got {S.shape}")
    if not np.isfinite(S).all():
        raise ValueError("scores contain NaN or infinity")
    q, c = S.shape
    true = S[:, true_index]
    others = np.delete(S, true_index, axis=1)
    rank = 1 + np.count_nonzero(others >= true[:, None], axis=1)
    labels = np.zeros_like(S)
    labels[:, true_index] = 1
    auc = float(roc_auc_score(labels.ravel(), S.ravel()))
    return ResponseSelectionResult(
        roc_auc=auc,
        mrr=float(np.mean(1.0 / rank)),
        recall={int(k): float(np.mean(rank <= k)) for k in ks},
        n_questions=q,
        n_choices=c,
    )


def select_pairs(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest-scoring pairs, best first (stable for ties)."""
    s = np.asarray(scores, dtype=np.float64)
    if not (1 <= k <= len(s)):
        raise ValueError(f"k must be in [1, {len(s)}], got {k}")
    order = np.argsort(-s, kind="stable")
    return order[:k]


def ranking_auc(scores: np.ndarray, is_bad: np.ndarray) -> float:
    """AUC with which low ``scores`` single out the pairs flagged ``is_bad``."""
    return float(roc_auc_score(np.asarray(is_bad, dtype=int), -np.asarray(scores, dtype=np.float64)))
