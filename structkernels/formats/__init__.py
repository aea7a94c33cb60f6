"""File formats: every reader and writer of corpora, graphs, structures and dataset arrays.

One package reads what researchers have into the models the rest of structkernels uses:
relation corpora (:mod:`~structkernels.relations.corpus`) from interaction XML, BRAT,
JSON Lines, PubTator and BioC (:mod:`.relations`: :func:`read_relations`; :mod:`.batches`:
:func:`iter_relations`; :mod:`.pairs` writes scored pairs), graphs
(:mod:`~structkernels.graphs.model`) from PENMAN, DOT, CoNLL-U, spaCy and networkx
(:mod:`.graphs`: :func:`read_graphs`), structure records through the ``structkernels.readers``
registry (:mod:`.structures`) and a dataset's binary arrays (:mod:`.arrays`).  Users reach the
readers through the public faces (:mod:`structkernels.relations`, :mod:`structkernels.graphs`,
:mod:`structkernels.amr`, ``structkernels``).

Imports: relations' data model, graphs' model, structures, text, registry, utils.
"""
