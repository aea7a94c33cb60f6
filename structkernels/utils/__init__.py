"""Shared mechanisms with no knowledge of kernels or structures: atomic writes,
input limits, numeric checks.

Every other package of structkernels may import from here; nothing here imports
from another package of structkernels.
"""

from structkernels.utils._atomic import (
    WriteError,
    atomic_memmap,
    atomic_open,
    atomic_path,
    npy_path,
    save_npy,
)
from structkernels.utils._bounded import CorruptInputError, InputTooLargeError, read_bounded
from structkernels.utils._jsonout import dumps_finite, find_nonfinite
from structkernels.utils._numeric import NonFiniteError, check_finite, first_nonfinite

__all__ = ["WriteError", "atomic_path", "atomic_open", "save_npy", "npy_path", "atomic_memmap"]
__all__ += ["read_bounded", "InputTooLargeError", "CorruptInputError"]
__all__ += ["dumps_finite", "find_nonfinite"]
__all__ += ["NonFiniteError", "check_finite", "first_nonfinite"]
