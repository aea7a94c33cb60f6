"""Reading and writing the files of npk: train-npk models and σ files, as checked data.

The formats are documented in :mod:`structkernels.npk.model`.  Reading never runs code:
a bounded read (:data:`MAX_MODEL_BYTES`), JSON only (a pickle is refused), every kernel
name resolved through the registry, every σ a finite number >= 0, and one
:class:`ModelFormatError` line naming the file for anything else.  Writing is atomic.
"""

from __future__ import annotations

import gzip
import inspect
import json
import os
import re
import sys
from pathlib import Path as FilePath
from typing import Any

import numpy as np

from structkernels.kernels.names import kernels
from structkernels.kernels.sigma import check_sigma
from structkernels.neighbors.settings import PREVIOUS_DEFAULTS
from structkernels.registry import UnknownNameError
from structkernels.structures import Path, StructureError
from structkernels.utils import (
    CorruptInputError,
    InputTooLargeError,
    StructkernelsError,
    atomic_open,
    check_header,
    dumps_finite,
    one_line,
    read_bounded,
    unique_keys,
)

MODEL_FORMAT = "structkernels.npk-model"
MODEL_VERSION = 2
#: Versions this release reads.
READABLE_VERSIONS = (1, 2)
#: The most bytes a model file may hold once decompressed (read at each call:
#: a gzip bomb is refused after this much, in bounded memory).
MAX_MODEL_BYTES = 1 << 30
# the largest float: a JSON integer beyond it cannot be converted (OverflowError)
_FLOAT_MAX = sys.float_info.max
# a run of digits as long as the largest float's integer part (309 digits)
_LONG_DIGITS = re.compile(rb"[0-9]{%d}" % len(str(int(_FLOAT_MAX))))


class ModelFormatError(StructkernelsError, ValueError):
    """A model file that cannot be used; the message names the file."""


def save_model(path: str | os.PathLike, model: dict[str, Any]) -> None:
    """Write ``model`` (:mod:`structkernels.npk.model`'s dict, without format/version) as
    gzip'd JSON, atomically; a NaN or infinity anywhere, or a kernel that is not registered,
    is refused before anything is written."""
    doc = {"format": MODEL_FORMAT, "version": MODEL_VERSION, **{
        k: v for k, v in model.items() if k not in ("format", "version")
    }}
    if "kernel" in doc:
        doc["kernel"] = kernels.resolve_name(doc["kernel"])
    out = FilePath(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = dumps_finite(doc, what=f"{out}: the model", separators=(",", ":")).encode("utf-8")
    with atomic_open(out, "wb") as fh:
        with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=9) as gz:
            gz.write(raw)


def read_model_bytes(path: str | os.PathLike, max_bytes: int | None = None) -> bytes:
    """The content of a model file, gunzipped, within ``max_bytes`` (default
    :data:`MAX_MODEL_BYTES`, read at each call); a :class:`ModelFormatError` naming the
    file for a file that cannot be read, corrupt gzip data or more than ``max_bytes``
    (found in bounded memory).

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = os.path.join(d, "m.json")
    ...     _ = open(f, "w").write("{}")
    ...     read_model_bytes(f)
    b'{}'
    """
    name = os.fspath(path)
    limit = MAX_MODEL_BYTES if max_bytes is None else max_bytes
    try:
        return read_bounded(name, limit)
    except OSError as exc:
        raise ModelFormatError(f"{name}: cannot read the model file ({exc.strerror or exc})") from None
    except CorruptInputError as exc:
        raise ModelFormatError(
            f"{name}: corrupt gzip data in the model file ({str(exc).split(': ', 1)[-1]})"
        ) from None
    except InputTooLargeError:
        raise ModelFormatError(
            f"{name}: the model file holds more than {limit} bytes (decompressed); refused "
            "(limit: max_bytes, default structkernels.npk.model.MAX_MODEL_BYTES)"
        ) from None


def decode_document(name: str, data: bytes) -> Any:
    """The JSON document of a model file's content ``data`` (:func:`read_model_bytes`).

    A pickle, binary data, invalid JSON, nesting too deep for the decoder and an integer
    too large for a float anywhere (:func:`oversized_int`) are one
    :class:`ModelFormatError` naming the file ``name``.

    Examples
    --------
    >>> decode_document("m.json", b'{"svm": {"intercept": 1e3}}')
    {'svm': {'intercept': 1000.0}}
    >>> decode_document("m.json", b'{"lam": 1' + b'0' * 400 + b'}')
    Traceback (most recent call last):
    ...
    structkernels.npk.files.ModelFormatError: m.json: lam is an integer too large for a float
    """
    if data[:1] == b"\x80":
        raise ModelFormatError(f"{name}: not a structkernels model (pickle files are never read)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFormatError(
            f"{name}: not a structkernels model (binary data, neither gzip'd nor plain JSON)"
        ) from None
    try:
        doc = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        raise ModelFormatError(
            f"{name}: not valid JSON ({exc.msg}, line {exc.lineno}): not a structkernels model"
        ) from None
    except RecursionError:
        raise ModelFormatError(f"{name}: JSON nested too deeply: not a structkernels model") from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
        raise ModelFormatError(f"{name}: not a structkernels model ({exc})") from None
    if _LONG_DIGITS.search(data):  # only then can an integer be too large for a float
        check_no_oversized_int(name, doc)
    return doc


def read_document(path: str | os.PathLike, max_bytes: int | None = None) -> Any:
    """The JSON document of a model file (any format), :func:`read_model_bytes` then
    :func:`decode_document`."""
    name = os.fspath(path)
    return decode_document(name, read_model_bytes(name, max_bytes))


def oversized_int(doc: Any) -> str | None:
    """Where in a decoded JSON document an integer too large for a float (beyond about
    1.8e308) stands, as ``key['sub'][3]``, or None; walked without recursion.

    No field of a model file holds such a number; converting it raises ``OverflowError``.

    Examples
    --------
    >>> oversized_int({"svm": {"weights": [1, 10 ** 400]}})
    "svm['weights'][1]"
    >>> oversized_int({"C": 10 ** 300}) is None
    True
    """
    values, big = [doc], False
    while values:  # a quick pass first: is there one at all?
        value = values.pop()
        if isinstance(value, dict):
            values.extend(value.values())
        elif isinstance(value, list):
            values.extend(value)
        elif type(value) is int and not -_FLOAT_MAX <= value <= _FLOAT_MAX:
            big = True
            break
    if not big:
        return None
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, f"{where}[{k!r}]" if where else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > _FLOAT_MAX:
            return where or "the document"
    return None


def check_no_oversized_int(name: str, doc: Any) -> None:
    """:func:`oversized_int` of the document of file ``name`` as a :class:`ModelFormatError`."""
    where = oversized_int(doc)
    if where is not None:
        raise ModelFormatError(f"{name}: {one_line(where, 120)} is an integer too large for a float")


def sigma_problem(where: str, sigma: Any) -> str | None:
    """What is wrong with a σ mapping read from a file (label -> finite number >= 0), or None:
    the message of :func:`structkernels.kernels.sigma.check_sigma` at ``where``."""
    if isinstance(sigma, dict):
        for label, w in sigma.items():
            if isinstance(w, int) and not isinstance(w, bool) and abs(w) > _FLOAT_MAX:
                return f"{where}[{one_line(repr(label), 60)}] is an integer too large for a float"
    try:
        check_sigma(sigma, where)
    except (TypeError, ValueError, OverflowError) as exc:
        return one_line(exc)
    return None


def check_file_sigma(name: str, where: str, sigma: Any) -> None:
    """:func:`sigma_problem` of a σ of file ``name``, at ``where`` in it, as a
    :class:`ModelFormatError` naming both."""
    problem = sigma_problem(where, sigma)
    if problem is not None:
        raise ModelFormatError(f"{name}: {problem}")


def check_kernel_name(name: str, where: str, spec: Any) -> str:
    """The registered kernel name ``spec`` denotes; refused naming the file (nothing imported)."""
    try:
        return kernels.resolve_name(spec)
    except UnknownNameError as exc:
        raise ModelFormatError(f"{name}: {where + ': ' if where else ''}{exc}") from None


def validate_model(doc: Any, path: str | os.PathLike) -> dict[str, Any]:
    """Check a decoded model document against the schema; returns it."""
    name = os.fspath(path)
    check_header(doc, name=name, format=MODEL_FORMAT, versions=READABLE_VERSIONS,
                 what="train-npk model", error=ModelFormatError)
    check_no_oversized_int(name, doc)
    for key, kind in (("learner", dict), ("classifier", dict), ("kernel_params", dict),
                      ("train", dict)):
        if not isinstance(doc.get(key), kind):
            raise ModelFormatError(f"{name}: the model has no {key!r} object")
    if not isinstance(doc.get("kernel", "path"), str):
        raise ModelFormatError(f"{name}: 'kernel' must be a kernel name")
    doc["kernel"] = check_kernel_name(name, "", doc.get("kernel", "path"))
    if "kernel" in doc["learner"]:
        doc["learner"]["kernel"] = check_kernel_name(
            name, "learner['kernel']", doc["learner"]["kernel"]
        )
    for part, key in (("kernel_params", "sigma"), ("learner", "sigma"),
                      ("learner", "fixed_sigma")):
        check_file_sigma(name, f"{part}[{key!r}]", doc[part].get(key))
    train = doc["train"]
    paths, labels = train.get("paths"), train.get("labels")
    if not isinstance(paths, list) or not isinstance(labels, list) or not paths:
        raise ModelFormatError(f"{name}: the model's training set needs 'paths' and 'labels' lists")
    if len(paths) != len(labels):
        raise ModelFormatError(
            f"{name}: the model has {len(paths)} training paths but {len(labels)} labels"
        )
    for i, label in enumerate(labels):
        if isinstance(label, bool) or label not in (0, 1):
            raise ModelFormatError(
                f"{name}: training label {i} is {label!r}; labels must be 0 or 1"
            )
    # a file that does not name a classifier setting was trained with the 0.1 default,
    # not today's (the defaults now follow the main job): fill it in, so it predicts as then
    doc["classifier"] = {**PREVIOUS_DEFAULTS, **doc["classifier"]}
    check_settings(name, doc)
    ids = train.get("ids")
    if ids is not None and (not isinstance(ids, list) or len(ids) != len(paths)):
        raise ModelFormatError(f"{name}: the model's training ids do not match its paths")
    for i, p in enumerate(paths):
        try:
            Path.from_json(p)
        except (StructureError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"{name}: training path {i} is malformed: {exc}") from None
    return doc


def check_settings(name: str, doc: dict[str, Any]) -> None:
    """The kernel's and the classifier's settings of a model document, checked as fitting
    checks them (a parameter the kernel or the classifier does not take, a NaN, a value out
    of its range), so that a model that cannot give finite scores is refused when read."""
    # imported here: the extractor's reader shares this module's document checks and must
    # not load the classifier (nor scikit-learn) to read its own files
    from structkernels.neighbors.classifier import KernelKNNClassifier

    kernel = doc["kernel"]
    try:
        kernels.get(kernel)(**doc["kernel_params"]).validate_params()
    except (TypeError, ValueError, OverflowError) as exc:
        raise ModelFormatError(f"{name}: the model's kernel_params do not suit kernel "
                               f"{kernel!r}: {one_line(str(exc), 300)}") from None
    known = set(inspect.signature(KernelKNNClassifier).parameters) - {
        "kernel", "kernel_params", "n_jobs"}
    unknown = sorted(set(doc["classifier"]) - known)
    if unknown:
        raise ModelFormatError(f"{name}: the model's classifier settings hold unknown keys "
                               f"{', '.join(repr(k) for k in unknown)}")
    clf = KernelKNNClassifier(kernel=kernel, kernel_params=doc["kernel_params"],
                              **doc["classifier"])
    try:
        clf._validate_params()
    except (TypeError, ValueError, OverflowError) as exc:
        raise ModelFormatError(f"{name}: the model's classifier settings do not suit the "
                               f"classifier: {one_line(str(exc), 300)}") from None


def read_model(path: str | os.PathLike, *, max_bytes: int | None = None) -> dict[str, Any]:
    """The checked model document of a train-npk file (any readable version).

    ``max_bytes`` bounds the decompressed size (default :data:`MAX_MODEL_BYTES`).
    """
    return validate_model(read_document(path, max_bytes), path)


#: The σ file of ``NonstationaryLearner.save``.
SIGMA_FORMAT = "structkernels.nonstationary-sigma"
SIGMA_VERSION = 1


def kernel_spec(kernel: Any) -> str:
    """The registered name under which ``kernel`` (a name, class or instance) is saved.

    Files never hold ``module:Class``: a kernel class that is not registered
    is refused here, at save time, with how to register it.
    """
    if isinstance(kernel, str):
        return kernels.resolve_name(kernel)
    cls = kernel if isinstance(kernel, type) else type(kernel)
    try:
        return kernels.name_to_save(cls)
    except UnknownNameError as exc:
        raise ValueError(f"cannot save the model: {exc}") from None


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value
