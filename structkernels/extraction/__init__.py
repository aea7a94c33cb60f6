"""Relation extraction from text: a trained model that scores the entity pairs of new sentences.

- :mod:`~structkernels.extraction.extractor`: :class:`RelationExtractor`, the "NPK SVM"
  relation model of :mod:`structkernels.relations.models` (parse with spaCy, the structure
  views of each pair: shortest dependency path, context, all-paths graph; σ learned by
  :class:`~structkernels.NonstationaryLearner`, an SVM on the composite kernel), saved and
  loaded as a checked JSON document, never a pickle.

Imports: classifiers, npk, relations, kernels, structures, utils.
See docs/relations.md, "Training an extractor and predicting from text".
"""

from structkernels.extraction.extractor import (
    EXTRACTOR_FORMAT,
    EXTRACTOR_VERSION,
    MAX_EXTRACTOR_BYTES,
    ExtractorFormatError,
    PipelineVersionWarning,
    RelationExtractor,
    composite_kernel,
)

__all__ = [
    "EXTRACTOR_FORMAT",
    "EXTRACTOR_VERSION",
    "MAX_EXTRACTOR_BYTES",
    "ExtractorFormatError",
    "PipelineVersionWarning",
    "RelationExtractor",
    "composite_kernel",
]
