"""Every name the benchmark scripts import from structkernels exists (a script is not run
by the suite, so a renamed engine helper would otherwise break it silently)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def _imports(path: Path) -> list[tuple[str, str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [(node.module, alias.name, node.lineno)
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
            and node.module.split(".")[0] == "structkernels"
            for alias in node.names]


def test_there_are_benchmark_scripts():
    assert len(SCRIPTS) > 20


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_imports_resolve(script):
    missing = []
    for module, name, line in _imports(script):
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            if exc.name and not exc.name.startswith("structkernels"):
                pytest.skip(f"{script.name}: optional dependency {exc.name} is not installed")
            missing.append(f"{script.name}:{line}: module {module}")
            continue
        if name != "*" and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{script.name}:{line}: {module}.{name}")
    assert not missing, "; ".join(missing)
