"""Structures the kernels compare, apart from the kernels (KeLP style): paths, trees,
labelled graphs, and encoded lists sharing a vocabulary; imports utils and registry only.
"""

from structkernels.structures.encoded import (
    NO_EDGE,
    EncodedList,
    PathList,
    TreeList,
    Vocabulary,
    is_encoded,
    take,
)
from structkernels.structures.labelled_graph import GraphFrame, LabelledGraph
from structkernels.structures.path import Path, StructureError
from structkernels.structures.tree import Tree

__all__ = [
    "Path", "Tree", "Vocabulary", "EncodedList", "PathList", "TreeList", "StructureError",
    "take", "is_encoded", "NO_EDGE", "LabelledGraph", "GraphFrame",
]
