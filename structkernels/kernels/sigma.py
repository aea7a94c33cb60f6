"""σ, the per-edge-label weights of the nonstationary kernels (Garg et al., Eq. 1): its check.

σ's home is the ``sigma`` parameter of the convolution kernel, checked once by
:func:`check_sigma`; NumPy only, for the model-file readers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["check_sigma", "combine_sigma", "sigma_weight"]


def check_sigma(sigma: Any, owner: str = "sigma") -> dict[str, float]:
    """Validate a σ mapping and return it as a ``{label: float}`` dict.

    ``owner`` names the parameter or the place in a model file; ``None`` is ``{}``.  Keys
    must be non-empty strings, values finite numbers ``>= 0`` (a negative weight would not
    change σ(e) σ(e'), but says the caller meant something else).

    Examples
    --------
    >>> check_sigma({"ARG0": 0, "mod": 0.5})
    {'ARG0': 0.0, 'mod': 0.5}
    >>> check_sigma({"ARG0": -1}, "PathKernel.sigma")
    Traceback (most recent call last):
    ...
    ValueError: PathKernel.sigma['ARG0'] is -1; σ must be a finite number >= 0
    """
    if sigma is None:
        return {}
    if not isinstance(sigma, Mapping):
        raise TypeError(
            f"{owner} must be a mapping of edge label -> σ (or None), got {type(sigma).__name__}")
    out: dict[str, float] = {}
    for label, w in sigma.items():
        if not isinstance(label, str) or not label:
            raise TypeError(f"{owner}: edge labels must be non-empty strings, got {label!r}")
        if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, float, np.integer, np.floating)):
            raise TypeError(_problem(owner, label, w))
        if not math.isfinite(w) or w < 0:
            raise ValueError(_problem(owner, label, w))
        out[label] = float(w)
    return out


def _problem(owner: str, label: str, w: Any) -> str:
    """The message of a bad σ value (built only when one is refused)."""
    return f"{owner}[{label!r}] is {w!r}; σ must be a finite number >= 0"


def combine_sigma(*sigmas: Mapping[str, float] | None) -> dict[str, float]:
    """The product of several σ mappings (labels not named weigh 1 in each).

    >>> combine_sigma({"a": 0.5, "b": 2.0}, {"a": 4.0}, None)
    {'a': 2.0, 'b': 2.0}
    """
    out: dict[str, float] = {}
    for i, s in enumerate(sigmas):
        for label, w in check_sigma(s, f"sigma #{i}").items():
            out[label] = out.get(label, 1.0) * w
    return out


def sigma_weight(sigma: Mapping[str, float], edge: str | None) -> float:
    """σ(edge): the named weight, 1 for other labels and for the missing edge."""
    return 1.0 if edge is None else float(sigma.get(edge, 1.0))
