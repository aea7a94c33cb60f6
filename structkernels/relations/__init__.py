"""Annotated relation corpora: sentences, their entities, gold interactions and candidate pairs.

The data model is :mod:`structkernels.relations.corpus`; the readers of interaction XML (the
unified PPI corpora), BRAT standoff, JSON Lines, PubTator and BioC (XML and JSON) and the pair
writers live in :mod:`structkernels.formats` and are served here under their public names;
see docs/relations.md.  Names are served lazily.
"""

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
