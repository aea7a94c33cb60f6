"""The JSON of an extractor's parts: its decision rule and its reference pairs' views."""

from __future__ import annotations

from typing import Any

from structkernels.relations.decision import DecisionRule

__all__ = ["decision_of", "decision_json", "reference", "view_json"]


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
