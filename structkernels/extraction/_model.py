"""The extractor's relation model: the model of a file's kernel parameters, its file
version, and the model in words (its kernel is :meth:`RelationModel.kernel`)."""

from __future__ import annotations

from typing import Any

from structkernels.extraction.files import MODEL, MODELS
from structkernels.relations.models import RelationModel


def model_of(kernel_params: dict[str, Any]) -> RelationModel:
    """The model whose structure views are the keys of ``kernel_params``."""
    views = set(kernel_params)
    for model in MODELS.values():
        if set(model.views) == views:
            return model
    raise ValueError(f"no relation-extractor model on the structure views {sorted(views)}")


def version_of(model: RelationModel) -> int:
    """The file version that saves ``model``."""
    return next(v for v, m in MODELS.items() if m is model)


def describe_model(model: RelationModel = MODEL) -> str:
    """An extractor's model in words: the evaluation's row and its structure views.

    Examples
    --------
    >>> describe_model()
    'NPK SVM model (path + context + all-paths graph)'
    """
    words = {"path": "path", "context": "context", "apg": "all-paths graph"}
    return f"NPK SVM model ({' + '.join(words.get(v, v) for v in model.views)})"
