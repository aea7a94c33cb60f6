"""Relation extraction from text: a trained model that scores the entity pairs of new sentences.

- :mod:`~structkernels.extraction.extractor`: :class:`RelationExtractor`, the "NPK SVM"
  relation model of :mod:`structkernels.relations.models` (parse with spaCy, the structure
  views of each pair: shortest dependency path, context, all-paths graph; σ learned by
  :class:`~structkernels.NonstationaryLearner`, an SVM on the composite kernel), saved and
  loaded as a checked JSON document, never a pickle.
- :mod:`~structkernels.extraction.stream`: :func:`predict_stream`, batches of new text
  scored in turn, the next batch parsed in a child process while one is scored.
- :mod:`~structkernels.extraction.files`: the extractor file's format, its limits
  (:data:`MAX_EXTRACTOR_BYTES`, :data:`MAX_REFERENCES`, ...) and the checks of every field.

Imports: classifiers, npk, relations, kernels, structures, utils.
See docs/relations.md, "Training an extractor and predicting from text".
"""

from structkernels.extraction.extractor import (
    PipelineVersionWarning,
    RelationExtractor,
    describe_model,
)
from structkernels.extraction.files import (
    EXTRACTOR_FORMAT,
    EXTRACTOR_VERSION,
    MAX_EXTRACTOR_BYTES,
    MAX_GRAPH_CELLS,
    MAX_REFERENCE_SIZE,
    MAX_REFERENCES,
    ExtractorFormatError,
)
from structkernels.extraction.stream import predict_stream

__all__ = [
    "EXTRACTOR_FORMAT",
    "EXTRACTOR_VERSION",
    "MAX_EXTRACTOR_BYTES",
    "MAX_GRAPH_CELLS",
    "MAX_REFERENCES",
    "MAX_REFERENCE_SIZE",
    "ExtractorFormatError",
    "PipelineVersionWarning",
    "RelationExtractor",
    "describe_model",
    "predict_stream",
]
