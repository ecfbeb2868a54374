"""One compression as a pure state machine: ``start`` and ``step``.

Every decision of a compression lives here: the threshold (decided once, on what
the compression read), nothing to fold, token pressure on a measured turn, the loop
guard, keep mode with an open breaker, recovering ranges archived without a summary,
chunking and halving on a context-length error, trim-only after a failure, and the
outcome. ``actors.compression`` performs the actions and feeds back observations
(``domain.compression_io``); a fence, a stop or a store failure is one more
observation. This module is over 400 lines because it is the one decision function
of a compression: splitting it would spread one course of events over two modules.

The course: a measured turn first reads the session unleased (``Measure``) and
presses (``Finish.pressed``) or stops; then ``Begin`` (model and lease),
``ReadRecord``, recovery (``ReadArchived``, ``Summarize``, ``Commit``) unless the
reason is ``overflow``, ``ReadWindow``, the checks, then chunk after chunk
(``ReadBacklog`` when the backlog is larger than the window), and ``Finish``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs

from .compaction import (
    OVERSIZED_SUFFIX,
    FoldChunk,
    Outcome,
    OutcomeCode,
    OutcomeKind,
    fold_chunks,
    next_record,
)
from .compression_io import (
    Action,
    ArchivedRead,
    BacklogRead,
    Began,
    Begin,
    BreakerNote,
    BreakerRefused,
    CallFailed,
    Cancelled,
    Commit,
    Committed,
    Cost,
    Effects,
    Fenced,
    Finish,
    LeaseHeld,
    Measure,
    Measured,
    Note,
    Observation,
    ReadArchived,
    ReadBacklog,
    ReadRecord,
    ReadWindow,
    RecordRead,
    Replied,
    Setting,
    StoreFailed,
    Summarize,
    SummaryModel,
    Unresolved,
    WindowRead,
)
from .events import Compressing, Event, Skipped, Status
from .measure import LoopGuard, guard_after, message_tokens
from .model import Message
from .pins import with_pins
from .plan import CompressionPlan
from .ports import FenceReason, SummaryReply
from .prompt import joined_instructions, summary_request
from .reason import Reason, is_forced, is_pressed
from .summary import SummaryRecord, drop_unsummarized_through, resummarized_record
from .summary import trimmed_record as _trimmed_record
from .truncate import truncate_to_tokens
from .usage import NO_USAGE, SummarizerUsage, counted_usage
from .verdict import Accepted, check_summary
from .window import (
    WindowSplit,
    foldable_history,
    guard_may_hold,
    probe_limit,
    should_compress,
    split_window,
)

FailureCode = Literal["summarizer_failed", "summary_rejected", "breaker_open"]
Phase = Literal["measure", "begin", "record", "recover", "window", "fold", "finishing"]
Commitment = Literal["fold", "trim", "recover", "drop", "usage"]

FENCE_DETAILS: dict[FenceReason, str] = {
    "generation": "the summary changed meanwhile (a clear, a forget or another writer)",
    "archive": "the active history changed meanwhile (a trim, a forget or a writer)",
    "lease": "the session's lease was lost (expired, or taken after a restart)",
}
NOTHING = "nothing to compress"
WRITTEN = "summary written"


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


Step = tuple[CompressionState, Action]


def start(setting: Setting) -> Step:
    """Return the first state and action of a compression for ``setting``.

    A forced reason announces its start at once; a measured turn reads first.
    """
    state = CompressionState(setting=setting, phase="begin")
    if setting.reason == "turn" and setting.measured:
        measure = Measure(probe_limit(setting.config))
        return attrs.evolve(state, phase="measure"), measure
    if is_forced(setting.reason):
        state, events = _started(state)
        return state, Begin(Effects(events=events))
    return state, Begin()


def step(state: CompressionState, observation: Observation) -> Step:
    """Return the next state and action after ``observation``."""
    match observation:
        case Cancelled():
            if state.phase == "finishing":  # recording usage only: it goes too
                return _classified(state)
            return _failed(state, "engine stopped", "engine_stopped")
        case StoreFailed(detail=detail):
            if state.phase == "finishing":  # recording usage only: it goes too
                return _classified(state, (("warning", f"recording usage: {detail}"),))
            return _failed(state, f"store failed: {detail}", "store_failed")
        case Measured():
            return _measured(state, observation)
        case Unresolved(detail=detail):
            state, events = _started(state)
            return _failed(state, detail, "model_unresolved", events)
        case LeaseHeld():
            outcome = _outcome(state, "skipped", "lease_held")
            detail = "another worker holds the session's lease"
            return state, Finish(attrs.evolve(outcome, detail=detail), state.started)
        case Began(model=model):
            return attrs.evolve(state, model=model, phase="record"), ReadRecord()
        case RecordRead(record=record):
            state = attrs.evolve(
                state,
                record=record,
                summary_tokens_at_start=0 if record is None else record.tokens,
            )
            if (
                record is not None
                and record.unsummarized
                and state.reason != "overflow"
            ):
                plan = _model(state).plan(state.reason, ())
                return _recover_next(attrs.evolve(state, phase="recover", plan=plan))
            return _read_window(state)
        case ArchivedRead(page=page):
            return _archived(state, page)
        case WindowRead():
            return _window(state, observation)
        case BacklogRead(page=page):
            return _backlog(state, page)
        case Replied() | CallFailed() | BreakerRefused():
            return _answered(state, observation)
        case Committed():
            return _committed(state, observation)
        case Fenced(reason=reason, called=called):
            calls = state.calls + (1 if called else 0)
            if state.phase == "finishing":  # cleared, forgotten or stopping: usage goes
                return _classified(attrs.evolve(state, calls=calls))
            return _finish(attrs.evolve(state, fenced=reason, calls=calls), WRITTEN)
    raise TypeError(f"unknown observation {observation!r}")  # pragma: no cover


# -- reading and deciding --------------------------------------------------------------


def _measured(state: CompressionState, seen: Measured) -> Step:
    """Decide a measured turn: the count trigger, else token pressure, else nothing."""
    config = state.setting.config
    if should_compress(seen.active, config, forced=False):
        return attrs.evolve(state, phase="begin"), Begin()
    pressed = _pressure(state, seen)
    outcome = Outcome(
        state.session_id, "skipped", "turn", "below threshold", code="below_threshold"
    )
    return state, Finish(outcome, False, pressed=pressed)


def _pressure(state: CompressionState, seen: Measured) -> float | None:
    """Return the usage ratio when the engine's own measure reaches the trigger."""
    context, threshold = (
        state.setting.context,
        state.setting.config.auto_compress_threshold,
    )
    if context is None or context.window_tokens is None or threshold <= 0:
        return None
    cost = context.cost_for(seen.tail)
    text = seen.record.text if seen.record else None
    used = context.summary_tokens(text) + sum(map(cost, seen.tail))
    ratio = used / max(context.window_tokens, 1)
    return ratio if ratio >= threshold else None


def _read_window(state: CompressionState, effects: Effects | None = None) -> Step:
    limit = probe_limit(state.setting.config)
    action = ReadWindow(limit) if effects is None else ReadWindow(limit, effects)
    return attrs.evolve(state, phase="window", queue=(), current=None), action


def _window(state: CompressionState, seen: WindowRead) -> Step:
    """Apply the checks to the window read; fold, or say why not."""
    config = state.setting.config
    state = attrs.evolve(state, tail=seen.tail)
    split = _split_window(state)
    forced = is_forced(state.reason)
    foldable = seen.active - len(split.instructions)  # instructions are context
    if not forced and not should_compress(foldable, config, forced=False):
        return _finish(state, NOTHING, "below_threshold")
    if not split.fold:
        return _finish(state, NOTHING, "nothing_to_fold")
    if guard_may_hold(state.reason, foldable, config):
        guarded = _guarded(state, split.stays)
        if guarded is not None:
            return _finish(state, guarded, "loop_guard")
    if not forced and config.on_summarizer_failure == "keep" and seen.breaker_open:
        return _finish(state, "summarizer circuit open", "breaker_open")  # keep: no use
    state, events = _started(state)
    cost = _cost(state)
    window_tokens = tuple((_id(m), cost(m)) for m in foldable_history(seen.tail))
    instruction_tokens = sum(map(cost, split.instructions))
    plan = _model(state).plan(state.reason, split.keep)
    state = attrs.evolve(
        state,
        phase="fold",
        split=split,
        plan=plan,
        window_tokens=window_tokens,
        instruction_tokens=instruction_tokens,
        tokens_before=state.summary_tokens_at_start
        + instruction_tokens
        + sum(t for _, t in window_tokens),
    )
    if seen.active == len(seen.tail):  # the window is the whole active history
        queue = tuple(
            Work(c) for c in _chunks(state, split.fold, plan.input_limit_tokens)
        )
        state = attrs.evolve(state, queue=queue, exhausted=True)
    else:
        state = attrs.evolve(
            state, boundary_id=_id(split.fold[-1]), cursor=None, exhausted=False
        )
    return _fold_next(state, Effects(events=events))


def _split_window(state: CompressionState) -> WindowSplit:
    """Split the tail by count and tokens; an overflow keeps by tokens only."""
    context = state.setting.context
    keep_tokens = None if context is None else context.keep_tokens
    cost = _cost(state)
    if state.reason == "overflow":
        split = split_window(state.tail, None, keep_tokens=keep_tokens or 0, cost=cost)
        if split.fold or not keep_tokens:
            return split
        # The host's call overflowed although the history fits the keep (its
        # prompt and tools fill the window): fold all but the newest group.
        return split_window(state.tail, None, keep_tokens=0, cost=cost)
    return split_window(
        state.tail,
        state.setting.config.keep_recent,
        keep_tokens=keep_tokens,
        cost=None if context is None else cost,
    )


def _guarded(state: CompressionState, keep: Sequence[Message]) -> str | None:
    """Return why an ``auto`` compression is pointless now, or None to go on."""
    guard = state.setting.guard
    if state.reason != "auto" or state.setting.context is None or guard is None:
        return None
    cost = _cost(state)
    arrived = ((_id(m), cost(m)) for m in state.tail)
    if not guard.holds(arrived, _kept_tokens(state, keep)):
        return None
    return (
        "loop guard: the kept part alone is over the trigger; waiting for "
        f"{guard.enough_tokens} new tokens"
    )


def _kept_tokens(state: CompressionState, keep: Sequence[Message]) -> int:
    """Return what the session holds after folding: the summary and ``keep``."""
    context = state.setting.context
    assert context is not None
    summary = state.record.text if state.record else None
    return context.summary_tokens(summary) + sum(map(_cost(state), keep))


def _cost(state: CompressionState) -> Cost:
    """Return what a message of the window costs as the chat model sees it."""
    context = state.setting.context
    if context is not None:
        return context.cost_for(state.tail)
    count = _model(state).count_tokens
    return lambda message: message_tokens(message, count)


# -- recovering ranges archived without a summary --------------------------------------


def _recover_next(state: CompressionState, effects: Effects | None = None) -> Step:
    """Fold the next chunk of the oldest unsummarized range, or go on to the window."""
    effects = effects or Effects()
    record = state.record
    if state.queue:
        return _take(state, effects)
    if state.recovering is not None:  # a page of the range is done
        if record is not None and record.unsummarized[:1] == (state.recovering,):
            return _failed(
                state,
                "store failed: recovery made no progress; the record is inconsistent",
                "store_failed",
                effects.events,
            )
        state = attrs.evolve(state, recovering=None)
    if state.paused is not None or record is None or not record.unsummarized:
        return _read_window(state, effects)
    first, last = record.unsummarized[0]
    limit = probe_limit(state.setting.config)
    return state, ReadArchived(first - 1, last, limit, effects)


def _archived(state: CompressionState, page: tuple[Message, ...]) -> Step:
    assert state.record is not None
    first, last = state.record.unsummarized[0]
    if not page:  # forgotten, or the range's tail: nothing left to fold
        return _commit(state, _dropped(state, last), "drop")
    state, events = _started(state)
    plan = _plan(state)
    chunks = _chunks(state, page, plan.input_limit_tokens)
    state = attrs.evolve(
        state, queue=tuple(Work(c) for c in chunks), recovering=(first, last)
    )
    return _recover_next(state, Effects(events=events))


def _dropped(state: CompressionState, through_id: int) -> SummaryRecord:
    assert state.record is not None
    ranges = drop_unsummarized_through(state.record.unsummarized, through_id)
    return attrs.evolve(state.record, unsummarized=ranges)


# -- folding ---------------------------------------------------------------------------


def _fold_next(state: CompressionState, effects: Effects | None = None) -> Step:
    """Fold the next chunk; read on when the last one may not be the last."""
    effects = effects or Effects()
    if not state.exhausted and len(state.queue) <= 1:
        limit = probe_limit(state.setting.config)
        return state, ReadBacklog(state.cursor, limit, effects)
    if not state.queue:
        state, notes = _after_fold(state)
        return _finish(state, WRITTEN, effects=_plus(effects, notes=notes))
    return _take(state, effects)


def _backlog(state: CompressionState, page: tuple[Message, ...]) -> Step:
    """Queue a backlog page's chunks: its messages up to the window's fold boundary."""
    boundary = state.boundary_id
    assert boundary is not None
    within = [m for m in page if _id(m) <= boundary]
    if not within:
        return _fold_next(attrs.evolve(state, exhausted=True))
    state = attrs.evolve(state, cursor=_id(within[-1]))
    history = foldable_history(within)  # the host's instructions are never folded
    if history:
        chunks = _chunks(state, history, _plan(state).input_limit_tokens)
        state = attrs.evolve(state, queue=(*state.queue, *(Work(c) for c in chunks)))
    return _fold_next(state)


def _take(state: CompressionState, effects: Effects) -> Step:
    """Start on the queue's first chunk: summarize it, or commit it as it is."""
    work, rest = state.queue[0], state.queue[1:]
    last = not rest and state.exhausted
    state = attrs.evolve(state, queue=rest, current=work, current_last=last)
    chunk = work.chunk
    recovering = state.phase == "recover"
    if state.failure is not None and not recovering:
        return _trim(state, effects)
    if not chunk.transcript:
        if recovering:
            return _commit(state, _dropped(state, chunk.through_id), "drop", effects)
        return _commit_fold(state, None, effects)
    request = tuple(
        summary_request(
            chunk.transcript,
            previous_summary=_previous_text(state),
            todo=_plan(state).todo,
            system=_plan(state).system,
            locale=state.setting.config.locale,
            instructions=joined_instructions(
                state.setting.config.summary_instructions, state.setting.instructions
            ),
        )
    )
    state = attrs.evolve(state, request=request)
    return state, Summarize(request, _plan(state).summary_tokens, effects)


def _answered(
    state: CompressionState, seen: Replied | CallFailed | BreakerRefused
) -> Step:
    """Judge the summarizer's answer for the current chunk."""
    work = state.current
    assert work is not None
    breaker: BreakerNote | None = None
    result: Accepted | Failed
    match seen:
        case BreakerRefused():
            result = Failed("breaker_open", "summarizer circuit open")
        case CallFailed(detail=detail, too_long=too_long):
            state = attrs.evolve(state, calls=state.calls + 1)
            if too_long and work.halvable:
                return _halved(state, work)
            result = Failed("summarizer_failed", f"summarizer failed: {detail}")
        case Replied(reply=reply, seconds=seconds):
            state = _accounted(state, reply, seconds)
            result, breaker = _judged(state, reply.text)
    effects = Effects(breaker=breaker)
    if isinstance(result, Failed):
        return _failure(state, result, effects)
    if state.phase == "recover":
        return _commit_recovered(state, result, effects)
    return _commit_fold(state, result, effects)


def _accounted(
    state: CompressionState, reply: SummaryReply, seconds: float
) -> CompressionState:
    """Add one answered call's usage: the provider's, else counted, and marked."""
    usage = reply.usage
    if usage is None:
        usage = counted_usage(state.request, reply.text, _model(state).count_tokens)
    call = NO_USAGE.with_call(usage, counted=reply.usage is None, seconds=seconds)
    return attrs.evolve(
        state,
        calls=state.calls + 1,
        usage=state.usage.plus(call),
        uncommitted=state.uncommitted.plus(call),
        call_durations_s=(*state.call_durations_s, seconds),
    )


def _judged(
    state: CompressionState, text: str
) -> tuple[Accepted | Failed, BreakerNote]:
    """Return the checked, pinned summary, or why it was rejected."""
    work, plan, config = state.current, _plan(state), state.setting.config
    assert work is not None
    count = _model(state).count_tokens
    previous = _previous_text(state)
    verdict = check_summary(
        text,
        transcript=work.chunk.transcript,
        previous=previous,
        budget_tokens=plan.summary_tokens,
        count_tokens=count,
        locale=config.locale,
    )
    if not isinstance(verdict, Accepted):
        detail = f"summary rejected ({verdict.reason}): {verdict.detail}"
        return Failed("summary_rejected", detail), "failed"
    if not config.pin_facts:
        return verdict, "succeeded"
    pinned = with_pins(
        verdict.text,
        transcript=work.chunk.transcript,
        previous=previous,
        budget_tokens=plan.summary_tokens,
        count_tokens=count,
        locale=config.locale,
    )
    if pinned == verdict.text:
        return verdict, "succeeded"
    return Accepted(pinned, count(pinned), True), "succeeded"


def _halved(state: CompressionState, work: Work) -> Step:
    """Re-split a chunk the model found too long: half its messages and tokens."""
    chunk = work.chunk
    count = _model(state).count_tokens
    tokens = sum(count(line) for line in chunk.transcript)
    limit = max(min(tokens, _plan(state).input_limit_tokens) // 2, 1)
    halves = _chunks(
        state, chunk.messages, limit, max((len(chunk.messages) + 1) // 2, 1)
    )
    note = (
        f"context exceeded, retrying {len(chunk.messages)} message(s) in "
        f"{len(halves)} smaller chunk(s)"
    )
    queue = (*(Work(c, halvable=False) for c in halves), *state.queue)
    state = attrs.evolve(state, queue=queue, current=None)
    effects = Effects(notes=(("warning", note),))
    if state.phase == "recover":
        return _recover_next(state, effects)
    return _fold_next(state, effects)


def _failure(state: CompressionState, failed: Failed, effects: Effects) -> Step:
    """Pause recovery, or degrade the fold as ``on_summarizer_failure`` says."""
    if state.phase == "recover":
        note: Note = ("warning", f"recovery paused: {failed.detail}")
        state = attrs.evolve(
            state, paused=failed.detail, queue=(), current=None, recovering=None
        )
        return _recover_next(state, _plus(effects, notes=(note,)))
    keep = state.setting.config.on_summarizer_failure == "keep"
    # seed: a failed summary still trims, or the session loops on retries; the
    # previous summary stays and a partial text is never stored.
    then = (
        "keeping the history active"
        if keep
        else "archiving without a summary (recorded for recovery)"
    )
    state = attrs.evolve(state, failure=failed)
    return _trim(
        state, _plus(effects, notes=(("warning", f"{failed.detail}; {then}"),))
    )


def _trim(state: CompressionState, effects: Effects) -> Step:
    """Archive the current chunk without a summary (keep mode: archive nothing)."""
    if state.setting.config.on_summarizer_failure == "keep":
        return _finish(state, WRITTEN, effects=effects)
    work = state.current
    assert work is not None
    chunk = work.chunk
    record = _trimmed_record(
        state.record,
        first_id=_id(chunk.messages[0]),
        last_id=chunk.through_id,
        generation="",
        now=0.0,
    )
    final: OutcomeKind | None = "trimmed" if state.current_last else None
    return _commit(state, record, "trim", effects, chunk=chunk, final=final)


def _commit_fold(
    state: CompressionState, summary: Accepted | None, effects: Effects | None = None
) -> Step:
    work = state.current
    assert work is not None
    chunk = work.chunk
    record = next_record(
        state.record,
        text=summary.text if summary else "",
        tokens=summary.tokens if summary else 0,
        chunk=chunk,
        model=_model(state).label,
        now=0.0,
        generation="",
    )
    final: OutcomeKind | None = "compressed" if state.current_last else None
    version = (_id(chunk.messages[0]), chunk.through_id)
    return _commit(
        state, record, "fold", effects, chunk=chunk, final=final, version=version
    )


def _commit_recovered(
    state: CompressionState, summary: Accepted, effects: Effects
) -> Step:
    work = state.current
    assert work is not None
    assert state.record is not None
    chunk = work.chunk
    record = resummarized_record(
        state.record,
        text=summary.text,
        tokens=summary.tokens,
        through_id=chunk.through_id,
        folded=len(chunk.messages),
        model=_model(state).label,
        generation="",
        now=0.0,
    )
    version = (_id(chunk.messages[0]), chunk.through_id)
    return _commit(state, record, "recover", effects, version=version)


def _commit(
    state: CompressionState,
    record: SummaryRecord,
    kind: Commitment,
    effects: Effects | None = None,
    *,
    chunk: FoldChunk | None = None,
    final: OutcomeKind | None = None,
    version: tuple[int, int] | None = None,
) -> Step:
    """Ask for one fenced commit carrying the usage no commit recorded yet."""
    record = attrs.evolve(record, usage=record.usage.plus(state.uncommitted))
    action = Commit(
        record,
        expect_generation=None
        if state.record is None
        else state.record.generation or "",
        through_id=None if chunk is None else chunk.through_id,
        expect_archived=0 if chunk is None else len(chunk.messages),
        previous=state.record,
        final=final,
        archived_before=state.archived,
        version=version,
        effects=effects or Effects(),
    )
    return attrs.evolve(state, committing=kind), action


def _committed(state: CompressionState, seen: Committed) -> Step:
    """Count what a commit applied and go on where it left off."""
    kind, work = state.committing, state.current
    state = attrs.evolve(
        state,
        record=seen.record,
        uncommitted=NO_USAGE,
        archived=state.archived + seen.archived,
        committing=None,
    )
    if kind == "usage":
        return _classified(state)
    if kind in ("fold", "trim"):
        assert work is not None
        through = work.chunk.through_id
        state = attrs.evolve(
            state,
            archived_through=max(state.archived_through or 0, through),
            chunks=state.chunks + 1,
            summarized=state.summarized
            + (len(work.chunk.messages) if kind == "fold" else 0),
            current=None,
        )
        return _fold_next(state)
    if kind == "recover":
        assert work is not None
        folded = len(work.chunk.messages)
        state = attrs.evolve(
            state,
            recovered=state.recovered + folded,
            summarized=state.summarized + folded,
            current=None,
        )
    return _recover_next(attrs.evolve(state, current=None))


def _after_fold(
    state: CompressionState,
) -> tuple[CompressionState, tuple[Note, ...]]:
    """Set or lift the loop guard after a pressed fold, by what it kept."""
    context = state.setting.context
    if (
        context is None
        or not state.tail
        or not (state.summarized or state.archived)
        or not is_pressed(state.reason)  # a count trigger keeps the guard
        or state.split is None
    ):
        return state, ()
    kept = _kept_tokens(state, state.split.stays)
    guard = guard_after(
        tip_id=_id(state.tail[-1]),
        kept_tokens=kept,
        trigger_tokens=context.trigger_tokens,
    )
    state = attrs.evolve(state, guard_changed=True, new_guard=guard)
    if guard is None:
        return state, ()
    note = (
        f"the kept part ({kept} tokens) is over the trigger; the next auto "
        f"compression waits for {guard.enough_tokens} new tokens"
    )
    return state, (("info", note),)


# -- the outcome -----------------------------------------------------------------------


def _finish(
    state: CompressionState,
    detail: str,
    skipped: OutcomeCode = "nothing_to_fold",
    *,
    effects: Effects | None = None,
) -> Step:
    """Record the usage no commit carried, then finish with the outcome."""
    state = attrs.evolve(
        state, phase="finishing", finishing=(detail, skipped), current=None, queue=()
    )
    if state.uncommitted.calls == 0 or state.fenced is not None:
        return _classified(state, effects=effects)
    base = state.record or SummaryRecord(text="", covered_through_id=None, tokens=0)
    return _commit(state, base, "usage", effects)


def _classified(
    state: CompressionState,
    notes: tuple[Note, ...] = (),
    *,
    effects: Effects | None = None,
) -> Step:
    """Return the final action: what happened, in one ``Outcome``."""
    assert state.finishing is not None
    detail, skipped = state.finishing
    config = state.setting.config
    kind: OutcomeKind
    code: OutcomeCode
    if state.fenced is not None:
        kind, detail = "fenced", f"commit fenced: {FENCE_DETAILS[state.fenced]}"
        code = "fenced"
    elif state.failure is not None:
        trimmed = config.on_summarizer_failure == "trim" and state.archived
        kind = "trimmed" if trimmed else "failed"
        detail, code = state.failure.detail, state.failure.code
    elif state.paused is not None and not (state.summarized or state.archived):
        kind, detail = "failed", f"recovery paused: {state.paused}"
        code = "recovery_paused"
    elif state.summarized or state.archived:
        kind, detail, code = "compressed", detail, "summary_written"
    else:
        kind, code = "skipped", skipped
    outcome = attrs.evolve(_outcome(state, kind, code), detail=detail)
    effects = _plus(effects or Effects(), notes=notes)
    return state, Finish(
        outcome,
        state.started,
        guard_changed=state.guard_changed,
        guard=state.new_guard,
        effects=effects,
    )


def _outcome(state: CompressionState, kind: OutcomeKind, code: OutcomeCode) -> Outcome:
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
        tokens_after=_tokens_after(state),
        usage=state.usage,
        model=None if model is None else model.label,
        call_durations_s=state.call_durations_s,
    )


def _tokens_after(state: CompressionState) -> int | None:
    """Return the active context's tokens now: the summary and what stayed."""
    if state.tokens_before is None:
        return None
    through = state.archived_through
    kept = sum(t for i, t in state.window_tokens if through is None or i > through)
    kept += state.instruction_tokens
    return (state.record.tokens if state.record is not None else 0) + kept


def _failed(
    state: CompressionState,
    detail: str,
    code: OutcomeCode,
    events: tuple[Event, ...] = (),
) -> Step:
    """Finish as failed: nothing more is applied (a stop, a store failure, no model)."""
    outcome = Outcome(
        state.session_id, "failed", state.reason, detail, code=code, usage=state.usage
    )
    return state, Finish(outcome, state.started, effects=Effects(events=events))


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


# -- small helpers ---------------------------------------------------------------------


def _started(state: CompressionState) -> tuple[CompressionState, tuple[Event, ...]]:
    """Announce the start once."""
    if state.started:
        return state, ()
    event = Compressing(state.session_id, "start", state.reason)
    return attrs.evolve(state, started=True), (event,)


def _chunks(
    state: CompressionState,
    page: Sequence[Message],
    limit_tokens: int,
    max_count: int | None = None,
) -> list[FoldChunk]:
    config = state.setting.config
    return fold_chunks(
        page,
        lookup=[*page, *state.tail],
        locale=config.locale,
        cut_chars=config.truncate_chars,
        count_tokens=_model(state).count_tokens,
        limit_tokens=limit_tokens,
        max_count=max_count or probe_limit(config),
    )


def _previous_text(state: CompressionState) -> str | None:
    """Return the previous summary as sent: one from elsewhere is cut to budget."""
    record, plan = state.record, _plan(state)
    previous = record.text if record and record.text else None
    if previous is not None and len(previous.encode()) > plan.budget_tokens:
        # Bytes bound tokens: only a summary longer in bytes may need the count.
        count = _model(state).count_tokens
        previous = truncate_to_tokens(
            previous, plan.budget_tokens, count, OVERSIZED_SUFFIX
        )
    return previous


def _plus(effects: Effects, *, notes: tuple[Note, ...]) -> Effects:
    if not notes:
        return effects
    return attrs.evolve(effects, notes=(*effects.notes, *notes))


def _model(state: CompressionState) -> SummaryModel:
    if state.model is None:  # pragma: no cover - every path resolves it first
        raise ValueError("the summary model is not resolved yet")
    return state.model


def _plan(state: CompressionState) -> CompressionPlan:
    if state.plan is None:  # pragma: no cover - set when a phase starts
        raise ValueError("no plan yet")
    return state.plan


def _id(message: Message) -> int:
    if message.id is None:  # the executor checks ids where it reads them
        raise ValueError("a stored message has an id")
    return message.id
