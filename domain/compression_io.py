"""What one compression observes and what it asks its executor to do.

``domain.compression.step`` turns an observation into the next action. The executor
(``actors.compression``) performs each action against the store, the lease and the
summarizer, and answers with exactly one observation. Fences and cancellation are
observations too: nothing in a compression's course is an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal, TypeAlias

import attrs

from .anthropic_format import AnthropicSystem
from .config import SummaryConfig
from .events import Event
from .folding import Outcome, OutcomeKind
from .measure import LoopGuard
from .model import Message
from .native import NativeRequest
from .plan import CompressionPlan
from .ports import FenceReason, SummaryReply
from .summary import SummaryRecord
from .trigger import Reason

Cost = Callable[[Message], int]


@attrs.frozen
class ChatContext:
    """The session's chat context as the chat model sees it (``context_window`` set).

    Attributes:
        cost_for: ``window -> (message -> tokens)`` in the chat encoding, masked as
            ``assemble`` sends it.
        summary_tokens: what the injected summary costs (0 for None).
        window_tokens: the chat model's window, None when not configured.
        keep_tokens: the kept part's token bound, None when unbound.
        trigger_tokens: the tokens at which usage triggers, None when unknown.
        estimate_for: like ``cost_for`` by an estimate that never undercounts, for
            figures only reported; None estimates by UTF-8 bytes, unmasked.
    """

    cost_for: Callable[[Sequence[Message]], Cost] = attrs.field(eq=False)
    summary_tokens: Callable[[str | None], int] = attrs.field(eq=False)
    window_tokens: int | None = None
    keep_tokens: int | None = None
    trigger_tokens: int | None = None
    estimate_for: Callable[[Sequence[Message]], Cost] | None = attrs.field(
        default=None, eq=False
    )


@attrs.frozen(kw_only=True)
class Setting:
    """All one compression knows before it starts: a frozen snapshot of its session.

    Attributes:
        measured: the engine measures the session's usage itself (``context_window``
            set and the host reports no ratio): a turn may press on tokens.
        guard: the session's loop guard, if a pressed compression left one.
        instructions: the host's words for this compression (config's first).
        context: the chat context; None counts in the summary model's encoding.
        system: the host's system prompt for the session, when it gave one.
        tools: the host's tool definitions for the session, when it gave them.
    """

    session_id: str
    reason: Reason
    config: SummaryConfig
    measured: bool = False
    guard: LoopGuard | None = None
    instructions: str = ""
    context: ChatContext | None = None
    system: AnthropicSystem = attrs.field(default=None, hash=False)
    tools: tuple[Mapping[str, object], ...] = attrs.field(default=(), hash=False)


@attrs.frozen
class SummaryModel:
    """The resolved summary model as the decisions need it."""

    label: str
    count_tokens: Callable[[str], int] = attrs.field(eq=False)
    plan: Callable[[Reason, Sequence[Message], str], CompressionPlan] = attrs.field(
        eq=False
    )
    """``(reason, kept messages, the host's instructions) -> plan``."""
    estimate_usage: Callable[[str], int] | None = attrs.field(default=None, eq=False)
    """Counts a call's usage when the provider reports none and no budget reads it
    (an estimate, never fewer); None counts it exactly with ``count_tokens``."""
    native: bool = False
    """The summarizer folds by its provider's own compaction (``NativeSummarizer``)."""


# -- observations ----------------------------------------------------------------------


@attrs.frozen
class Measured:
    """The session as read without its lease: record, newest window, active count."""

    record: SummaryRecord | None
    tail: tuple[Message, ...]
    active: int


@attrs.frozen
class Began:
    """The summary model resolved and the session's lease is held."""

    model: SummaryModel


@attrs.frozen
class Unresolved:
    """No summarizer matches the configuration; ``detail`` says why."""

    detail: str


@attrs.frozen
class LeaseHeld:
    """Another worker holds the session's lease."""


@attrs.frozen
class RecordRead:
    """The session's summary record (None: absent or unreadable, moved aside).

    ``window``: the window read with it, when ``ReadRecord`` asked for one.
    """

    record: SummaryRecord | None
    window: WindowRead | None = None


@attrs.frozen
class ArchivedRead:
    """A page of an archived range (oldest first; empty: nothing left of it)."""

    page: tuple[Message, ...]


@attrs.frozen
class WindowRead:
    """The newest active messages, the active count, and the breaker's state now."""

    tail: tuple[Message, ...]
    active: int
    breaker_open: bool = False


@attrs.frozen
class BacklogRead:
    """The oldest active messages after the cursor (empty: none left)."""

    page: tuple[Message, ...]


@attrs.frozen
class Replied:
    """The summarizer answered within the deadline."""

    reply: SummaryReply
    seconds: float


@attrs.frozen
class CallFailed:
    """The summarizer call failed (error, timeout, broken stream, context too long)."""

    detail: str
    too_long: bool = False


@attrs.frozen
class BreakerRefused:
    """The summarizer's circuit breaker is open: no call went out."""


@attrs.frozen
class Committed:
    """A fenced commit applied: ``record`` as stored, ``archived`` messages."""

    record: SummaryRecord
    archived: int


@attrs.frozen
class Fenced:
    """A commit (or the lease) was fenced; ``called``: a summarizer call went out."""

    reason: FenceReason
    called: bool = False


@attrs.frozen
class Cancelled:
    """The engine is stopping: commit nothing more."""


@attrs.frozen
class StoreFailed:
    """The store failed; ``detail`` says how."""

    detail: str


@attrs.frozen
class ThreadFailed:
    """A thread the summarizer call needed did not start; ``detail`` says which."""

    detail: str


Observation: TypeAlias = (
    Measured
    | Began
    | Unresolved
    | LeaseHeld
    | RecordRead
    | ArchivedRead
    | WindowRead
    | BacklogRead
    | Replied
    | CallFailed
    | BreakerRefused
    | Committed
    | Fenced
    | Cancelled
    | StoreFailed
    | ThreadFailed
)

# -- actions ---------------------------------------------------------------------------

BreakerNote = Literal["succeeded", "failed"]
LogLevel = Literal["info", "warning"]
Note = tuple[LogLevel, str]


@attrs.frozen(kw_only=True)
class Effects:
    """What the executor does before the action itself: events, breaker, log lines."""

    events: tuple[Event, ...] = ()
    breaker: BreakerNote | None = None
    notes: tuple[Note, ...] = ()


NO_EFFECTS = Effects()


@attrs.frozen
class Measure:
    """Read the record, the newest ``limit`` active messages and the count, unleased."""

    limit: int
    effects: Effects = NO_EFFECTS


@attrs.frozen
class Begin:
    """Resolve the summary model and take the session's lease."""

    effects: Effects = NO_EFFECTS


@attrs.frozen
class ReadRecord:
    """Read the record under the lease (an unreadable one is moved aside).

    ``window``: also read the window of this many messages (as ``ReadWindow``), in
    the same round trip where the store can: the window is what comes next unless a
    range waits for recovery.
    """

    window: int | None = None
    effects: Effects = NO_EFFECTS


@attrs.frozen
class ReadArchived:
    """Read archived ``after_id < id <= through_id``, at most ``limit``."""

    after_id: int
    through_id: int
    limit: int
    effects: Effects = NO_EFFECTS


@attrs.frozen
class ReadWindow:
    """Read the newest ``limit`` active messages and count the active history."""

    limit: int
    effects: Effects = NO_EFFECTS


@attrs.frozen
class ReadBacklog:
    """Read the oldest ``limit`` active messages after ``after_id`` (None: all)."""

    after_id: int | None
    limit: int
    effects: Effects = NO_EFFECTS


@attrs.frozen
class Summarize:
    """Call the summarizer with ``request``, bounded by the deadline.

    ``native``: the range itself for a ``NativeSummarizer`` (None: the text path).
    """

    request: tuple[Message, ...]
    max_tokens: int
    effects: Effects = NO_EFFECTS
    native: NativeRequest | None = None


@attrs.frozen
class Commit:
    """Commit ``record`` fenced, archiving through ``through_id`` (None: none).

    The executor stamps a fresh ``generation`` and ``updated_at``. ``final``: the
    compression's last commit, which writes the archive's separator for
    ``archived_before`` plus what it archives. ``version``: the ids the summary
    folded, for the lineage (None: not a new version).
    """

    record: SummaryRecord
    expect_generation: str | None
    through_id: int | None
    expect_archived: int
    previous: SummaryRecord | None
    final: OutcomeKind | None = None
    archived_before: int = 0
    version: tuple[int, int] | None = None
    effects: Effects = NO_EFFECTS


@attrs.frozen
class Finish:
    """End the compression with ``outcome``.

    ``started``: the ``Compressing`` start was announced. ``pressed``: a measured
    turn found the usage ratio at or over the trigger (the session actor asks for an
    ``auto`` compression). ``guard``: the loop guard the session keeps, when
    ``guard_changed``.
    """

    outcome: Outcome
    started: bool
    pressed: float | None = None
    guard_changed: bool = False
    guard: LoopGuard | None = None
    effects: Effects = NO_EFFECTS


Action: TypeAlias = (
    Measure
    | Begin
    | ReadRecord
    | ReadArchived
    | ReadWindow
    | ReadBacklog
    | Summarize
    | Commit
    | Finish
)
