"""File formats: every reader and writer of corpora, graphs, structures and dataset arrays.

Users reach the readers through the public faces (:mod:`structkernels.relations`,
:mod:`structkernels.graphs`, :mod:`structkernels.amr`, ``structkernels``).

Imports: relations' data model, graphs' model, structures, text, registry, utils.
"""
