"""Annotated relation corpora: sentences, their entities, gold interactions and candidate pairs.

Readers of interaction XML (the unified PPI corpora), BRAT standoff and JSON Lines build one
model (:mod:`structkernels.relations.model`); see docs/relations.md.
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
    read_brat,
    read_interaction_xml,
    read_relations,
    read_relations_jsonl,
)

__all__ = [
    "Entity",
    "EntityPair",
    "Interaction",
    "RelationCorpus",
    "RelationFormatError",
    "Sentence",
    "SkippedRecord",
    "read_brat",
    "read_interaction_xml",
    "read_relations",
    "read_relations_jsonl",
]
