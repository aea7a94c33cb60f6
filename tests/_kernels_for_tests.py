"""Small kernels used by the platform tests (importable by worker processes)."""

from __future__ import annotations

import os

import numpy as np

from structkernels import Kernel


class CountingOverlap(Kernel):
    """Pure-Python set-overlap kernel that appends one line to a file per pair call.

    The log file (not instance state) counts calls, so the cache key, which
    hashes the kernel's parameters, is unaffected by calls.
    """

    def __init__(self, log: str | None = None):
        self.log = log

    def pair(self, x, y) -> float:
        if self.log is not None:
            with open(self.log, "a") as fh:
                fh.write("1\n")
        return float(len(set(x) & set(y)))


def n_calls(log: str) -> int:
    if not os.path.exists(log):
        return 0
    with open(log) as fh:
        return sum(1 for _ in fh)


class SlowDot(Kernel):
    """A pure-Python dot product of 1-D float arrays (no batched fast path)."""

    def check_input(self, X):
        return [np.asarray(x, dtype=np.float64) for x in X]

    def pair(self, x, y) -> float:
        s = 0.0
        for a, b in zip(x, y, strict=True):
            s += a * b
        return s
