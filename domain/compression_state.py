"""Where one compression stands (``CompressionState``) and what it came to.

The state is a frozen value that ``domain.compression.step`` derives anew from each
observation; the helpers here read it (the model, the plan, the window's costs) and
turn it into an ``Outcome`` and the events that close a compression.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs

from .compression_io import Cost, Effects, Note, Setting, SummaryModel
from .events import Compressing, Event, Skipped, Status
from .folding import (
    OVERSIZED_SUFFIX,
    FoldChunk,
    Outcome,
    OutcomeCode,
    OutcomeKind,
    fold_chunks,
)
from .measure import LoopGuard, message_tokens
from .model import Message
from .plan import CompressionPlan
from .ports import FenceReason
from .prompt import joined_instructions
from .reason import Reason, is_forced
from .summary import SummaryRecord
from .truncate import truncate_to_tokens
from .usage import NO_USAGE, SummarizerUsage
from .window import WindowSplit, probe_limit

FailureCode = Literal["summarizer_failed", "summary_rejected", "breaker_open"]
Phase = Literal["measure", "begin", "record", "recover", "window", "fold", "finishing"]
Commitment = Literal["fold", "trim", "recover", "drop", "usage"]

FENCE_DETAILS: dict[FenceReason, str] = {
    "generation": "the summary changed meanwhile (a clear, a forget or another writer)",
    "archive": "the active history changed meanwhile (a trim, a forget or a writer)",
    "lease": "the session's lease was lost (expired, or taken after a restart)",
}


@attrs.frozen
class Failed:
    """Why a chunk got no summary: a code and the words for it."""

    code: FailureCode
    detail: str


@attrs.frozen
class Work:
    """A chunk waiting to be folded; a half of a too-long one is not halved again."""

    chunk: FoldChunk
    halvable: bool = True


@attrs.frozen(kw_only=True)
class CompressionState:
    """Where one compression stands; every field is a value."""

    setting: Setting
    phase: Phase
    model: SummaryModel | None = None
    record: SummaryRecord | None = None
    summary_tokens_at_start: int = 0
    tail: tuple[Message, ...] = ()
    split: WindowSplit | None = None
    plan: CompressionPlan | None = None
    queue: tuple[Work, ...] = ()
    current: Work | None = None
    current_last: bool = False
    request: tuple[Message, ...] = ()
    committing: Commitment | None = None
    recovering: tuple[int, int] | None = None
    boundary_id: int | None = None
    cursor: int | None = None
    exhausted: bool = True
    started: bool = False
    failure: Failed | None = None
    paused: str | None = None
    fenced: FenceReason | None = None
    finishing: tuple[str, OutcomeCode] | None = None
    archived: int = 0
    summarized: int = 0
    recovered: int = 0
    chunks: int = 0
    calls: int = 0
    usage: SummarizerUsage = NO_USAGE
    uncommitted: SummarizerUsage = NO_USAGE
    call_durations_s: tuple[float, ...] = ()
    archived_through: int | None = None
    tokens_before: int | None = None
    window_tokens: tuple[tuple[int, int], ...] = ()
    instruction_tokens: int = 0
    tokens_estimated: bool = False
    guard_changed: bool = False
    new_guard: LoopGuard | None = None

    @property
    def session_id(self) -> str:
        """Return the session this compression is for."""
        return self.setting.session_id

    @property
    def reason(self) -> Reason:
        """Return why this compression runs."""
        return self.setting.reason


def started(state: CompressionState) -> tuple[CompressionState, tuple[Event, ...]]:
    """Announce the start once."""
    if state.started:
        return state, ()
    event = Compressing(state.session_id, "start", state.reason)
    return attrs.evolve(state, started=True), (event,)


def utf8_token_bound(text: str) -> int:
    """Return a token bound of ``text`` that never undercounts: its UTF-8 bytes.

    Every token of a byte-level BPE covers at least one byte. The engine passes a
    tighter estimate (``ChatContext.estimate_for``); this is the fallback.
    """
    return len(text.encode("utf-8", "surrogatepass"))


def figure_cost(state: CompressionState) -> tuple[Cost, bool]:
    """Return the cost for the outcome's token figures and whether it estimates.

    Exact where a decision reads the window's tokens (``context_window`` or
    ``keep_recent_tokens`` set); else an estimate: the figures are only reported.
    """
    context = state.setting.context
    if (
        context is None
        or context.window_tokens is not None
        or context.keep_tokens is not None
    ):
        return window_cost(state), False
    if context.estimate_for is not None:
        return context.estimate_for(state.tail), True
    return lambda message: message_tokens(message, utf8_token_bound), True


def with_notes(effects: Effects, *, notes: tuple[Note, ...]) -> Effects:
    """Return ``effects`` with ``notes`` added."""
    if not notes:
        return effects
    return attrs.evolve(effects, notes=(*effects.notes, *notes))


def chunks_of(
    state: CompressionState,
    page: Sequence[Message],
    limit_tokens: int,
    max_count: int | None = None,
) -> list[FoldChunk]:
    """Split ``page`` into chunks one summarizer call each can read."""
    config = state.setting.config
    return fold_chunks(
        page,
        lookup=[*page, *state.tail],
        locale=config.locale,
        cut_chars=config.truncate_chars,
        count_tokens=summary_model(state).count_tokens,
        limit_tokens=limit_tokens,
        max_count=max_count or probe_limit(config),
    )


def previous_text(state: CompressionState) -> str | None:
    """Return the previous summary as sent: one from elsewhere is cut to budget."""
    record, plan = state.record, current_plan(state)
    previous = record.text if record and record.text else None
    if previous is not None and len(previous.encode()) > plan.budget_tokens:
        # Bytes bound tokens: only a summary longer in bytes may need the count.
        count = summary_model(state).count_tokens
        previous = truncate_to_tokens(
            previous, plan.budget_tokens, count, OVERSIZED_SUFFIX
        )
    return previous


def summary_model(state: CompressionState) -> SummaryModel:
    """Return the resolved summary model (resolved before any read under the lease)."""
    if state.model is None:  # pragma: no cover - every path resolves it first
        raise ValueError("the summary model is not resolved yet")
    return state.model


def current_plan(state: CompressionState) -> CompressionPlan:
    """Return the plan of the current phase (recovery or fold)."""
    if state.plan is None:  # pragma: no cover - set when a phase starts
        raise ValueError("no plan yet")
    return state.plan


def host_instructions(state: CompressionState) -> str:
    """Return the host's words for this compression: the config's, then the call's."""
    setting = state.setting
    return joined_instructions(
        setting.config.summary_instructions, setting.instructions
    )


def stored_id(message: Message) -> int:
    """Return a stored message's id."""
    if message.id is None:  # the executor checks ids where it reads them
        raise ValueError("a stored message has an id")
    return message.id


def window_cost(state: CompressionState) -> Cost:
    """Return what a message of the window costs as the chat model sees it."""
    context = state.setting.context
    if context is not None:
        return context.cost_for(state.tail)
    count = summary_model(state).count_tokens
    return lambda message: message_tokens(message, count)


def kept_tokens(state: CompressionState, keep: Sequence[Message]) -> int:
    """Return what the session holds after folding: the summary and ``keep``."""
    context = state.setting.context
    assert context is not None
    summary = state.record.text if state.record else None
    return context.summary_tokens(summary) + sum(map(window_cost(state), keep))


def outcome_of(
    state: CompressionState, kind: OutcomeKind, code: OutcomeCode
) -> Outcome:
    """Return the ``Outcome`` of ``state`` as ``kind`` and ``code`` (no detail yet)."""
    model = state.model
    return Outcome(
        state.session_id,
        kind,
        state.reason,
        summarized=state.summarized,
        archived=state.archived,
        chunks=state.chunks,
        summarizer_calls=state.calls,
        recovered=state.recovered,
        code=code,
        tokens_before=state.tokens_before,
        tokens_estimated=state.tokens_estimated,
        tokens_after=tokens_after(state),
        usage=state.usage,
        model=None if model is None else model.label,
        call_durations_s=state.call_durations_s,
    )


def tokens_after(state: CompressionState) -> int | None:
    """Return the active context's tokens now: the summary and what stayed."""
    if state.tokens_before is None:
        return None
    through = state.archived_through
    kept = sum(t for i, t in state.window_tokens if through is None or i > through)
    kept += state.instruction_tokens
    return (state.record.tokens if state.record is not None else 0) + kept


def closing_events(outcome: Outcome, started: bool) -> tuple[Event, ...]:
    """Return the events that close a compression with ``outcome``.

    ``Compressing`` done or error once it started (a forced one always did), and
    ``Skipped`` when it skipped for a ``SkipReason`` (below the threshold is no event).
    """
    events: list[Event] = []
    if started or is_forced(outcome.reason):
        if not started:
            events.append(Compressing(outcome.session_id, "start", outcome.reason))
        status: Status = "done" if outcome.ok else "error"
        events.append(
            Compressing(
                outcome.session_id,
                status,
                outcome.reason,
                outcome.detail,
                outcome=outcome,
            )
        )
    skip = outcome.skip_reason
    if skip is not None:
        events.append(Skipped(outcome.session_id, outcome.reason, skip, outcome.detail))
    return tuple(events)
