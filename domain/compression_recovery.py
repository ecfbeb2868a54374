"""Recovering ranges archived without a summary, before the window folds.

A failed summary that trimmed (``on_summarizer_failure="trim"``) left its range in
``SummaryRecord.unsummarized``. The next compression (unless it is an ``overflow``)
reads each range page by page, oldest first, and folds it into the summary chunk by
chunk (``Recovering``); a failure pauses recovery and the window folds as usual.
"""

from __future__ import annotations

import attrs

from .compression_fold import answer, halved, summarize
from .compression_io import (
    NO_EFFECTS,
    BreakerRefused,
    CallFailed,
    Committed,
    Effects,
    Note,
    ReadArchived,
    Replied,
)
from .compression_outcome import failed
from .compression_state import (
    Recovering,
    Step,
    Work,
    chunks_of,
    commit,
    committed,
    read_window,
    started,
    stored_id,
    with_notes,
)
from .model import Message
from .summary import SummaryRecord, drop_unsummarized_through, resummarized_record
from .verdict import Accepted
from .window import probe_limit


def recover_next(state: Recovering, effects: Effects = NO_EFFECTS) -> Step:
    """Fold the next chunk of the oldest unsummarized range, or go on to the window."""
    record = state.record
    if state.queue:
        work, rest = state.queue[0], state.queue[1:]
        state = attrs.evolve(state, queue=rest, current=work)
        if not work.chunk.transcript:
            dropped = _dropped(state, work.chunk.through_id)
            return state, commit(state, dropped, effects)
        return summarize(state, effects)
    if state.range is not None:  # a page of the range is done
        if record is not None and record.unsummarized[:1] == (state.range,):
            return failed(
                state,
                "store failed: recovery made no progress; the record is inconsistent",
                "store_failed",
                effects.events,
            )
        state = attrs.evolve(state, range=None)
    if record is None or not record.unsummarized:
        return read_window(state, state.tokens_at_start, effects)
    first, last = record.unsummarized[0]
    limit = probe_limit(state.setting.config)
    return state, ReadArchived(first - 1, last, limit, effects)


def archived(state: Recovering, page: tuple[Message, ...]) -> Step:
    """Queue an archived page's chunks (an empty page: drop what is left of it)."""
    assert state.record is not None
    first, last = state.record.unsummarized[0]
    if not page:  # forgotten, or the range's tail: nothing left to fold
        return state, commit(state, _dropped(state, last))
    state, events = started(state)
    chunks = chunks_of(state, page, state.plan.input_limit_tokens)
    queue = tuple(Work(c) for c in chunks)
    state = attrs.evolve(state, queue=queue, range=(first, last))
    return recover_next(state, Effects(events=events))


def answered(state: Recovering, seen: Replied | CallFailed | BreakerRefused) -> Step:
    """Commit the chunk's summary; a failure pauses recovery."""
    state, result, breaker = answer(state, seen)
    if result is None:
        return recover_next(*halved(state))
    effects = Effects(breaker=breaker)
    if not isinstance(result, Accepted):
        note: Note = ("warning", f"recovery paused: {result.detail}")
        effects = with_notes(effects, notes=(note,))
        return read_window(state, state.tokens_at_start, effects, paused=result.detail)
    assert state.record is not None
    assert state.current is not None
    chunk = state.current.chunk
    record = resummarized_record(
        state.record,
        text=result.text,
        tokens=result.tokens,
        through_id=chunk.through_id,
        folded=len(chunk.messages),
        model=state.model.label,
        generation="",
        now=0.0,
    )
    version = (stored_id(chunk.messages[0]), chunk.through_id)
    return state, commit(state, record, effects, version=version)


def recovered(state: Recovering, seen: Committed) -> Step:
    """Count what a recovery commit applied and recover on."""
    work = state.current
    state = committed(state, seen)
    # A chunk with a transcript was summarized; one without (or none) was dropped.
    if work is not None and work.chunk.transcript:
        folded = len(work.chunk.messages)
        tally = attrs.evolve(
            state.tally,
            recovered=state.tally.recovered + folded,
            summarized=state.tally.summarized + folded,
        )
        state = attrs.evolve(state, tally=tally)
    return recover_next(attrs.evolve(state, current=None))


def _dropped(state: Recovering, through_id: int) -> SummaryRecord:
    assert state.record is not None
    ranges = drop_unsummarized_through(state.record.unsummarized, through_id)
    return attrs.evolve(state.record, unsummarized=ranges)
