"""The Gram engine: blocking, parallelism, caching, memory maps and checks of kernel values.

- :mod:`~structkernels.engine.gram`: :func:`~structkernels.engine.gram.gram` computes the
  Gram matrix of any kernel object (``gram_block``, ``gram_block_symmetric``, ``diag_block``,
  ``check_input``, ``validate_params``); names are resolved above, by
  :func:`structkernels.gram`;
- :mod:`~structkernels.engine.checks`: finiteness, symmetry, PSD probes, normalisation;
- :mod:`~structkernels.engine.distributed`: the same blocks on a dask cluster.

Imports: :mod:`structkernels.structures` and :mod:`structkernels.utils` only; kernels
(one level up) call it.
"""
