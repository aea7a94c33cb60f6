"""The PPI corpora in ``datasets/ppi`` are the files their README describes, byte for byte."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

PPI = Path(__file__).resolve().parents[1] / "datasets" / "ppi"
if not (PPI / "README.md").is_file():  # a source distribution leaves datasets/ out
    pytest.skip(f"no PPI corpora at {PPI} (they are in a clone of the repository)",
                allow_module_level=True)
_ROW = re.compile(r"^\|\s*`([^`]+\.xml)`\s*\|\s*(\d+)\s*\|\s*`([0-9a-f]{64})`\s*\|\s*$")


def _digests() -> dict[str, tuple[int, str]]:
    """file -> (bytes, SHA-256) from the README's SHA-256 table."""
    text = (PPI / "README.md").read_text(encoding="utf-8")
    return {m.group(1): (int(m.group(2)), m.group(3))
            for line in text.splitlines() if (m := _ROW.match(line))}


def test_the_readme_lists_every_corpus_file_once():
    listed = _digests()
    assert len(listed) == 8
    assert sorted(listed) == sorted(p.name for p in PPI.glob("*.xml"))
    assert {name.split("-")[0] for name in listed} == {"BioInfer", "HPRD50", "IEPA", "LLL"}


@pytest.mark.parametrize("name", sorted(_digests()))
def test_each_corpus_file_has_its_readme_digest(name):
    size, digest = _digests()[name]
    data = (PPI / name).read_bytes()
    assert len(data) == size, f"{name}: {len(data)} bytes, the README says {size}"
    assert hashlib.sha256(data).hexdigest() == digest, (
        f"datasets/ppi/{name} is not the file its README's SHA-256 names: it was edited "
        "(or re-saved); restore it from metalrt/ppi-dataset dd49ea3")


def test_the_readme_states_provenance_and_terms():
    text = (PPI / "README.md").read_text(encoding="utf-8")
    for needed in ("metalrt/ppi-dataset", "dd49ea3", "csv_output/", "Pyysalo", "CC BY 2.0",
                   "Fundel", "Ding", "Nédellec"):
        assert needed in text, needed
