"""Annotated relation corpora: the data model (:mod:`structkernels.relations.corpus`), and the
readers and pair writers of :mod:`structkernels.formats` served lazily under their public
names (docs/relations.md)."""

from __future__ import annotations

from structkernels.utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".corpus": ["Entity", "EntityPair", "Interaction", "RelationCorpus", "RelationFormatError",
                "Sentence", "SkippedRecord"],
    "structkernels.formats.relations": ["read_bioc", "read_brat", "read_interaction_xml",
                                        "read_pubtator", "read_relations",
                                        "read_relations_jsonl", "relation_format"],
    "structkernels.formats.batches": ["RelationBatch", "iter_relations"],
    "structkernels.formats.pairs": ["PairWriter", "write_pairs"],
})
