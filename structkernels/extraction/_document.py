"""The JSON of an extractor's parts (its decision rule, its reference pairs' views) and its
relation model: the model of a file's kernel parameters, its file version, in words."""

from __future__ import annotations

from typing import Any

from structkernels.extraction.files import MODEL, MODELS
from structkernels.relations.decision import DecisionRule
from structkernels.relations.models import RelationModel

__all__ = ["decision_of", "decision_json", "reference", "view_json", "model_of", "version_of",
           "describe_model"]


def decision_of(d: dict[str, Any]) -> DecisionRule:
    """The :class:`DecisionRule` of a checked ``"decision"`` object."""
    c = d["calibration"] or {}
    kind = c.get("kind")
    return DecisionRule(
        d["threshold"], d["rule"], kind,
        platt=(c["a"], c["b"]) if kind == "platt" else None,
        isotonic_x=tuple(c["x"]) if kind == "isotonic" else (),
        isotonic_y=tuple(c["y"]) if kind == "isotonic" else (),
        inner_f1=d["inner_f1"], n_folds=d["folds"], fallback=d["fallback"])


def decision_json(rule: DecisionRule) -> dict[str, Any]:
    return {"threshold": float(rule.threshold), "rule": rule.rule,
            "calibration": rule.calibration_json(),
            "inner_f1": None if rule.inner_f1 is None else float(rule.inner_f1),
            "folds": int(rule.n_folds), "fallback": rule.fallback}


def reference(item: dict[str, Any], views: tuple[str, ...]) -> dict[str, Any]:
    """The structure views of a reference pair as the model keeps them (context a tuple)."""
    return {v: tuple(item[v]) if v == "context" else item[v] for v in views}


def view_json(structure: Any) -> Any:
    """A structure view as JSON: a path's or graph's ``to_json()``, a context's list."""
    return structure.to_json() if hasattr(structure, "to_json") else list(structure)


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
