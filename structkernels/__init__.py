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

import sys
from importlib import import_module
from types import ModuleType
from typing import Any

__version__ = "0.1.0"

# Every public name is served from its module on first use, so that
# `import structkernels` (and `structkernels --help`) stays light: no
# scikit-learn, numba or joblib until a kernel is built or a Gram computed.
_LAZY = {
    "Kernel": "structkernels.kernel",
    "Normalized": "structkernels.kernel",
    "SumKernel": "structkernels.kernel",
    "ProductKernel": "structkernels.kernel",
    "ScaledKernel": "structkernels.kernel",
    "normalize_gram": "structkernels.kernel",
    "GramLookup": "structkernels.kernels.lookup",
    "gram": "structkernels.gram",
    "GramInfo": "structkernels.gram",
    "kernel": "structkernels.registry",
    "list_kernels": "structkernels.registry",
    "register": "structkernels.registry",
    "as_kernel": "structkernels.registry",
    "measure": "structkernels.registry",
    "read_record": "structkernels.io",
    "load_model": "structkernels.model_io",
    "Path": "structkernels.structures",
    "Tree": "structkernels.structures",
    "Vocabulary": "structkernels.structures",
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

__all__ = list(_LAZY)


class _Package(ModuleType):
    """Keeps ``structkernels.gram`` and ``structkernels.kernel`` the functions.

    Importing the submodule of the same name would otherwise rebind the
    package attribute to the module (the import system sets it on first load).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and name in _LAZY:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'structkernels' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
