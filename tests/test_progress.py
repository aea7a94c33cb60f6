"""Progress in a log file (stderr not a terminal): quiet for short work, no line per postfix."""

import io

from structkernels.utils import tqdm


def _log(monkeypatch, interval: str, postfix: bool, n: int = 5) -> list[str]:
    monkeypatch.setenv("STRUCTKERNELS_PROGRESS", "1")
    monkeypatch.setenv("STRUCTKERNELS_PROGRESS_INTERVAL", interval)
    out = io.StringIO()  # not a terminal: the log mode
    with tqdm(total=n, desc="stage", file=out) as bar:
        for i in range(n):
            if postfix:
                bar.set_postfix_str(f"label {i}")
                bar.set_description(f"stage {i}")
            bar.update(1)
    return out.getvalue().splitlines()


def test_work_shorter_than_the_interval_prints_nothing(monkeypatch):
    assert _log(monkeypatch, "30", postfix=True) == []


def test_a_new_postfix_or_description_prints_no_line_of_its_own(monkeypatch):
    plain = _log(monkeypatch, "0", postfix=False)
    noisy = _log(monkeypatch, "0", postfix=True)
    assert len(plain) >= 2  # interval 0: every update is a line
    assert len(noisy) == len(plain)
    assert all("\r" not in line for line in noisy)
    assert "label 4" in noisy[-1]  # the last line carries the last postfix


def test_time_left_comes_from_the_average_rate(monkeypatch):
    monkeypatch.setenv("STRUCTKERNELS_PROGRESS", "1")
    with tqdm(total=3, file=io.StringIO()) as bar:
        assert bar.smoothing == 0
