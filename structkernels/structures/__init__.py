"""Structures the kernels compare, apart from the kernels (KeLP style): :class:`Path`,
:class:`Tree`, :class:`LabelledGraph` (with :class:`GraphFrame`), label interning
(:class:`Vocabulary`) and encoded lists sharing a vocabulary (:class:`PathList`,
:class:`TreeList`).  Reading structure files is :mod:`structkernels.formats.structures`.

Imports: :mod:`structkernels.utils` and :mod:`structkernels.registry` only.
"""

from structkernels.structures.encoded import (
    EncodedList,
    PathList,
    TreeList,
    is_encoded,
    take,
)
from structkernels.structures.labelled_graph import GraphFrame, LabelledGraph
from structkernels.structures.path import Path, StructureError
from structkernels.structures.tree import Tree
from structkernels.structures.vocabulary import NO_EDGE, EncodedPaths, EncodedTrees, Vocabulary

__all__ = [
    "Path", "Tree", "Vocabulary", "EncodedList", "EncodedPaths", "EncodedTrees", "PathList",
    "TreeList", "StructureError", "take", "is_encoded", "NO_EDGE", "LabelledGraph", "GraphFrame",
]
