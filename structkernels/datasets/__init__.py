"""Corpora, read into structures: interaction paths, PubMed45 labels, re-writing pairs, views
(served lazily)."""

from __future__ import annotations

from structkernels.utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".interactions": ["InteractionDataset", "InteractionFormatError", "SkippedRecord",
                      "load_interactions", "split_of", "SHIPPED_DATASET"],
    ".pubmed45": ["load_pubmed45", "resolve_tuple", "SWAPPED_MODES"],
    "structkernels.formats.labels": ["read_label_records"],
    ".rewriting": ["CorpusFormatError", "RewritingCorpus", "load_msrp", "load_rte",
                   "load_glue_rte", "load_rewritings", "aligned_trees"],
    ".views": ["MultiViewDataset", "combine_views", "json_key"],
})
