"""Nonstationary extension of any convolution kernel (Garg et al. 2018, Theorem 2, Eq. 1).

``k_NS(i, j) = σ(i) k(i, j) σ(j)``, σ weighing a tuple's edge label, goes to the wrapped
kernel's own ``sigma`` (``path``, ``tree``) or else to its tuple kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from structkernels.kernels.base import Kernel
from structkernels.kernels.names import as_kernel
from structkernels.kernels.sigma import check_sigma, combine_sigma
from structkernels.kernels.tuples import TupleKernel, WeightedTupleKernel

__all__ = ["NonstationaryKernel"]


class NonstationaryKernel(Kernel):
    """``kernel`` with its tuple kernel weighted by ``σ`` (Theorem 2, Eq. 1).

    Parameters
    ----------
    kernel : Kernel or str, default "path"
        A convolution kernel (instance or registered name) with a ``tuple_kernel`` parameter.
    sigma : dict str -> float, optional
        Weight ``>= 0`` per edge label (others weigh 1), times the wrapped kernel's own σ.

    Examples
    --------
    >>> from structkernels import Path, kernel
    >>> a = Path([(None, "bind-01"), ("ARG0", "enzyme"), ("ARG1", "protein")])
    >>> k = kernel("nonstationary", kernel=kernel("path", lam=1.0), sigma={"ARG0": 0.0})
    >>> k.value(a, a) == kernel("path", lam=1.0, sigma={"ARG0": 0.0}).value(a, a)
    True
    """

    grows_with_size = True

    def __init__(self, kernel: Kernel | str = "path", sigma: Mapping[str, float] | None = None):
        self.kernel = kernel
        self.sigma = sigma

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__.pop("_weighted", None)  # a parameter changes: weigh again at next use
        super().__setattr__(name, value)

    @property
    def nogil_blocks(self) -> bool:
        """Whether the wrapped kernel's blocks release the GIL (then the engine uses threads)."""
        try:
            return bool(getattr(self._effective(), "nogil_blocks", False))
        except Exception:
            return False

    def validate_params(self) -> None:
        check_sigma(self.sigma, "NonstationaryKernel.sigma")
        self.__dict__.pop("_weighted", None)  # the wrapped kernel may have changed in place
        self._effective().validate_params()

    def _effective(self) -> Kernel:
        """The wrapped kernel with σ in its home, built once per parameter setting."""
        weighted = self.__dict__.get("_weighted")
        if weighted is not None:
            return weighted
        base = as_kernel(self.kernel)
        params = base.get_params(deep=False)
        if "tuple_kernel" not in params:
            raise TypeError(
                f"NonstationaryKernel wraps convolution kernels exposing their tuple kernel as a "
                f"'tuple_kernel' parameter; {type(base).__name__} has none")
        if "sigma" in params:
            params["sigma"] = combine_sigma(params["sigma"], self.sigma)
        else:
            params["tuple_kernel"] = WeightedTupleKernel(params["tuple_kernel"] or TupleKernel(),
                                                         check_sigma(self.sigma))
        weighted = self.__dict__["_weighted"] = type(base)(**params)
        return weighted

    def check_input(self, X: Any) -> Sequence:
        return self._effective().check_input(X)

    def pair(self, x: Any, y: Any) -> float:
        return float(self._effective().gram_block([x], [y])[0, 0])

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        return self._effective().gram_block(X, Y)

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        return self._effective().gram_block_symmetric(X)

    def diag_block(self, X: Sequence) -> np.ndarray:
        return self._effective().diag_block(X)
