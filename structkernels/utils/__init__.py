"""Shared mechanisms with no knowledge of kernels or structures.

The error root, atomic writes, bounded reading, records, numeric checks, progress, the
cache folder, parameter checks, cached compilation.  Nothing here imports another package
of structkernels; names are served lazily, so a command's ``--help`` does not load NumPy.
"""

from __future__ import annotations

from structkernels.utils._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "._atomic": ["WriteError", "atomic_path", "atomic_open", "save_npy", "npy_path",
                 "atomic_memmap", "move_into_place", "sync_folder", "destination",
                 "open_side_file", "OutputError", "BRAT_SIBLINGS", "check_output",
                 "check_folder_output", "open_output", "same_file"],
    "._errors": ["StructkernelsError", "StructkernelsWarning"],
    "._bounded": ["read_bounded", "read_partial", "read_head", "InputTooLargeError",
                  "CorruptInputError", "MAX_FILE_BYTES", "open_binary", "read_once",
                  "NpyFormatError", "read_npy", "read_npy_header"],
    "._numeric": ["NonFiniteError", "check_int", "check_finite", "first_nonfinite",
                  "describe_nonfinite", "dumps_finite"],
    "._records": ["RecordError", "BadLine", "loads_record", "unique_keys", "iter_lines",
                  "decode_lines", "split_lines", "one_line", "record_label", "MAX_RECORD_DEPTH",
                  "MAX_RECORD_BYTES", "check_header"],
    "._progress": ["tqdm", "bar_disabled", "MIN_BAR_EVALUATIONS", "run_settings"],
    "._cache": ["CacheFolder", "CacheWarning", "CacheEntryError", "CacheDirError",
                "check_cache_dir", "cache_dir_problem", "cache_writes_disabled",
                "usable_cache_dir", "NO_CACHE_ENV", "user_cache_dir", "CACHE_KINDS",
                "CACHE_LIMIT_ENV", "DEFAULT_CACHE_LIMIT", "CacheLimitError", "CacheSizeWarning",
                "cache_limit", "cache_root_of", "forget_cache_sizes", "format_bytes",
                "note_cache_write", "parse_cache_limit", "CacheClearError"],
    "._cache_usage": ["CacheUsage", "cache_usage", "clear_cache"],
    "._params": ["InvalidParameterError", "Interval", "Options", "validate_params",
                 "ValidatedParamsMixin", "N_JOBS", "n_jobs_value", "available_cores",
                 "effective_n_jobs"],
    "._memory": ["release_free_memory", "long_lived", "MEMORY_BUDGET_ENV", "memory_budget",
                 "format_gib"],
    "._jit": ["njit", "numba_cache_dir"],
    "._interrupt": ["interrupt_guard", "check_interrupt", "interrupted"],
    "._lazy": ["lazy_exports", "optional_module", "after_import"],
    "._estimator": ["ParamsMixin"],
})
