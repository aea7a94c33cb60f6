"""Nonstationary path kernels: learning σ (Garg et al.) and the files that keep it.

- :mod:`~structkernels.npk.learner`: :class:`NonstationaryLearner`;
- :mod:`~structkernels.npk.sigma_knn`: the leave-one-out k-NN objective;
- :mod:`~structkernels.npk.model`: train-npk model files (:func:`load_model`).

Imports: neighbors, kernels, the engine, structures, utils.
"""
