"""Where one compression stands: a union of phase types, each with its own fields.

``domain.compression.step`` derives a new phase value from each observation. Every
phase carries the ``Setting`` and a ``Tally`` (the counters and usage the outcome
reports); the rest is what is true in that phase only:

    Measuring -> Beginning -> ReadingRecord -> [Recovering] -> Windowing
        -> Folding -> Finishing

A measured turn starts at ``Measuring``, any other at ``Beginning``; a forced
reason that skips recovery (``overflow``) or finds none goes from ``ReadingRecord``
to the window's checks at once. The helpers here read the phases (costs, chunks,
the previous summary) for the modules that decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias, TypeVar

import attrs

from .compression_io import (
    NO_EFFECTS,
    Action,
    Commit,
    Committed,
    Cost,
    Effects,
    Note,
    ReadWindow,
    Setting,
    SummaryModel,
)
from .events import Compressing, Event
from .folding import OVERSIZED_SUFFIX, FoldChunk, OutcomeCode, OutcomeKind, fold_chunks
from .measure import LoopGuard, message_tokens
from .model import Message
from .plan import CompressionPlan
from .ports import FenceReason
from .prompt import joined_instructions
from .summary import SummaryRecord
from .trigger import Reason
from .truncate import truncate_to_tokens
from .usage import NO_USAGE, SummarizerUsage
from .window import WindowSplit, probe_limit

FailureCode = Literal["summarizer_failed", "summary_rejected", "breaker_open"]


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
class Tally:
    """What every phase carries: the counters and usage the outcome reports.

    ``started``: the ``Compressing`` start was announced. ``uncommitted``: the usage
    of calls no commit recorded yet.
    """

    started: bool = False
    archived: int = 0
    summarized: int = 0
    recovered: int = 0
    chunks: int = 0
    calls: int = 0
    usage: SummarizerUsage = NO_USAGE
    uncommitted: SummarizerUsage = NO_USAGE
    call_durations_s: tuple[float, ...] = ()


@attrs.frozen
class Figures:
    """The token figures of the outcome, fixed when the fold starts.

    ``window_tokens``: ``(id, tokens)`` of the window's foldable history;
    ``instruction_tokens``: the host's instructions in it; ``estimated``: counted by
    an estimate; ``archived_through``: the newest id a commit archived so far.
    """

    tokens_before: int
    window_tokens: tuple[tuple[int, int], ...]
    instruction_tokens: int
    estimated: bool
    archived_through: int | None = None


@attrs.frozen(kw_only=True)
class Phase:
    """What every phase holds: the compression's setting and its tally."""

    setting: Setting
    tally: Tally = Tally()

    @property
    def session_id(self) -> str:
        """Return the session this compression is for."""
        return self.setting.session_id

    @property
    def reason(self) -> Reason:
        """Return why this compression runs."""
        return self.setting.reason


@attrs.frozen(kw_only=True)
class Measuring(Phase):
    """A measured turn reads the session unleased to decide whether to begin."""


@attrs.frozen(kw_only=True)
class Beginning(Phase):
    """The executor resolves the summary model and takes the session's lease."""


@attrs.frozen(kw_only=True)
class Leased(Phase):
    """A phase under the session's lease: the model is resolved, the record as read."""

    model: SummaryModel
    record: SummaryRecord | None = None


@attrs.frozen(kw_only=True)
class ReadingRecord(Leased):
    """The executor reads the summary record (and the window with it, if asked)."""


@attrs.frozen(kw_only=True)
class Windowing(Leased):
    """The executor reads the newest window.

    ``tokens_at_start``: the summary's tokens when the record was read;
    ``paused``: why recovery paused, if it did.
    """

    tokens_at_start: int = 0
    paused: str | None = None


@attrs.frozen(kw_only=True)
class Chunking(Leased):
    """Chunks fold one summarizer call and one fenced commit each.

    ``queue``: the chunks waiting; ``current``: the chunk in hand (None between
    chunks); ``request``: the summarizer request for it.
    """

    plan: CompressionPlan
    queue: tuple[Work, ...] = ()
    current: Work | None = None
    request: tuple[Message, ...] = ()


@attrs.frozen(kw_only=True)
class Recovering(Chunking):
    """Ranges archived without a summary fold into it, oldest first.

    ``range``: the ``(first, last)`` ids of the range in hand, None between ranges.
    """

    tokens_at_start: int = 0
    range: tuple[int, int] | None = None


@attrs.frozen(kw_only=True)
class Folding(Chunking):
    """The window's older part folds into the summary, chunk after chunk.

    ``tail``: the window read; ``split``: its fold and keep; ``last``: the current
    chunk is the fold's last; ``backlog``: the backlog still to read, as the id of
    the window's fold boundary and the cursor after which the next page starts
    (None: from the oldest), or None when none is left; ``failure``: a chunk
    failed, so the rest trims (or keeps) as ``on_summarizer_failure`` says.
    """

    tail: tuple[Message, ...]
    split: WindowSplit
    figures: Figures
    paused: str | None = None
    last: bool = False
    backlog: tuple[int, int | None] | None = None
    failure: Failed | None = None


@attrs.frozen(kw_only=True)
class Finishing(Leased):
    """The usage no commit carried is recorded (if any), then the outcome closes.

    ``detail`` and ``code``: the words and code when nothing failed or fenced;
    ``guard_changed`` and ``guard``: the loop guard a pressed fold leaves.
    """

    detail: str
    code: OutcomeCode
    figures: Figures | None = None
    paused: str | None = None
    failure: Failed | None = None
    fenced: FenceReason | None = None
    guard_changed: bool = False
    guard: LoopGuard | None = None


CompressionState: TypeAlias = (
    Measuring | Beginning | ReadingRecord | Recovering | Windowing | Folding | Finishing
)
Step: TypeAlias = tuple[CompressionState, Action]

P = TypeVar("P", bound=Phase)
L = TypeVar("L", bound=Leased)


def started(state: P) -> tuple[P, tuple[Event, ...]]:
    """Announce the start once."""
    if state.tally.started:
        return state, ()
    event = Compressing(state.session_id, "start", state.reason)
    return attrs.evolve(state, tally=attrs.evolve(state.tally, started=True)), (event,)


def utf8_token_bound(text: str) -> int:
    """Return a token bound of ``text`` that never undercounts: its UTF-8 bytes.

    Every token of a byte-level BPE covers at least one byte. The engine passes a
    tighter estimate (``ChatContext.estimate_for``); this is the fallback.
    """
    return len(text.encode("utf-8", "surrogatepass"))


def figure_cost(state: Leased, tail: Sequence[Message]) -> tuple[Cost, bool]:
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
        return window_cost(state, tail), False
    if context.estimate_for is not None:
        return context.estimate_for(tail), True
    return lambda message: message_tokens(message, utf8_token_bound), True


def with_notes(effects: Effects, *, notes: tuple[Note, ...]) -> Effects:
    """Return ``effects`` with ``notes`` added."""
    if not notes:
        return effects
    return attrs.evolve(effects, notes=(*effects.notes, *notes))


def chunks_of(
    state: Chunking,
    page: Sequence[Message],
    limit_tokens: int,
    max_count: int | None = None,
) -> list[FoldChunk]:
    """Split ``page`` into chunks one summarizer call each can read."""
    config = state.setting.config
    tail = state.tail if isinstance(state, Folding) else ()
    return fold_chunks(
        page,
        lookup=[*page, *tail],
        locale=config.locale,
        cut_chars=config.truncate_chars,
        count_tokens=state.model.count_tokens,
        limit_tokens=limit_tokens,
        max_count=max_count or probe_limit(config),
    )


def previous_text(state: Chunking) -> str | None:
    """Return the previous summary as sent: one from elsewhere is cut to budget."""
    record, plan = state.record, state.plan
    previous = record.text if record and record.text else None
    if previous is not None and len(previous.encode()) > plan.budget_tokens:
        # Bytes bound tokens: only a summary longer in bytes may need the count.
        count = state.model.count_tokens
        previous = truncate_to_tokens(
            previous, plan.budget_tokens, count, OVERSIZED_SUFFIX
        )
    return previous


def host_instructions(state: Phase) -> str:
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


def window_cost(state: Leased, tail: Sequence[Message]) -> Cost:
    """Return what a message of the window ``tail`` costs as the chat model sees it."""
    context = state.setting.context
    if context is not None:
        return context.cost_for(tail)
    count = state.model.count_tokens
    return lambda message: message_tokens(message, count)


def kept_tokens(state: Leased, tail: Sequence[Message], keep: Sequence[Message]) -> int:
    """Return what the session holds after folding: the summary and ``keep``."""
    context = state.setting.context
    assert context is not None
    summary = state.record.text if state.record else None
    return context.summary_tokens(summary) + sum(map(window_cost(state, tail), keep))


def with_calls(state: P, calls: int) -> P:
    """Return ``state`` with ``calls`` more summarizer calls counted."""
    tally = attrs.evolve(state.tally, calls=state.tally.calls + calls)
    return attrs.evolve(state, tally=tally)


def commit(
    state: Leased,
    record: SummaryRecord,
    effects: Effects = NO_EFFECTS,
    *,
    chunk: FoldChunk | None = None,
    final: OutcomeKind | None = None,
    version: tuple[int, int] | None = None,
) -> Commit:
    """Return one fenced commit of ``record``, with the usage no commit recorded yet."""
    record = attrs.evolve(record, usage=record.usage.plus(state.tally.uncommitted))
    return Commit(
        record,
        expect_generation=None
        if state.record is None
        else state.record.generation or "",
        through_id=None if chunk is None else chunk.through_id,
        expect_archived=0 if chunk is None else len(chunk.messages),
        previous=state.record,
        final=final,
        archived_before=state.tally.archived,
        version=version,
        effects=effects,
    )


def committed(state: L, seen: Committed) -> L:
    """Return ``state`` after a commit applied: the record stored, the usage in it."""
    tally = attrs.evolve(
        state.tally,
        uncommitted=NO_USAGE,
        archived=state.tally.archived + seen.archived,
    )
    return attrs.evolve(state, record=seen.record, tally=tally)


def read_window(
    state: Leased,
    tokens_at_start: int,
    effects: Effects = NO_EFFECTS,
    *,
    paused: str | None = None,
) -> tuple[Windowing, ReadWindow]:
    """Ask for the window; ``paused``: why recovery paused, if it did."""
    windowing = Windowing(
        setting=state.setting,
        tally=state.tally,
        model=state.model,
        record=state.record,
        tokens_at_start=tokens_at_start,
        paused=paused,
    )
    limit = probe_limit(state.setting.config)
    return windowing, ReadWindow(limit, effects)
