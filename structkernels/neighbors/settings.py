"""Named configurations: what a kernel name means to the classifiers, and the main job's.

Every default belongs to the constructor of what it configures; this module only *names*
configurations, each listing what differs from those constructors.  It is plain data with no
imports, so that the command line and the model-file reader can use it without loading the
estimators.  In :data:`CLASSIFIER_KERNELS` a kernel *name* with ``kernel_params=None`` means
its named configuration to the classifiers (``"path"``: :data:`PATH_PARTIAL_CREDIT`);
everywhere else (the learner, the hashers, ``gram``) a name is its constructor's defaults.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "PATH_PARTIAL_CREDIT", "CLASSIFIER_KERNELS", "classifier_kernel_params", "MAIN_JOB",
    "MAIN_JOB_SETTINGS", "PREVIOUS_DEFAULTS",
]

#: The path kernel with partial credit for two tuples with equal edges and different nodes:
#: ``PathKernel(node_mismatch=0.9)`` (``PathKernel``'s own 0 is the paper's indicator).
PATH_PARTIAL_CREDIT: dict[str, Any] = {"node_mismatch": 0.9}

#: What a kernel name given with ``kernel_params=None`` means to the classifiers
#: (``KernelKNNClassifier``, ``KernelSVC``, ``HashForestClassifier``); names not listed
#: take their kernel's constructor defaults.
CLASSIFIER_KERNELS: dict[str, dict[str, Any]] = {"path": PATH_PARTIAL_CREDIT}


def classifier_kernel_params(kernel: Any, kernel_params: dict | None) -> dict | None:
    """``kernel_params`` as a classifier builds ``kernel`` with: a copy of the named
    configuration of :data:`CLASSIFIER_KERNELS` for a listed name with None, else as given.

    Examples
    --------
    >>> classifier_kernel_params("path", None)
    {'node_mismatch': 0.9}
    >>> classifier_kernel_params("path", {"lam": 0.5}), classifier_kernel_params("rbf", None)
    ({'lam': 0.5}, None)
    """
    if kernel_params is None and isinstance(kernel, str) and kernel in CLASSIFIER_KERNELS:
        return dict(CLASSIFIER_KERNELS[kernel])
    return kernel_params


#: The main job (``structkernels train-npk``, the nonstationary kernels paper's Sec. 6-7):
#: only what differs from the constructors' defaults, for ``NonstationaryLearner``
#: (``learner``), ``KernelKNNClassifier`` (``classifier``) and the baselines table's
#: sub-samples and seeds (``evaluation``).
MAIN_JOB: dict[str, Any] = {
    "kernel": "path",
    "kernel_params": PATH_PARTIAL_CREDIT,
    "learner": {"beta": 25, "objective": "knn-ap"},
    "classifier": {"normalize": True, "hashing": "random-knn", "n_tables": 2, "probe": 1,
                   "n_probes": 3},
    "evaluation": {"table_train": 2000, "table_test": 3000, "seeds": 5, "random_state": 0},
}

#: The main job's k-NN classifier settings in full, as ``KernelKNNClassifier`` keywords:
#: its defaults (``n_neighbors=8``, ``weights="similarity"``, ``threshold="auto"``, the
#: path kernel of :data:`CLASSIFIER_KERNELS`) with :data:`MAIN_JOB`'s classifier settings.
MAIN_JOB_SETTINGS: dict[str, Any] = {
    "kernel": MAIN_JOB["kernel"],
    "kernel_params": dict(MAIN_JOB["kernel_params"]),
    "n_neighbors": 8,
    "weights": "similarity",
    "threshold": "auto",
    **MAIN_JOB["classifier"],
}


#: The defaults of structkernels 0.1, for settings saved without these keys (train-npk
#: model files of version 1): majority vote, no normalisation, one hash table, no probes.
#: With them, ``kernel_params={}`` gives the path kernel its own parameters (no partial
#: credit), as ``None`` did then.
PREVIOUS_DEFAULTS: dict[str, Any] = {
    "weights": "uniform", "threshold": None, "normalize": False, "n_tables": 1, "probe": 0,
    "n_probes": None,
}
