"""Every subpackage of structkernels is an attribute of the package in a new process,
imported on first use (as SciPy does), and ``import structkernels`` imports none of them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import structkernels

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "structkernels"


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_subpackage_and_module_is_served():
    own = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    own |= {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")}
    assert set(structkernels._SUBMODULES) == own
    assert set(structkernels._SUBMODULES) <= set(dir(structkernels))
    assert not set(structkernels._SUBMODULES) & set(structkernels.__all__)  # star import light


def test_import_structkernels_imports_no_subpackage():
    out = _run("import sys, json, structkernels\n"
               "print(json.dumps(sorted(m for m in sys.modules if m.startswith('structkernels'))))")
    loaded = json.loads(out)
    assert loaded == ["structkernels", "structkernels.utils", "structkernels.utils._lazy"]


@pytest.mark.parametrize(("name", "attribute"), [
    ("relations", "read_relations"), ("amr", "read_amr"), ("datasets", "load_interactions"),
    ("graphs", "read_graphs"), ("extraction", "RelationExtractor"),
])
def test_a_subpackage_is_an_attribute_in_a_new_process(name, attribute):
    out = _run("import sys, structkernels as sk\n"
               f"assert 'structkernels.{name}' not in sys.modules\n"
               f"print(callable(sk.{name}.{attribute}), sk.{name}.__name__)")
    assert out.split() == ["True", f"structkernels.{name}"]


def test_every_served_name_in_one_new_process():
    names = list(structkernels._SUBMODULES)
    out = _run("import structkernels as sk\n"
               f"print(' '.join(getattr(sk, n).__name__ for n in {names!r}))")
    assert out.split() == [f"structkernels.{n}" for n in names]


def test_sk_amr_read_amr_reads_penman():
    out = _run("import structkernels as sk\n"
               "g = sk.amr.parse_amr('(b / bind-01 :ARG1 (e / enzyme))')\n"
               "print(callable(sk.amr.read_amr), len(sk.amr.generate_candidates(g)) >= 0)")
    assert out.split() == ["True", "True"]


def test_unknown_names_stay_attribute_errors():
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        structkernels.nothing  # noqa: B018
    with pytest.raises(AttributeError):
        structkernels.data  # noqa: B018  (a folder of package data, not a subpackage)
