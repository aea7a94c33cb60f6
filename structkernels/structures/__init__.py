"""Structures the kernels compare, apart from the kernels (KeLP style).

- :mod:`~structkernels.structures.path`: :class:`Path`, the ``(edge, node)`` tuples of a
  walk through a graph, and :class:`StructureError`;
- :mod:`~structkernels.structures.tree`: :class:`Tree`, ordered labelled trees;
- :mod:`~structkernels.structures.labelled_graph`: :class:`LabelledGraph`, weighted directed
  graphs with label sets (the all-paths graph kernel's input), and :class:`GraphFrame`, a
  family of them sharing their edges;
- :mod:`~structkernels.structures.vocabulary`: :class:`Vocabulary`, label interning;
- :mod:`~structkernels.structures.encoded`: :class:`PathList`, :class:`TreeList` (encoded
  lists sharing a vocabulary), :func:`take`, :func:`is_encoded`;
- :mod:`~structkernels.formats.structures`: :func:`read_record`, :func:`read_structures`
  (structure files and the ``structkernels.readers`` entry points).

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
    "Path", "Tree", "Vocabulary", "EncodedList", "EncodedPaths", "EncodedTrees", "PathList", "TreeList",
    "StructureError", "take", "is_encoded", "NO_EDGE", "LabelledGraph",
    "GraphFrame",
]
