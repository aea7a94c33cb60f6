"""File formats: every reader and writer of corpora, graphs, structures and dataset arrays,
reached through the public faces (:mod:`structkernels.relations`, :mod:`structkernels.graphs`,
:mod:`structkernels.amr`, ``structkernels``)."""
