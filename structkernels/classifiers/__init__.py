"""Classifiers that use a structured kernel: SVM, kernelised hashcodes + random forest.

- :mod:`~structkernels.classifiers.svm`: :class:`KernelSVC`, a binary SVM on any
  registered kernel or a precomputed Gram (exact, or Nyström above a size);
- :mod:`~structkernels.classifiers.hashforest`: :class:`HashForestClassifier`, binary
  hash codes from kernel similarities to a random reference set fed to a random
  forest (Garg et al., AAAI 2019);
- :mod:`~structkernels.classifiers.selection`: :func:`select_by_inner_cv`,
  :class:`InnerCVClassifier` (a choice among candidates by grouped inner
  cross-validation on training data only) and :func:`slice_gram`.

Imports: neighbors, kernels, the engine, structures, utils, registry.
"""

from structkernels.classifiers.hashforest import HashForestClassifier
from structkernels.classifiers.selection import InnerCVClassifier, select_by_inner_cv, slice_gram
from structkernels.classifiers.svm import ApproximationWarning, KernelSVC

__all__ = [
    "KernelSVC", "HashForestClassifier", "select_by_inner_cv", "InnerCVClassifier", "slice_gram",
    "ApproximationWarning",
]
