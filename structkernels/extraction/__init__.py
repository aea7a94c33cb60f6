"""Relation extraction from text: a trained model that scores the entity pairs of new sentences.

- :mod:`~structkernels.extraction.extractor`: :class:`RelationExtractor`, the "NPK SVM"
  relation model of :mod:`structkernels.relations.models` (parse with spaCy, the structure
  views of each pair: shortest dependency path, context, all-paths graph; σ learned by
  :class:`~structkernels.NonstationaryLearner`, an SVM on the composite kernel), saved and
  loaded as a checked JSON document, never a pickle.
- :mod:`~structkernels.extraction.prediction`: :func:`predict`, relation corpora scored into
  an output file batch by batch, on the route ``backend`` names (in this process, a child
  parsing ahead, a dask cluster), resumable.
- :mod:`~structkernels.extraction.stream`: :func:`predict_stream`, batches of new text
  scored in turn, the next batch parsed in a child process while one is scored.
- :mod:`~structkernels.extraction.distributed`: the dask route.
- :mod:`~structkernels.extraction.files`: the extractor file's format, its limits
  (:data:`MAX_EXTRACTOR_BYTES`, :data:`MAX_REFERENCES`, ...) and the checks of every field.

Names are served lazily (the parsing child of ``predict`` starts before the extractor's
modules load).  Imports: classifiers, npk, relations, kernels, structures, utils.
See docs/relations.md, "Training an extractor and predicting from text".
"""

from __future__ import annotations

from structkernels.utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".extractor": ["PipelineVersionWarning", "RelationExtractor", "describe_model"],
    ".files": ["EXTRACTOR_FORMAT", "EXTRACTOR_VERSION", "MAX_EXTRACTOR_BYTES",
               "MAX_GRAPH_CELLS", "MAX_REFERENCES", "MAX_REFERENCE_SIZE",
               "ExtractorFormatError"],
    ".stream": ["predict_stream"],
    ".prediction": ["predict", "PredictError", "early_parser"],
})
