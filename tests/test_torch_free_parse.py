"""The relation commands parse without PyTorch when the pipeline does not need it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from structkernels.relations import pipelines
from structkernels.relations.pipelines import keep_torch_out, pipeline_needs_torch

ROOT = Path(__file__).resolve().parents[1]


def _fake_pipeline(tmp_path, monkeypatch, factories, requirements):
    pkg = tmp_path / "fake_pipe"
    (pkg / "fake_pipe-1.0").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    (pkg / "meta.json").write_text(json.dumps({"requirements": requirements}))
    (pkg / "fake_pipe-1.0" / "config.cfg").write_text(
        "".join(f'[components.c{i}]\nfactory = "{f}"\n' for i, f in enumerate(factories)))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(pipelines, "pipeline_packages", lambda name: ("fake_pipe",))


def test_spacy_components_alone_need_no_torch(tmp_path, monkeypatch):
    _fake_pipeline(tmp_path, monkeypatch, ["tok2vec", "parser"], ["spacy>=3.7.5,<3.9.0"])
    assert pipeline_needs_torch("fake") is False
    assert "fake_pipe" not in sys.modules  # read, never imported


@pytest.mark.parametrize("factories, requirements", [
    (["transformer", "parser"], ["spacy>=3.7"]),
    (["parser"], ["spacy>=3.7", "spacy-transformers>=1.3"]),
    (["some_custom_component"], ["spacy>=3.7"]),
    ([], ["spacy>=3.7"]),
])
def test_anything_else_may_need_torch(tmp_path, monkeypatch, factories, requirements):
    _fake_pipeline(tmp_path, monkeypatch, factories, requirements)
    assert pipeline_needs_torch("fake") is True


def test_nothing_is_done_once_spacy_or_torch_is_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, "spacy", sys.modules.get("spacy", object()))
    assert keep_torch_out("en_core_web_sm") is False
    assert pipeline_needs_torch("not-installed") is True


def test_the_installed_pipeline_parses_without_torch():
    pytest.importorskip("spacy", reason="the parse extra is not installed")
    if not pipelines.pipeline_packages("en_core_web_sm"):
        pytest.skip("en_core_web_sm is not installed")
    code = (
        "import sys\n"
        "from structkernels.relations.pipelines import keep_torch_out\n"
        "print(keep_torch_out('en_core_web_sm'))\n"
        "from structkernels.relations.parse import load_pipeline\n"
        "doc = load_pipeline('en_core_web_sm')('IL-2 binds its receptor.')\n"
        "print([t.dep_ for t in doc][1], sys.modules.get('torch'))\n"
        "import scipy.stats, sklearn.calibration  # look for an imported torch: none\n"
        "try:\n"
        "    import torch\n"
        "except ImportError as exc:\n"
        "    print('refused', 'kept out' in str(exc))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=True).stdout.split("\n")
    assert out[0] == "True"
    assert out[1] == "ROOT None"
    assert out[2] == "refused True"
