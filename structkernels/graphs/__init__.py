"""Graphs from where researchers have them, into one graph model (:mod:`structkernels.graphs.model`).

The readers and writers live in :mod:`structkernels.formats`; this face serves them lazily.

Readers (strict by default; :func:`~structkernels.formats.penman.read_amr` for PENMAN; ``on_error="skip"`` lists every graph left out):

- :func:`read_graphs`: any file or folder, the format from the extension;
- :func:`read_dot` / :func:`parse_dot`: Graphviz DOT, AMR or dependency
  graphs (the NPK authors' release; parsed by structkernels, pydot only writes); :func:`to_dot`,
  :func:`write_dot` write them;
- :func:`read_conllu` / :func:`parse_conllu`: CoNLL-U, via ``conllu``;
- :func:`read_spacy` / :func:`from_spacy`: spaCy ``Doc`` objects;
- :func:`read_networkx` / :func:`from_networkx`: networkx graphs with named
  label attributes (GraphML/GML files through :func:`read_graphs`).

Candidates and labels:

- :class:`Lexicon`, :func:`extract_candidates`, :func:`candidate_records`:
  candidates in any labelled graph (AMR concepts, collapsed names, trigger and
  entity lexicons; dependency paths);

PubMed45-format labels are read by :mod:`structkernels.datasets.pubmed45`; AMR and
dependency views of one candidate by :mod:`structkernels.datasets.views` and
:class:`structkernels.kernels.views.ViewKernel`.

See ``docs/graphs.md``.

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
