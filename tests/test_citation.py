"""CITATION.cff is valid Citation File Format 1.2.0 and names the package's version."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import structkernels

ROOT = Path(__file__).resolve().parents[1]
CFF = ROOT / "CITATION.cff"
REQUIRED = ("cff-version", "message", "title", "authors")
REFERENCE_TYPES = {"article", "conference-paper", "book", "software", "generic", "report",
                   "thesis", "proceedings"}


@pytest.fixture(scope="module")
def citation() -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: CITATION.cff is not parsed")
    doc = yaml.safe_load(CFF.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def _author_ok(author) -> bool:
    return isinstance(author, dict) and bool(author.get("name") or author.get("family-names"))


def test_required_keys(citation):
    for key in REQUIRED:
        assert citation.get(key), key
    assert citation["cff-version"] == "1.2.0"
    assert citation["authors"] == [{"name": "structkernels developers"}]
    assert all(_author_ok(a) for a in citation["authors"])


def test_version_and_license_are_the_package_s(citation):
    assert str(citation["version"]) == structkernels.__version__
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    license_ = re.search(r'^license\s*=\s*\{\s*text\s*=\s*"([^"]+)"', pyproject, re.M).group(1)
    assert citation["license"] == license_


def test_references_name_the_papers_implemented(citation):
    refs = citation["references"]
    for ref in refs:
        assert ref["type"] in REFERENCE_TYPES and ref["title"] and isinstance(ref["year"], int)
        assert ref["authors"] and all(_author_ok(a) for a in ref["authors"])
    found = {(ref["authors"][0]["family-names"], ref["year"]) for ref in refs}
    assert {("Garg", 2018), ("Garg", 2019), ("Bu", 2012), ("Gretton", 2005),
            ("Airola", 2008)} <= found
    titles = {ref["title"] for ref in refs}
    assert "String Re-writing Kernel" in titles
    assert "Measuring Statistical Dependence with Hilbert-Schmidt Norms" in titles
