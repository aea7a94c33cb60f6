"""Kernels over several representations (views) of one sentence, e.g. AMR and dependency.

:class:`ViewKernel` applies a kernel to one view, so the kernel algebra combines views
(a sum or product of PSD kernels on the views is PSD on the pairs); :class:`ViewSum`, one
kernel per view summed, is the relation models' kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from structkernels.engine.gram import gram
from structkernels.engine.parallel import releases_gil
from structkernels.kernels.base import Kernel

__all__ = ["ViewKernel", "ViewSum"]


class ViewSum(Kernel):
    """``Σ_v k_v(x[v], y[v])``: one kernel per view of multi-view items, summed in order
    (:meth:`gram_by_view`: the same from each view's own Gram, each view encoded once).

    Parameters
    ----------
    views : sequence of (view, Kernel)
        The key (dict items) or position (tuple items) of each view and its kernel.

    Examples
    --------
    >>> from structkernels import Normalized, Path, kernel
    >>> a = {"amr": Path([(None, "bind")]), "dependency": Path([(None, "binds")])}
    >>> k = ViewSum([("amr", Normalized(kernel("path"))), ("dependency", kernel("path"))])
    >>> k.gram_by_view([a]).round(6).tolist(), k.gram([a]).round(6).tolist()
    ([[1.64]], [[1.64]])
    """

    def __init__(self, views: Sequence[tuple[str | int, Kernel]] = ()):
        self.views = views

    @property
    def nogil_blocks(self) -> bool:
        """GIL-free blocks when every view's kernel has them."""
        return all(releases_gil(k) for _, k in self.views)

    def validate_params(self) -> None:
        for view, k in self.views:
            if not isinstance(k, Kernel):
                raise TypeError(f"{type(self).__name__}: the kernel of view {view!r} must be a "
                                f"Kernel, got {type(k).__name__}")
            k.validate_params()

    @staticmethod
    def _take(X: Sequence, view: str | int, kernel: Kernel) -> Sequence:
        out = []
        for i, x in enumerate(X):
            try:
                out.append(x[view])
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"item {i} has no view {view!r}") from None
        return kernel.check_input(out)

    def check_input(self, X: Any) -> Sequence:
        X = super().check_input(X)
        for view, k in self.views:
            self._take(X, view, k)  # fail early, naming the item without the view
        return X

    def _sum(self, block: Any, *sides: Sequence) -> np.ndarray:
        out = None
        for view, k in self.views:
            b = block(k)(*(self._take(S, view, k) for S in sides))
            out = b if out is None else out + b
        return out

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        return self._sum(lambda k: k.gram_block, X, Y)

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        return self._sum(lambda k: k.gram_block_symmetric, X)

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self._sum(lambda k: k.diag_block, X)

    def gram_by_view(self, X: Sequence, Y: Sequence | None = None, *,
                     n_jobs: int | None = None, progress: bool | None = None,
                     threads_only: bool = False) -> np.ndarray:
        """The Gram of ``X`` (against ``Y``) as each view's Gram added in order (zeros without
        views); ``threads_only``: a view whose kernel holds the GIL runs in this process."""
        K = None
        for view, k in self.views:
            jobs = n_jobs if releases_gil(k) or not threads_only else 1
            block = gram(k, [x[view] for x in X], None if Y is None else [y[view] for y in Y],
                         n_jobs=jobs, progress=progress)
            if K is None:
                K = np.array(block, dtype=np.float64, copy=True)
            else:
                K += block
            del block
        return np.zeros((len(X), len(X if Y is None else Y))) if K is None else K


class ViewKernel(ViewSum):
    """A kernel applied to one view of multi-view items: ``k(x[view], y[view])``; ``view``
    is the key (dict items) or position (tuple items) of the view.

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

    @property
    def views(self) -> tuple[tuple[str | int, Kernel], ...]:
        return ((self.view, self.kernel),)
