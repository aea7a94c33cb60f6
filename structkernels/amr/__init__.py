"""AMR graphs to the structures the kernels compare: what is AMR's alone (the distant labels,
:mod:`structkernels.amr.labels`), and the graphs names that serve every source (PENMAN,
the graph model, concept lists, candidates) under their AMR names.

Examples
--------
>>> from structkernels.amr import parse_amr, generate_candidates, candidate_path
>>> g = parse_amr("(b / bind-01 :ARG1 (e / enzyme) :ARG2 (s / small-molecule))")
>>> c = generate_candidates(g)[2]
>>> str(candidate_path(g, c))
'(bind) (ARG1, enzyme) (bind) (ARG2, small-molecule)'
"""

from structkernels.amr.labels import DistantLabel, distant_label
from structkernels.formats.penman import parse_amr, read_amr, to_networkx
from structkernels.graphs.candidates import (
    Candidate,
    CandidateError,
    CandidateExtractor,
    candidate_path,
    candidate_subgraph,
    candidate_tree,
    generate_candidates,
)
from structkernels.graphs.concepts import (
    COORDINATION_CONCEPTS,
    ENTITY_CONCEPTS,
    INTERACTION_CONCEPTS,
)
from structkernels.graphs.model import (
    AMRCorpus,
    AMRFormatError,
    AMRGraph,
    SkippedGraph,
    concept_label,
)

__all__ = [
    "read_amr", "parse_amr", "AMRFormatError", "AMRGraph", "AMRCorpus", "SkippedGraph",
    "to_networkx", "concept_label", "Candidate", "CandidateError", "CandidateExtractor",
    "generate_candidates", "candidate_subgraph", "candidate_path", "candidate_tree",
    "DistantLabel", "distant_label", "INTERACTION_CONCEPTS", "ENTITY_CONCEPTS",
    "COORDINATION_CONCEPTS",
]
