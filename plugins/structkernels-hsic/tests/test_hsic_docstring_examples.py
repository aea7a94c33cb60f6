"""The examples in the plugin's public docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import structkernels_hsic


def _modules() -> list[str]:
    names = ["structkernels_hsic"]
    for info in pkgutil.walk_packages(structkernels_hsic.__path__, "structkernels_hsic."):
        names.append(info.name)
    return sorted(names)


#: modules whose examples need PyTorch (the [torch] extra)
NEEDS_TORCH = {"structkernels_hsic.torch", "structkernels_hsic.bottleneck"}


@pytest.mark.parametrize("name", _modules())
def test_hsic_docstring_examples(name):
    if name in NEEDS_TORCH:
        pytest.importorskip("torch", reason="the [torch] extra (PyTorch) is not installed")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
