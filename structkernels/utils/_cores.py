"""How many workers ``n_jobs`` means: by default, the cores this process may use."""

from __future__ import annotations

import joblib

from structkernels.utils._params import n_jobs_value

__all__ = ["available_cores", "effective_n_jobs"]


def available_cores() -> int:
    """The number of cores this process may run on.

    :func:`joblib.cpu_count`: the smallest of the machine's logical cores, the process's
    CPU affinity, the cgroup CPU quota and ``$LOKY_MAX_CPU_COUNT``; at least 1.

    Examples
    --------
    >>> from structkernels.utils import available_cores
    >>> available_cores() >= 1
    True
    """
    return max(1, int(joblib.cpu_count()))


def effective_n_jobs(n_jobs: int | None) -> int:
    """The number of workers for ``n_jobs``.

    ``None`` (the default everywhere in structkernels) and ``-1`` are
    :func:`available_cores`; ``-k`` is that number less ``k - 1`` (at least 1);
    a positive number is itself.

    Raises
    ------
    InvalidParameterError
        ``n_jobs`` is 0 or not an integer (a ``ValueError``).

    Examples
    --------
    >>> from structkernels.utils import effective_n_jobs
    >>> effective_n_jobs(3)
    3
    >>> effective_n_jobs(None) == effective_n_jobs(-1) >= 1
    True
    """
    n_jobs = n_jobs_value(n_jobs)  # None or a non-zero int, else one InvalidParameterError
    if n_jobs < 0:
        return max(1, available_cores() + 1 + n_jobs)
    return n_jobs
