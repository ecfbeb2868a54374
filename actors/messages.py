"""The messages session actors receive: past-tense facts and imperative commands.

pykka does not copy messages, so every one is a frozen attrs value.
"""

from __future__ import annotations

from concurrent.futures import Future

import attrs

from memory_summary.domain import Outcome, Reason


@attrs.frozen
class TurnEnded:
    """A turn of the session ended normally (aborted and error turns are never sent)."""


@attrs.frozen
class UsageReported:
    """The host reported a usage ratio at or above the pre-compression threshold."""

    ratio: float


@attrs.frozen
class Compress:
    """Compress now, ignoring the threshold; resolve ``reply`` with the outcome."""

    reason: Reason
    reply: Future[Outcome] | None = attrs.field(default=None, eq=False, hash=False)


@attrs.frozen
class CompressionFinished:
    """A compression job of this session ended."""

    outcome: Outcome


@attrs.frozen
class Reap:
    """Stop if still idle and untouched since the registry stamped ``stamp``."""

    stamp: int
