"""Interrupts that no library can swallow.

A ``KeyboardInterrupt`` raised inside a finaliser (``__del__``, a weakref callback: numba
and NumPy run such code while compiling and collecting) is reported as "unraisable" and
lost, so the command would finish and replace its outputs.  :func:`interrupt_guard` (the
command line's ``main``) records the interrupt before raising it; :func:`check_interrupt`
raises it again at each progress update and before the rename that ends an atomic write.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["interrupt_guard", "check_interrupt", "interrupted"]

_seen = False


def _handler(signum: int, frame: Any) -> None:
    global _seen
    _seen = True
    raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether a SIGINT came while :func:`interrupt_guard` was active."""
    return _seen


def check_interrupt() -> None:
    """Raise ``KeyboardInterrupt`` when an interrupt was recorded (even one swallowed)."""
    if _seen:
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupt_guard() -> Iterator[None]:
    """Record every SIGINT of the block (see the module docstring); outside the main
    thread, where no handler can be installed, and inside another guard (a command run by
    a command), the block runs as it is."""
    global _seen
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is _handler):
        yield
        return
    _seen = False
    previous = signal.signal(signal.SIGINT, _handler)
    try:
        yield
    except Exception as exc:
        # the interrupt turned into another error on its way out (numba's dispatcher raises
        # SystemError when a KeyboardInterrupt comes as a compiled function returns)
        if _seen:
            raise KeyboardInterrupt from exc
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
        _seen = False
