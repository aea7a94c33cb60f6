"""structkernels: structured kernels over natural language.

Path, tree and string re-writing kernels with nonstationary (per-edge-label)
weights, a blocked parallel Gram engine, kernel hashing and k-NN, and a plugin
registry through Python entry points.

Examples
--------
>>> import structkernels as sk
>>> k = sk.kernel("rbf", sigma=1.0)
>>> "rbf" in sk.list_kernels()
True
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from structkernels.gram import GramInfo, gram
from structkernels.kernel import (
    Kernel,
    Normalized,
    ProductKernel,
    ScaledKernel,
    SumKernel,
    normalize_gram,
)
from structkernels.registry import as_kernel, kernel, list_kernels, measure, register
from structkernels.structures import Path, Tree, Vocabulary

__version__ = "0.1.0"

# Names served from their modules on first use, so that `import structkernels`
# stays light (no numba compilation, no scikit-learn estimators) until needed.
_LAZY = {
    "GramTransformer": "structkernels.bridge",
    "kernel_to_distance": "structkernels.bridge",
    "RandomKNNHash": "structkernels.hashing",
    "KernelLSH": "structkernels.hashing",
    "knn_graph": "structkernels.knn",
    "KNNGraph": "structkernels.knn",
    "KernelKNNClassifier": "structkernels.classifier",
    "NonstationaryLearner": "structkernels.learning",
    "read_graphs": "structkernels.graphs",
}

__all__ = [
    "Kernel",
    "Normalized",
    "SumKernel",
    "ProductKernel",
    "ScaledKernel",
    "normalize_gram",
    "gram",
    "GramInfo",
    "kernel",
    "list_kernels",
    "register",
    "as_kernel",
    "measure",
    "Path",
    "Tree",
    "Vocabulary",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'structkernels' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
