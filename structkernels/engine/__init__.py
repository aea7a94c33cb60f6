"""The Gram engine: blocking, parallelism, caching, memory maps and checks of kernel values.

- :mod:`~structkernels.engine.gram`: :func:`~structkernels.engine.gram.gram`, the one Gram
  function (``structkernels.gram`` and ``Kernel.gram`` pass their options to it);
- :mod:`~structkernels.engine.parallel`: the one place threads, processes and dask clients
  are started: :func:`~structkernels.engine.parallel.plan` decides how to run from the
  kernel and the work, :func:`~structkernels.engine.parallel.map_tasks` runs (serial,
  threads, processes, dask), :func:`~structkernels.engine.parallel.map_blocks` computes
  and reduces blocks of a source in workers;
- :mod:`~structkernels.engine.checks`: finiteness, symmetry, PSD probes, and all of
  normalisation (scales, whole matrices in place or not, single blocks);
- ``_blocks`` (private): cutting the matrix into blocks, computing, placing and writing a
  block (in memory or into a ``.npy`` file), grouping blocks for workers;
- ``_keys`` (private): the keys of caches and resumable runs (data, kernel, code version);
- ``_resume`` (private): the resumable route of ``gram(out=..., backend="dask")`` (markers,
  run keys, the per-worker committer of flushed blocks);
- :mod:`~structkernels.engine.source`: kernel access for every consumer of kernel values
  outside a whole Gram matrix (:class:`~structkernels.engine.source.KernelSource`).

Inside: ``checks`` and ``parallel`` at the bottom, ``_blocks`` and ``_keys`` above them,
``_resume`` above those, ``gram`` above it, ``source`` on top.  Imports:
:mod:`structkernels.structures` and :mod:`structkernels.utils` only.
"""
