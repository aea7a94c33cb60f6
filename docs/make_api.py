"""Write docs/api.md, the API reference, from the package's own docstrings and signatures.

Every public module (no ``_`` in its dotted name) is listed with the first line of its
docstring, and every name of its ``__all__`` that it defines itself, with its signature and
the first line of its docstring.  ``tests/test_api_reference.py`` fails when the file is
stale.  Run from the project root::

    python docs/make_api.py
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import structkernels

OUT = Path(__file__).with_name("api.md")


def _served_here(name: str, home: str | None) -> bool:
    """A name defined in ``name`` itself, or in a private module beside it or inside it
    (``structkernels.engine._blocks`` serves ``structkernels.engine.gram``)."""
    if home == name:
        return True
    parent, _, last = (home or "").rpartition(".")
    return last.startswith("_") and parent in (name, name.rpartition(".")[0])


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ").strip()


class _Default:
    """A default value shown the same way in every run (sets sorted, long values cut)."""

    def __init__(self, value: object):
        self.value = value

    def __repr__(self) -> str:
        v = self.value
        if isinstance(v, (set, frozenset)):
            items = sorted(map(repr, v))
            shown = ", ".join(items[:3]) + (", ..." if len(items) > 3 else "")
            return f"{type(v).__name__}({{{shown}}})"
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."


def _signature(obj: object) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    params = [
        p if p.default is inspect.Parameter.empty else p.replace(default=_Default(p.default))
        for p in sig.parameters.values()
    ]
    sig = str(sig.replace(parameters=params))
    return sig if len(sig) <= 160 else sig[:157] + "...)"


def _modules() -> list[str]:
    names = ["structkernels"]
    for info in pkgutil.walk_packages(structkernels.__path__, "structkernels."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return sorted(names)


def render() -> str:
    out = [
        "# API reference",
        "",
        "Generated from the docstrings by `python docs/make_api.py` (a test fails when it is",
        "stale). Each module's public names (`__all__`) that it or a private module beside it defines, with their signatures;",
        "`help(name)` gives the whole docstring.  The layout is drawn in CONTRIBUTING.md.",
        "",
    ]
    for name in _modules():
        module = importlib.import_module(name)
        public = [n for n in getattr(module, "__all__", []) if not n.startswith("_")]
        own = []
        for n in public:
            obj = getattr(module, n)
            home = getattr(obj, "__module__", None)
            if (name == "structkernels" or _served_here(name, home)
                    or not (inspect.isclass(obj) or inspect.isfunction(obj))):
                own.append((n, obj))
        out += [f"## `{name}`", "", _first_line(module) or "(no docstring)", ""]
        if name == "structkernels":
            out += ["The package's face; each name is served from its module:", ""]
            for n, obj in sorted(own):
                home = getattr(obj, "__module__", "")
                out.append(f"- `{n}` (`{home}`): {_first_line(obj)}")
            out.append("")
            continue
        for n, obj in own:
            if inspect.isclass(obj) or inspect.isfunction(obj):
                out.append(f"- `{n}{_signature(obj)}`: {_first_line(obj)}")
            else:
                out.append(f"- `{n}`: {type(obj).__name__}")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.exists() and OUT.read_text(encoding="utf-8") == text else 1)
    from structkernels.utils import atomic_open

    with atomic_open(OUT, "w") as fh:
        fh.write(text)
    print(f"wrote {OUT} ({len(text.splitlines())} lines)")
