"""Import of an optional dependency, with an install hint when it is missing."""

from __future__ import annotations

import importlib
from types import ModuleType


def optional_module(name: str, hint: str) -> ModuleType:
    """``import name``, or an ImportError whose message is ``hint`` (what needs it, how to install)."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(hint) from None
