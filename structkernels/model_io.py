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
against this schema on reading and every message names the file: a σ that
is not a finite number >= 0, an unknown version, training labels outside
{0, 1}, lengths that disagree, a malformed path, or a file that is not a
model at all (binary junk, another JSON document) give one
:class:`ModelFormatError` line, never a traceback from deep inside.

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
import io
import json
import math
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

__all__ = [
    "MODEL_FORMAT",
    "MODEL_VERSION",
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


class ModelFormatError(ValueError):
    """A model file that cannot be used; the message names the file."""


def save_model(path: str | os.PathLike, model: dict[str, Any]) -> None:
    """Write ``model`` (the dict above, without format/version) as gzip'd JSON."""
    doc = {"format": MODEL_FORMAT, "version": MODEL_VERSION, **{
        k: v for k, v in model.items() if k not in ("format", "version")
    }}
    out = FilePath(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(raw)
    out.write_bytes(buf.getvalue())


def _read_document(path: str | os.PathLike) -> Any:
    name = os.fspath(path)
    try:
        data = FilePath(name).read_bytes()
    except OSError as exc:
        raise ModelFormatError(f"{name}: cannot read the model file ({exc.strerror or exc})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ModelFormatError(f"{name}: corrupt gzip data in the model file ({exc})") from None
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


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_sigma(name: str, where: str, sigma: Any) -> None:
    if sigma is None:
        return
    if not isinstance(sigma, dict):
        raise ModelFormatError(f"{name}: {where} must be an object of edge label -> σ")
    for label, value in sigma.items():
        if not _is_number(value) or value < 0:
            raise ModelFormatError(
                f"{name}: {where}[{label!r}] is {value!r}; σ must be a finite number >= 0"
            )


def validate_model(doc: Any, path: str | os.PathLike) -> dict[str, Any]:
    """Check a decoded model document against the schema; returns it."""
    name = os.fspath(path)
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ModelFormatError(
            f"{name}: not a train-npk model (format {MODEL_FORMAT!r} expected, got {got!r})"
        )
    version = doc.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise ModelFormatError(
            f"{name}: model version {version!r} is not supported (this release reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    for key, kind in (("learner", dict), ("classifier", dict), ("kernel_params", dict),
                      ("train", dict)):
        if not isinstance(doc.get(key), kind):
            raise ModelFormatError(f"{name}: the model has no {key!r} object")
    if not isinstance(doc.get("kernel", "path"), str):
        raise ModelFormatError(f"{name}: 'kernel' must be a kernel name")
    _check_sigma(name, "kernel_params['sigma']", doc["kernel_params"].get("sigma"))
    _check_sigma(name, "learner['sigma']", doc["learner"].get("sigma"))
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


def read_model(path: str | os.PathLike) -> dict[str, Any]:
    """The checked model document of a train-npk file (any readable version)."""
    return validate_model(_read_document(path), path)


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
    except (ValueError, TypeError, KeyError) as exc:
        raise ModelFormatError(f"{name}: the model's learner is malformed: {exc}") from None


def load_model(path: str | os.PathLike) -> NPKModel:
    """Read a model written by ``structkernels train-npk``.

    Raises :class:`ModelFormatError` (one line naming the file) on anything
    that is not a valid model.
    """
    from structkernels.structures import Path

    name = os.fspath(path)
    doc = read_model(path)
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


def load_learner(path: str | os.PathLike):
    """The :class:`~structkernels.NonstationaryLearner` of a train-npk model or a σ file.

    Reads both files ``train-npk`` writes (its model) and the σ-only JSON of
    ``NonstationaryLearner.save``.
    """
    name = os.fspath(path)
    doc = _read_document(path)
    if isinstance(doc, dict) and doc.get("format") == MODEL_FORMAT:
        return load_model(path).learner
    _check_sigma(name, "sigma", doc.get("sigma") if isinstance(doc, dict) else None)
    return _learner_from(doc, name)
