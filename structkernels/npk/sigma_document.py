"""The σ document: a fitted :class:`~structkernels.npk.learner.NonstationaryLearner` as JSON
data and back, every field checked (reading never runs code: the kernel resolves through the
registry)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from structkernels.kernels.base import Normalized
from structkernels.kernels.names import kernels
from structkernels.npk._objectives import OBJECTIVES, PARAMETERS
from structkernels.npk.files import (
    SIGMA_FORMAT,
    SIGMA_VERSION,
    ModelFormatError,
    jsonable,
    kernel_spec,
    sigma_problem,
)
from structkernels.registry import UnknownNameError

__all__ = ["learner_from_document", "learner_from_json", "learner_to_document"]


def learner_to_document(learner: Any) -> dict[str, Any]:
    """The fitted ``learner`` as a JSON-ready dict (parameters, σ, losses, counters)."""
    params = learner.get_params(deep=False)
    if params["objective"] not in OBJECTIVES:  # the gradient settings only where they apply
        params = {k: v for k, v in params.items() if k not in PARAMETERS}
    kern = params.pop("kernel")
    rs = params.pop("random_state")
    if isinstance(kern, Normalized):
        kern = kern.kernel
        params["normalize"] = True
    params["kernel_params"] = jsonable(
        learner.kernel_params if isinstance(kern, str) else kern.get_params(deep=False))
    if not isinstance(kern, str) and learner.kernel_params:
        params["kernel_params"].update(jsonable(learner.kernel_params))
    return {
        "format": SIGMA_FORMAT,
        "version": SIGMA_VERSION,
        "kernel": kernel_spec(kern),
        "params": jsonable(params),
        "random_state": rs if isinstance(rs, (int, type(None))) else None,
        "sigma": jsonable(learner.sigma_),
        "fixed_sigma": jsonable(learner.fixed_sigma_),
        "normalize": bool(learner.normalize_),
        "labels": list(learner.labels_),
        "label_counts": jsonable(learner.label_counts_),
        "ignored_labels": list(learner.ignored_labels_),
        "losses": jsonable(learner.losses_),
        "log": jsonable(learner.log_),
        "n_train": int(learner.n_train_),
        "n_evaluations": int(learner.n_evaluations_),
        "n_evaluations_graph": int(learner.n_evaluations_graph_),
        "n_evaluations_reused": int(learner.n_evaluations_reused_),
        "budget": learner.budget_,
        "n_trimmed": int(learner.n_trimmed_),
        "mean_subset_size": float(np.mean(learner.subset_sizes_)) if learner.subset_sizes_ else 0.0,
        "fit_seconds": float(learner.fit_seconds_),
        "interrupted": bool(learner.interrupted_),
        **({"lam": float(learner.lam_)} if "lam_" in learner.__dict__ else {}),
    }


def learner_from_json(cls: type, obj: dict[str, Any] | str) -> Any:
    """A ``cls`` learner from a σ document (or its JSON text); a ``ValueError`` names the
    field that is wrong."""
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except RecursionError:
            raise ValueError("not a nonstationary σ model (JSON nested too deeply)") from None
    if not isinstance(obj, dict) or obj.get("format") != SIGMA_FORMAT:
        raise ValueError(
            f"not a nonstationary σ model (expected format {SIGMA_FORMAT!r}, "
            f"got {obj.get('format') if isinstance(obj, dict) else type(obj).__name__!r})")
    if obj.get("version") != SIGMA_VERSION:
        raise ValueError(f"unsupported σ model version {obj.get('version')!r}")
    for key in ("sigma", "fixed_sigma"):
        value = obj.get(key, {})
        problem = sigma_problem(key, value) if value is not None else (
            f"{key} must be an object of edge label -> σ, got null")
        if problem is not None:
            raise ValueError(problem)
    for key in ("params", "label_counts", "losses"):
        if not isinstance(obj.get(key, {}), dict):
            raise ValueError(f"{key!r} must be an object, got {type(obj[key]).__name__}")
    for key in ("labels", "ignored_labels", "log"):
        if not isinstance(obj.get(key, []), list):
            raise ValueError(f"{key!r} must be a list, got {type(obj[key]).__name__}")
    # the kernel is a registered name; an old file's "module:Class" maps to the
    # registered name whose entry point is that target (looked up, not imported)
    kern = kernels.resolve_name(obj.get("kernel"))
    params = dict(obj.get("params") or {})
    allowed = set(cls._get_param_names()) - {"kernel", "random_state"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(f"unknown learner parameter(s) {', '.join(map(repr, unknown))}")
    rs = obj.get("random_state")
    if rs is not None and (isinstance(rs, bool) or not isinstance(rs, int)):
        raise ValueError(f"'random_state' must be an int or null, got {rs!r}")
    try:
        learner = cls(kernel=kern, random_state=rs, **params)
        learner.sigma_ = {str(k): float(v) for k, v in obj["sigma"].items()}
        learner.fixed_sigma_ = {str(k): float(v) for k, v in obj.get("fixed_sigma", {}).items()}
        learner.normalize_ = bool(obj.get("normalize", learner.normalize))
        learner.labels_ = list(obj["labels"])
        learner.label_counts_ = {
            str(k): int(v) for k, v in obj.get("label_counts", {}).items()}
        learner.ignored_labels_ = list(obj["ignored_labels"])
        learner.losses_ = dict(obj.get("losses", {}))
        learner.log_ = list(obj.get("log", []))
        learner.n_train_ = int(obj["n_train"])
        learner.n_evaluations_ = int(obj["n_evaluations"])
        learner.n_evaluations_graph_ = int(obj.get("n_evaluations_graph", 0))
        learner.n_evaluations_reused_ = int(obj.get("n_evaluations_reused", 0))
        learner.subset_sizes_ = []
        learner.budget_ = obj.get("budget")
        learner.n_trimmed_ = int(obj.get("n_trimmed", 0))
        learner.fit_seconds_ = float(obj.get("fit_seconds", 0.0))
        learner.interrupted_ = bool(obj.get("interrupted", False))
        if "lam" in obj:
            learner.lam_ = float(obj["lam"])
    except (KeyError, TypeError, AttributeError) as exc:
        # AttributeError: a field that must be a mapping is null, a list or a scalar
        raise ValueError(f"malformed σ model: {type(exc).__name__}: {exc}") from None
    return learner


def learner_from_document(cls: type, doc: Any, name: str) -> Any:
    """``cls.from_json`` of a document read from the file ``name``; anything wrong is one
    :class:`~structkernels.npk.model.ModelFormatError` naming it."""
    try:
        return cls.from_json(doc)
    except UnknownNameError as exc:
        raise ModelFormatError(f"{name}: {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise ModelFormatError(f"{name}: the model's learner is malformed: {exc}") from None
