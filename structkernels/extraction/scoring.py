"""Scoring candidate pairs against an extractor's reference pairs, the reference side prepared once.

A trained extractor's decision function is ``f(x) = Σ_j w_j k(x, r_j) + b`` over its
reference pairs ``r_j``, ``k`` a sum of normalised kernels on the pairs' structure views.
A **linear** view (bag of context features, all-paths graph) collapses exactly into one
vector, ``Σ_j w_j k̃(x, r_j) = <φ(x), Σ_j w_j φ(r_j) / ‖φ(r_j)‖> / ‖φ(x)‖``: a pair costs
its own features whatever the number of references.  Any other view (the path kernel) is
read through a :class:`~structkernels.engine.source.KernelSource` against the references,
those with the same structure merged, each batch's distinct structures computed once.  Both
are exact, and a pair's score does not depend on the other pairs scored with it (each sum
runs in one order), so ``predict`` writes the same bytes at any ``--batch-size``.

The approximate route (``tolerance > 0``) replaces the references of the non-linear views
by a reduced set (:func:`reduced_set`).  Its error is stated three ways:
``error_on_references`` (the largest score error on the reference pairs' own structures),
``bound`` (``‖Σ_j w_j ψ(r_j) - Σ_S β_s ψ(s)‖``, a guarantee for every pair of a normalised
kernel, by Cauchy-Schwarz) and ``observed_error`` (one distinct structure in
:data:`CHECK_EVERY` also scored exactly; an
:class:`~structkernels.classifiers.ApproximationWarning` when it exceeds the tolerance).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from structkernels.engine.checks import (
    ApproximationWarning,
    diagonal_scales,
    normalization_scales,
)
from structkernels.engine.gram import gram
from structkernels.engine.parallel import map_blocks, map_tasks, n_workers
from structkernels.engine.source import KernelSource
from structkernels.kernels.allpaths_features import AllPathsWeights
from structkernels.kernels.bag import BagWeights
from structkernels.kernels.base import Kernel, Normalized
from structkernels.kernels.views import ViewSum
from structkernels.utils import effective_n_jobs, njit, tqdm

__all__ = ["CHECK_EVERY", "ReferenceScorer", "reduced_set"]

#: The approximate route scores one distinct structure in this many exactly too (its
#: ``observed_error``).
CHECK_EVERY = 64

class ReferenceScorer:
    """``Σ_j w_j k(x, r_j) + b`` for ``k`` a sum of views, each view's reference side
    prepared once.

    Parameters
    ----------
    kernel : ViewSum
        The model's kernel (:meth:`~structkernels.relations.models.RelationModel.kernel`;
        a :class:`~structkernels.Normalized` view kernel is normalised by the diagonals).
    references : sequence of dict
        The reference pairs' structure views.
    weights : array-like of shape (n_references,)
    intercept : float
    tolerance : float, default 0.0
        0: exact scores.  Above 0: the non-linear views (the path kernel) are scored
        against a reduced set of references whose score error on every reference pair
        is at most ``tolerance`` (:func:`reduced_set`; the error is stated in
        :attr:`approximation`).  The linear views are exact either way.
    n_jobs : int, optional
        Workers of the reduced set's Gram (when ``tolerance > 0``).
    prepared : dict of arrays, optional
        What :meth:`prepared_arrays` gave for the same kernel, references and weights:
        used instead of computing it again (the exact route only).

    Attributes
    ----------
    approximation : dict or None
        None on the exact route; else ``{"tolerance", "views": {view: {"references",
        "of", "error_on_references", "bound"}}, "checked", "observed_error"}`` (the
        module's docstring says what each states).

    Examples
    --------
    >>> from structkernels.relations.models import relation_model
    >>> from structkernels.structures import Path
    >>> model = relation_model("NPK path SVM")
    >>> refs = [{"path": Path([(None, "PROT1"), ("nsubj-of", "bind"), ("dobj", "PROT2")])}]
    >>> scorer = ReferenceScorer(model.kernel({}), refs, [2.0], -1.0)
    >>> scorer.scores(refs).round(12).tolist()  # 2 * 1 - 1: a reference against itself
    [1.0]
    """

    def __init__(self, kernel: ViewSum, references: Sequence[dict], weights: Any,
                 intercept: float, *, tolerance: float = 0.0, n_jobs: int | None = None,
                 prepared: dict[str, np.ndarray] | None = None):
        self.weights = np.asarray(weights, dtype=np.float64)
        self.intercept = float(intercept)
        if self.weights.shape != (len(references),):
            raise ValueError(f"{len(self.weights)} weights for {len(references)} references")
        tol = float(tolerance)
        if not np.isfinite(tol) or tol < 0:
            raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
        self.tolerance = tol
        if prepared is not None and tol > 0:
            raise ValueError("prepared arrays serve the exact route (tolerance 0) only")
        self._linear: list = []
        self._other: list = []
        for view, k in kernel.views:
            inner, normalized = (k.kernel, True) if isinstance(k, Normalized) else (k, False)
            inner.validate_params()
            structures = [r[view] for r in references]
            linear = (_saved_collapse(prepared, view, len(structures)) if prepared else None) \
                or inner.weighted_sum(structures, self.weights, normalized)
            if linear is not None:  # a linear kernel on explicit features: one vector
                collapse, diag = linear
                diagonal_scales(diag)  # refuses a non-finite one, as the normalisation does
                self._linear.append((view, collapse, diag, normalized))
            else:
                diag = None if prepared is None else prepared.get(f"{view}.diag")
                self._other.append(_OtherView(view, k, normalized, structures, self.weights,
                                              diag))
        self.approximation: dict[str, Any] | None = None
        self._seen = 0
        self._warned = False
        if tol > 0 and self._other:
            stated = {part.view: part.reduce(tol / len(self._other), n_jobs)
                      for part in self._other}
            self.approximation = {"tolerance": tol, "views": stated, "checked": 0,
                                  "observed_error": 0.0}

    def prepared_arrays(self) -> dict[str, np.ndarray] | None:
        """What preparing computed, as arrays for ``prepared=`` (each collapsed view's
        vector and self-similarities, each other view's self-similarities); None on the
        approximate route or when a view's collapse has no arrays."""
        if self.approximation is not None:
            return None
        out: dict[str, np.ndarray] = {}
        for view, collapse, diag, _ in self._linear:
            kind = type(collapse).__name__
            if _COLLAPSES.get(kind) is not type(collapse):
                return None
            out[f"{view}.kind"] = np.frombuffer(kind.encode("ascii"), dtype=np.uint8)
            out.update((f"{view}.{name}", a) for name, a in collapse.arrays().items())
            out[f"{view}.diag"] = diag
        for part in self._other:
            if part.diag is not None:
                out[f"{part.view}.diag"] = part.diag
        return out

    def scores(self, items: Sequence[dict], n_jobs: int | None = None) -> np.ndarray:
        """The decision function of each item (exact, or within :attr:`approximation`)."""
        if not len(items):
            return np.zeros(0, dtype=np.float64)
        out = np.full(len(items), self.intercept, dtype=np.float64)
        for view, collapse, diag, normalized in self._linear:
            dots, sq = _dots(collapse, [x[view] for x in items], n_jobs)
            if normalized:
                sx, _ = normalization_scales(sq, diag, stacklevel=2)
                dots = dots * sx
            out += dots
        for part in self._other:
            structures, inverse = _distinct([x[part.view] for x in items], part.canon)
            reduced = part.reduced is not None
            fast = part.values(*part.beside(structures, reduced), n_jobs, reduced=reduced)
            out += fast[inverse]
            if reduced:
                self._check(part, structures, fast, n_jobs)
        return out

    def _check(self, part: _OtherView, structures: list, fast: np.ndarray,
               n_jobs: int | None) -> None:
        """Score one distinct structure in :data:`CHECK_EVERY` exactly too."""
        first = (-self._seen) % CHECK_EVERY
        self._seen += len(structures)
        picked = np.arange(first, len(structures), CHECK_EVERY)
        if not len(picked):
            return
        # no vocabularies merged
        exact = part.values(*part.beside([structures[i] for i in picked]), n_jobs)
        a = self.approximation
        a["checked"] += len(picked)
        a["observed_error"] = max(a["observed_error"], float(np.max(np.abs(exact - fast[picked]))))
        if a["observed_error"] > self.tolerance and not self._warned:
            self._warned = True
            warnings.warn(
                f"the reduced reference set's score error reached {a['observed_error']:.3g} "
                f"on the pairs checked, above the tolerance {self.tolerance:g}: lower the "
                "tolerance", ApproximationWarning, stacklevel=3)

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


#: The collapsed views prepared arrays may hold, by the name they record: a fixed table,
#: so that nothing named in the arrays is imported.
_COLLAPSES = {"AllPathsWeights": AllPathsWeights, "BagWeights": BagWeights}


def _saved_collapse(prepared: dict[str, np.ndarray], view: str, n: int
                    ) -> tuple[Any, np.ndarray] | None:
    """``(collapse, diag)`` of ``view`` from prepared arrays (None when they hold none);
    ``ValueError`` when they do not fit ``n`` references."""
    kind = prepared.get(f"{view}.kind")
    if kind is None:
        return None
    cls = _COLLAPSES.get(np.asarray(kind, dtype=np.uint8).tobytes().decode("ascii", "replace"))
    diag = np.asarray(prepared.get(f"{view}.diag"))
    if cls is None or diag.dtype != np.float64 or diag.shape != (n,):
        raise ValueError(f"the prepared arrays of view {view!r} do not fit its references")
    prefix = f"{view}."
    return cls.from_arrays({k[len(prefix):]: v for k, v in prepared.items()
                            if k.startswith(prefix)}), diag


def _dots(collapse: Any, structures: list, n_jobs: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``collapse.dots(structures)``; the all-paths graphs' in threads (their walk sums and
    look-ups release the GIL), a contiguous share of the structures each."""
    workers = min(effective_n_jobs(n_jobs), len(structures) // 16)
    if not isinstance(collapse, AllPathsWeights) or workers < 2:
        return collapse.dots(structures)
    cuts = np.linspace(0, len(structures), workers + 1).astype(int)
    shares = [structures[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    parts = list(map_tasks(collapse.dots, shares, n_jobs=workers))
    return (np.concatenate([d for d, _ in parts]), np.concatenate([q for _, q in parts]))


def _distinct(structures: list, canon: Any) -> tuple[list, np.ndarray]:
    """The distinct structures (after ``canon``), in first-seen order, and each one's
    index; every structure apart when they cannot be hashed."""
    if canon is not None:
        structures = [canon(s) for s in structures]
    try:
        index: dict = {}
        inverse = np.fromiter((index.setdefault(s, len(index)) for s in structures),
                              np.int64, len(structures))
    except TypeError:
        return list(structures), np.arange(len(structures))
    return list(index), inverse


@njit(cache=True, nogil=True)
def _weighted_rows(a, block):  # pragma: no cover - compiled
    """``a @ block``, column ``j`` summed in the order of the rows (a BLAS product's order of
    addition changes with the block's shape)."""
    out = np.zeros(block.shape[1])
    for i in range(block.shape[0]):
        for j in range(block.shape[1]):
            out[j] += a[i] * block[i, j]
    return out


def _weighted(coef: np.ndarray, block: np.ndarray, task: tuple) -> np.ndarray:
    """Each column of ``block`` summed with ``coef`` in reference order: a structure's value
    is the same in any batch and any share of it."""
    return _weighted_rows(coef, np.ascontiguousarray(block, dtype=np.float64))


class _OtherView:
    """A non-linear view: its distinct references (merged weights), and the reduced set."""

    def __init__(self, view: str, kernel: Kernel, normalized: bool, structures: list,
                 weights: np.ndarray, diag: np.ndarray | None = None):
        self.view, self.kernel, self.inner = view, kernel, kernel.kernel if normalized else kernel
        self.normalized, self.canon = normalized, self.inner.canonical_form()
        self.unique, inverse = _distinct(structures, self.canon)
        self.w = np.zeros(len(self.unique), dtype=np.float64)
        np.add.at(self.w, inverse, weights)
        self.refs = self.inner.check_input(self.unique)
        if diag is not None and (diag.dtype != np.float64 or diag.shape != (len(self.unique),)
                                 or not normalized or not np.isfinite(diag).all()):
            raise ValueError(f"the prepared arrays of view {view!r} do not fit its references")
        if diag is None and normalized:  # the references' self-similarities, computed once
            diag = KernelSource(self.inner, self.refs, checked=True).diagonal()
        self.diag = diag
        self.reduced: tuple | None = None

    def beside(self, structures: list, reduced: bool = False) -> tuple[Any, Any]:
        """``(references, structures)`` checked, the structures encoded beside the
        references (all of them, or the reduced set) where the kernel can
        (``check_input_beside``: one vocabulary, none merged per Gram block)."""
        refs = self.reduced[0] if reduced else self.refs
        beside = getattr(self.inner, "check_input_beside", None)
        if beside is None:
            return refs, self.inner.check_input(structures)
        return beside(structures, refs)

    def values(self, refs: Any, X: Any, n_jobs: int | None, *, reduced: bool = False
               ) -> np.ndarray:
        """``Σ_r c_r k(x, r)`` of each structure of ``X``: all references, or the reduced set
        (``refs``: those references, encoded beside ``X``), read through a
        :class:`~structkernels.engine.source.KernelSource` a share of ``X`` a task."""
        _, coef, diag = self.reduced if reduced else (self.refs, self.w, self.diag)
        source = KernelSource(self.inner, refs, X, checked=True, diag_x=diag)
        sx = None
        if self.normalized:
            sr, sx = normalization_scales(diag, source.diagonal("y"), stacklevel=3)
            coef = sr * coef
        rows = np.arange(len(refs))
        shares = np.array_split(np.arange(len(X)), min(len(X), 4 * n_workers(n_jobs)))
        sums = map_blocks(source, [(rows, cols) for cols in shares], partial(_weighted, coef),
                          n_jobs=n_jobs, ordered=True, progress=False)
        out = np.concatenate(list(sums))
        return out if sx is None else out * sx

    def reduce(self, tolerance: float, n_jobs: int | None) -> dict[str, Any]:
        """Choose the reduced set (:func:`reduced_set`) and state its error."""
        K = np.asarray(gram(self.kernel, self.unique, n_jobs=n_jobs, progress=False),
                       dtype=np.float64)
        keep, beta, error, bound = reduced_set(K, self.w, tolerance)
        del K
        take = [self.unique[i] for i in keep]
        diag = self.diag[keep] if self.diag is not None else None
        self.reduced = (self.inner.check_input(take), beta, diag)
        return {"references": len(keep), "of": len(self.unique),
                "error_on_references": error, "bound": bound if self.normalized else None}


def reduced_set(K: np.ndarray, w: np.ndarray, tolerance: float
                ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The fewest references (greedily) whose re-weighted sum scores every reference
    within ``tolerance`` of ``Σ_j w_j k(·, r_j)``.

    Greedy orthogonal matching pursuit in the kernel's feature space: each step adds the
    reference that most reduces ``‖v - P_S v‖`` (``v = Σ_j w_j ψ(r_j)``, ``P_S`` the
    projection on the span of the chosen ones, kept as an incremental Cholesky
    factor), until the residual ``(v - P_S v)(r_i) = <ψ(r_i), v - P_S v>`` is at most
    ``tolerance`` at every reference.  ``β`` solves ``K_SS β = K_S: w``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The kernel among the references.
    w : ndarray of shape (n,)
        Their weights.
    tolerance : float

    Returns
    -------
    keep : ndarray of int
        The chosen references, in the order chosen.
    beta : ndarray
        Their new weights.
    error : float
        ``max_i |Σ_S β_s k(r_i, s) - Σ_j w_j k(r_i, r_j)|``.
    bound : float
        ``‖v - Σ_S β_s ψ(s)‖``: with a normalised kernel, no pair's error exceeds it.

    Examples
    --------
    >>> K = np.array([[1.0, 0.9], [0.9, 1.0]])
    >>> keep, beta, error, bound = reduced_set(K, np.array([1.0, 1.0]), 0.2)
    >>> keep.tolist(), beta.round(3).tolist(), round(error, 3)
    ([0], [1.9], 0.19)
    """
    K = np.asarray(K, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    tolerance = float(tolerance)
    # products of a few thousand values a step: BLAS threads would only wait on each other
    with threadpool_limits(limits=1, user_api="blas"):
        n = len(w)
        g = K @ w
        res = g.copy()
        diag = np.diag(K).copy()
        rows = np.zeros((0, n))
        chosen = np.zeros(n, dtype=bool)
        keep: list[int] = []
        floor = 1e-9 * max(float(np.max(diag, initial=0.0)), 1e-300)  # round-off, not a direction
        while len(keep) < n and np.max(np.abs(np.where(chosen, 0.0, res)), initial=0.0) > tolerance:
            ok = (diag > floor) & ~chosen
            if not ok.any():
                break
            gain = np.where(ok, res * res / np.where(ok, diag, 1.0), -1.0)
            p = int(np.argmax(gain))
            if len(keep) == len(rows):
                rows = np.vstack([rows, np.zeros((max(16, len(rows)), n))])
            t = len(keep)
            col = (K[p] - rows[:t, p] @ rows[:t]) / np.sqrt(diag[p])
            rows[t] = col
            res -= col * (res[p] / np.sqrt(diag[p]))
            diag -= col * col
            chosen[p] = True
            keep.append(p)
        S = np.asarray(keep, dtype=np.int64)
        if not len(S):
            return (S, np.zeros(0), float(np.max(np.abs(g), initial=0.0)),
                    float(np.sqrt(max(w @ g, 0.0))))
        K_SS = K[np.ix_(S, S)]
        if len(S) == n:  # every reference kept: the exact weights (in the order chosen)
            beta = w[S].copy()
        else:
            # the factor built along the way: K_SS = R R^T with R = rows[:, S]^T lower
            # triangular, so K_SS beta = g_S is two triangular solves
            # SciPy's linear algebra loads only for this approximation, not with every predict
            from scipy.linalg import solve_triangular

            R = rows[:len(S)][:, S].T
            beta = solve_triangular(R.T, solve_triangular(R, g[S], lower=True), lower=False)
        approx = K[:, S] @ beta
        error = float(np.max(np.abs(approx - g), initial=0.0))
        bound = float(np.sqrt(max(w @ g - 2 * beta @ g[S] + beta @ K_SS @ beta, 0.0)))
        return S, beta, error, bound
