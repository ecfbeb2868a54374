"""A circuit breaker per summarizer: stop calling an LLM that keeps failing.

States, all in one frozen ``Breaker`` value:

- *closed* (``open_until`` and ``probe_since`` None): every call is admitted;
  ``failures`` counts consecutive failures, and ``max_failures`` of them open it;
- *open* (``open_until`` set): nothing is admitted before ``open_until``;
- *half-open* (``probe_since`` set): the first call after the cooldown is admitted as
  the one probe; no other is admitted until it reports. Success closes the breaker and
  resets it; failure re-opens it with the cooldown doubled per failed probe, at most
  ``MAX_COOLDOWN_FACTOR`` times the configured one.

The shell reports every admitted call exactly once: ``breaker_failed``,
``breaker_succeeded``, or ``breaker_released`` when the call never went out. A probe
that never reports would wedge the breaker, so one unreported for ``PROBE_LOST_S`` is
deemed lost and the next call becomes the probe.
Reports carry no ticket: a call admitted before the breaker opened and reporting
while a probe is out counts as the probe's report.

>>> breaker, admitted = breaker_admit(Breaker(), now=0.0)
>>> breaker = breaker_failed(breaker, 0.0, max_failures=1, cooldown_s=30.0)
>>> breaker_admit(breaker, now=10.0)[1], breaker_admit(breaker, now=30.0)[1]
(False, True)
"""

from __future__ import annotations

import attrs

MAX_COOLDOWN_FACTOR = 16
PROBE_LOST_S = 900.0
"""Far longer than any summarizer call may take (the default call timeout is 120 s)."""


@attrs.frozen
class Breaker:
    """One summarizer's breaker; times are the shell's clock, in seconds.

    Attributes:
        failures: consecutive failed calls since the last success.
        open_until: while set, no call is admitted before this time.
        reopenings: failed probes since the last success (each doubles the cooldown).
        probe_since: when the outstanding half-open probe was admitted.
    """

    failures: int = 0
    open_until: float | None = None
    reopenings: int = 0
    probe_since: float | None = None


def breaker_admit(breaker: Breaker, now: float) -> tuple[Breaker, bool]:
    """Return the next breaker and whether a call may go out at ``now``."""
    if breaker.probe_since is not None:
        if now - breaker.probe_since < PROBE_LOST_S:
            return breaker, False
        return attrs.evolve(breaker, probe_since=now), True  # the probe was lost
    if breaker.open_until is None:
        return breaker, True
    if now < breaker.open_until:
        return breaker, False
    return attrs.evolve(breaker, open_until=None, probe_since=now), True


def breaker_failed(
    breaker: Breaker, now: float, *, max_failures: int, cooldown_s: float
) -> Breaker:
    """Return the breaker after an admitted call failed at ``now``.

    ``max_failures`` consecutive failures open a closed breaker for ``cooldown_s``; a
    failed probe re-opens it for ``cooldown_s * 2**reopenings`` (capped at 16x).
    """
    failures = breaker.failures + 1
    if breaker.probe_since is not None:
        reopenings = breaker.reopenings + 1
        factor = min(2 ** min(reopenings, 8), MAX_COOLDOWN_FACTOR)
        return Breaker(
            failures=failures,
            open_until=now + cooldown_s * factor,
            reopenings=reopenings,
        )
    if breaker.open_until is None and failures >= max_failures:
        return attrs.evolve(breaker, failures=failures, open_until=now + cooldown_s)
    # closed below the limit, or a straggler admitted before the breaker opened
    return attrs.evolve(breaker, failures=failures)


def breaker_succeeded(breaker: Breaker) -> Breaker:
    """Return the breaker after an admitted call succeeded: closed and reset."""
    return Breaker()


def breaker_released(breaker: Breaker) -> Breaker:
    """Return the breaker after an admitted call never went out (no verdict on it).

    A half-open probe slot is given back, so the next call becomes the probe; a
    closed breaker keeps its failure count.
    """
    if breaker.probe_since is None:
        return breaker
    return attrs.evolve(breaker, open_until=breaker.probe_since, probe_since=None)


def breaker_is_open(breaker: Breaker, now: float) -> bool:
    """Tell whether a call at ``now`` would be refused (open, or a probe is out)."""
    return not breaker_admit(breaker, now)[1]
