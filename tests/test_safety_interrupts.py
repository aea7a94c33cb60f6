"""Issue 52, case 5 and the finite-number promise: interrupts stop a command with exit 130
and its old outputs intact, even when the ``KeyboardInterrupt`` is swallowed by a finaliser;
a model that cannot give finite scores is refused when loaded, in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "datasets" / "ppi" / "LLL-train.xml"
OLD = b'{"old": "model"}\n'

pytest.importorskip("spacy")


def _env() -> dict:
    return {**os.environ, "STRUCTKERNELS_PROGRESS": "0"}


def _train_argv(out: Path) -> list[str]:
    return ["train-extractor", os.fspath(TRAIN), "-o", os.fspath(out), "--no-cache"]


# ------------------------------------------------------------------ case 5: interrupts
#: a finaliser that receives the SIGINT: Python reports the KeyboardInterrupt raised in it as
#: unraisable and goes on, as it did in numba's finalisers during ``--no-cache`` compilation
SWALLOWED = textwrap.dedent(
    """
    import os, signal, sys, time
    from structkernels.extraction import RelationExtractor

    class Finaliser:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1.0)  # the handler runs here, inside __del__

    real = RelationExtractor.fit

    def fit(self, *args, **kwargs):
        Finaliser()
        return real(self, *args, **kwargs)

    RelationExtractor.fit = fit
    from structkernels.cli import main
    sys.argv = ["structkernels"] + sys.argv[1:]
    sys.exit(main())
    """
)


def test_interrupt_swallowed_by_a_finaliser_still_stops_train_extractor(tmp_path):
    out = tmp_path / "m.json"
    out.write_bytes(OLD)
    proc = subprocess.run([sys.executable, "-c", SWALLOWED, *_train_argv(out)], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "interrupted" in proc.stderr
    assert out.read_bytes() == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]  # no temporary left


@pytest.mark.parametrize("delay", [1.5, 6.0])
def test_ctrl_c_stops_train_extractor_no_cache(tmp_path, delay):
    """Ctrl-C (SIGINT to the process group) early and in the middle of the work."""
    out = tmp_path / "m.json"
    out.write_bytes(OLD)
    proc = subprocess.Popen(
        [sys.executable, "-m", "structkernels", *_train_argv(out)], cwd=tmp_path, env=_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert out.read_bytes() == OLD


def test_main_in_process_restores_the_sigint_handler(tmp_path):
    from structkernels.cli import main

    before = signal.getsignal(signal.SIGINT)
    assert main(["train-extractor", os.fspath(tmp_path / "missing.xml"), "-o",
                 os.fspath(tmp_path / "m.json")]) == 2
    assert signal.getsignal(signal.SIGINT) is before
