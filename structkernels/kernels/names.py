"""Kernels by registered name: the ``structkernels.kernels`` entry-point group.

This module stays light (the command line lists kernels and resolves names without
loading scikit-learn, numba or joblib): the kernel base class is imported where a
kernel is checked or built.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from structkernels.registry import Registry

if TYPE_CHECKING:
    import joblib
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
    raise TypeError(
        f"expected a kernel name or a structkernels.Kernel, got {type(spec).__name__}"
    )


def gram(
    kernel: Kernel | str,
    X: Any,
    Y: Any = None,
    *,
    n_jobs: int | None = None,
    normalize: bool = False,
    block_size: int | None = None,
    out: str | os.PathLike | None = None,
    cache: str | os.PathLike | joblib.Memory | None = None,
    progress: bool | None = None,
    backend: str | None = None,
    return_info: bool = False,
    validate: bool | str = "auto",
    **params: Any,
) -> np.ndarray | tuple[np.ndarray, GramInfo]:
    """Gram matrix ``K[i, j] = kernel(X[i], Y[j])`` (``Y = X`` when omitted).

    Parameters
    ----------
    kernel : Kernel or str
        A kernel instance or a registered name (then ``**params`` build it).
    X, Y : sequences of structures (or 2-D arrays for vector kernels)
    n_jobs : int or None, default None
        Workers (``-1`` for all cores): threads for kernels whose compiled
        blocks release the GIL, joblib processes for the others.  Parallel
        and serial results are bit-identical.
    normalize : bool, default False
        Return ``K / sqrt(diag_x diag_y)``; 0 where a self-similarity is 0
        (with a warning).  A :class:`~structkernels.kernels.base.Normalized`
        kernel is handled the same way (its diagonal is computed once).
    block_size : int, optional
        Rows/columns per block; chosen from the sizes and ``n_jobs`` if None.
    out : path, optional
        Write the result into a ``.npy`` memory-mapped file there (for
        matrices larger than memory) and return the memmap (of ``out``,
        opened ``r+``).  ``out`` is used as given (no ``.npy`` is appended).
        The map is built under a temporary name in the same folder, with its
        blocks reserved on disk first, and renamed to ``out`` only when
        complete: an interrupt, a kill or a full disk
        (:class:`~structkernels.utils.WriteError`) leaves an existing ``out``
        intact, and two calls writing one ``out`` each finish (the last
        rename wins).
    cache : path or joblib.Memory, optional
        On-disk cache keyed by the kernel (all its parameters), a hash of the
        data's content and the kernel's code version (``structkernels``'s
        version and each kernel class's ``code_version``): a repeated call
        loads the matrix and makes no kernel call.
    progress : bool, optional
        Show a progress bar (default: on long work, when stderr is a terminal).
    backend : str, optional
        joblib backend; None lets the engine pick (threads for GIL-free
        compiled kernels, ``loky`` otherwise) unless a
        ``joblib.parallel_backend`` context names one.  With ``"dask"`` (or
        that context) the blocks go to the dask client in a few chunks, the
        data sent to each worker once; on one machine start the cluster with
        threads (``LocalCluster(processes=False)``).
    return_info : bool, default False
        Also return a :class:`GramInfo` (evaluations, seconds, cache hit).
    validate : {"auto", True, False}, default "auto"
        Checks of the kernel's output (:func:`~structkernels.engine.checks.validation_level`).
        A NaN or infinite value is always refused, in every block, the diagonal and
        the normalised matrix, with a
        :class:`~structkernels.engine.checks.NonFiniteKernelValueError` naming the pair
        (``"row 3: k(x, x) = inf (overflow); ..."``).  ``True`` also probes
        symmetry and positive semi-definiteness on a seeded sample of at most 64
        structures of ``X`` (:func:`~structkernels.engine.checks.probe_kernel`, about 5% of
        the Gram's evaluations at most, not counted in ``n_evaluations``) and
        refuses with :class:`~structkernels.engine.checks.KernelOutputError`; ``"auto"``
        does so for kernels that do not ship with structkernels (plugins, user
        subclasses: the class attribute ``Kernel.output_validation`` can say
        otherwise); ``False`` checks finiteness only.

    Returns
    -------
    K : ndarray of float64, shape (len(X), len(Y) or len(X))
    info : GramInfo, only if ``return_info``

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
    """
    return as_kernel(kernel, **params).gram(
        X, Y, n_jobs=n_jobs, normalize=normalize, block_size=block_size, out=out, cache=cache,
        progress=progress, backend=backend, return_info=return_info, validate=validate,
    )


def takes_arrays(kernel: Any, kernel_params: dict | None = None) -> bool:
    """Whether ``kernel`` reads a 2-D float array, one row per sample (scikit-learn's input).

    ``"precomputed"`` does (a Gram matrix); a kernel does when its
    ``check_input`` accepts a small float matrix: the vector kernels, and
    kernels that keep the base class's check.  The path and tree kernels
    take structures, and a Gram lookup takes indices.  Estimators set their
    ``input_tags.two_d_array`` tag from it, so that scikit-learn's checks
    skip what needs numeric arrays.  A kernel that cannot be built from
    these parameters counts as taking arrays (``fit`` raises the error).

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
