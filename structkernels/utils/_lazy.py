"""Imports on first use: a package face (PEP 562), optional dependencies, and work done
right after a costly module is imported by whoever needs it."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from importlib import import_module
from types import ModuleType
from typing import Any


def lazy_exports(
    package: str, where: dict[str, list[str]], submodules: tuple[str, ...] | list[str] = (),
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for ``package`` serving ``where``'s names.

    ``where`` maps a module (absolute, or relative to ``package`` with a leading dot) to the
    names it provides; a name is imported the first time it is read, then kept in the
    package's namespace.  ``submodules`` (a fixed list, never names read from data) are
    served as attributes on first use, listed by ``dir()`` but not in ``__all__``.

    Examples
    --------
    >>> __all__, __getattr__, __dir__ = lazy_exports("json", {".decoder": ["JSONDecoder"]})
    >>> __getattr__("JSONDecoder").__name__
    'JSONDecoder'
    >>> _, __getattr__, __dir__ = lazy_exports("json", {}, submodules=("decoder",))
    >>> __getattr__("decoder").__name__, "decoder" in __dir__()
    ('json.decoder', True)
    """
    own = frozenset(submodules)
    for name in own:
        if not name.isidentifier() or name.startswith("_"):
            raise ValueError(f"{package}: {name!r} is not the name of a public submodule")
    module_of = {
        name: (package + module if module.startswith(".") else module)
        for module, names in where.items() for name in names
    }
    namespace = import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            if name in own:  # the import binds it in the package's namespace
                return import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(module_of) | own)

    return sorted(module_of), __getattr__, __dir__


def optional_module(name: str, hint: str) -> ModuleType:
    """``import name``, or an ImportError whose message is ``hint`` (what needs it, how to
    install it)."""
    try:
        return import_module(name)
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(hint) from None


class _Then(importlib.abc.Loader):
    """A module's own loader, then ``callback(module)`` once the module has run."""

    def __init__(self, loader: Any, callback: Callable[[ModuleType], None]):
        self.loader = loader
        self.callback = callback

    def create_module(self, spec: Any) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.callback(module)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``name`` is imported, wraps its loader in :class:`_Then`."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]):
        self.name = name
        self.callback = callback
        self.armed = True

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name or not self.armed:
            return None
        self.armed = False  # the search below must not find this finder again
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _Then(spec.loader, self.callback)
        return spec


def after_import(name: str, callback: Callable[[ModuleType], None]) -> None:
    """Call ``callback(module)`` once module ``name`` (a fixed name, never one read from
    data) is imported: now if it already is, else right after its first import.  A module
    that is costly to import is then only touched by code that imports it anyway.

    Examples
    --------
    >>> import sys
    >>> seen = []
    >>> after_import("json", lambda m: seen.append(m.__name__))
    >>> seen
    ['json']
    """
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    sys.meta_path.insert(0, _AfterImport(name, callback))
