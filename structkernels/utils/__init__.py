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
from structkernels.utils._limits import (
    MAX_FILE_BYTES,
    MAX_RECORD_BYTES,
    MAX_RECORD_DEPTH,
    BadLine,
    RecordError,
    decode_lines,
    iter_lines,
    loads_record,
    one_line,
    read_partial,
    split_lines,
)
from structkernels.utils._numeric import NonFiniteError, check_finite, first_nonfinite

__all__ = ["WriteError", "atomic_path", "atomic_open", "save_npy", "npy_path", "atomic_memmap"]
__all__ += ["read_bounded", "InputTooLargeError", "CorruptInputError"]
__all__ += ["dumps_finite", "find_nonfinite"]
__all__ += ["NonFiniteError", "check_finite", "first_nonfinite"]
__all__ += ["RecordError", "BadLine", "loads_record", "iter_lines", "decode_lines", "split_lines"]
__all__ += ["one_line", "read_partial", "MAX_FILE_BYTES"]
__all__ += ["MAX_RECORD_DEPTH", "MAX_RECORD_BYTES"]
