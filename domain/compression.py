"""One compression as a pure state machine: ``start`` and ``step``.

Every decision of a compression lives in this module and its siblings: the
threshold (decided once, on what the compression read), nothing to fold, token
pressure on a measured turn, the loop guard, keep mode with an open breaker,
recovering ranges archived without a summary, chunking and halving on a
context-length error, trim-only after a failure, and the outcome.
``actors.compression`` performs the actions and feeds back observations
(``domain.compression_io``); a fence, a stop or a store failure is one more
observation.

The state is one of the phase types of ``domain.compression_state``, and ``step``
is the transition table: it matches the phase and the observation. This module
decides the reading: the measured turn, the record, and the window's checks;
``compression_recovery``, ``compression_fold`` and ``compression_outcome`` decide
the rest. The course: a measured turn first reads the session unleased
(``Measure``) and presses (``Finish.pressed``) or stops; then ``Begin`` (model and
lease), ``ReadRecord``, recovery (``ReadArchived``, ``Summarize``, ``Commit``)
unless the reason is ``overflow``, ``ReadWindow``, the checks, then chunk after
chunk (``ReadBacklog`` when the backlog is larger than the window), and ``Finish``.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from . import compression_fold as fold
from . import compression_recovery as recovery
from .compression_io import (
    ArchivedRead,
    BacklogRead,
    Began,
    Begin,
    BreakerRefused,
    CallFailed,
    Cancelled,
    Committed,
    Effects,
    Fenced,
    Finish,
    LeaseHeld,
    Measure,
    Measured,
    Observation,
    ReadRecord,
    RecordRead,
    Replied,
    Setting,
    StoreFailed,
    ThreadFailed,
    Unresolved,
    WindowRead,
)
from .compression_outcome import classified, closing_events, failed, finish
from .compression_state import (
    Beginning,
    CompressionState,
    Figures,
    Finishing,
    Folding,
    Measuring,
    ReadingRecord,
    Recovering,
    Step,
    Windowing,
    Work,
    chunks_of,
    committed,
    figure_cost,
    host_instructions,
    kept_tokens,
    read_window,
    started,
    stored_id,
    window_cost,
    with_calls,
)
from .folding import Outcome
from .model import Message
from .trigger import guard_may_hold, is_forced, pressure, should_compress
from .window import WindowSplit, probe_limit, split_window

__all__ = ["CompressionState", "Step", "closing_events", "start", "step"]

NOTHING = "nothing to compress"


def start(setting: Setting) -> Step:
    """Return the first state and action of a compression for ``setting``.

    A forced reason announces its start at once; a measured turn reads first.
    """
    if setting.reason == "turn" and setting.measured:
        return Measuring(setting=setting), Measure(probe_limit(setting.config))
    state = Beginning(setting=setting)
    if is_forced(setting.reason):
        state, events = started(state)
        return state, Begin(Effects(events=events))
    return state, Begin()


def step(state: CompressionState, observation: Observation) -> Step:
    """Return the next state and action after ``observation``."""
    match state, observation:
        case Finishing(), Cancelled():  # recording usage only: it goes too
            return classified(state)
        case Finishing(), StoreFailed(detail=detail):
            return classified(state, (("warning", f"recording usage: {detail}"),))
        # cleared, forgotten or stopping while recording usage: the usage goes
        case Finishing(), Fenced(called=called):
            return classified(with_calls(state, int(called)))
        case Finishing(), Committed():
            return classified(committed(state, observation))
        case _, Cancelled():
            return failed(state, "engine stopped", "engine_stopped")
        case _, StoreFailed(detail=detail):
            return failed(state, f"store failed: {detail}", "store_failed")
        case _, ThreadFailed(detail=detail):  # the process is out of threads
            return failed(
                state, f"thread start failed: {detail}", "thread_start_failed"
            )
        case Measuring(), Measured():
            return _measured(state, observation)
        case Beginning(), Unresolved(detail=detail):
            state, events = started(state)
            return failed(state, detail, "model_unresolved", events)
        case Beginning(), LeaseHeld():
            detail = "another worker holds the session's lease"
            outcome = Outcome(
                state.session_id, "skipped", state.reason, detail, code="lease_held"
            )
            return state, Finish(outcome, state.tally.started)
        case Beginning(), Began(model=model):
            reading = ReadingRecord(
                setting=state.setting, tally=state.tally, model=model
            )
            return reading, ReadRecord(probe_limit(state.setting.config))
        case ReadingRecord(), RecordRead():
            return _record_read(state, observation)
        case Recovering(), ArchivedRead(page=page):
            return recovery.archived(state, page)
        case Recovering(), Replied() | CallFailed() | BreakerRefused():
            return recovery.answered(state, observation)
        case Recovering(), Committed():
            return recovery.recovered(state, observation)
        case Windowing(), WindowRead():
            return _window(state, observation)
        case Folding(), BacklogRead():
            return fold.backlog(state, observation)
        case Folding(), Replied() | CallFailed() | BreakerRefused():
            return fold.answered(state, observation)
        case Folding(), Committed():
            return fold.folded(state, observation)
        case Recovering() | Folding(), Fenced(reason=reason, called=called):
            state = with_calls(state, int(called))
            return finish(state, fold.WRITTEN, fenced=reason)
    raise TypeError(f"{observation!r} is not expected in {type(state).__name__}")


def _record_read(state: ReadingRecord, seen: RecordRead) -> Step:
    """Recover the oldest range the record holds, else go on to the window."""
    record = seen.record
    at_start = 0 if record is None else record.tokens
    if record is not None and record.unsummarized and state.reason != "overflow":
        plan = state.model.plan(state.reason, (), host_instructions(state))
        recovering = Recovering(
            setting=state.setting,
            tally=state.tally,
            model=state.model,
            record=record,
            plan=plan,
            tokens_at_start=at_start,
        )
        return recovery.recover_next(recovering)
    windowing, action = read_window(attrs.evolve(state, record=record), at_start)
    if seen.window is None:
        return windowing, action
    return _window(windowing, seen.window)  # read with the record: nothing changed


def _measured(state: Measuring, seen: Measured) -> Step:
    """Decide a measured turn: the count trigger, else token pressure, else nothing."""
    if should_compress(seen.active, state.setting.config):
        return Beginning(setting=state.setting, tally=state.tally), Begin()
    pressed = _pressure(state, seen)
    outcome = Outcome(
        state.session_id, "skipped", "turn", "below threshold", code="below_threshold"
    )
    return state, Finish(outcome, False, pressed=pressed)


def _pressure(state: Measuring, seen: Measured) -> float | None:
    """Return the usage ratio when the engine's own measure reaches the trigger."""
    context = state.setting.context
    if context is None or context.window_tokens is None:
        return None
    cost = context.cost_for(seen.tail)
    text = seen.record.text if seen.record else None
    used = context.summary_tokens(text) + sum(map(cost, seen.tail))
    return pressure(used, context.window_tokens, state.setting.config)


def _window(state: Windowing, seen: WindowRead) -> Step:
    """Apply the checks to the window read; fold, or say why not."""
    config, tail = state.setting.config, seen.tail
    split = _split_window(state, tail)
    forced = is_forced(state.reason)
    foldable = seen.active - len(split.instructions)  # instructions are context
    if not forced and not should_compress(foldable, config):
        return finish(state, NOTHING, "below_threshold")
    if not split.fold:
        return finish(state, NOTHING, "nothing_to_fold")
    if guard_may_hold(state.reason, foldable, config):
        guarded = _guarded(state, tail, split.stays)
        if guarded is not None:
            return finish(state, guarded, "loop_guard")
    if not forced and config.on_summarizer_failure == "keep" and seen.breaker_open:
        return finish(state, "summarizer circuit open", "breaker_open")  # keep: no use
    state, events = started(state)
    cost, estimated = figure_cost(state, tail)
    history = (*split.fold, *split.keep)  # the window's foldable history
    window_tokens = tuple((stored_id(m), cost(m)) for m in history)
    instruction_tokens = sum(map(cost, split.instructions))
    before = state.tokens_at_start + instruction_tokens
    figures = Figures(
        before + sum(t for _, t in window_tokens),
        window_tokens,
        instruction_tokens,
        estimated,
    )
    folding = Folding(
        setting=state.setting,
        tally=state.tally,
        model=state.model,
        record=state.record,
        plan=state.model.plan(state.reason, split.keep, host_instructions(state)),
        tail=tail,
        split=split,
        figures=figures,
        paused=state.paused,
    )
    limit = folding.plan.input_limit_tokens
    if seen.active == len(tail):  # the window is the whole active history
        queue = tuple(Work(c) for c in chunks_of(folding, split.fold, limit))
        folding = attrs.evolve(folding, queue=queue)
    else:
        backlog = (stored_id(split.fold[-1]), None)
        folding = attrs.evolve(folding, backlog=backlog)
    return fold.fold_next(folding, Effects(events=events))


def _split_window(state: Windowing, tail: Sequence[Message]) -> WindowSplit:
    """Split the tail by count and tokens; an overflow keeps by tokens only."""
    context = state.setting.context
    keep_tokens = None if context is None else context.keep_tokens
    cost = window_cost(state, tail)
    if state.reason == "overflow":
        split = split_window(tail, None, keep_tokens=keep_tokens or 0, cost=cost)
        if split.fold or not keep_tokens:
            return split
        # The host's call overflowed although the history fits the keep (its
        # prompt and tools fill the window): fold all but the newest group.
        return split_window(tail, None, keep_tokens=0, cost=cost)
    return split_window(
        tail,
        state.setting.config.keep_recent,
        keep_tokens=keep_tokens,
        cost=None if context is None else cost,
    )


def _guarded(
    state: Windowing, tail: Sequence[Message], keep: Sequence[Message]
) -> str | None:
    """Return why an ``auto`` compression is pointless now, or None to go on."""
    guard = state.setting.guard
    if state.reason != "auto" or state.setting.context is None or guard is None:
        return None
    cost = window_cost(state, tail)
    arrived = ((stored_id(m), cost(m)) for m in tail)
    if not guard.holds(arrived, kept_tokens(state, tail, keep)):
        return None
    return (
        "loop guard: the kept part alone is over the trigger; waiting for "
        f"{guard.enough_tokens} new tokens"
    )
