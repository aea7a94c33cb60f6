"""Scoring candidate pairs against an extractor's reference pairs, the reference side prepared once.

A trained extractor's decision function is ``f(x) = Σ_j w_j k(x, r_j) + b`` over its
reference pairs ``r_j`` (support vectors or landmarks), with ``k`` a sum of normalised
kernels on the pairs' structure views.  Computing ``k(x, r_j)`` through the composite
kernel's Gram re-checks (encodes) the references on every call and the normalisation
recomputes their diagonals; for a batch of a few hundred pairs against thousands of
references, that preparation costs as much as the kernel values.  :class:`ReferenceScorer`
encodes each view of the references once (the path kernel's encoded paths, the bag's
feature matrix, the all-paths graphs' label-pair matrices) and keeps each view's
diagonal, so a batch of pairs costs its own encoding and the kernel blocks only.  The
scores are those of the composite kernel (tested to 1e-12).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.engine.checks import normalize_gram
from structkernels.engine.gram import gram
from structkernels.kernels.base import Kernel, Normalized
from structkernels.utils import tqdm

__all__ = ["ReferenceScorer", "views_gram"]


class ReferenceScorer:
    """``Σ_j w_j Σ_v k_v(x[v], r_j[v]) + b``, each view's references encoded once.

    Parameters
    ----------
    view_kernels : sequence of (str, Kernel)
        Each structure view and its kernel, as
        :meth:`~structkernels.relations.models.RelationModel.view_kernels` gives them (a
        :class:`~structkernels.Normalized` kernel is normalised by the diagonals).
    references : sequence of dict
        The reference pairs' structure views.
    weights : array-like of shape (n_references,)
    intercept : float

    Examples
    --------
    >>> from structkernels.relations.models import relation_model
    >>> from structkernels.structures import Path
    >>> model = relation_model("NPK path SVM")
    >>> refs = [{"path": Path([(None, "PROT1"), ("nsubj-of", "bind"), ("dobj", "PROT2")])}]
    >>> scorer = ReferenceScorer(model.view_kernels({}), refs, [2.0], -1.0)
    >>> scorer.scores(refs).round(12).tolist()  # 2 * 1 - 1: a reference against itself
    [1.0]
    """

    def __init__(self, view_kernels: Sequence[tuple[str, Kernel]], references: Sequence[dict],
                 weights: Any, intercept: float):
        self.parts = []
        for view, k in view_kernels:
            inner, normalized = (k.kernel, True) if isinstance(k, Normalized) else (k, False)
            inner.validate_params()
            refs = inner.check_input([r[view] for r in references])
            diag = np.asarray(inner.diag_block(refs), dtype=np.float64) if normalized else None
            self.parts.append((view, inner, refs, diag))
        self.weights = np.asarray(weights, dtype=np.float64)
        self.intercept = float(intercept)
        if self.weights.shape != (len(references),):
            raise ValueError(f"{len(self.weights)} weights for {len(references)} references")

    def kernel(self, items: Sequence[dict], n_jobs: int | None = None) -> np.ndarray:
        """The composite kernel between ``items`` and the references, ``(len(items), n_refs)``."""
        K = None
        for view, inner, refs, diag in self.parts:
            X = inner.check_input([x[view] for x in items])
            # the references first: an encoding keeps what it derives for the other side
            # (the all-paths features re-laid in its columns), so that other side must be
            # the batch, which goes when the batch does, not the references, which stay
            block = np.asarray(gram(inner, refs, X, n_jobs=n_jobs, progress=False),
                               dtype=np.float64).T
            if diag is not None:
                block = normalize_gram(block, np.asarray(inner.diag_block(X), dtype=np.float64),
                                       diag)
            K = block if K is None else K + block
        return K

    def scores(self, items: Sequence[dict], n_jobs: int | None = None) -> np.ndarray:
        """The decision function of each item."""
        if not len(items):
            return np.zeros(0, dtype=np.float64)
        return self.kernel(items, n_jobs) @ self.weights + self.intercept

    def scores_in_batches(self, items: Sequence[dict], n_jobs: int | None = None, *,
                          batch: int = 256, progress: bool = False) -> np.ndarray:
        """:meth:`scores` a ``batch`` of items at a time (bounded memory), with a progress
        bar ("scoring pairs") when ``progress`` and more than one batch."""
        out = np.empty(len(items), dtype=np.float64)
        with tqdm(total=len(items), desc="scoring pairs", unit="pair",
                  disable=not progress or len(items) <= batch) as bar:
            for start in range(0, len(items), batch):
                chunk = items[start:start + batch]
                out[start:start + len(chunk)] = self.scores(chunk, n_jobs)
                bar.update(len(chunk))
        return out


def views_gram(view_kernels: Sequence[tuple[str, Kernel]], items: Sequence[dict],
               n_jobs: int | None = None, progress: bool | None = None) -> np.ndarray:
    """The symmetric Gram of ``items`` under ``Σ_v k_v(x[v], y[v])``, one view at a time.

    The same matrix as the composite kernel's Gram (a sum of
    :class:`~structkernels.kernels.views.ViewKernel` terms), computed as each view's own
    Gram (each encoded once, in threads where its kernel releases the GIL) added in
    order: the composite's blocks would encode every view of every block again.

    Examples
    --------
    >>> from structkernels.relations.models import relation_model
    >>> from structkernels.structures import Path
    >>> items = [{"path": Path([(None, "PROT1"), ("nsubj-of", "bind"), ("dobj", "PROT2")])},
    ...          {"path": Path([(None, "PROT1"), ("conj", "see"), ("dobj", "PROT2")])}]
    >>> views_gram(relation_model("NPK path SVM").view_kernels({}), items).round(6).tolist()
    [[1.0, 0.472545], [0.472545, 1.0]]
    """
    K = None
    for view, k in view_kernels:
        block = np.asarray(gram(k, [x[view] for x in items], n_jobs=n_jobs, progress=progress),
                           dtype=np.float64)
        if K is None:
            K = np.array(block, dtype=np.float64, copy=True)
        else:
            K += block
        del block
    return K
