"""Handing the GIL over during a fold that runs on a host's thread.

A fold is milliseconds of pure Python. On an engine thread it shares the GIL with
the host's threads (an event loop, request threads): each time one of them lets the
GIL go for I/O (a SQLite statement, a socket) the fold takes it, and the host's
thread then waits for the fold to let it go again, up to the switch interval (5 ms)
each time; a turn lets it go many times. So the fold's loops call a ``Pacer`` at
their natural points (an entry, a fact, a line): after about ``HAND_OVER_S`` of
work since the last hand-over it calls ``time.sleep(0)``, which lets the GIL go and
lets a waiting thread take it. In between, a call reads the clock and returns.
A fold in the worker process (``worker``) shares the GIL with no one: it never
paces (``never``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

HAND_OVER_S = 0.0005
"""Work between two hand-overs: what a host's thread waits for the GIL at most (about),
each time it wants it back while a fold runs."""

Pace = Callable[[], None]


def never() -> None:
    """Hand nothing over: a fold that shares the GIL with no one."""


class Pacer:
    """Called at a fold's natural points: ``time.sleep(0)`` every ``interval_s``."""

    __slots__ = ("_due", "_interval")

    def __init__(self, interval_s: float = HAND_OVER_S) -> None:
        self._interval = interval_s
        self._due = time.perf_counter() + interval_s

    def __call__(self) -> None:
        if time.perf_counter() >= self._due:
            time.sleep(0)  # lets the GIL go: a waiting thread takes it
            self._due = time.perf_counter() + self._interval
