"""Plugin discovery through ``importlib.metadata`` entry points.

A name offered twice warns: a built-in name (from the ``structkernels`` distribution) is
never replaced by a plugin, and between plugins the first distribution in sorted order
keeps the bare name; every entry point is also reachable as ``dist:name``.  A plugin that
fails to import is reported by name and never takes the others down.  Files never name a
class to import: :meth:`Registry.resolve_name` imports nothing but the registry's own entry
points.  This module imports nothing of the package but the error root of
:mod:`structkernels.utils`, so every package (the command line too) may use it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from structkernels.utils import StructkernelsError, StructkernelsWarning

__all__ = [
    "Registry",
    "PluginWarning",
    "UnknownNameError",
    "measures",
    "measure",
    "readers",
    "CORE_DISTRIBUTION",
    "distribution_name",
]


class PluginWarning(StructkernelsWarning):
    """A plugin could not be loaded, or offers a name already taken."""


class UnknownNameError(StructkernelsError, ValueError):
    """A name that no plugin registered."""


#: The distribution whose entry points are the built-ins: a plugin cannot replace them.
CORE_DISTRIBUTION = "structkernels"


def _qualified_name(obj: Any, sep: str = ":") -> str:
    """``module:qualname`` of a class (``sep`` between them), as an entry point names it."""
    return f"{getattr(obj, '__module__', '')}{sep}{getattr(obj, '__qualname__', '')}"


def _entry_point_target(ep: EntryPoint) -> str:
    """``module:attr`` an entry point names, without its extras and spaces."""
    value = ep.value.split("[", 1)[0]
    module, _, attr = value.partition(":")
    return f"{module.strip()}:{attr.strip()}"


def distribution_name(ep: EntryPoint) -> str:
    """The distribution (installed package) that declares the entry point ``ep``."""
    dist = getattr(ep, "dist", None)
    return getattr(dist, "name", None) or "<unknown distribution>"


class Registry:
    """Name -> object table backed by one entry-point group.

    Parameters
    ----------
    group : str
        The entry-point group, e.g. ``"structkernels.kernels"``.
    what : str
        What the names denote, used in messages ("kernel", "measure", ...).
    check : callable, optional
        Called with each loaded object; raises ``TypeError`` if it is not
        acceptable (for example not a Kernel subclass).
    hints : dict, optional
        Name -> what to say when that name is not registered (the plugin that
        provides it and how to install it); added to the unknown-name message.
    """

    def __init__(self, group: str, what: str, check: Callable[[Any], None] | None = None,
                 hints: dict[str, str] | None = None):
        self.group = group
        self.what = what
        self._check = check
        self._hints = dict(hints or {})
        self._entry_points: dict[str, EntryPoint] | None = None
        self._qualified: dict[str, EntryPoint] = {}
        self._loaded: dict[str, Any] = {}
        self._local: dict[str, Any] = {}
        #: name -> message of every plugin that failed to load or whose name was refused
        self.errors: dict[str, str] = {}

    def _discover(self) -> dict[str, EntryPoint]:
        """Name -> entry point, plus ``dist:name`` for every entry point (the precedence
        of the module's docstring)."""
        if self._entry_points is None:
            found: dict[str, EntryPoint] = {}
            qualified: dict[str, EntryPoint] = {}
            eps = sorted(
                entry_points(group=self.group),
                key=lambda e: (distribution_name(e) != CORE_DISTRIBUTION, distribution_name(e), e.name),
            )
            for ep in eps:
                if ":" in ep.name:
                    # "a:b" could shadow the qualified name of another plugin's "b"
                    message = (
                        f"{self.what} entry point {ep.name!r} ({ep.value}, distribution "
                        f"{distribution_name(ep)}) is refused: a name may not contain ':' "
                        "(it could shadow a qualified name dist:name)"
                    )
                    self.errors[f"{distribution_name(ep)}:{ep.name}"] = message
                    warnings.warn(message, PluginWarning, stacklevel=3)
                    continue
                qualified.setdefault(f"{distribution_name(ep)}:{ep.name}", ep)
                if ep.name in found:
                    kept = found[ep.name]
                    if kept.value != ep.value:
                        builtin = distribution_name(kept) == CORE_DISTRIBUTION
                        warnings.warn(
                            f"{self.what} name {ep.name!r} is registered twice in entry-point group "
                            f"{self.group!r}: {kept.value} ({distribution_name(kept)}"
                            f"{', built-in' if builtin else ''}) keeps the name; {ep.value} "
                            f"is reachable only as {distribution_name(ep)}:{ep.name}",
                            PluginWarning,
                            stacklevel=3,
                        )
                    continue
                found[ep.name] = ep
            self._qualified = qualified
            self._entry_points = found
        return self._entry_points

    def _entry_point(self, name: str) -> EntryPoint | None:
        found = self._discover()
        return found[name] if name in found else self._qualified.get(name)

    def describe(self, name: str) -> str:
        """Which object ``name`` resolves to: ``"module:attr (distribution)"``."""
        if name in self._local:
            obj = self._local[name]
            where = f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', obj)}"
            return f"{where} (registered in-process)"
        ep = self._entry_point(name)
        if ep is None:
            self.get(name)  # raises UnknownNameError
        return f"{ep.value} ({distribution_name(ep)})"

    def entry_points(self) -> dict[str, EntryPoint]:
        """The bare name -> entry point table (after precedence), without loading."""
        return dict(self._discover())

    def _load(self, name: str) -> Any:
        if name in self._local:
            return self._local[name]
        if name in self._loaded:
            return self._loaded[name]
        if name in self.errors:
            raise ImportError(self.errors[name])
        ep = self._entry_point(name)
        try:
            obj = ep.load()
            if self._check is not None:
                self._check(obj)
        except (Exception, SystemExit) as exc:  # a broken plugin must not take the others down
            message = (f"{self.what} plugin {name!r} ({ep.value}, distribution "
                       f"{distribution_name(ep)}) failed to load: {type(exc).__name__}: {exc}")
            self.errors[name] = message
            warnings.warn(message, PluginWarning, stacklevel=3)
            raise ImportError(message) from exc
        self._loaded[name] = obj
        return obj

    def names(self) -> list[str]:
        """All registered names, sorted (broken plugins included)."""
        return sorted(set(self._discover()) | set(self._local))

    def load_all(self) -> dict[str, Any]:
        """Load every plugin; broken ones are warned about and left out."""
        out = {}
        for name in self.names():
            with contextlib.suppress(ImportError):
                out[name] = self._load(name)
        return out

    def get(self, name: str) -> Any:
        """The object registered under ``name``."""
        if not isinstance(name, str):
            raise TypeError(f"{self.what} name must be a str, got {type(name).__name__}")
        if name not in self._local and self._entry_point(name) is None:
            raise UnknownNameError(f"unknown {self.what} {name!r}; registered {self.what}s: "
                                   + (", ".join(self.names()) or "(none)") + self._hint(name))
        return self._load(name)

    def _hint(self, name: str) -> str:
        """``"; HINT"`` for a name with a hint (a plugin's name), else ``""``."""
        hint = self._hints.get(name)
        return f"; {hint}" if hint else ""

    def register(self, name: str, obj: Any, *, overwrite: bool = False) -> None:
        """Register ``obj`` under ``name`` in this process only.

        A name may not contain ``:`` (it is kept for qualified names ``dist:name``).
        """
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"{self.what} name must be a non-empty str without ':' (kept for "
                             f"qualified names dist:name), got {name!r}")
        if self._check is not None:
            self._check(obj)
        if not overwrite and (name in self._local or name in self._discover()):
            warnings.warn(f"{self.what} name {name!r} is already registered; the new "
                          "registration replaces it in this process", PluginWarning, stacklevel=2)
        self._local[name] = obj
        self.errors.pop(name, None)

    def unregister(self, name: str) -> None:
        """Remove an in-process registration made by :meth:`register`."""
        self._local.pop(name, None)

    def refresh(self) -> None:
        """Forget the cached entry points (after installing a plugin in-process)."""
        self._entry_points = None
        self._loaded.clear()
        self.errors.clear()

    def name_of(self, obj: Any) -> str | None:
        """The registered name of ``obj`` (a class), or None when it is not registered.

        In-process registrations come first, then the entry point whose value is the class's
        ``module:qualname`` (compared as text), then every entry point is loaded and
        compared by identity (an entry point may name a re-export).

        Examples
        --------
        >>> from structkernels.kernels.names import kernels
        >>> from structkernels.kernels.vector import RBFKernel
        >>> kernels.name_of(RBFKernel)
        'rbf'
        """
        for name, local in self._local.items():
            if local is obj:
                return name
        qualname = _qualified_name(obj)
        found = self._discover()
        candidates = [*sorted(found.items()), *sorted(self._qualified.items())]
        for name, ep in candidates:
            if _entry_point_target(ep) == qualname and self._loads_to(name, obj):
                return name
        for name, _ in candidates:
            if self._loads_to(name, obj):
                return name
        return None

    def name_to_save(self, obj: Any) -> str:
        """The registered name a file saves ``obj`` (a class) under; refused when there is none.

        Raises
        ------
        UnknownNameError
            Naming the class and how to register it.
        """
        name = self.name_of(obj)
        if name is None:
            raise UnknownNameError(
                f"the {self.what} class {_qualified_name(obj, '.')} is not registered: files "
                f"name a {self.what} by its registered name only; register it with "
                f"structkernels.register(name, cls) in this process (before saving and "
                f"loading) or with an entry point in the group {self.group!r}"
            )
        return name

    def _loads_to(self, name: str, obj: Any) -> bool:
        try:
            return self._load(name) is obj
        except ImportError:
            return False

    def resolve_name(self, spec: Any) -> str:
        """The registered name a file's ``spec`` denotes; nothing is imported by name.

        ``spec`` is a registered name (bare or ``dist:name``), or, in files of older
        releases, the ``module:qualname`` of a registered class: the text is looked up,
        never imported.  Anything else raises :class:`UnknownNameError`.

        Examples
        --------
        >>> from structkernels.kernels.names import kernels
        >>> kernels.resolve_name("structkernels.kernels.path:PathKernel")
        'path'
        >>> try:
        ...     kernels.resolve_name("subprocess:getoutput")
        ... except UnknownNameError as exc:
        ...     print(str(exc)[:56])
        kernel 'subprocess:getoutput' is not a registered kernel
        """
        if not isinstance(spec, str) or not spec:
            raise UnknownNameError(f"a {self.what} is named by a registered name (a non-empty "
                                   f"str), got {spec!r}")
        if spec in self._local or self._entry_point(spec) is not None:
            return spec
        if ":" in spec:
            for name, local in self._local.items():
                if _qualified_name(local) == spec:
                    return name
            for name, ep in [*sorted(self._discover().items()), *sorted(self._qualified.items())]:
                if _entry_point_target(ep) == spec:
                    return name
        shown = ", ".join(self.names()) or "(none)"
        raise UnknownNameError(
            f"{self.what} {spec!r} is not a registered {self.what}; files name a {self.what} "
            f"by its registered name and nothing is imported by a name read from a file "
            f"(register a class with structkernels.register(name, cls) or an entry point in "
            f"{self.group!r}); registered {self.what}s: {shown}{self._hint(spec)}"
        )


#: What to say when a measure of the ``structkernels-hsic`` plugin is asked for without it.
_HSIC_HINT = (
    "the measure {name!r} is provided by the structkernels-hsic plugin: install it with "
    "`python -m pip install -e plugins/structkernels-hsic` (from a checkout of structkernels)"
)

#: Dependence measures (entry-point group ``structkernels.measures``), e.g. ``hsic``, ``phsic``.
measures = Registry(
    "structkernels.measures", "measure",
    hints={name: _HSIC_HINT.format(name=name) for name in ("hsic", "phsic", "structured-hsic")},
)


def measure(name: str, **params: Any):
    """Build the dependence measure registered as ``name`` (e.g. ``"hsic"``) with ``params``.

    A measure of the ``structkernels-hsic`` plugin asked for without the plugin installed
    raises :class:`UnknownNameError` saying how to install it.

    Examples
    --------
    >>> import structkernels as sk
    >>> from structkernels.registry import UnknownNameError
    >>> try:
    ...     sk.measure("no-such-measure")
    ... except UnknownNameError as exc:
    ...     print(str(exc)[:34])
    unknown measure 'no-such-measure';
    """
    return measures.get(name)(**params)


#: Record readers (entry-point group ``structkernels.readers``): the name is the
#: key of a JSON Lines record (``{"text": ...}``), the object a function taking
#: that key's value and returning the structure a kernel consumes.
readers = Registry("structkernels.readers", "record reader")
