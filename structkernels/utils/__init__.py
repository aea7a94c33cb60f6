"""Shared mechanisms with no knowledge of kernels or structures: atomic writes,
input limits, numeric checks.

Every other package of structkernels may import from here; nothing here imports
from another package of structkernels.  Names are served lazily, so that
importing one of them (say :func:`split_lines` in a command module) does not
load NumPy for the command line's ``--help``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "_atomic": ["WriteError", "atomic_path", "atomic_open", "save_npy", "npy_path",
                "atomic_memmap", "move_into_place"],
    "_npy": ["NpyFormatError", "read_npy"],
    "_bounded": ["read_bounded", "InputTooLargeError", "CorruptInputError"],
    "_jsonout": ["dumps_finite", "find_nonfinite", "check_header"],
    "_numeric": ["NonFiniteError", "check_finite", "first_nonfinite", "describe_nonfinite"],
    "_limits": ["RecordError", "BadLine", "loads_record", "iter_lines", "decode_lines",
                "split_lines", "one_line", "record_label", "read_partial", "MAX_FILE_BYTES",
                "MAX_RECORD_DEPTH", "MAX_RECORD_BYTES"],
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'structkernels.utils' has no attribute {name!r}")
    value = getattr(import_module(f"structkernels.utils.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
