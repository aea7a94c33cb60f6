"""One exception root: every exception class of the core and of the plugins derives from
``structkernels.StructkernelsError`` and keeps its built-in base; every warning class from
``structkernels.StructkernelsWarning`` (a ``UserWarning`` under the same root).

Every module of ``structkernels``, ``structkernels_hsic`` and ``structkernels_example`` is
imported (a module needing an optional extra that is not installed is skipped, naming it),
and every exception class it defines is checked.  Exception classes defined inside a
function cannot be reached so: the sources are scanned for them and refused.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import structkernels
from structkernels import StructkernelsError, StructkernelsWarning

ROOT = Path(__file__).resolve().parents[1]

PACKAGES = {
    "structkernels": None,
    "structkernels_hsic": "plugins/structkernels-hsic",
    "structkernels_example": "plugins/structkernels-example",
}

#: Built-in exception classes (``ValueError``, ``OSError``, ...).
BUILTIN_EXCEPTIONS = {
    obj for obj in vars(builtins).values()
    if isinstance(obj, type) and issubclass(obj, BaseException)
}

#: Classes whose only built-in base is ``Exception`` itself: a command's user error and
#: private control-flow signals, caught where they arise.
EXCEPTION_ONLY = {"CommandError", "_Fail", "TooLarge"}

#: The built-in bases the known classes had before the root came, and keep.
KEPT = {
    "StructureError": ValueError, "InputError": ValueError, "GraphFormatError": ValueError,
    "DotError": ValueError, "DotNestingError": ValueError, "CandidateError": ValueError,
    "RelationFormatError": ValueError, "RecordProblem": ValueError, "CorpusFormatError": ValueError,
    "InteractionFormatError": ValueError, "UnknownNameError": ValueError,
    "ModelFormatError": ValueError, "ExtractorFormatError": ValueError,
    "KernelOutputError": ValueError, "NonFiniteKernelValueError": ValueError,
    "NonFiniteError": ValueError, "RecordError": ValueError, "NpyFormatError": ValueError,
    "InputTooLargeError": ValueError, "CorruptInputError": ValueError,
    "WriteError": OSError, "MemoryBudgetError": MemoryError,
    "CommandError": Exception, "_Fail": Exception, "TooLarge": Exception,
    "PluginWarning": UserWarning, "ZeroSelfSimilarityWarning": UserWarning,
    "ApproximationWarning": UserWarning, "PipelineVersionWarning": UserWarning,
}
#: The same for the HSIC plugin's classes.
KEPT_HSIC = {"PHSICModelError": ValueError, "SlowSpectrumWarning": UserWarning}


def _module_names() -> list:
    params = []
    for top in PACKAGES:
        try:
            package = importlib.import_module(top)
        except ModuleNotFoundError as exc:
            params.append(pytest.param(top, marks=pytest.mark.skip(
                reason=f"{top} is not installed ({exc})")))
            continue
        params.append(pytest.param(top, id=top))
        for info in pkgutil.walk_packages(package.__path__, top + "."):
            if info.name.rpartition(".")[2] == "__main__":  # runs the command line
                continue
            params.append(pytest.param(info.name, id=info.name))
    return params


MODULES = _module_names()


def _import(name: str):
    """The module, or a skip naming the optional extra it needs."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing and missing not in PACKAGES:
            pytest.skip(f"{name} needs {missing!r} (an optional extra), not installed")
        raise


def _exception_classes(module) -> list[type]:
    """Exception classes defined in ``module``, nested classes included."""
    found, todo, seen = [], list(vars(module).values()), set()
    while todo:
        obj = todo.pop()
        if not inspect.isclass(obj) or id(obj) in seen or obj.__module__ != module.__name__:
            continue
        seen.add(id(obj))
        if issubclass(obj, BaseException):
            found.append(obj)
        todo.extend(vars(obj).values())
    return sorted(found, key=lambda c: c.__qualname__)


def _builtin_bases(cls: type) -> set[type]:
    return {c for c in cls.__mro__ if c in BUILTIN_EXCEPTIONS} - {BaseException}


def test_the_root_and_its_warning():
    assert issubclass(StructkernelsError, Exception)
    assert issubclass(StructkernelsWarning, StructkernelsError)
    assert issubclass(StructkernelsWarning, UserWarning)
    assert structkernels.StructkernelsError is structkernels.utils.StructkernelsError


@pytest.mark.parametrize("name", MODULES)
def test_every_exception_class_has_the_root_and_keeps_its_builtin_base(name):
    module = _import(name)
    for cls in _exception_classes(module):
        where = f"{name}.{cls.__qualname__}"
        if cls in (StructkernelsError, StructkernelsWarning):
            continue
        assert issubclass(cls, StructkernelsError), f"{where} does not derive from StructkernelsError"
        if issubclass(cls, Warning):
            assert issubclass(cls, StructkernelsWarning), (
                f"{where} is a warning not deriving from StructkernelsWarning")
            assert issubclass(cls, UserWarning), f"{where} is no longer a UserWarning"
        builtin = _builtin_bases(cls) - {Exception, Warning, UserWarning}
        if cls.__name__ not in EXCEPTION_ONLY and not issubclass(cls, Warning):
            assert builtin, (
                f"{where} has no built-in base besides the root: derive from "
                "(StructkernelsError, ValueError) or the like")
        kept = {**KEPT, **KEPT_HSIC}.get(cls.__name__)
        if kept is not None:
            assert issubclass(cls, kept), f"{where} lost its built-in base {kept.__name__}"


def test_the_known_classes_were_found():
    """The tables of kept bases name classes that exist (a renamed class updates them)."""
    found, expected = set(), set(KEPT)
    for param in MODULES:
        if param.marks:
            continue
        try:
            module = importlib.import_module(param.values[0])
        except ModuleNotFoundError:
            continue
        found |= {c.__name__ for c in _exception_classes(module)}
        if param.values[0] == "structkernels_hsic":
            expected |= set(KEPT_HSIC)
    assert expected - found == set()


def _source_dirs() -> list[Path]:
    dirs = [ROOT / "structkernels"]
    for top, where in PACKAGES.items():
        if where is not None:
            dirs.append(ROOT / where / top)
    return [d for d in dirs if d.is_dir()]


def _looks_like_exception(base: ast.expr) -> bool:
    name = ast.unparse(base).rpartition(".")[2]
    builtin = getattr(builtins, name, None)
    return (isinstance(builtin, type) and issubclass(builtin, BaseException)) or name.endswith(
        ("Error", "Warning", "Exception"))


def test_no_exception_class_is_defined_inside_a_function():
    """Classes made inside a function cannot be imported and checked: define them at the top."""
    bad = []
    for folder in _source_dirs():
        for path in sorted(folder.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ClassDef) and any(map(_looks_like_exception, inner.bases)):
                        bad.append(f"{path.relative_to(ROOT)}:{inner.lineno}: {inner.name}")
    assert bad == []


def test_a_caller_catches_both_ways():
    from structkernels.utils import NpyFormatError, WriteError

    for cls, builtin in ((NpyFormatError, ValueError), (WriteError, OSError)):
        with pytest.raises(StructkernelsError):
            raise cls("x")
        with pytest.raises(builtin):
            raise cls("x")
