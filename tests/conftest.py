"""Shared fixtures: the real data beside the checkout, skipped with a reason when absent."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from structkernels.utils import user_cache_dir

# The caches a run writes by default (binary datasets, parses) go to a folder of this
# test session, removed at its end; compiled kernels stay in the user's numba cache
# (set before the override), so that a run does not compile them again.
os.environ.setdefault("NUMBA_CACHE_DIR", os.fspath(user_cache_dir("numba")))
_SESSION_CACHE = tempfile.mkdtemp(prefix="structkernels-test-cache-")
os.environ["STRUCTKERNELS_CACHE"] = _SESSION_CACHE
atexit.register(shutil.rmtree, _SESSION_CACHE, True)

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (read-only); tests that need it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (only beside a development checkout)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def ppi_corpora() -> Path:
    """``datasets/ppi``: the four PPI corpora of the repository (not in a source distribution)."""
    folder = ROOT / "datasets" / "ppi"
    if not (folder / "LLL-train.xml").is_file():
        pytest.skip(f"the PPI corpora are not at {folder} (they are in a clone of the repository)")
    return folder


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
