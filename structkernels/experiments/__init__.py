"""Experiment runners on top of the library: baselines tables and plots.

Imports: anything below (npk, neighbors, kernels, datasets); nothing imports it but the
command line.
"""
