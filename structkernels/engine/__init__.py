"""The Gram engine: blocking, parallelism, caching, memory maps and checks of kernel values.

- :mod:`~structkernels.engine.gram`: :func:`~structkernels.engine.gram.gram` computes the
  Gram matrix of any kernel object (``gram_block``, ``gram_block_symmetric``, ``diag_block``,
  ``check_input``, ``validate_params``); names are resolved above, by
  :func:`structkernels.gram`;
- :mod:`~structkernels.engine.checks`: finiteness, symmetry, PSD probes, normalisation;
- ``_blocks`` (private): cutting the matrix into blocks, computing, normalising, placing
  and writing a block (in memory or into a ``.npy`` file), grouping blocks for workers;
- ``_keys`` (private): the keys of caches and resumable runs (data, kernel, code version);
- :mod:`~structkernels.engine.distributed`: the same blocks on a dask cluster.

Inside: ``checks`` and ``_blocks`` at the bottom, ``_keys`` above them, ``gram`` above
those, ``distributed`` on top.

Imports: :mod:`structkernels.structures` and :mod:`structkernels.utils` only; kernels
(one level up) call it.
"""
