"""PHSIC model files: a fitted model as data only, read without running anything it names.

:meth:`PHSIC.save <structkernels_hsic.phsic.PHSIC.save>` writes a fitted model as **data
only**, and :meth:`PHSIC.load <structkernels_hsic.phsic.PHSIC.load>` reads it without
running anything the file names (never pickle/joblib).  This module holds the format: its
name and versions, its error, the kernels and structures as JSON, the writer of the
archive's arrays and the checked reader; :mod:`structkernels_hsic.phsic` maps a model's
state onto them.

:meth:`PHSIC.save` writes a fitted model as **data only**, and :meth:`PHSIC.load`
reads it without running anything the file names (never pickle/joblib).  The
file is one NumPy ``.npz`` archive (an uncompressed zip of ``.npy`` arrays),
written to a temporary file in the destination's folder and renamed into place
when complete:

- ``meta``: a ``uint8`` array holding UTF-8 JSON::

    {"format": "structkernels-hsic.phsic-model", "version": 1,
     "estimator_class": "phsic",          # the registered measure name
     "params": {...},                     # PHSIC's constructor parameters
     "encoder": "none",                   # how the CLI encodes text input
     "state": {...},                      # n_samples_, counters, kernels, per-side data
     "arrays": ["cov", "mean_x", ...]}    # the other entries of the archive

- every other entry a numeric array (``cov``, ``mean_x``, ``mean_y``; per side
  ``x.factor``, ``x.pivots``, ``x.data`` the training vectors or Gram matrix
  for the ``"icd"`` and ``"naive"`` estimators).

Kernels are saved as ``{"name": registered name, "params": {...}}`` (a
``Normalized`` kernel as ``{"normalized": {...}}``) and rebuilt through the
kernel registry only; an unregistered kernel class is refused at save time.
Training structures that are not vectors (paths, trees, re-writing pairs,
strings) are stored as JSON Lines records in ``meta`` and decoded by
:func:`structkernels.formats.structures.decode_structure`.  Arrays are read with
``allow_pickle=False`` after their headers are checked against the size limit
(:data:`structkernels.npk.model.MAX_MODEL_BYTES`); an unknown version, a
pickle or joblib file, or any other damage is one :class:`PHSICModelError`
line naming the file.
"""

from __future__ import annotations

import zipfile
from typing import Any

import numpy as np

from structkernels.utils import StructkernelsError

__all__ = ["PHSICModelError", "MODEL_FORMAT", "MODEL_VERSION", "READABLE_VERSIONS"]

MODEL_FORMAT = "structkernels-hsic.phsic-model"
MODEL_VERSION = 1
#: Versions this release reads.
READABLE_VERSIONS = (1,)
_ZIP_MAGIC = b"PK\x03\x04"


class PHSICModelError(StructkernelsError, ValueError):
    """A PHSIC model file that cannot be used (or a model that cannot be saved); names the file."""


def kernel_to_json(kernel: Any, where: str) -> Any:
    """``"precomputed"``, a registered name, or ``{"name", "params"}`` / ``{"normalized": ...}``."""
    from structkernels import Kernel
    from structkernels.kernels.base import Normalized
    from structkernels.kernels.names import kernels

    if isinstance(kernel, str):
        return kernel if kernel == "precomputed" else kernels.resolve_name(kernel)
    if isinstance(kernel, Normalized):
        return {"normalized": kernel_to_json(kernel.kernel, where)}
    if isinstance(kernel, Kernel):
        try:
            name = kernels.name_to_save(type(kernel))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        params = kernel.get_params(deep=False)
        return {"name": name, "params": jsonable(params, f"{where} parameters")}
    raise ValueError(f"{where}: cannot save a kernel given as {type(kernel).__name__}")


def kernel_from_json(spec: Any, where: str) -> Any:
    """Inverse of :func:`kernel_to_json`: names resolve through the kernel registry only."""
    from structkernels.kernels.base import Normalized
    from structkernels.kernels.names import kernels

    if isinstance(spec, str):
        return spec if spec == "precomputed" else kernels.resolve_name(spec)
    if isinstance(spec, dict) and set(spec) == {"normalized"}:
        return Normalized(kernel_from_json(spec["normalized"], where))
    if isinstance(spec, dict) and set(spec) == {"name", "params"} and isinstance(spec["params"], dict):
        cls = kernels.get(kernels.resolve_name(spec["name"]))
        kernel = cls(**spec["params"])
        kernel.validate_params()
        return kernel
    raise ValueError(f"{where} must be a kernel name or {{'name', 'params'}}, got {spec!r}")


def jsonable(value: Any, where: str) -> Any:
    """Parameters as JSON data (tuples become lists); anything else is refused by name."""
    if isinstance(value, dict):
        return {str(k): jsonable(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, where) for v in value]
    if isinstance(value, (bool, str, type(None))):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    raise ValueError(f"{where}: {value!r} ({type(value).__name__}) cannot be saved as data")


def _structures_to_json(X: Any, where: str) -> list:
    """Training structures as JSON Lines records (``{"path": ...}``, ``{"tree": ...}``, ...)."""
    from structkernels.structures import Path, Tree

    out = []
    for i, x in enumerate(X):
        if isinstance(x, Path):
            out.append({"path": x.to_json()})
        elif isinstance(x, Tree):
            out.append({"tree": x.to_json()})
        elif isinstance(x, str):
            out.append({"text": x})
        elif (isinstance(x, (tuple, list)) and len(x) == 2
              and all(isinstance(side, (tuple, list)) and all(isinstance(t, str) for t in side) for side in x)):
            out.append({"pair": [list(x[0]), list(x[1])]})
        else:
            raise ValueError(
                f"{where}: training structure {i} ({type(x).__name__}) cannot be saved as data "
                "(vectors, paths, trees, re-writing pairs and strings can)"
            )
    return out


def _structures_from_json(records: Any, where: str) -> list:
    from structkernels.formats.structures import decode_structure

    if not isinstance(records, list):
        raise ValueError(f"{where} must be a list of records")
    out = []
    for i, record in enumerate(records):
        if isinstance(record, dict) and set(record) == {"text"} and isinstance(record["text"], str):
            out.append(record["text"])
            continue
        if not (isinstance(record, dict) and len(record) == 1 and next(iter(record)) in ("path", "tree", "pair")):
            raise ValueError(f"{where}[{i}] is not a saved structure record")
        out.append(decode_structure(record)[1])
    return out


class ModelWriter:
    """Collects the archive's arrays and the JSON state of one model."""

    def __init__(self, where: str):
        self.where = where
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, key: str, value: Any) -> str:
        arr = np.asarray(value)
        if arr.dtype.hasobject or arr.dtype.kind not in "biuf":
            raise ValueError(f"{self.where}: {key} is not a numeric array ({arr.dtype})")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError(f"{self.where}: {key} holds NaN or infinity; a model is saved finite")
        self.arrays[key] = arr
        return key

    def source(self, side: str, source: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"n_evaluations": int(source.n_evaluations)}
        if source.precomputed:
            out["kernel"] = "precomputed"
            out["data"] = self.array(f"{side}.data", source.K)
            return out
        out["kernel"] = kernel_to_json(source.kernel, f"{self.where}: kernel_{side}")
        if isinstance(source.X, np.ndarray) and source.X.dtype.kind in "biuf":
            out["data"] = self.array(f"{side}.data", source.X)
        else:
            out["structures"] = _structures_to_json(source.X, f"{self.where}: {side}")
        inner_diag = source.raw_diagonal(known=True) if source.inner is not None else None
        if inner_diag is not None:
            out["inner_diag"] = self.array(f"{side}.inner_diag", inner_diag)
        return out


def checked_archive(name: str, max_bytes: int) -> set[str]:
    """Entry names of the ``.npz`` at ``name``, after checking every ``.npy`` header against the limit."""
    try:
        with open(name, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise PHSICModelError(f"{name}: cannot read the PHSIC model file ({exc.strerror or exc})") from None
    if head != _ZIP_MAGIC:
        raise PHSICModelError(
            f"{name}: not a PHSIC model file (pickle files are never read; a PHSIC model is the "
            ".npz archive written by PHSIC.save or `structkernels phsic fit`)"
        )
    total = 0
    entries = set()
    try:
        with zipfile.ZipFile(name) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    raise PHSICModelError(f"{name}: unexpected entry {info.filename!r} in the model archive")
                total += info.file_size
                if total > max_bytes:
                    raise PHSICModelError(
                        f"{name}: the model archive holds more than {max_bytes} bytes; refused "
                        "(limit: max_bytes, default structkernels.npk.model.MAX_MODEL_BYTES)"
                    )
                with zf.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(member)
                if dtype.hasobject or dtype.kind not in "biuf":
                    raise PHSICModelError(
                        f"{name}: entry {info.filename!r} is not a numeric array ({dtype}); refused"
                    )
                nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if nbytes > info.file_size:
                    raise PHSICModelError(
                        f"{name}: entry {info.filename!r} claims {nbytes} bytes but holds {info.file_size}"
                    )
                entries.add(info.filename[: -len(".npy")])
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        if isinstance(exc, PHSICModelError):
            raise
        raise PHSICModelError(f"{name}: damaged PHSIC model archive ({exc})") from None
    return entries


class ModelReader:
    def __init__(self, name: str, npz: Any, entries: set[str]):
        self.name = name
        self.npz = npz
        self.entries = entries

    def array(self, key: Any, ndim: int | None = None) -> np.ndarray:
        if not isinstance(key, str) or key not in self.entries or key == "meta":
            raise ValueError(f"array {key!r} is missing from the archive")
        arr = self.npz[key]
        if ndim is not None and arr.ndim != ndim:
            raise ValueError(f"array {key!r} has {arr.ndim} dimensions, {ndim} expected")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError(f"array {key!r} holds NaN or infinity")
        return arr

    def source(self, side: str, spec: Any, dtype: type) -> Any:
        from structkernels_hsic._kernels import kernel_source, precomputed_source

        if not isinstance(spec, dict):
            raise ValueError(f"source {side} must be an object")
        kernel = kernel_from_json(spec.get("kernel"), f"kernel_{side}")
        if isinstance(kernel, str) and kernel == "precomputed":
            source: Any = precomputed_source(self.array(spec.get("data"), 2), side.upper(), dtype)
        else:
            if isinstance(kernel, str):
                from structkernels import kernel as make_kernel

                kernel = make_kernel(kernel)
            if "structures" in spec:
                X = _structures_from_json(spec["structures"], f"{side} structures")
            else:
                X = self.array(spec.get("data"))
            inner = self.array(spec["inner_diag"], 1) if "inner_diag" in spec else None
            source = kernel_source(kernel, X, dtype, inner_diag=inner)
        n_evaluations = count_field(spec.get("n_evaluations"), "n_evaluations")
        if not source.precomputed:
            source.count(n_evaluations)
        return source


def count_field(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where} must be an int >= 0, got {value!r}")
    return value
