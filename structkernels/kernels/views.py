"""Two representations of one sentence (AMR and dependency) and kernels over both.

The nonstationary kernels paper compares candidates on more than one
representation of a sentence (AMR and Stanford dependencies).  Here a
:class:`MultiViewDataset` carries, for each labelled candidate, one structure
per view (``{"amr": Path, "dependency": Path}``), and :class:`ViewKernel`
applies any kernel to one view, so the kernel algebra of
:mod:`structkernels.kernel` combines views as it combines kernels::

    k = ViewKernel(kernel("path", lam=0.8), "amr") + ViewKernel(kernel("path"), "dependency")
    k = Normalized(ViewKernel(...)) * Normalized(ViewKernel(...))

A sum (or product) of PSD kernels on the views is PSD on the pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.kernels.base import Kernel

__all__ = ["ViewKernel"]


class ViewKernel(Kernel):
    """A kernel applied to one view of multi-view items: ``k(x[view], y[view])``.

    Parameters
    ----------
    kernel : Kernel
        The kernel of that view.
    view : str or int
        The key (dict items) or position (tuple items) of the view.

    Examples
    --------
    >>> from structkernels import Path, kernel
    >>> from structkernels.kernels.views import ViewKernel
    >>> a = {"amr": Path([(None, "bind")]), "dependency": Path([(None, "binds")])}
    >>> b = {"amr": Path([(None, "bind")]), "dependency": Path([(None, "bound")])}
    >>> k = ViewKernel(kernel("path"), "amr") + ViewKernel(kernel("path"), "dependency")
    >>> k.value(a, b) == kernel("path").value(a["amr"], b["amr"])
    True
    """

    def __init__(self, kernel: Kernel | None = None, view: str | int = 0):
        self.kernel = kernel
        self.view = view

    def validate_params(self) -> None:
        if not isinstance(self.kernel, Kernel):
            raise TypeError(f"ViewKernel.kernel must be a Kernel, got {type(self.kernel).__name__}")
        self.kernel.validate_params()

    def _take(self, X: Sequence) -> Sequence:
        out = []
        for i, x in enumerate(X):
            try:
                out.append(x[self.view])
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"item {i} has no view {self.view!r}") from None
        return self.kernel.check_input(out)

    def check_input(self, X: Any) -> Sequence:
        X = super().check_input(X)
        self._take(X)  # fail early, naming the item without the view
        return X

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        return self.kernel.gram_block(self._take(X), self._take(Y))

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        return self.kernel.gram_block_symmetric(self._take(X))

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self.kernel.diag_block(self._take(X))


