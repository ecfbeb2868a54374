"""A session actor's compression state, and how triggers change it.

At most one compression per session runs at a time; triggers that arrive while one runs
coalesce into at most one follow-up, which runs with the strongest reason seen.
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

from .trigger import Reason, stronger


@attrs.frozen
class Idle:
    """No compression runs for the session."""


@attrs.frozen
class Busy:
    """A compression runs; ``follow_up`` is the reason of the one queued after it."""

    running: Reason
    follow_up: Reason | None = None


SessionState: TypeAlias = Idle | Busy


def on_trigger(state: SessionState, reason: Reason) -> tuple[SessionState, bool]:
    """Return the next state and whether to start a compression now."""
    match state:
        case Idle():
            return Busy(running=reason), True
        case Busy():
            return attrs.evolve(
                state, follow_up=stronger(state.follow_up, reason)
            ), False


def on_finished(state: SessionState) -> tuple[SessionState, Reason | None]:
    """Return the next state and the reason of the follow-up to start, if any."""
    if isinstance(state, Busy) and state.follow_up is not None:
        return Busy(running=state.follow_up), state.follow_up
    return Idle(), None
