"""Handing the GIL over during a fold that runs on a host's thread.

A fold is milliseconds of pure Python. On an engine thread it shares the GIL with
the host's threads (an event loop, request threads): each time one of them lets the
GIL go for I/O (a SQLite statement, a socket) the fold takes it, and the host's
thread then waits for the fold to let it go again, up to the switch interval (5 ms)
each time; a turn lets it go many times. So the fold's loops call a ``Pacer`` at
their natural points (an entry, a sentence, a line, a fact): after about
``HAND_OVER_S`` of work since the last hand-over it calls ``time.sleep(SLEEP_S)``,
which lets the GIL go and lets a waiting thread take it. In between, a call costs a
decrement, and every ``CHECK_EVERY``-th a reading of the clock.
A fold in the worker process (``worker``) shares the GIL with no one: it never
paces (``never``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from memory_summary.domain import ConfigError

HAND_OVER_S = 0.0005
"""Work between two hand-overs: what a host's thread waits for the GIL at most (about),
each time it wants it back while a fold runs."""

SLEEP_S = 0.0003
"""What a hand-over sleeps: long enough for a woken host thread to be scheduled and
take the GIL. ``time.sleep(0)`` sleeps the timer slack (about 50 µs on Linux; on 3.10
it returns at once), and a host thread not running within it waits for the switch
interval (5 ms), many times a turn: in a 20-thread chat server on two cores the
library's p99 per turn was 36-39 ms with it, 16-23 ms with 300 µs (p90 13-15 -> 6-9 ms).
The fold's CPU is the same; its wall time grows by up to this per ``HAND_OVER_S``."""

CHECK_EVERY = 4
"""Calls to a pace per reading of the clock (its points are tens of µs apart)."""

Pace = Callable[[], None]


def checked_interval(value: object) -> float | None:
    """Return ``value`` as seconds between hand-overs, or None (never hand over).

    Raises:
        ConfigError: ``value`` is not a finite number of seconds above 0 (a bool,
            a string or a ``Decimal`` is none; an int too large for a float is
            not finite).

    >>> checked_interval(1), checked_interval(None)
    (1.0, None)
    >>> checked_interval(True)
    Traceback (most recent call last):
    ...
    memory_summary.domain.errors.ConfigError: hand_over_s=True is invalid; ...
    """
    if value is None:
        return None
    seconds = math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:
            seconds = math.inf
    if not 0 < seconds < math.inf:
        raise ConfigError(
            "hand_over_s", value, "seconds above 0 (a finite int or float), or None"
        )
    return seconds


def never() -> None:
    """Hand nothing over: a fold that shares the GIL with no one."""


def pacer(interval_s: float = HAND_OVER_S) -> Pace:
    """Return a ``Pace`` that calls ``time.sleep(SLEEP_S)`` every ``interval_s`` or so.

    It reads the clock at every ``CHECK_EVERY``-th call only: a call in between
    costs a decrement.
    """
    due = time.perf_counter() + interval_s
    left = CHECK_EVERY

    def pace() -> None:
        nonlocal due, left
        left -= 1
        if left:
            return
        left = CHECK_EVERY
        if time.perf_counter() >= due:
            time.sleep(SLEEP_S)  # lets the GIL go: a waiting thread takes it
            due = time.perf_counter() + interval_s

    return pace
