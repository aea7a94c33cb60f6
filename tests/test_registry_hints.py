"""A measure of the structkernels-hsic plugin asked for without the plugin says how to
install it."""

from __future__ import annotations

import pytest

import structkernels as sk
from structkernels import registry
from structkernels.registry import Registry, UnknownNameError, measures


@pytest.fixture
def no_plugins(monkeypatch):
    """The measures registry as in an environment without any plugin installed."""
    monkeypatch.setattr(registry, "entry_points", lambda group=None: [])
    measures.refresh()
    yield
    monkeypatch.undo()
    measures.refresh()


@pytest.mark.parametrize("name", ["hsic", "phsic", "structured-hsic"])
def test_a_plugin_measure_without_the_plugin_says_how_to_install_it(no_plugins, name):
    with pytest.raises(UnknownNameError) as info:
        sk.measure(name)
    message = str(info.value)
    assert "registered measures: (none)" in message
    assert "structkernels-hsic plugin" in message
    assert "python -m pip install -e plugins/structkernels-hsic" in message
    assert "\n" not in message
    with pytest.raises(UnknownNameError, match="python -m pip install -e plugins/structkernels-hsic"):
        measures.resolve_name(name)


def test_an_unknown_measure_gets_no_plugin_hint(no_plugins):
    with pytest.raises(UnknownNameError) as info:
        sk.measure("mutual-information")
    assert "structkernels-hsic" not in str(info.value)


def test_hints_of_a_registry():
    reg = Registry("structkernels.no-such-group", "widget", hints={"w": "install widgets"})
    with pytest.raises(UnknownNameError, match=r"registered widgets: \(none\); install widgets$"):
        reg.get("w")
    with pytest.raises(UnknownNameError) as info:
        reg.get("v")
    assert "install widgets" not in str(info.value)


def test_the_installed_plugin_still_resolves():
    measures.refresh()
    if "hsic" not in measures.names():
        pytest.skip("structkernels-hsic is not installed here")
    assert measures.resolve_name("hsic") == "hsic"
