"""What an operator needs to see a degrading engine: breakers, failures, gaps.

With the seed's trim-only default a dead summarizer degrades quietly: compressions
still archive, without a summary. ``SummaryEngine.health()`` returns a ``Health`` that
says so without any logging set up: each summarizer's circuit breaker, the last
compression that failed or degraded, and the sessions holding ranges archived
without a summary (``resummarize`` folds them back in).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from .breaker import Breaker
from .summary import IdRanges

BreakerState = Literal["closed", "open", "half-open"]


def breaker_state(breaker: Breaker, now: float) -> BreakerState:
    """Return the breaker's state at ``now`` (a cooled-down open one is half-open)."""
    if breaker.probe_since is not None:
        return "half-open"
    if breaker.open_until is None:
        return "closed"
    return "open" if now < breaker.open_until else "half-open"


@attrs.frozen
class SummarizerHealth:
    """One summarizer's circuit breaker.

    Attributes:
        summarizer: its label (the model, or a non-LLM's label).
        state: ``closed`` (calls go out), ``open`` (refused), ``half-open`` (the next
            call is a probe).
        failures: consecutive failed calls.
        retry_in_s: seconds until an open breaker admits a probe (None otherwise).
    """

    summarizer: str
    state: BreakerState
    failures: int
    retry_in_s: float | None = None


@attrs.frozen
class LastFailure:
    """The last compression that failed or degraded to trim-only.

    Attributes:
        session_id: whose compression it was.
        kind: the outcome's kind (``failed``, or ``trimmed``: archived, no summary).
        code: the outcome's code (``summarizer_failed``, ``store_failed``...).
        detail: what happened, in words.
        at: when, in seconds since the epoch.
    """

    session_id: str
    kind: str
    code: str
    detail: str
    at: float


@attrs.frozen
class Health:
    """The engine's health (``SummaryEngine.health()``).

    Attributes:
        summarizers: every summarizer called so far, with its breaker.
        last_failure: the last failed or degraded compression since start, if any.
        unsummarized: session id -> id ranges archived without a summary (only the
            sessions that have some).
        native_dropped: native artifacts dropped since start because their provider
            refused them (``drop_native``); those sessions carry the plain summary.
        count_failures: turns since start whose threshold count (the store's
            ``count_history``) failed; each went on to its session's actor, whose
            compression meets the store's failure. A count that keeps growing is a
            store failing persistently (a starved pool, a locked database).
    """

    summarizers: tuple[SummarizerHealth, ...]
    last_failure: LastFailure | None
    unsummarized: Mapping[str, IdRanges] = attrs.field(factory=dict, hash=False)
    native_dropped: int = 0
    count_failures: int = 0

    @property
    def degraded(self) -> bool:
        """Tell whether a breaker is not closed or some session lacks a summary."""
        return bool(self.unsummarized) or any(
            s.state != "closed" for s in self.summarizers
        )


@attrs.frozen
class EngineStats:
    """What the engine is doing now (``SummaryEngine.stats()``); no store read.

    Attributes:
        summarizer: how the session's summaries' origin is reported (the model, or
            a non-LLM summarizer's label).
        queue_depth: compression work queued or running (what ``wait_idle``
            awaits): triggers not yet handled plus sessions compressing.
        live_actors: session actors alive (idle ones are reaped).
        transcripts: sessions whose active messages the engine keeps for
            ``Conversation.prepare``.
    """

    summarizer: str
    queue_depth: int
    live_actors: int
    transcripts: int


@attrs.frozen
class SummarizerCheck:
    """Whether the summarizer answered a one-line request (``check_summarizer``).

    Attributes:
        ok: it answered with some text in time.
        summarizer: its label.
        detail: what failed (empty when ``ok``).
        seconds: how long the check took.
    """

    ok: bool
    summarizer: str
    detail: str = ""
    seconds: float = 0.0
