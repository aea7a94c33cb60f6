"""Annotated relation corpora: sentences, their entities, gold interactions and candidate pairs.

Readers of interaction XML (the unified PPI corpora), BRAT standoff, JSON Lines, PubTator
and BioC (XML and JSON) build one model (:mod:`structkernels.relations.model`); see docs/relations.md.
"""

from structkernels.relations.model import (
    Entity,
    EntityPair,
    Interaction,
    RelationCorpus,
    RelationFormatError,
    Sentence,
    SkippedRecord,
)
from structkernels.relations.readers import (
    read_bioc,
    read_brat,
    read_interaction_xml,
    read_pubtator,
    read_relations,
    read_relations_jsonl,
    relation_format,
)
from structkernels.relations.streaming import RelationBatch, iter_relations
from structkernels.relations.writers import PairWriter, write_pairs

__all__ = [
    "Entity",
    "EntityPair",
    "Interaction",
    "PairWriter",
    "RelationBatch",
    "RelationCorpus",
    "RelationFormatError",
    "Sentence",
    "SkippedRecord",
    "iter_relations",
    "read_bioc",
    "read_brat",
    "read_interaction_xml",
    "read_pubtator",
    "read_relations",
    "read_relations_jsonl",
    "relation_format",
    "write_pairs",
]
