"""Neighbours under a kernel: the k-NN graph, kernel hashing and the k-NN classifier.

As in :mod:`sklearn.neighbors`, the graph, the index and the estimator are apart:

- :mod:`~structkernels.neighbors.graph`: :func:`knn_graph`, :class:`KNNGraph`, exact and
  hashed k-NN graphs, leave-one-out votes;
- :mod:`~structkernels.neighbors.hashing`: :class:`RandomKNNHash`, :class:`KernelLSH`;
- :mod:`~structkernels.neighbors.classifier`: :class:`KernelKNNClassifier`.

Imports: kernels, the engine, structures, utils.
"""
