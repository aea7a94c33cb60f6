"""The settings of one run, for this process and the worker processes it starts."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from structkernels.utils._cache import NO_CACHE_ENV

PROGRESS_ENV = "STRUCTKERNELS_PROGRESS"


@contextlib.contextmanager
def run_settings(*, progress: bool | None = None, no_cache: bool = False) -> Iterator[None]:
    """Progress off (``progress=False``) and no cache writes (``no_cache=True``) for the
    work done inside the block, in this process and the worker processes it starts (which
    inherit the environment that :func:`tqdm` and :func:`cache_writes_disabled` read);
    the settings before are restored afterwards.  None and False change nothing.

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
