"""Progress that reads well on a terminal and in a log file, and the run's settings that
turn it (and cache writes) off."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from tqdm import tqdm as _tqdm

from structkernels.utils._cache import NO_CACHE_ENV
from structkernels.utils._interrupt import check_interrupt

__all__ = ["tqdm", "bar_disabled", "MIN_BAR_EVALUATIONS", "run_settings"]

PROGRESS_ENV = "STRUCTKERNELS_PROGRESS"

#: kernel evaluations below which the Gram and k-NN loops show no bar by default
MIN_BAR_EVALUATIONS = 200_000


def bar_disabled(total: int, progress: bool | None) -> bool | None:
    """tqdm's ``disable`` for a loop of ``total`` kernel evaluations: ``progress`` True or
    False forces the bar on or off; None shows it for work of at least
    :data:`MIN_BAR_EVALUATIONS` (then tqdm decides by the terminal)."""
    if progress is not None:
        return not progress
    return None if total >= MIN_BAR_EVALUATIONS else True


class _LineWriter:
    """A file-like object turning tqdm's refreshes into whole lines."""

    def __init__(self, stream: Any = None):
        self.stream = stream

    def write(self, text: str) -> int:
        stream = self.stream if self.stream is not None else sys.stderr
        line = text.replace("\r", "").strip()
        if line:
            stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        stream.flush()


class _Bar(_tqdm):
    """tqdm whose every update raises an interrupt a finaliser swallowed, shown or not."""

    def update(self, n: float | None = 1) -> bool | None:
        check_interrupt()
        return super().update(n)


class _LogBar(_Bar):
    """tqdm writing to a log: postfix and description changes do not force a line."""

    def set_postfix(self, ordered_dict: Any = None, refresh: bool = True, **kwargs: Any) -> None:
        super().set_postfix(ordered_dict, refresh=False, **kwargs)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        super().set_postfix_str(s, refresh=False)

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        super().set_description(desc, refresh=False)

    def set_description_str(self, desc: str | None = None, refresh: bool = True) -> None:
        super().set_description_str(desc, refresh=False)


def tqdm(*args: Any, disable: bool | None = False, file: Any = None, **kwargs: Any) -> _tqdm:
    """A drop-in for ``tqdm.auto.tqdm``: tqdm's bar on a terminal, plain lines in a log.

    In a log: nothing for work that ends within ``STRUCTKERNELS_PROGRESS_INTERVAL``
    seconds (default 30), then at most one line per interval and one at the end; a new
    postfix or description waits for the next line, and the time left is estimated from
    the average rate since the start.  ``STRUCTKERNELS_PROGRESS=0`` (``--quiet``) turns it
    off, ``=1`` on even for short work.  ``disable=None`` keeps tqdm's "decide for me",
    except that a non-terminal no longer means "off".

    Examples
    --------
    >>> from structkernels.utils import tqdm
    >>> with tqdm(total=3, desc="demo", disable=True) as bar:
    ...     bar.update(3)
    """
    setting = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if setting in ("0", "false", "no", "off"):
        disable = True
    elif setting in ("1", "true", "yes", "on") and disable is None:
        disable = False
    stream = file if file is not None else sys.stderr
    if getattr(stream, "isatty", lambda: False)():
        return _Bar(*args, disable=disable, file=file, **kwargs)
    interval = float(os.environ.get("STRUCTKERNELS_PROGRESS_INTERVAL", "30"))
    kwargs.update(mininterval=interval, maxinterval=max(interval, 1.0), delay=interval,
                  smoothing=0, ncols=100, ascii=True, dynamic_ncols=False, leave=True)
    return _LogBar(*args, disable=bool(disable), file=_LineWriter(file), **kwargs)


@contextlib.contextmanager
def run_settings(*, progress: bool | None = None, no_cache: bool = False) -> Iterator[None]:
    """Progress off (``progress=False``) and no cache writes (``no_cache=True``) inside the
    block, in this process and the worker processes it starts (which inherit the
    environment :func:`tqdm` and :func:`cache_writes_disabled` read); None and False change
    nothing.

    Examples
    --------
    >>> from structkernels.utils import cache_writes_disabled, run_settings
    >>> with run_settings(no_cache=True):
    ...     cache_writes_disabled()
    True
    """
    wanted = {PROGRESS_ENV: "0" if progress is False else None,
              NO_CACHE_ENV: "1" if no_cache else None}
    previous = {k: os.environ.get(k) for k, v in wanted.items() if v is not None}
    for key in previous:
        os.environ[key] = wanted[key]
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
