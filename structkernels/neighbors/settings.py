"""The k-NN classifier's settings by name: the main job's and those of structkernels 0.1.

Plain data with no imports, so that the command line (its argument defaults) and the
model-file reader (settings a file does not name) use the same values as
:class:`~structkernels.neighbors.classifier.KernelKNNClassifier` without loading it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAIN_JOB_SETTINGS", "PREVIOUS_DEFAULTS"]

#: The classifier settings of ``structkernels train-npk`` (its argument defaults are read
#: from here), which the classifier's defaults follow; the hash settings apply when
#: ``hashing`` is given.  On 2,000 training / 1,000 test structures of the shipped
#: data (5 samples) they give F1 33.7 exact and 32.9 hashed where the 0.1 defaults give 0.0
#: (chance 3.5).
MAIN_JOB_SETTINGS: dict[str, Any] = {
    "kernel": "path",
    "kernel_params": {"lam": 0.8, "node_mismatch": 0.9},
    "normalize": True,
    "n_neighbors": 8,
    "weights": "similarity",
    "threshold": "auto",
    "hashing": "random-knn",
    "n_tables": 2,
    "probe": 1,
    "n_probes": 3,
}


#: The defaults of structkernels 0.1, for settings saved without these keys (train-npk
#: model files of version 1): majority vote, no normalisation, one hash table, no probes.
#: With them, ``kernel_params={}`` gives the path kernel its own parameters (no partial
#: credit), as ``None`` did then.
PREVIOUS_DEFAULTS: dict[str, Any] = {
    "weights": "uniform",
    "threshold": None,
    "normalize": False,
    "n_tables": 1,
    "probe": 0,
    "n_probes": None,
}
