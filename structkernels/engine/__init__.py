"""The Gram engine: blocking, parallelism, caching, memory maps and checks of kernel values;
imports :mod:`structkernels.structures` and :mod:`structkernels.utils` only."""
