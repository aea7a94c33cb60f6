"""Nonstationary path kernels: learning σ (Garg et al.) and the files that keep it.

Imports: neighbors, kernels, the engine, structures, utils.
"""
