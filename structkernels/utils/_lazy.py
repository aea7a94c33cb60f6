"""A package face whose names are imported on first use (PEP 562)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

#: package -> {name: module} of every package face built by :func:`lazy_exports`
_SERVED: dict[str, dict[str, str]] = {}


def served_from(package: str, name: str) -> str | None:
    """The module a lazy package face serves ``name`` from (None if it does not).

    Lets a tool follow ``from structkernels import Kernel`` without importing anything.

    Examples
    --------
    >>> import structkernels
    >>> served_from("structkernels", "Kernel")
    'structkernels.kernels.base'
    """
    return _SERVED.get(package, {}).get(name)


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
    _SERVED[package] = module_of
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
