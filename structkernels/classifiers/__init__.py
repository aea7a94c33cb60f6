"""Classifiers that use a structured kernel: :class:`KernelSVC` (exact or Nyström),
:class:`HashForestClassifier` (kernelised hash codes and a random forest, Garg et al., AAAI
2019) and the choice among classifiers by grouped inner cross-validation (:mod:`.selection`).

Imports: neighbors, kernels, the engine, structures, utils, registry.
"""

from structkernels.classifiers.hashforest import HashForestClassifier
from structkernels.classifiers.selection import InnerCVClassifier, select_by_inner_cv, slice_gram
from structkernels.classifiers.svm import ApproximationWarning, KernelSVC

__all__ = [
    "KernelSVC", "HashForestClassifier", "select_by_inner_cv", "InnerCVClassifier", "slice_gram",
    "ApproximationWarning",
]
