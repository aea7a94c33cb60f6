"""Neighbours under a kernel: the k-NN graph, kernel hashing and the k-NN classifier, apart
as in :mod:`sklearn.neighbors`.

Imports: kernels, the engine, structures, utils.
"""
