"""When to try again something that failed: exponential, bounded back-off.

Used for what the engine looks up in the background (the summary model's context
length): during an outage it is asked again after 1 s, 2 s, 4 s ... at most every
``MAX_DELAY_S``, never once per chat turn.

>>> state = backoff_failed(Backoff(), now=100.0)
>>> backoff_is_due(state, 100.5), backoff_is_due(state, 101.0)
(False, True)
>>> backoff_failed(state, now=101.0).retry_at
103.0
"""

from __future__ import annotations

import attrs

FIRST_DELAY_S = 1.0
MAX_DELAY_S = 300.0


@attrs.frozen
class Backoff:
    """Consecutive failures so far and the time (shell's clock, s) to try again."""

    failures: int = 0
    retry_at: float = 0.0


def backoff_failed(
    state: Backoff,
    now: float,
    *,
    first_s: float = FIRST_DELAY_S,
    max_s: float = MAX_DELAY_S,
) -> Backoff:
    """Return the state after one more failure at ``now``: the delay doubles, capped."""
    delay = min(first_s * 2.0 ** min(state.failures, 64), max_s)
    return Backoff(state.failures + 1, now + delay)


def backoff_is_due(state: Backoff, now: float) -> bool:
    """Tell whether the next attempt may go out at ``now``."""
    return now >= state.retry_at
