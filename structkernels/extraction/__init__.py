"""Relation extraction from text: a trained model that scores the entity pairs of new sentences.

:class:`RelationExtractor` (``extractor``: the "NPK SVM" relation model, saved as a checked
JSON document, never a pickle; its file format in ``files``) and :func:`predict`
(``prediction``: relation corpora scored into a file batch by batch, in this process, with a
child parsing ahead (``stream``) or on a dask cluster (``distributed``), resumable).  Names
are served lazily: the parsing child of ``predict`` starts before the extractor's modules
load.  See docs/relations.md, "Training an extractor and predicting from text".
"""

from __future__ import annotations

from structkernels.utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".extractor": ["RelationExtractor", "describe_model"],
    "._trained": ["PipelineVersionWarning"],
    ".files": ["EXTRACTOR_FORMAT", "EXTRACTOR_VERSION", "MAX_EXTRACTOR_BYTES",
               "MAX_GRAPH_CELLS", "MAX_REFERENCES", "MAX_REFERENCE_SIZE",
               "ExtractorFormatError"],
    ".stream": ["predict_stream"],
    ".prediction": ["predict", "PredictError", "early_parser"],
})
