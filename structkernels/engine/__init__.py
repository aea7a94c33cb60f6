"""The Gram engine: blocking, parallelism, caching, memory maps and checks of kernel values.

``gram`` (the one Gram function), ``parallel`` (the one executor), ``checks`` (value checks
and all normalisation), ``source`` (kernel access); private: ``_blocks``, ``_keys``,
``_resume``.  Imports :mod:`structkernels.structures` and :mod:`structkernels.utils` only.
"""
