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

import attrs

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
    Unresolved,
    WindowRead,
)
from .compression_state import (
    FENCE_DETAILS,
    Commitment,
    CompressionState,
    Failed,
    Work,
    chunks_of,
    closing_events,
    current_plan,
    figure_cost,
    host_instructions,
    kept_tokens,
    outcome_of,
    previous_text,
    started,
    stored_id,
    summary_model,
    window_cost,
    with_notes,
)
from .cut import safe_cuts
from .events import Event
from .folding import (
    FoldChunk,
    Outcome,
    OutcomeCode,
    OutcomeKind,
    next_record,
)
from .measure import guard_after
from .model import Message
from .pins import with_pins
from .ports import SummaryReply
from .prompt import summary_request
from .reason import is_forced, is_pressed
from .summary import SummaryRecord, drop_unsummarized_through, resummarized_record
from .summary import trimmed_record as _trimmed_record
from .trigger import guard_may_hold, pressure, should_compress
from .usage import NO_USAGE, counted_usage
from .verdict import Accepted, check_summary
from .window import WindowSplit, foldable_history, probe_limit, split_window

__all__ = ["CompressionState", "Step", "closing_events", "start", "step"]

Step = tuple[CompressionState, Action]
NOTHING = "nothing to compress"
WRITTEN = "summary written"


def start(setting: Setting) -> Step:
    """Return the first state and action of a compression for ``setting``.

    A forced reason announces its start at once; a measured turn reads first.
    """
    state = CompressionState(setting=setting, phase="begin")
    if setting.reason == "turn" and setting.measured:
        measure = Measure(probe_limit(setting.config))
        return attrs.evolve(state, phase="measure"), measure
    if is_forced(setting.reason):
        state, events = started(state)
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
            state, events = started(state)
            return _failed(state, detail, "model_unresolved", events)
        case LeaseHeld():
            outcome = outcome_of(state, "skipped", "lease_held")
            detail = "another worker holds the session's lease"
            return state, Finish(attrs.evolve(outcome, detail=detail), state.started)
        case Began(model=model):
            window = probe_limit(state.setting.config)
            return attrs.evolve(state, model=model, phase="record"), ReadRecord(window)
        case RecordRead(record=record, window=window):
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
                plan = summary_model(state).plan(
                    state.reason, (), host_instructions(state)
                )
                return _recover_next(attrs.evolve(state, phase="recover", plan=plan))
            if window is not None:  # read with the record: nothing changed since
                return _window(attrs.evolve(state, phase="window"), window)
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
    if should_compress(seen.active, config):
        return attrs.evolve(state, phase="begin"), Begin()
    pressed = _pressure(state, seen)
    outcome = Outcome(
        state.session_id, "skipped", "turn", "below threshold", code="below_threshold"
    )
    return state, Finish(outcome, False, pressed=pressed)


def _pressure(state: CompressionState, seen: Measured) -> float | None:
    """Return the usage ratio when the engine's own measure reaches the trigger."""
    context = state.setting.context
    if context is None or context.window_tokens is None:
        return None
    cost = context.cost_for(seen.tail)
    text = seen.record.text if seen.record else None
    used = context.summary_tokens(text) + sum(map(cost, seen.tail))
    return pressure(used, context.window_tokens, state.setting.config)


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
    if not forced and not should_compress(foldable, config):
        return _finish(state, NOTHING, "below_threshold")
    if not split.fold:
        return _finish(state, NOTHING, "nothing_to_fold")
    if guard_may_hold(state.reason, foldable, config):
        guarded = _guarded(state, split.stays)
        if guarded is not None:
            return _finish(state, guarded, "loop_guard")
    if not forced and config.on_summarizer_failure == "keep" and seen.breaker_open:
        return _finish(state, "summarizer circuit open", "breaker_open")  # keep: no use
    state, events = started(state)
    cost, estimated = figure_cost(state)
    window_tokens = tuple((stored_id(m), cost(m)) for m in foldable_history(seen.tail))
    instruction_tokens = sum(map(cost, split.instructions))
    plan = summary_model(state).plan(state.reason, split.keep, host_instructions(state))
    state = attrs.evolve(
        state,
        phase="fold",
        split=split,
        plan=plan,
        window_tokens=window_tokens,
        instruction_tokens=instruction_tokens,
        tokens_estimated=estimated,
        tokens_before=state.summary_tokens_at_start
        + instruction_tokens
        + sum(t for _, t in window_tokens),
    )
    if seen.active == len(seen.tail):  # the window is the whole active history
        queue = tuple(
            Work(c) for c in chunks_of(state, split.fold, plan.input_limit_tokens)
        )
        state = attrs.evolve(state, queue=queue, exhausted=True)
    else:
        state = attrs.evolve(
            state, boundary_id=stored_id(split.fold[-1]), cursor=None, exhausted=False
        )
    return _fold_next(state, Effects(events=events))


def _split_window(state: CompressionState) -> WindowSplit:
    """Split the tail by count and tokens; an overflow keeps by tokens only."""
    context = state.setting.context
    keep_tokens = None if context is None else context.keep_tokens
    cost = window_cost(state)
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
    cost = window_cost(state)
    arrived = ((stored_id(m), cost(m)) for m in state.tail)
    if not guard.holds(arrived, kept_tokens(state, keep)):
        return None
    return (
        "loop guard: the kept part alone is over the trigger; waiting for "
        f"{guard.enough_tokens} new tokens"
    )


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
    state, events = started(state)
    plan = current_plan(state)
    chunks = chunks_of(state, page, plan.input_limit_tokens)
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
        return _finish(state, WRITTEN, effects=with_notes(effects, notes=notes))
    return _take(state, effects)


def _backlog(state: CompressionState, page: tuple[Message, ...]) -> Step:
    """Queue a backlog page's chunks: its messages up to the window's fold boundary."""
    boundary = state.boundary_id
    assert boundary is not None
    within = [m for m in page if stored_id(m) <= boundary]
    if not within:
        return _fold_next(attrs.evolve(state, exhausted=True))
    state = attrs.evolve(state, cursor=stored_id(within[-1]))
    history = foldable_history(within)  # the host's instructions are never folded
    if not history:
        return _fold_next(state)
    queue = state.queue
    if queue:  # still queued: the previous page's last chunk
        held = queue[-1].chunk.messages
        if not safe_cuts([*held, *history])[len(held)]:
            # The page continues that chunk's tool-call group: chunk them together, so
            # no commit archives a call and leaves its result active.
            queue, history = queue[:-1], [*held, *history]
    chunks = chunks_of(state, history, current_plan(state).input_limit_tokens)
    queue = (*queue, *(Work(c) for c in chunks))
    return _fold_next(attrs.evolve(state, queue=queue))


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
            previous_summary=previous_text(state),
            todo=current_plan(state).todo,
            system=current_plan(state).system,
            locale=state.setting.config.locale,
            instructions=host_instructions(state),
        )
    )
    state = attrs.evolve(state, request=request)
    return state, Summarize(request, current_plan(state).summary_tokens, effects)


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
    usage, model = reply.usage, summary_model(state)
    estimate = model.estimate_usage
    if usage is None:
        usage = counted_usage(state.request, reply.text, estimate or model.count_tokens)
    call = NO_USAGE.with_call(
        usage,
        counted=reply.usage is None,
        seconds=seconds,
        estimated=estimate is not None,
    )
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
    work, plan, config = state.current, current_plan(state), state.setting.config
    assert work is not None
    count = summary_model(state).count_tokens
    previous = previous_text(state)
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
    count = summary_model(state).count_tokens
    tokens = sum(count(line) for line in chunk.transcript)
    limit = max(min(tokens, current_plan(state).input_limit_tokens) // 2, 1)
    halves = chunks_of(
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
        return _recover_next(state, with_notes(effects, notes=(note,)))
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
        state, with_notes(effects, notes=(("warning", f"{failed.detail}; {then}"),))
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
        first_id=stored_id(chunk.messages[0]),
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
        model=summary_model(state).label,
        now=0.0,
        generation="",
    )
    final: OutcomeKind | None = "compressed" if state.current_last else None
    version = (stored_id(chunk.messages[0]), chunk.through_id)
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
        model=summary_model(state).label,
        generation="",
        now=0.0,
    )
    version = (stored_id(chunk.messages[0]), chunk.through_id)
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
    kept = kept_tokens(state, state.split.stays)
    guard = guard_after(
        tip_id=stored_id(state.tail[-1]),
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
    outcome = attrs.evolve(outcome_of(state, kind, code), detail=detail)
    effects = with_notes(effects or Effects(), notes=notes)
    return state, Finish(
        outcome,
        state.started,
        guard_changed=state.guard_changed,
        guard=state.new_guard,
        effects=effects,
    )


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


# -- small helpers ---------------------------------------------------------------------
