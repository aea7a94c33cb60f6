"""What an evaluation of relation models checks before it computes anything: the model
names, folds whose training pairs hold both classes, and the memory of the fold slices
(refused above :func:`structkernels.utils.memory_budget` before any Gram is computed)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from structkernels.kernels.srk.common import MemoryBudgetError
from structkernels.relations.models import MODELS, relation_model
from structkernels.utils import MEMORY_BUDGET_ENV, StructkernelsError, format_gib, memory_budget

__all__ = ["SLICE_BYTES", "FoldError", "check_fold_memory", "check_folds", "check_models",
           "fits_at_once", "fold_bytes", "slice_budget"]

#: The least :func:`slice_budget` gives: fold slices held at once, bytes.
SLICE_BYTES = 512 << 20


class FoldError(StructkernelsError, ValueError):
    """A split that no classifier can learn from (its training pairs hold one class only),
    in one line naming the fold and its documents."""


def _names(docs: Sequence[str], most: int = 5) -> str:
    docs = list(dict.fromkeys(docs))
    shown = ", ".join(docs[:most])
    return f"{shown}, … ({len(docs)} documents)" if len(docs) > most else shown


def check_folds(y: Sequence[int], splits: Sequence[tuple[np.ndarray, np.ndarray]],
                groups: Sequence[str] | None = None) -> None:
    """Refuse a split whose training pairs hold only one class, naming the fold and documents.

    Raises
    ------
    FoldError
        One line: which fold, which class its training documents lack, which documents
        hold it, and what to change.

    Examples
    --------
    >>> docs = ["d1", "d1", "d2", "d3"]
    >>> check_folds([1, 0, 0, 0], [(np.array([2, 3]), np.array([0, 1]))], docs)
    Traceback (most recent call last):
    ...
    structkernels.experiments.relation_checks.FoldError: the training split has no positive pair in its training documents (d2, d3); the 1 positive lies in its test documents (d1): a classifier needs both classes: give training documents with positive pairs
    """
    y = np.asarray(y)
    names = (np.asarray(groups, dtype=object) if groups is not None
             else np.array([f"pair {i}" for i in range(len(y))], dtype=object))
    for k, (tr, te) in enumerate(splits):
        labels = set(np.unique(y[tr]).tolist())
        if len(labels) >= 2:
            continue
        lacks = "positive" if 1 not in labels else "negative"
        want = 1 if lacks == "positive" else 0
        where = "the training split" if len(splits) == 1 else f"fold {k + 1} of {len(splits)}"
        held = te[y[te] == want]
        n_held = int((y == want).sum())
        if n_held == 0:
            rest = f"the data hold no {lacks} pair at all"
        else:
            elsewhere = "its test documents" if len(held) == n_held else "its test and other documents"
            rest = (f"the {n_held} {lacks}{'s' if n_held != 1 else ''} "
                    f"{'lie' if n_held != 1 else 'lies'} in {elsewhere} ({_names(names[held].tolist())})")
        fix = ("give training documents with positive pairs" if len(splits) == 1
               else "change the folds (fewer folds, or another --cv / --random-state) or give more "
                    f"documents with {lacks} pairs")
        train_docs = _names(names[tr].tolist()) if len(tr) else "none"
        raise FoldError(f"{where} has no {lacks} pair in its training documents ({train_docs}); "
                        f"{rest}: a classifier needs both classes: {fix}")


def check_models(models: Sequence[str]) -> list[str]:
    """The model names, each once in the order given, checked; at least one.

    Examples
    --------
    >>> check_models(["PK path SVM", "PK path SVM", "n-gram SVM"])
    ['PK path SVM', 'n-gram SVM']
    """
    if isinstance(models, str):
        models = [models]
    names = list(dict.fromkeys(models))
    if not names:
        raise ValueError(f"no model to evaluate; the models are {', '.join(MODELS)}")
    for m in names:
        relation_model(m)  # an unknown name: ValueError naming the models
    return names


def _slice_bytes(splits: Sequence[tuple[np.ndarray, np.ndarray]]) -> int:
    """The bytes of one Gram's largest fold slices, ``8 |train| (|train| + |test|)``."""
    return 8 * max((len(tr) * (len(tr) + len(te)) for tr, te in splits), default=0)


def slice_budget(splits: Sequence[tuple[np.ndarray, np.ndarray]], n_jobs: int,
                 slice_bytes: int | None = None) -> int:
    """The bytes of fold slices :func:`evaluate_relations` holds at once: ``slice_bytes``
    when given, else one Gram's slices within a quarter of
    :func:`~structkernels.utils.memory_budget`, never below :data:`SLICE_BYTES` (two Grams'
    slices and their fits' copies would take a BioInfer evaluation past its memory).

    Examples
    --------
    >>> splits = [(np.arange(90), np.arange(90, 100))]
    >>> slice_budget(splits, 2, 1000), slice_budget(splits, 2) == SLICE_BYTES
    (1000, True)
    """
    if slice_bytes is not None:
        return int(slice_bytes)
    return max(SLICE_BYTES, min(_slice_bytes(splits), memory_budget() // 4))


def fits_at_once(one: int, slice_bytes: int, n_jobs: int, n_models: int) -> int:
    """How many model fits run at once on one Gram's fold slices of ``one`` bytes: up to
    ``n_jobs`` (and the models) while they fit ``slice_bytes``, else one (copies add up).

    Examples
    --------
    >>> fits_at_once(100, 512, 2, 3), fits_at_once(1000, 512, 2, 3)
    (2, 1)
    """
    if one > slice_bytes:
        return 1
    return max(1, min(int(n_jobs), n_models))


def fold_bytes(n: int, splits: Sequence[tuple[np.ndarray, np.ndarray]], models: Sequence[str],
               n_jobs: int, slice_bytes: int | None = None) -> int:
    """About the most bytes :func:`evaluate_relations` holds at once for ``n`` pairs:
    ``S (G + J)`` for fold slices of ``S = 8 tr (tr + te)`` bytes, ``G`` groups of models held
    together (:func:`slice_budget`) and ``J`` fits at once (:func:`fits_at_once`).

    Examples
    --------
    >>> splits = [(np.arange(90), np.arange(90, 100))]
    >>> fold_bytes(100, splits, ["PK path SVM"], 1)
    144000
    """
    groups = Counter(relation_model(m).parts for m in models)
    one = _slice_bytes(splits)
    slice_bytes = slice_budget(splits, n_jobs, slice_bytes)
    together = max(1, min(len(groups), slice_bytes // one if one else len(groups)))
    members = sorted(groups.values(), reverse=True)[:together]
    fits = fits_at_once(one, slice_bytes, n_jobs, sum(members))
    return one * (together + fits)


def check_fold_memory(n: int, splits: Sequence[tuple[np.ndarray, np.ndarray]],
                      models: Sequence[str], n_jobs: int, slice_bytes: int | None = None) -> None:
    """Refuse an evaluation whose Grams would not fit :func:`~structkernels.utils.memory_budget`.

    Raises
    ------
    MemoryBudgetError
        One line naming the estimate (:func:`fold_bytes`), the budget and how to reduce it.
    """
    need, budget = fold_bytes(n, splits, models, n_jobs, slice_bytes), memory_budget()
    if need <= budget:
        return
    raise MemoryBudgetError(
        f"evaluating {len(models)} model(s) on {n:,} candidate pairs needs about "
        f"{format_gib(need)} for its fold slices (the training and test rows of each "
        f"model's Gram, 8 bytes per pair of pairs, and the fits' copies), above the "
        f"memory budget of {format_gib(budget)} "
        f"(${MEMORY_BUDGET_ENV}, else half the memory available): evaluate fewer models "
        "(--models), with fewer workers (--n-jobs), or on fewer pairs (fewer entities per "
        f"sentence, or a part of the corpus), or raise ${MEMORY_BUDGET_ENV}"
    )
