"""The messages session actors receive: past-tense facts and imperative commands.

pykka does not copy messages, so every one is a frozen attrs value.
"""

from __future__ import annotations

from concurrent.futures import Future

import attrs

from memory_summary.domain import LoopGuard, Outcome, Reason


@attrs.frozen
class TurnEnded:
    """A turn of the session ended normally (aborted and error turns are never sent).

    ``mark``: the runtime's count of finished compressions when the turn was made,
    before it was counted (``ThreadRuntime.turn_mark``). An actor that finished one
    since counts it again before running it: the count may predate that commit.
    """

    mark: int = 0


@attrs.frozen
class UsageReported:
    """The host reported a usage ratio at or above the pre-compression threshold."""

    ratio: float


@attrs.frozen
class Compress:
    """Compress now, ignoring the threshold; resolve ``reply`` with the outcome.

    ``instructions``: the host's words for the session's next compression run.
    """

    reason: Reason
    reply: Future[Outcome] | None = attrs.field(default=None, eq=False, hash=False)
    instructions: str = ""


@attrs.frozen
class CompressionFinished:
    """A compression of this session ended.

    ``pressed``: a measured turn found the usage ratio at or over the trigger, so the
    session asks for an ``auto`` compression. ``guard``: the loop guard the session
    keeps from now on, when ``guard_changed``.
    """

    outcome: Outcome
    pressed: float | None = None
    guard_changed: bool = False
    guard: LoopGuard | None = None


@attrs.frozen
class Reap:
    """Stop if still idle and untouched since the registry stamped ``stamp``."""

    stamp: int
