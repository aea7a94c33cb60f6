"""The wheel carries everything the main job reads: build it, install it outside the checkout, run.

The fresh virtual environment gets the wheel with ``--no-deps``; its
dependencies (numpy, scikit-learn, numba, ...) are those of the interpreter
running the tests, made visible through a ``.pth`` file, so the test needs
no network.  The package itself, its data and its entry points come only from
the wheel: the test checks that ``structkernels`` is imported from the fresh
environment, in a working directory outside the checkout.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(cmd, cwd, env=None, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
         cwd=out)
    (whl,) = out.glob("structkernels-*.whl")
    return whl


def test_wheel_holds_the_dataset_and_stays_small(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert "structkernels/data/interactions.jsonl.gz" in names
    assert "structkernels/data/counts.json" in names
    assert not [n for n in names if n.startswith(("tests/", "datasets/", "benchmarks/"))]
    assert not [n for n in names if "/raw/" in n]
    assert wheel.stat().st_size < 3_000_000


def _fresh_venv(root: Path, wheel: Path) -> Path:
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=root).stdout.strip())
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(purelib),
          str(wheel)], cwd=root)
    # the dependencies of this interpreter, not its structkernels (the checkout)
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}
    (purelib / "_test_deps.pth").write_text(
        "\n".join(d for d in sorted(deps) if Path(d).resolve() != REPO) + "\n"
    )
    return python


def test_installed_wheel_runs_train_npk_outside_the_checkout(wheel, tmp_path):
    python = _fresh_venv(tmp_path, wheel)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    work = tmp_path / "work"
    work.mkdir()
    where = _run([str(python), "-c", "import structkernels, structkernels.datasets as d; "
                  "print(structkernels.__file__); print(d.SHIPPED_DATASET)"], cwd=work, env=env)
    module_file, data_dir = where.stdout.split()
    assert Path(module_file).is_relative_to(tmp_path / "venv")
    assert Path(data_dir).is_relative_to(tmp_path / "venv")
    model = work / "model.npk.json.gz"
    proc = _run(
        [str(python), "-m", "structkernels", "--quiet", "train-npk", "--out", str(model),
         "--alpha", "2", "--beta", "20", "--max-train", "300", "--no-progress", "--json"],
        cwd=work, env=env,
    )
    summary = json.loads(proc.stdout)
    assert summary["n_train"] > 10_000 and summary["n_test"] > 10_000
    assert summary["NPK"]["n_evaluations"] > 0
    loaded = _run([str(python), "-c", f"import structkernels as sk; m = sk.load_model({str(model)!r}); "
                   "print(len(m.train_paths))"], cwd=work, env=env)
    assert int(loaded.stdout) == summary["n_train"]
