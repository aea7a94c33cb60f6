"""Graphs from where researchers have them, into one graph model (:mod:`structkernels.graphs.model`).

The readers and writers live in :mod:`structkernels.formats`; this face serves them, and
what finds candidates in any labelled graph, lazily (``docs/graphs.md``).

Examples
--------
>>> from structkernels.graphs import parse_dot, extract_candidates
>>> g = parse_dot('digraph { b [label="bind-01"]; "p Ras" [label=Ras]; '
...               '"q Raf" [label=Raf]; b -> "p Ras" [label=ARG0]; b -> "q Raf" [label=ARG1]; }')
>>> len(extract_candidates(g))
5
"""

from __future__ import annotations

from structkernels.utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "structkernels.formats.graphs": ["read_graphs", "infer_format", "FORMATS"],
    "structkernels.formats.dot": ["read_dot", "parse_dot", "to_dot", "write_dot"],
    "structkernels.formats.conllu": ["read_conllu", "parse_conllu"],
    "structkernels.formats.spacy_docs": ["read_spacy", "from_spacy"],
    "structkernels.formats.networkx_graphs": ["read_networkx", "from_networkx"],
    ".model": ["Graph", "GraphCorpus", "GraphFormatError", "SkippedGraph"],
    ".lexicon": ["Lexicon", "find_interactions", "find_entities", "extract_candidates",
                 "candidate_records"],
})
