"""``structkernels kernels``: list the registered kernels and their parameters.

The listing reads each kernel's ``__init__`` signature and docstring from its
source (:mod:`ast`), without importing the kernel's module: importing them
all would load scikit-learn and numba, seconds of start-up for a list.  A
kernel whose source cannot be read that way (a C extension, a class built at
run time) is imported, exactly as before; ``--load`` imports every one (which
also reports broken plugins).  A plugin that fails in any way, ``sys.exit`` in
its module included, is listed as ``BROKEN`` with its error; the listing goes on.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
from typing import Any

from structkernels.kernels.names import kernels
from structkernels.utils import served_from


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("kernels", help="list registered kernels with their parameters")
    p.add_argument(
        "--load", action="store_true",
        help="import every kernel (slower; reports plugins that fail to import)",
    )
    p.set_defaults(func=run)
    return p


def _module_ast(module: str, cache: dict[str, ast.Module | None]) -> ast.Module | None:
    if module not in cache:
        tree = None
        try:
            spec = importlib.util.find_spec(module)
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                with open(spec.origin, encoding="utf-8") as fh:
                    tree = ast.parse(fh.read(), filename=spec.origin)
        except (Exception, SystemExit):
            # find_spec imports the parent package of a dotted module: a plugin package
            # that raises or calls sys.exit there is listed from its import instead
            tree = None
        cache[module] = tree
    return cache[module]


def _resolve_class(
    module: str, name: str, cache: dict[str, ast.Module | None], depth: int = 0
) -> tuple[str, ast.ClassDef] | None:
    """``(module, ClassDef)`` of ``module.name``, following ``from x import name``."""
    served = served_from(module, name)  # a package face that serves its names lazily
    if served is not None:
        return _resolve_class(served, name, cache, depth + 1)
    tree = _module_ast(module, cache)
    if tree is None or depth > 8:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return module, node
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _resolve_class(node.module, alias.name, cache, depth + 1)
    return None


def _static_signature(
    module: str, name: str, cache: dict[str, ast.Module | None], depth: int = 0
) -> list[str] | None:
    """``["name=default", ...]`` of the class's ``__init__`` (inherited too), or None."""
    found = _resolve_class(module, name, cache)
    if found is None or depth > 8:
        return None
    mod, cls = found
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args
            if args.vararg or args.kwarg or args.posonlyargs:
                return None
            positional = args.args[1:]
            defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
            out = []
            for arg, default in zip(positional, defaults, strict=True):
                out.append(arg.arg if default is None else f"{arg.arg}={ast.unparse(default)}")
            for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                out.append(arg.arg if default is None else f"{arg.arg}={ast.unparse(default)}")
            return out
    if (mod, name) == ("structkernels.kernels.base", "Kernel"):
        return []  # the base class takes no parameters
    for base in cls.bases:
        if not isinstance(base, ast.Name):
            return None
        sig = _static_signature(mod, base.id, cache, depth + 1)
        if sig is None:
            return None
        if sig:
            return sig
    return []


def _static_entry(value: str, cache: dict[str, ast.Module | None]) -> tuple[str, str] | None:
    module, _, attr = value.partition(":")
    if not attr or "." in attr:
        return None
    sig = _static_signature(module, attr, cache)
    found = _resolve_class(module, attr, cache)
    if sig is None or found is None:
        return None
    doc = (ast.get_docstring(found[1]) or "").strip().splitlines()
    return f"{module}.{attr}({', '.join(sig)})", (doc[0] if doc else "")


def _loaded_entry(cls: Any) -> tuple[str, str]:
    params = ", ".join(f"{k}={v!r}" for k, v in cls().get_params(deep=False).items())
    doc = (cls.__doc__ or "").strip().splitlines()
    return f"{cls.__module__}.{cls.__name__}({params})", (doc[0] if doc else "")


def run(args: argparse.Namespace) -> int:
    cache: dict[str, ast.Module | None] = {}
    eps = kernels.entry_points()
    unbuildable: dict[str, str] = {}
    for name in kernels.names():
        entry = None
        if not args.load and name in eps:
            entry = _static_entry(eps[name].value, cache)
        if entry is None:
            try:
                cls = kernels.get(name)
            except ImportError:
                continue  # reported below
            try:
                entry = _loaded_entry(cls)
            except (Exception, SystemExit) as exc:  # a constructor that fails is a broken plugin
                unbuildable[name] = (
                    f"kernel plugin {name!r} cannot be built with its default parameters: "
                    f"{type(exc).__name__}: {exc}"
                )
                continue
        head, doc = entry
        print(f"{name:16s} {head}")
        if doc:
            print(f"{'':16s}   {doc}")
    for name, message in sorted({**unbuildable, **kernels.errors}.items()):
        print(f"{name:16s} BROKEN: {message}")
    return 0
