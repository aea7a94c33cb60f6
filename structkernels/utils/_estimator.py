"""scikit-learn's parameter protocol without importing scikit-learn.

Kernels and the trained extractor are small objects whose constructor stores its keyword
parameters verbatim.  :class:`ParamsMixin` gives them ``get_params``, ``set_params`` and
the changed-only ``repr`` with the semantics of ``sklearn.base.BaseEstimator``, so that
``clone``, ``GridSearchCV`` and nested ``kernel__param`` names work on them, while a
command that only predicts never imports scikit-learn (whose import, through SciPy's
statistics, takes longer than loading a trained model).
"""

from __future__ import annotations

import inspect
import math
from collections import defaultdict
from typing import Any

__all__ = ["ParamsMixin"]


def _same_default(value: Any, default: Any) -> bool:
    """Whether ``value`` shows as the constructor's ``default`` (scikit-learn's rule: by
    ``repr``, NaN equal to NaN)."""
    if default is inspect.Parameter.empty:
        return False
    if hasattr(value, "get_params") and type(value) is not type(default):
        return False
    if repr(value) == repr(default):
        return True
    nan = [isinstance(v, float) and math.isnan(v) for v in (value, default)]
    return all(nan)


class ParamsMixin:
    """``get_params``/``set_params``/``repr`` from the constructor's signature, as
    ``sklearn.base.BaseEstimator`` defines them.

    Examples
    --------
    >>> class Scaled(ParamsMixin):
    ...     def __init__(self, scale=1.0, name="x"):
    ...         self.scale = scale
    ...         self.name = name
    >>> s = Scaled(scale=2.0)
    >>> s
    Scaled(scale=2.0)
    >>> s.set_params(name="y").get_params()
    {'name': 'y', 'scale': 2.0}
    """

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The constructor's parameter names, sorted (no ``*args``)."""
        if cls.__init__ is object.__init__:
            return []
        names = []
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError(f"{cls.__name__}.__init__ must name its parameters "
                                   "(no *args): they are its get_params()")
            if p.name != "self" and p.kind != p.VAR_KEYWORD:
                names.append(p.name)
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters by name; with ``deep``, those of nested objects too as
        ``name__param``."""
        out: dict[str, Any] = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params: Any) -> Any:
        """Set parameters (``name__param`` for a nested object's); returns ``self``."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested: dict[str, dict[str, Any]] = defaultdict(dict)
        for key, value in params.items():
            key, delim, sub_key = key.partition("__")
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. "
                                 f"Valid parameters are: {self._get_param_names()!r}.")
            if delim:
                nested[key][sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        defaults = {name: p.default
                    for name, p in inspect.signature(type(self).__init__).parameters.items()}
        shown = [f"{k}={v!r}" for k, v in self.get_params(deep=False).items()
                 if not _same_default(v, defaults.get(k, inspect.Parameter.empty))]
        return f"{type(self).__name__}({', '.join(shown)})"
