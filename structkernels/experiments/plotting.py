"""Plots of the σ learner and of classifiers' evaluations (matplotlib, the optional ``plot``
extra), written atomically."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from structkernels.utils import atomic_open, optional_module

__all__ = ["plot_sigma_losses", "plot_evaluation", "plot_relation_curves", "pyplot"]


def pyplot() -> Any:
    """:mod:`matplotlib.pyplot` on the Agg backend, or an ImportError saying how to install it."""
    hint = ("plotting needs matplotlib, an optional extra: pip install 'structkernels[plot]' "
            "(or pip install matplotlib)")
    optional_module("matplotlib", hint).use("Agg", force=False)
    return optional_module("matplotlib.pyplot", hint)


def _saved(fig: Any, path: str | os.PathLike | None) -> Any:
    """``fig``, written to ``path`` first when given (atomically, format from the extension)."""
    if path is not None:
        # the format from the final name (the temporary file's name ends in .tmp)
        fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or None
        with atomic_open(path, "wb") as fh:  # temporary name, renamed when complete
            fig.savefig(fh, dpi=120, format=fmt)
    return fig


def plot_sigma_losses(learner: Any, path: str | os.PathLike | None = None, *,
                      title: str | None = None, objective: str | None = None,
                      min_gain: float | None = None) -> Any:
    """Bar chart, per learned edge label, of what decided σ: Loss Function 1 summed over the
    α trials (``"loss1"``) or the leave-one-out k-NN average precision (``"knn-ap"``) at
    σ = 0 and σ = 1, the rule stated under the title.

    Parameters
    ----------
    learner : NonstationaryLearner or dict
        A fitted learner, or its ``losses_`` dict (label -> ``{"0", "1", "chosen"}``).
    path : path, optional
        Write the figure there (format from the extension, e.g. ``.png``).
    objective : {"loss1", "knn-ap"}, optional
        Default: the learner's (``"loss1"`` for a dict).
    min_gain : float, optional
        Default: the learner's (0.005 for a dict).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from structkernels.experiments.plotting import plot_sigma_losses
    >>> fig = plot_sigma_losses({"ARG0": {"0": -3.0, "1": -1.0, "chosen": 0.0},
    ...                          "ARG1": {"0": 2.0, "1": -4.0, "chosen": 1.0}})  # doctest: +SKIP
    """
    fitted = not isinstance(learner, dict)
    losses = getattr(learner, "losses_", None) if fitted else learner
    if not losses:
        raise ValueError("nothing to plot: the learner is not fitted or learned no label")
    if objective is None:
        objective = getattr(learner, "objective", "loss1") if fitted else "loss1"
    if objective not in ("loss1", "knn-ap"):
        raise ValueError(f"objective must be 'loss1' or 'knn-ap', got {objective!r}")
    if min_gain is None:
        min_gain = float(getattr(learner, "min_gain", 0.005)) if fitted else 0.005
    plt = pyplot()
    labels = list(losses)
    sign = -1.0 if objective == "knn-ap" else 1.0  # the learner keeps -AP, lower is better
    v0 = sign * np.array([float(losses[lab]["0"]) for lab in labels])
    v1 = sign * np.array([float(losses[lab]["1"]) for lab in labels])
    chosen = np.array([float(losses[lab]["chosen"]) for lab in labels])
    x = np.arange(len(labels))
    width = 0.4
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(labels) + 2), 4.8))
    ax.bar(x - width / 2, v0, width, label="σ = 0", color="#d95f02")
    ax.bar(x + width / 2, v1, width, label="σ = 1", color="#1b9e77")
    for i, c in enumerate(chosen):
        xi = x[i] + (width / 2 if c == 1.0 else -width / 2)
        yi = v1[i] if c == 1.0 else v0[i]
        ax.plot([xi], [yi], marker="v" if yi >= 0 else "^", color="black", markersize=6)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(
        [f"{lab}{' (0)' if c == 0.0 else ''}" for lab, c in zip(labels, chosen, strict=False)],
        rotation=60, ha="right", fontsize=8,
    )
    if objective == "knn-ap":
        ax.set_ylabel("leave-one-out k-NN AP (higher is better)")
        rule = (f"σ = 0 kept only when its AP beats σ = 1 by more than {min_gain:g} "
                "on both halves of the sample")
        head = "σ by leave-one-out k-NN average precision"
        lo = float(min(v0.min(), v1.min()))
        ax.set_ylim(max(0.0, lo - 0.05), min(1.0, float(max(v0.max(), v1.max())) + 0.05))
    else:
        ax.set_ylabel("Loss Function 1, summed over α trials\n(lower is better)")
        rule = "σ = 0 chosen when its summed loss is lower (a tie keeps σ = 1)"
        head = "Algorithm 1: loss per edge label at σ = 0 and σ = 1"
    ax.set_xlabel("edge label, most frequent first; (0) = σ learned 0; ▼/▲ = value chosen")
    ax.set_title(f"{title or head}\n{textwrap.fill(rule, 64)}", fontsize=10)
    ax.legend()
    fig.tight_layout()
    return _saved(fig, path)


def plot_evaluation(y_true: Any, y_pred: Any, scores: Any = None,
                    path: str | os.PathLike | None = None, *, title: str | None = None) -> Any:
    """Confusion matrix and precision-recall curve of 0/1 predictions against gold labels.

    Parameters
    ----------
    scores : array-like of float, optional
        Scores of the positive class (e.g. ``predict_proba(X)[:, 1]``); without them the
        precision-recall panel shows the one operating point of ``y_pred``.
    path : path, optional
        Write the figure there, atomically (format from the extension).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from structkernels.experiments.plotting import plot_evaluation
    >>> fig = plot_evaluation([0, 1, 1, 0], [0, 1, 0, 0], [0.1, 0.9, 0.4, 0.2])  # doctest: +SKIP
    """
    from sklearn.metrics import (
        ConfusionMatrixDisplay,
        PrecisionRecallDisplay,
        average_precision_score,
        f1_score,
    )

    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.ndim != 1 or len(y_true) == 0:
        raise ValueError(f"y_true and y_pred must be 1-D of one length, got shapes "
                         f"{y_true.shape} and {y_pred.shape}")
    plt = pyplot()
    fig, (ax_cm, ax_pr) = plt.subplots(1, 2, figsize=(10, 4.5))
    ConfusionMatrixDisplay.from_predictions(y_true, y_pred, labels=[0, 1], ax=ax_cm,
                                            colorbar=False)
    ax_cm.set_title(f"confusion matrix (F1 {100 * f1_score(y_true, y_pred, zero_division=0):.1f})")
    prevalence = float(np.mean(y_true == 1))
    if scores is not None:
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != y_true.shape or not np.isfinite(scores).all():
            raise ValueError("scores must be finite and one per prediction")
        PrecisionRecallDisplay.from_predictions(y_true, scores, ax=ax_pr, name="classifier")
        ap = average_precision_score(y_true, scores)
        ax_pr.set_title(f"precision-recall (AP {100 * ap:.1f})")
    else:
        tp = int(np.sum((y_true == 1) & (y_pred == 1)))
        p = tp / max(1, int(np.sum(y_pred == 1)))
        r = tp / max(1, int(np.sum(y_true == 1)))
        ax_pr.plot([r], [p], "o", color="black", label="the predictions")
        ax_pr.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="recall", ylabel="precision",
                  title="precision-recall (one operating point)")
    ax_pr.axhline(prevalence, color="grey", linestyle="--", linewidth=0.8,
                  label=f"chance (prevalence {100 * prevalence:.1f}%)")
    ax_pr.legend(loc="upper right", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _saved(fig, path)


def plot_relation_curves(y_true: Any, scores: Mapping[str, Any], folder: str | os.PathLike, *,
                         title: str | None = None) -> list[Path]:
    """Precision-recall and ROC curves of several models on the same pairs, one figure each.

    Parameters
    ----------
    y_true : array-like of 0/1
        Gold labels of the pairs (those every model scored: the test pairs of the folds).
    scores : mapping of model name to array-like of float
        Each model's scores of the same pairs (higher: more likely to interact).
    folder : path
        Where ``pr.png`` and ``roc.png`` are written, atomically (created when absent).

    Returns
    -------
    list of Path
        The files written.

    Examples
    --------
    >>> import tempfile
    >>> plot_relation_curves([0, 1, 1, 0], {"a": [0.1, 0.9, 0.4, 0.2]},
    ...                      tempfile.mkdtemp())  # doctest: +SKIP
    """
    from sklearn.metrics import PrecisionRecallDisplay, RocCurveDisplay

    y_true = np.asarray(y_true)
    if y_true.ndim != 1 or len(np.unique(y_true)) != 2:
        raise ValueError("y_true must be 1-D and hold both classes")
    if not scores:
        raise ValueError("no model to plot")
    out = Path(os.fspath(folder))
    out.mkdir(parents=True, exist_ok=True)
    plt = pyplot()
    written = []
    prevalence = float(np.mean(y_true == 1))
    figures = (("pr", PrecisionRecallDisplay, "precision-recall", "lower left"),
               ("roc", RocCurveDisplay, "ROC", "lower right"))
    for kind, display, what, legend in figures:
        fig, ax = plt.subplots(figsize=(6.5, 5))
        for name, s in scores.items():
            s = np.asarray(s, dtype=np.float64)
            if s.shape != y_true.shape or not np.isfinite(s).all():
                raise ValueError(f"{name}: scores must be finite and one per pair")
            # the precision-recall display adds "(AP = ...)" to the name
            display.from_predictions(y_true, s, ax=ax, name=name)
        if kind == "pr":
            ax.axhline(prevalence, color="grey", linestyle="--", linewidth=0.8,
                       label=f"chance ({100 * prevalence:.1f}%)")
        else:
            ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=0.8, label="chance")
        ax.legend(loc=legend, fontsize=7)
        ax.set_title((title + ": " if title else "") + what)
        fig.tight_layout()
        written.append(out / f"{kind}.png")
        _saved(fig, written[-1])
        plt.close(fig)
    return written
