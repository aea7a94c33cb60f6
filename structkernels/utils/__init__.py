"""Shared mechanisms with no knowledge of kernels or structures: atomic writes,
input limits, numeric checks, optional imports, progress.

Every other package of structkernels may import from here; nothing here imports
from another package of structkernels.
"""
