"""docs/api.md is the API reference generated from the docstrings: it must not go stale."""

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_api_reference_is_current():
    make = runpy.run_path(str(ROOT / "docs" / "make_api.py"))
    expected = make["render"]()
    actual = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert actual == expected, "docs/api.md is stale: run python docs/make_api.py"


def test_api_reference_lists_every_public_name_of_the_face():
    import structkernels

    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    missing = [n for n in structkernels.__all__ if f"- `{n}` (" not in text]
    assert missing == []
