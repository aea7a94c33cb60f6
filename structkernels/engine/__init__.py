"""The Gram engine: blocking, parallelism, caching, memory maps and checks of kernel values.

- :mod:`~structkernels.engine.gram`: :func:`~structkernels.engine.gram.gram` computes the
  Gram matrix of any kernel object (``gram_block``, ``gram_block_symmetric``, ``diag_block``,
  ``check_input``, ``validate_params``); names are resolved above, by
  :func:`structkernels.gram`;
- :mod:`~structkernels.engine.checks`: finiteness, symmetry, PSD probes, normalisation;
- ``_blocks`` (private): cutting the matrix into blocks, computing, normalising, placing
  and writing a block (in memory or into a ``.npy`` file), grouping blocks for workers;
- ``_keys`` (private): the keys of caches and resumable runs (data, kernel, code version);
- :mod:`~structkernels.engine.distributed`: the same blocks on a dask cluster;
- :mod:`~structkernels.engine.parallel`: the one place threads and processes are started:
  :func:`~structkernels.engine.parallel.map_tasks` (threads versus processes, chunks
  balanced by cost, order, progress, interruption) and
  :func:`~structkernels.engine.parallel.map_blocks` (blocks of kernel values computed and
  reduced in workers, as scikit-learn's ``pairwise_distances_chunked(reduce_func=...)``);
- :mod:`~structkernels.engine.source`: kernel access for every consumer of kernel values
  outside a whole Gram matrix: :class:`~structkernels.engine.source.KernelSource` (checked
  input, cached diagonal, normalisation scales, finiteness checks naming the pair,
  evaluation count, cache key), :class:`~structkernels.engine.source.PrecomputedSource`
  and :func:`~structkernels.engine.source.check_precomputed_gram`, the one validator of
  precomputed Gram matrices.

Inside: ``checks``, ``_blocks`` and ``parallel`` at the bottom, ``_keys`` above them,
``gram`` above those, ``source`` and ``distributed`` on top.

Imports: :mod:`structkernels.structures` and :mod:`structkernels.utils` only; kernels
(one level up) call it.
"""
