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

from structkernels.utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    ".labels": ["DistantLabel", "distant_label"],
    "structkernels.formats.penman": ["parse_amr", "read_amr", "to_networkx"],
    "structkernels.graphs.candidates": ["Candidate", "CandidateError", "CandidateExtractor",
                                        "candidate_path", "candidate_subgraph",
                                        "candidate_tree", "generate_candidates"],
    "structkernels.graphs.concepts": ["COORDINATION_CONCEPTS", "ENTITY_CONCEPTS",
                                      "INTERACTION_CONCEPTS"],
    "structkernels.graphs.model": ["AMRCorpus", "AMRFormatError", "AMRGraph", "SkippedGraph",
                                   "concept_label"],
})
