"""Plugin discovery: entry points read once, duplicates warned, broken plugins isolated."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import structkernels as sk
from structkernels.kernels.names import _check_kernel_class
from structkernels.kernels.vector import RBFKernel
from structkernels.registry import PluginWarning, Registry, UnknownNameError

BUILTIN = {"linear", "cosine", "rbf", "laplacian", "polynomial"}


def fake_distribution(root, name, entry_points: dict[str, str], module_source: str | None = None):
    """Write an installed-looking distribution (dist-info + module) under ``root``."""
    info = root / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = ["[structkernels.kernels]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    if module_source is not None:
        (root / f"{name.replace('-', '_')}.py").write_text(module_source)


def test_builtins_register_through_entry_points():
    assert BUILTIN <= set(sk.list_kernels())
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)
    assert BUILTIN <= set(reg._discover()), "built-ins come from the core's entry points"


def test_unknown_name_lists_what_exists():
    with pytest.raises(UnknownNameError) as err:
        sk.kernel("no-such-kernel")
    message = str(err.value)
    assert "no-such-kernel" in message
    for name in BUILTIN:
        assert name in message


def test_entry_points_are_read_once(monkeypatch):
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)
    calls = []
    import structkernels.registry as registry_module

    real = registry_module.entry_points

    def spy(**kw):
        calls.append(kw)
        return real(**kw)

    monkeypatch.setattr(registry_module, "entry_points", spy)
    reg.names()
    reg.get("rbf")
    reg.get("linear")
    reg.load_all()
    assert len(calls) == 1


def test_broken_plugin_reported_by_name_and_others_load(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "broken-plugin", {"broken-kernel": "broken_plugin:Nope"},
                      module_source="raise RuntimeError('boom at import')\n")
    fake_distribution(tmp_path, "good-plugin", {"good-kernel": "good_plugin:Good"},
                      module_source=(
                          "from structkernels import Kernel\n"
                          "class Good(Kernel):\n"
                          "    def pair(self, x, y):\n"
                          "        return float(x == y)\n"
                      ))
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)
    with pytest.warns(PluginWarning, match=r"'broken-kernel'.*broken_plugin:Nope.*boom at import"):
        loaded = reg.load_all()
    assert "broken-kernel" not in loaded
    assert "good-kernel" in loaded and BUILTIN <= set(loaded)
    assert "broken-kernel" in reg.errors
    with pytest.raises(ImportError, match="boom at import"):
        reg.get("broken-kernel")
    assert loaded["good-kernel"]().value("a", "a") == 1.0


def test_plugin_that_is_not_a_kernel_is_reported(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "notkernel-plugin", {"not-a-kernel": "notkernel_plugin:thing"},
                      module_source="thing = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)
    with pytest.warns(PluginWarning, match="not a subclass of structkernels.Kernel"):
        loaded = reg.load_all()
    assert "not-a-kernel" not in loaded and "rbf" in loaded


def test_duplicate_name_warns(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "aaa-dup-plugin", {"rbf": "aaa_dup_plugin:Other"},
                      module_source="from structkernels.kernels.vector import LinearKernel as Other\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)
    with pytest.warns(PluginWarning, match="'rbf' is registered twice"):
        reg.names()


def test_register_in_process(monkeypatch):
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)

    class Mine(RBFKernel):
        pass

    reg.register("mine", Mine)
    assert "mine" in reg.names() and reg.get("mine") is Mine
    with pytest.warns(PluginWarning, match="already registered"):
        reg.register("rbf", Mine)
    assert reg.get("rbf") is Mine
    with pytest.raises(TypeError, match="not a subclass"):
        reg.register("bad", int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg.register("mine", Mine, overwrite=True)


def test_top_level_register_and_as_kernel():
    class Tmp(RBFKernel):
        pass

    sk.register("tmp-test-kernel", Tmp)
    try:
        k = sk.kernel("tmp-test-kernel", sigma=3.0)
        assert isinstance(k, Tmp) and k.sigma == 3.0
        assert sk.as_kernel(k) is k
        assert isinstance(sk.as_kernel(Tmp), Tmp)
        with pytest.raises(TypeError):
            sk.as_kernel(42)
        np.testing.assert_allclose(sk.gram("tmp-test-kernel", np.eye(2)), sk.gram("rbf", np.eye(2)))
    finally:
        from structkernels.kernels.names import kernels

        kernels.unregister("tmp-test-kernel")
