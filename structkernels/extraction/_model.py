"""The extractor's relation model: its composite kernel, the model of a file's kernel
parameters, and the model in words."""

from __future__ import annotations

from typing import Any

from structkernels.extraction.files import MODEL, MODELS
from structkernels.kernels.base import Kernel
from structkernels.relations.models import RelationModel


def composite_kernel(path_params: dict[str, Any], context_params: dict[str, Any],
                     sigma: dict[str, float] | None,
                     apg_params: dict[str, Any] | None = None) -> Kernel:
    """``Normalized(path kernel with σ) on "path" + Normalized(bag) on "context"``, and
    ``+ Normalized(all-paths graph kernel) on "apg"`` when ``apg_params`` is given (the
    extractor's model, :data:`MODEL`); without it, the two-view kernel of version 1 files.

    Examples
    --------
    >>> from structkernels.structures import Path
    >>> k = composite_kernel({"lam": 0.8, "node_mismatch": 0.9}, {}, {"conj": 0.0})
    >>> a = {"path": Path([(None, "PROT1"), ("nsubj-of", "bind"), ("dobj", "PROT2")]),
    ...      "context": ("m:bind",)}
    >>> round(float(k.gram([a])[0, 0]), 6)
    2.0
    """
    params = {"path": path_params, "context": context_params}
    if apg_params is None:
        return MODELS[1].kernel(sigma, params)
    return MODEL.kernel(sigma, {**params, "apg": apg_params})


def _model_of(kernel_params: dict[str, Any]) -> RelationModel:
    """The model whose structure views are the keys of ``kernel_params``."""
    views = set(kernel_params)
    for model in MODELS.values():
        if set(model.views) == views:
            return model
    raise ValueError(f"no relation-extractor model on the structure views {sorted(views)}")


def _version_of(model: RelationModel) -> int:
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
