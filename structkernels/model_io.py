"""The model file of ``structkernels train-npk``: one format, versioned, compact, validated.

A model file is gzip-compressed JSON (``.npk.json.gz`` by convention; mtime 0
in the gzip header, so the same model gives the same bytes)::

    {"format": "structkernels.npk-model", "version": 2,
     "learner": {...},            # NonstationaryLearner.to_json(): σ, losses, counters
     "kernel": "path", "kernel_params": {"lam": 0.8, "sigma": {...}},
     "classifier": {...},         # KernelKNNClassifier settings
     "train": {"source": ..., "ids": [...], "paths": [...], "labels": [0, 1, ...]},
     "evaluation": {...}}

Version 1 (the same dict as plain JSON) is still read.  Every file is checked
against this schema on reading and every message names the file: a σ or
fixed σ that is not a finite number >= 0, an unknown version, training
labels outside {0, 1}, lengths that disagree, a malformed path, a kernel
that is not registered, or a file that is not a model at all (binary junk,
another JSON document, a file decompressing beyond :data:`MAX_MODEL_BYTES`)
give one :class:`ModelFormatError` line, never a traceback from deep inside.

**Reading a model never runs code.**  The file is data: JSON read with a
bound on its decompressed size, and the kernel it names (``"kernel"``, and
the learner's ``"kernel"``) resolves only through the kernel registry
(:meth:`structkernels.registry.Registry.resolve_name`: entry points and
names given to ``structkernels.register``).  Nothing is imported by a name read
from the file; ``"subprocess:getoutput"`` is refused as "not a registered
kernel".  Files of older releases that hold ``module:Class`` for a kernel
whose entry point is exactly that target are read under the registered name.
Writing is atomic (a temporary file renamed into place) and refuses
NaN/infinity, naming the field.

:func:`load_model` gives a :class:`NPKModel` (the learner, the classifier
settings and the training set, ready to predict);
``NonstationaryLearner.load`` reads these files too.

Examples
--------
>>> import structkernels as sk
>>> model = sk.load_model("model.npk.json.gz")  # doctest: +SKIP
>>> model.predict(paths)  # doctest: +SKIP
"""

from __future__ import annotations

import gzip
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from structkernels.registry import UnknownNameError, kernels
from structkernels.utils import (
    CorruptInputError,
    InputTooLargeError,
    atomic_open,
    check_header,
    dumps_finite,
    read_bounded,
)

__all__ = [
    "MODEL_FORMAT",
    "MODEL_VERSION",
    "MAX_MODEL_BYTES",
    "ModelFormatError",
    "NPKModel",
    "save_model",
    "read_model",
    "load_model",
    "load_learner",
]

MODEL_FORMAT = "structkernels.npk-model"
MODEL_VERSION = 2
#: Versions this release reads.
READABLE_VERSIONS = (1, 2)
#: The most bytes a model file may hold once decompressed (read at each call:
#: a gzip bomb is refused after this much, in bounded memory).
MAX_MODEL_BYTES = 1 << 30


class ModelFormatError(ValueError):
    """A model file that cannot be used; the message names the file."""


def save_model(path: str | os.PathLike, model: dict[str, Any]) -> None:
    """Write ``model`` (the dict above, without format/version) as gzip'd JSON, atomically.

    The file appears complete under its name or not at all (the old file, if
    any, is kept on an error or an interrupt).  A NaN or infinity anywhere, or
    a kernel that is not registered, is refused before anything is written.
    """
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


def _read_document(path: str | os.PathLike, max_bytes: int | None = None) -> Any:

    name = os.fspath(path)
    limit = MAX_MODEL_BYTES if max_bytes is None else max_bytes
    try:
        data = read_bounded(name, limit)
    except OSError as exc:
        raise ModelFormatError(f"{name}: cannot read the model file ({exc.strerror or exc})") from None
    except CorruptInputError as exc:
        raise ModelFormatError(
            f"{name}: corrupt gzip data in the model file ({str(exc).split(': ', 1)[-1]})"
        ) from None
    except InputTooLargeError:
        raise ModelFormatError(
            f"{name}: the model file holds more than {limit} bytes (decompressed); refused "
            "(limit: max_bytes, default structkernels.model_io.MAX_MODEL_BYTES)"
        ) from None
    if data[:1] == b"\x80":
        raise ModelFormatError(f"{name}: not a structkernels model (pickle files are never read)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFormatError(
            f"{name}: not a structkernels model (binary data, neither gzip'd nor plain JSON)"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelFormatError(
            f"{name}: not valid JSON ({exc.msg}, line {exc.lineno}): not a structkernels model"
        ) from None
    except RecursionError:
        raise ModelFormatError(f"{name}: JSON nested too deeply: not a structkernels model") from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
        raise ModelFormatError(f"{name}: not a structkernels model ({exc})") from None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def sigma_problem(where: str, sigma: Any) -> str | None:
    """What is wrong with a σ mapping read from a file (label -> finite number >= 0), or None."""
    if sigma is None:
        return None
    if not isinstance(sigma, dict):
        return f"{where} must be an object of edge label -> σ, got {type(sigma).__name__}"
    for label, value in sigma.items():
        if not _is_number(value) or value < 0:
            return f"{where}[{label!r}] is {value!r}; σ must be a finite number >= 0"
    return None


def _check_sigma(name: str, where: str, sigma: Any) -> None:
    problem = sigma_problem(where, sigma)
    if problem is not None:
        raise ModelFormatError(f"{name}: {problem}")


def _check_kernel(name: str, where: str, spec: Any) -> str:
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
    for key, kind in (("learner", dict), ("classifier", dict), ("kernel_params", dict),
                      ("train", dict)):
        if not isinstance(doc.get(key), kind):
            raise ModelFormatError(f"{name}: the model has no {key!r} object")
    if not isinstance(doc.get("kernel", "path"), str):
        raise ModelFormatError(f"{name}: 'kernel' must be a kernel name")
    doc["kernel"] = _check_kernel(name, "", doc.get("kernel", "path"))
    if "kernel" in doc["learner"]:
        doc["learner"]["kernel"] = _check_kernel(
            name, "learner['kernel']", doc["learner"]["kernel"]
        )
    _check_sigma(name, "kernel_params['sigma']", doc["kernel_params"].get("sigma"))
    _check_sigma(name, "learner['sigma']", doc["learner"].get("sigma"))
    _check_sigma(name, "learner['fixed_sigma']", doc["learner"].get("fixed_sigma"))
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
    ids = train.get("ids")
    if ids is not None and (not isinstance(ids, list) or len(ids) != len(paths)):
        raise ModelFormatError(f"{name}: the model's training ids do not match its paths")
    from structkernels.structures import Path, StructureError

    for i, p in enumerate(paths):
        try:
            Path.from_json(p)
        except (StructureError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"{name}: training path {i} is malformed: {exc}") from None
    return doc


def read_model(path: str | os.PathLike, *, max_bytes: int | None = None) -> dict[str, Any]:
    """The checked model document of a train-npk file (any readable version).

    ``max_bytes`` bounds the decompressed size (default :data:`MAX_MODEL_BYTES`).
    """
    return validate_model(_read_document(path, max_bytes), path)


@dataclass
class NPKModel:
    """A model read by :func:`load_model`.

    Attributes
    ----------
    learner : NonstationaryLearner
        The fitted σ learner.
    kernel : str
        Registered kernel name (``"path"``).
    kernel_params : dict
        The kernel's parameters with the learned σ.
    classifier_params : dict
        Settings of the :class:`~structkernels.KernelKNNClassifier`.
    train_paths, train_labels, train_ids : lists
        The training set the classifier votes with.
    evaluation : dict
        What ``train-npk`` measured on its test half.
    version : int
    path : str
    """

    learner: Any
    kernel: str
    kernel_params: dict[str, Any]
    classifier_params: dict[str, Any]
    train_paths: list
    train_labels: list[int]
    train_ids: list
    evaluation: dict[str, Any] = field(default_factory=dict)
    version: int = MODEL_VERSION
    path: str = ""

    def classifier(self, use: str = "npk", n_jobs: int = 1):
        """The fitted k-NN classifier (``use="pk"`` drops the learned σ)."""
        import numpy as np

        from structkernels.classifier import KernelKNNClassifier

        if use not in ("npk", "pk"):
            raise ValueError(f"use must be 'npk' or 'pk', got {use!r}")
        params = dict(self.kernel_params)
        if use == "pk":
            params.pop("sigma", None)
        clf = KernelKNNClassifier(
            kernel=self.kernel, kernel_params=params, n_jobs=n_jobs, **self.classifier_params
        )
        return clf.fit(self.train_paths, np.asarray(self.train_labels, dtype=np.int64))

    def predict(self, X: Any, use: str = "npk", n_jobs: int = 1):
        """Labels of the paths ``X``."""
        return self.classifier(use, n_jobs).predict(X)


def _learner_from(doc: dict[str, Any], name: str):
    from structkernels.learning import NonstationaryLearner

    try:
        return NonstationaryLearner.from_json(doc)
    except UnknownNameError as exc:
        raise ModelFormatError(f"{name}: {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise ModelFormatError(f"{name}: the model's learner is malformed: {exc}") from None


def load_model(path: str | os.PathLike, *, max_bytes: int | None = None) -> NPKModel:
    """Read a model written by ``structkernels train-npk``.

    Raises :class:`ModelFormatError` (one line naming the file) on anything
    that is not a valid model.  Nothing named in the file is imported: its
    kernel resolves through the registry.  ``max_bytes`` bounds the
    decompressed size (default :data:`MAX_MODEL_BYTES`).
    """
    from structkernels.structures import Path

    name = os.fspath(path)
    doc = read_model(path, max_bytes=max_bytes)
    train = doc["train"]
    learner = _learner_from(doc["learner"], name)
    return NPKModel(
        learner=learner,
        kernel=doc.get("kernel", "path"),
        kernel_params=dict(doc["kernel_params"]),
        classifier_params=dict(doc["classifier"]),
        train_paths=[Path.from_json(p) for p in train["paths"]],
        train_labels=[int(v) for v in train["labels"]],
        train_ids=list(train.get("ids") or range(len(train["paths"]))),
        evaluation=dict(doc.get("evaluation") or {}),
        version=int(doc["version"]),
        path=name,
    )


def load_learner(path: str | os.PathLike, *, max_bytes: int | None = None):
    """The :class:`~structkernels.NonstationaryLearner` of a train-npk model or a σ file.

    Reads both files ``train-npk`` writes (its model) and the σ-only JSON of
    ``NonstationaryLearner.save``; the one reader of both (bounded size, kernel
    through the registry, σ and fixed σ finite >= 0, every message naming the file).
    """
    name = os.fspath(path)
    doc = _read_document(path, max_bytes)
    if isinstance(doc, dict) and doc.get("format") == MODEL_FORMAT:
        return _learner_from(validate_model(doc, path)["learner"], name)
    from structkernels.learning import MODEL_FORMAT as SIGMA_FORMAT

    if isinstance(doc, dict) and doc.get("format") == SIGMA_FORMAT:
        if "kernel" in doc:
            doc["kernel"] = _check_kernel(name, "", doc["kernel"])
        _check_sigma(name, "sigma", doc.get("sigma"))
        _check_sigma(name, "fixed_sigma", doc.get("fixed_sigma"))
    return _learner_from(doc, name)
