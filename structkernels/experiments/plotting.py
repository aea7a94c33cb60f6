"""Plots of the σ learner (matplotlib, an optional extra: ``pip install structkernels[plot]``).

:func:`plot_sigma_losses` draws, per edge label, the loss of Loss Function 1
summed over the α trials at σ = 0 and at σ = 1 (Algorithm 1, line 17 of Garg
et al. 2018) and marks the value chosen, so that which labels the kernel
learned to ignore, and by how much, can be read at a glance.
"""

from __future__ import annotations

import os
from typing import Any

from structkernels.utils import atomic_open, optional_module

__all__ = ["plot_sigma_losses"]


def pyplot() -> Any:
    """:mod:`matplotlib.pyplot` on the Agg backend, or an ImportError saying how to install it."""
    hint = ("plotting needs matplotlib, an optional extra: pip install 'structkernels[plot]' "
            "(or pip install matplotlib)")
    optional_module("matplotlib", hint).use("Agg", force=False)
    return optional_module("matplotlib.pyplot", hint)


def plot_sigma_losses(
    learner: Any, path: str | os.PathLike | None = None, *, title: str | None = None
):
    """Bar chart of the summed loss at σ = 0 and σ = 1 for every learned edge label.

    Parameters
    ----------
    learner : NonstationaryLearner or dict
        A fitted learner, or its ``losses_`` dict (label -> ``{"0", "1", "chosen"}``).
    path : path, optional
        Write the figure there (format from the extension, e.g. ``.png``).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from structkernels.experiments.plotting import plot_sigma_losses
    >>> fig = plot_sigma_losses({"ARG0": {"0": -3.0, "1": -1.0, "chosen": 0.0},
    ...                          "ARG1": {"0": 2.0, "1": -4.0, "chosen": 1.0}})  # doctest: +SKIP
    """
    losses = learner if isinstance(learner, dict) else getattr(learner, "losses_", None)
    if not losses:
        raise ValueError("nothing to plot: the learner is not fitted or learned no label")
    plt = pyplot()
    import numpy as np

    labels = list(losses)
    l0 = np.array([float(losses[lab]["0"]) for lab in labels])
    l1 = np.array([float(losses[lab]["1"]) for lab in labels])
    chosen = np.array([float(losses[lab]["chosen"]) for lab in labels])
    x = np.arange(len(labels))
    width = 0.4
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(labels) + 2), 4.5))
    ax.bar(x - width / 2, l0, width, label="σ = 0", color="#d95f02")
    ax.bar(x + width / 2, l1, width, label="σ = 1", color="#1b9e77")
    # mark the chosen value's bar
    for i, c in enumerate(chosen):
        xi = x[i] + (width / 2 if c == 1.0 else -width / 2)
        yi = l1[i] if c == 1.0 else l0[i]
        ax.plot([xi], [yi], marker="v" if yi >= 0 else "^", color="black", markersize=6)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(
        [f"{lab}{' (0)' if c == 0.0 else ''}" for lab, c in zip(labels, chosen, strict=False)],
        rotation=60, ha="right", fontsize=8,
    )
    ax.set_ylabel("loss summed over α trials (lower is better)")
    ax.set_xlabel("edge label, most frequent first; (0) = σ learned 0; ▼/▲ = value chosen")
    ax.set_title(title or "Algorithm 1: loss per edge label at σ = 0 and σ = 1")
    ax.legend()
    fig.tight_layout()
    if path is not None:
        # the format from the final name (the temporary file's name ends in .tmp)
        fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or None
        with atomic_open(path, "wb") as fh:  # temporary name, renamed when complete
            fig.savefig(fh, dpi=120, format=fmt)
    return fig
