"""Kernels by registered name: the ``structkernels.kernels`` entry-point group.

Light, for the command line (no scikit-learn, numba or joblib): the kernel base class is
imported where a kernel is checked or built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from structkernels.registry import Registry

if TYPE_CHECKING:
    import numpy as np

    from structkernels.engine.gram import GramInfo
    from structkernels.kernels.base import Kernel

__all__ = ["kernels", "kernel", "list_kernels", "register", "as_kernel", "gram", "takes_arrays"]


def _check_kernel_class(obj: Any) -> None:
    from structkernels.kernels.base import Kernel  # light module: see the module docstring

    if not (isinstance(obj, type) and issubclass(obj, Kernel)):
        raise TypeError(f"{obj!r} is not a subclass of structkernels.Kernel")


#: The kernel registry (entry-point group ``structkernels.kernels``).
kernels = Registry("structkernels.kernels", "kernel", _check_kernel_class)


def kernel(name: str, **params: Any):
    """Build the kernel registered as ``name`` with ``params``.

    Examples
    --------
    >>> from structkernels import kernel
    >>> kernel("rbf", bandwidth=2.0)
    RBFKernel(bandwidth=2.0)
    """
    return kernels.get(name)(**params)


def list_kernels() -> list[str]:
    """Names of all registered kernels, sorted."""
    return kernels.names()


def register(name: str, cls: type, *, overwrite: bool = False) -> None:
    """Register a Kernel subclass under ``name`` for this process."""
    kernels.register(name, cls, overwrite=overwrite)


def as_kernel(spec: Any, **params: Any):
    """A Kernel from a registered name (with ``params``) or an instance (as is)."""
    from structkernels.kernels.base import Kernel  # light module: see the module docstring

    if isinstance(spec, Kernel):
        if params:
            raise TypeError("parameters can only be given with a kernel name, not an instance")
        return spec
    if isinstance(spec, str):
        return kernel(spec, **params)
    if isinstance(spec, type) and issubclass(spec, Kernel):
        return spec(**params)
    raise TypeError(f"expected a kernel name or a structkernels.Kernel, got {type(spec).__name__}")


def gram(kernel: Kernel | str, X: Any, Y: Any = None, **options: Any
         ) -> np.ndarray | tuple[np.ndarray, GramInfo]:
    """Gram matrix ``K[i, j] = kernel(X[i], Y[j])`` (``Y = X`` when omitted).

    ``kernel`` is a kernel instance or a registered name; ``options`` are those of
    :func:`structkernels.engine.gram.gram`, and with a name any other keyword is a parameter
    of the kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from structkernels import gram
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0]])
    >>> gram("linear", X).tolist()
    [[1.0, 1.0], [1.0, 2.0]]
    >>> K, info = gram("linear", X, return_info=True)
    >>> info.n_evaluations
    3
    >>> gram("rbf", X, sigma=2.0, normalize=True).shape
    (2, 2)
    """
    from structkernels.engine.gram import GRAM_OPTIONS  # light module: see the docstring

    params = {k: options.pop(k) for k in list(options) if k not in GRAM_OPTIONS}
    return as_kernel(kernel, **params).gram(X, Y, **options)


def takes_arrays(kernel: Any, kernel_params: dict | None = None) -> bool:
    """Whether ``kernel`` reads a 2-D float array, one row per sample (scikit-learn's input).

    ``"precomputed"`` does, and a kernel whose ``check_input`` accepts a small float matrix
    (or that cannot be built from these parameters: ``fit`` raises the error).


    Examples
    --------
    >>> takes_arrays("rbf"), takes_arrays("path"), takes_arrays("precomputed")
    (True, False, True)
    """
    import numpy as np  # light module: see the module docstring

    if isinstance(kernel, str) and kernel == "precomputed":
        return True
    try:
        k = as_kernel(kernel, **(kernel_params or {}))
    except Exception:  # invalid parameters: fit reports them
        return True
    try:
        k.check_input(np.zeros((2, 1)))
    except Exception:  # refused: the kernel reads something else
        return False
    return True
