"""The model file of ``structkernels train-npk``: one format, versioned, compact, validated.

A model file is gzip-compressed JSON (``.npk.json.gz``; gzip mtime 0: same model, same bytes)::

    {"format": "structkernels.npk-model", "version": 2,
     "learner": {...},            # NonstationaryLearner.to_json(): σ, losses, counters
     "kernel": "path", "kernel_params": {"lam": 0.8, "sigma": {...}},
     "classifier": {...},         # KernelKNNClassifier settings
     "train": {"source": ..., "ids": [...], "paths": [...], "labels": [0, 1, ...]},
     "evaluation": {...}}

Version 1 (the same dict as plain JSON) is still read, checked against this schema without
running code (:mod:`structkernels.npk.files`).

Examples
--------
>>> import structkernels as sk
>>> model = sk.load_model("model.npk.json.gz")  # doctest: +SKIP
>>> model.predict(paths)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from structkernels.neighbors.classifier import KernelKNNClassifier
from structkernels.npk.files import MAX_MODEL_BYTES, MODEL_VERSION, ModelFormatError, read_model
from structkernels.npk.learner import NonstationaryLearner
from structkernels.npk.sigma_document import learner_from_document
from structkernels.structures import Path

__all__ = ["MODEL_VERSION", "MAX_MODEL_BYTES", "ModelFormatError", "NPKModel", "read_model",
           "load_model"]


@dataclass
class NPKModel:
    """A model read by :func:`load_model`.

    Attributes
    ----------
    learner : NonstationaryLearner
    kernel, kernel_params : str, dict
        The registered kernel name (``"path"``) and its parameters with the learned σ.
    classifier_params : dict
        Settings of the :class:`~structkernels.KernelKNNClassifier`.
    train_paths, train_labels, train_ids : lists
        The training set the classifier votes with.
    evaluation : dict
        What ``train-npk`` measured on its test half.
    version, path : int, str
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

    _fitted: dict[str, tuple[Any, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def _setting(self) -> tuple:
        """What the fitted classifiers depend on: a change of any refits them."""
        return (self.kernel, repr(sorted(self.kernel_params.items())),
                repr(sorted(self.classifier_params.items())), id(self.train_paths),
                len(self.train_paths), id(self.train_labels), len(self.train_labels))

    def classifier(self, use: str = "npk", n_jobs: int | None = None):
        """The fitted k-NN classifier (``use="pk"`` drops the learned σ), kept for each ``use``
        and returned with ``n_jobs`` set; other data, kernel or settings fit it anew."""
        if use not in ("npk", "pk"):
            raise ValueError(f"use must be 'npk' or 'pk', got {use!r}")
        setting = self._setting()
        kept = self._fitted.get(use)
        if kept is not None and kept[0] == setting:
            clf = kept[1]
            if clf.n_jobs != n_jobs:
                clf.set_params(n_jobs=n_jobs)
                for hasher in clf.hashers_:  # the hash tables evaluate the kernel at predict
                    hasher.set_params(n_jobs=n_jobs)
            return clf
        params = dict(self.kernel_params)
        if use == "pk":
            params.pop("sigma", None)
        clf = KernelKNNClassifier(
            kernel=self.kernel, kernel_params=params, n_jobs=n_jobs, **self.classifier_params)
        clf.fit(self.train_paths, np.asarray(self.train_labels, dtype=np.int64))
        self._fitted[use] = (setting, clf)
        return clf

    def predict(self, X: Any, use: str = "npk", n_jobs: int | None = None):
        """Labels (0/1) of the paths ``X``."""
        return self.classifier(use, n_jobs).predict(X)

    def predict_proba(self, X: Any, use: str = "npk", n_jobs: int | None = None):
        """Class probabilities of the paths ``X``, shape (n, n_classes): the (weighted)
        share of each class among the neighbours (columns ``classifier().classes_``)."""
        return self.classifier(use, n_jobs).predict_proba(X)

    def decision_function(self, X: Any, use: str = "npk", n_jobs: int | None = None):
        """Positive-class score of the paths ``X``, shape (n,): the (weighted) share of label
        1 among the neighbours (0 everywhere when no training label is 1)."""
        clf = self.classifier(use, n_jobs)
        proba = clf.predict_proba(X)
        pos = np.flatnonzero(clf.classes_ == 1)
        return proba[:, pos[0]] if len(pos) else np.zeros(len(proba))


def load_model(path: str | os.PathLike, *, max_bytes: int | None = None) -> NPKModel:
    """Read a model written by ``structkernels train-npk``.

    Anything else is one :class:`ModelFormatError` line naming the file; ``max_bytes`` bounds
    the decompressed size (default :data:`MAX_MODEL_BYTES`)."""
    name = os.fspath(path)
    doc = read_model(path, max_bytes=max_bytes)
    train = doc["train"]
    return NPKModel(
        learner=learner_from_document(NonstationaryLearner, doc["learner"], name),
        kernel=doc.get("kernel", "path"),
        kernel_params=dict(doc["kernel_params"]),
        classifier_params=dict(doc["classifier"]),
        train_paths=[Path.from_json(p) for p in train["paths"]],
        train_labels=[int(v) for v in train["labels"]],
        train_ids=list(train.get("ids") or range(len(train["paths"]))),
        evaluation=dict(doc.get("evaluation") or {}),
        version=int(doc["version"]),
        path=name)
