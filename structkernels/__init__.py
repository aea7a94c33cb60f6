"""structkernels: structured kernels over natural language.

Path, tree and string re-writing kernels with nonstationary (per-edge-label)
weights, a blocked parallel Gram engine, kernel hashing and k-NN, and a plugin
registry through Python entry points.

Examples
--------
>>> import structkernels as sk
>>> k = sk.kernel("rbf", bandwidth=1.0)
>>> "rbf" in sk.list_kernels()
True
>>> sk.relations.read_relations is sk.read_relations  # subpackages: imported on first use
True
"""

from __future__ import annotations

from structkernels.utils import lazy_exports

__version__ = "0.1.0"

#: The package's own subpackages and modules, reachable as attributes in a new process
#: (``sk.relations.read_relations``) and imported on first use, as SciPy does.
_SUBMODULES = (
    "amr", "classifiers", "cli", "datasets", "engine", "experiments", "extraction", "formats",
    "graphs", "kernels", "neighbors", "npk", "registry", "relations", "sklearn", "structures",
    "text", "utils",
)

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".kernels.base": ["Kernel", "Normalized", "SumKernel", "ProductKernel", "ScaledKernel"],
    ".kernels.names": ["kernel", "list_kernels", "register", "as_kernel", "gram"],
    ".kernels.lookup": ["GramLookup"],
    ".engine.checks": ["normalize_gram"],
    ".engine.gram": ["GramInfo"],
    ".registry": ["measure"],
    ".structures": ["Path", "Tree", "Vocabulary"],
    ".formats.structures": ["read_record"],
    ".sklearn": ["GramTransformer", "kernel_to_distance"],
    ".neighbors.hashing": ["RandomKNNHash", "KernelLSH"],
    ".neighbors.graph": ["knn_graph", "KNNGraph"],
    ".neighbors.classifier": ["KernelKNNClassifier"],
    ".npk.learner": ["NonstationaryLearner"],
    ".npk.model": ["load_model"],
    ".classifiers": ["KernelSVC", "HashForestClassifier"],
    ".relations": ["read_relations", "RelationCorpus"],
    ".relations.parse": ["DependencyParser"],
    ".extraction": ["RelationExtractor"],
    ".graphs": ["read_graphs"],
    ".utils": ["StructkernelsError", "StructkernelsWarning"],
}, submodules=_SUBMODULES)
