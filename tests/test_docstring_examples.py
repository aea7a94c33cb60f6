"""The examples in the public docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import structkernels


def _modules() -> list[str]:
    names = ["structkernels"]
    for info in pkgutil.walk_packages(structkernels.__path__, "structkernels."):
        if ".cli" in info.name or info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
