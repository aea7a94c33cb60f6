"""Structures the kernels compare, apart from the kernels (KeLP style): paths, trees,
labelled graphs, and encoded lists sharing a vocabulary; imports utils and registry only.
"""

from structkernels.utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".encoded": ["NO_EDGE", "EncodedList", "PathList", "TreeList", "Vocabulary", "is_encoded",
                 "take"],
    ".labelled_graph": ["GraphFrame", "LabelledGraph"],
    ".path": ["Path", "StructureError"],
    ".tree": ["Tree"],
})
