"""Every command's --help: each option explained, each default stated, plain text throughout."""

from __future__ import annotations

import argparse
import re

import pytest

from structkernels.cli import build_parser, commands
from structkernels.registry import CORE_DISTRIBUTION, distribution_name

CORE = sorted(
    name for name, ep in commands.entry_points().items()
    if distribution_name(ep) == CORE_DISTRIBUTION
)
ALL = sorted(commands.names())

#: reStructuredText that must not reach a terminal: literals and cross-reference roles
MARKUP = re.compile(r"``|:(func|mod|class|meth|attr|data|exc|obj|ref|doc):`")


def _parsers(name: str) -> list[argparse.ArgumentParser]:
    """The parser of command ``name`` and every parser nested under it (``phsic fit`` ...)."""
    top = build_parser(only=name)
    found, todo = [], [top]
    while todo:
        parser = todo.pop()
        found.append(parser)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
    return [p for p in found if p is not top]


def _expanded_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text as --help prints it (``%(default)s`` and the like filled in)."""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(c) for c in params["choices"])
    return action.help % dict(params, prog=parser.prog)


def test_the_core_commands_are_all_walked():
    assert {"gram", "kernels", "predict", "train-npk", "candidates", "paraphrase"} <= set(CORE)


@pytest.mark.parametrize("name", CORE)
def test_every_option_has_help_and_states_its_default(name):
    missing, unstated = [], []
    for parser in _parsers(name):
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                continue
            label = f"{parser.prog} {'/'.join(action.option_strings) or action.dest}"
            if not action.help or action.help is argparse.SUPPRESS:
                missing.append(label)
                continue
            # a flag (store_true, ...) takes no value: its default is simply its absence
            if action.default is None or action.nargs == 0:
                continue
            if f"(default: {action.default}" not in _expanded_help(parser, action):
                unstated.append(f"{label} (default {action.default!r})")
    assert not missing, f"options without help: {missing}"
    assert not unstated, f"defaults not stated in the help: {unstated}"


@pytest.mark.parametrize("name", ALL)
def test_help_is_plain_text(name):
    """No reStructuredText (double backquotes, :func: and the like) in any command's help."""
    for parser in _parsers(name):
        text = parser.format_help()
        assert not MARKUP.search(text), f"{parser.prog} --help shows markup: {MARKUP.search(text)[0]}"


def test_top_level_help_is_plain_text():
    text = build_parser().format_help()
    assert not MARKUP.search(text)
    assert "paraphrase" in text


def test_paraphrase_help_describes_the_command():
    (parser,) = _parsers("paraphrase")
    text = parser.format_help()
    assert "MSRP" in text and "--cache" in text and "K_1 + ... + K_k" in text
    assert "cross-validation on the training set" in text and "--cv 0" in text
    assert "pair tree kernel" in text and "--no-trees" in text
