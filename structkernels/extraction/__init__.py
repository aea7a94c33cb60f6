"""Relation extraction from text: a trained model that scores the entity pairs of new sentences.

- :mod:`~structkernels.extraction.extractor`: :class:`RelationExtractor` (parse with spaCy,
  the shortest dependency path and the context of each pair, σ learned by
  :class:`~structkernels.NonstationaryLearner`, an SVM on the composite kernel), saved and
  loaded as a checked JSON document, never a pickle.

Imports: experiments, classifiers, npk, relations, kernels, structures, utils.
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
