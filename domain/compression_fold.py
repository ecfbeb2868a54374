"""Folding chunks: one summarizer call and one fenced commit each.

The window's older part (``Folding``) and a range archived without a summary
(``Recovering``, in ``compression_recovery``) fold alike: ``summarize`` asks for the
chunk in hand, ``answer`` judges the reply (or halves a chunk the model found too
long), and a commit applies it. Here too: reading the backlog page by page when it
is larger than the window, trim-only after a failure, and the loop guard a pressed
fold leaves.
"""

from __future__ import annotations

from typing import TypeVar

import attrs

from .compression_io import (
    NO_EFFECTS,
    BacklogRead,
    BreakerNote,
    BreakerRefused,
    CallFailed,
    Committed,
    Effects,
    Note,
    ReadBacklog,
    Replied,
    Summarize,
)
from .compression_outcome import finish
from .compression_state import (
    Chunking,
    Failed,
    Folding,
    Step,
    Work,
    chunks_of,
    commit,
    committed,
    host_instructions,
    kept_tokens,
    previous_text,
    stored_id,
    with_calls,
    with_notes,
)
from .folding import OutcomeKind, next_record
from .measure import LoopGuard, guard_after
from .native import NativeArtifact, NativeRequest
from .pins import pinned_section, pins_line, with_pins
from .ports import SummaryReply
from .prompt import summary_request
from .summary import trimmed_record
from .trigger import is_pressed
from .usage import NO_USAGE, counted_usage
from .verdict import Accepted, check_summary
from .window import foldable_history, probe_limit, safe_cuts

C = TypeVar("C", bound=Chunking)
WRITTEN = "summary written"


def fold_next(state: Folding, effects: Effects = NO_EFFECTS) -> Step:
    """Fold the next chunk; read on when the last one may not be the last."""
    if state.backlog is not None and len(state.queue) <= 1:
        limit = probe_limit(state.setting.config)
        return state, ReadBacklog(state.backlog[1], limit, effects)
    if not state.queue:
        changed, guard, notes = _after_fold(state)
        effects = with_notes(effects, notes=notes)
        return finish(
            state, WRITTEN, effects=effects, guard_changed=changed, guard=guard
        )
    work, rest = state.queue[0], state.queue[1:]
    last = not rest and state.backlog is None
    state = attrs.evolve(state, queue=rest, current=work, last=last)
    if state.failure is not None:
        return _trim(state, effects)
    if not work.chunk.transcript:
        return _commit_fold(state, None, effects)
    return summarize(state, effects)


def backlog(state: Folding, seen: BacklogRead) -> Step:
    """Queue a backlog page's chunks: its messages up to the window's fold boundary."""
    assert state.backlog is not None
    boundary = state.backlog[0]
    within = [m for m in seen.page if stored_id(m) <= boundary]
    if not within:
        return fold_next(attrs.evolve(state, backlog=None))
    state = attrs.evolve(state, backlog=(boundary, stored_id(within[-1])))
    history = foldable_history(within)  # the host's instructions are never folded
    if not history:
        return fold_next(state)
    queue = state.queue
    if queue:  # still queued: the previous page's last chunk
        held = queue[-1].chunk.messages
        if not safe_cuts([*held, *history])[len(held)]:
            # The page continues that chunk's tool-call group: chunk them together, so
            # no commit archives a call and leaves its result active.
            queue, history = queue[:-1], [*held, *history]
    chunks = chunks_of(state, history, state.plan.input_limit_tokens)
    queue = (*queue, *(Work(c) for c in chunks))
    return fold_next(attrs.evolve(state, queue=queue))


def summarize(state: C, effects: Effects) -> tuple[C, Summarize]:
    """Ask the summarizer for the chunk in hand."""
    work = state.current
    assert work is not None
    plan = state.plan
    request = tuple(
        summary_request(
            work.chunk.transcript,
            previous_summary=previous_text(state),
            todo=plan.todo,
            system=plan.system,
            locale=state.setting.config.locale,
            instructions=host_instructions(state),
        )
    )
    state = attrs.evolve(state, request=request)
    native = None
    # the range itself, and the prompt for the text path; recovery folds old ranges
    # into the text alone (the block never saw them)
    if state.model.native and isinstance(state, Folding):
        setting, record = state.setting, state.record
        native = NativeRequest(
            tuple(foldable_history(work.chunk.messages)),
            request,
            previous=None if record is None else record.native,
            previous_text=previous_text(state) or "",
            system=setting.system,
            tools=setting.tools,
        )
    return state, Summarize(request, plan.summary_tokens, effects, native)


def answer(
    state: C, seen: Replied | CallFailed | BreakerRefused
) -> tuple[C, Accepted | Failed | None, BreakerNote | None]:
    """Judge the summarizer's answer for the chunk in hand (None: halve the chunk)."""
    work = state.current
    assert work is not None
    match seen:
        case BreakerRefused():
            return state, Failed("breaker_open", "summarizer circuit open"), None
        case CallFailed(detail=detail, too_long=too_long):
            state = with_calls(state, 1)
            if too_long and work.halvable:
                return state, None, None
            failure = Failed("summarizer_failed", f"summarizer failed: {detail}")
            return state, failure, None
        case Replied(reply=reply, seconds=seconds):
            state = _accounted(state, reply, seconds)
            return (state, *_judged(state, reply.text))


def halved(state: C) -> tuple[C, Effects]:
    """Re-split a chunk the model found too long: half its messages and tokens."""
    assert state.current is not None
    chunk = state.current.chunk
    count = state.model.count_tokens
    tokens = sum(count(line) for line in chunk.transcript)
    limit = max(min(tokens, state.plan.input_limit_tokens) // 2, 1)
    halves = chunks_of(
        state, chunk.messages, limit, max((len(chunk.messages) + 1) // 2, 1)
    )
    note = (
        f"context exceeded, retrying {len(chunk.messages)} message(s) in "
        f"{len(halves)} smaller chunk(s)"
    )
    queue = (*(Work(c, halvable=False) for c in halves), *state.queue)
    state = attrs.evolve(state, queue=queue, current=None)
    return state, Effects(notes=(("warning", note),))


def answered(state: Folding, seen: Replied | CallFailed | BreakerRefused) -> Step:
    """Commit the chunk's summary, or degrade as ``on_summarizer_failure`` says."""
    state, result, breaker = answer(state, seen)
    if result is None:
        return fold_next(*halved(state))
    effects = Effects(breaker=breaker)
    if isinstance(result, Accepted):
        native = seen.reply.native if isinstance(seen, Replied) else None
        native, notes = _kept_native(state, result, native)
        return _commit_fold(state, result, with_notes(effects, notes=notes), native)
    keep = state.setting.config.on_summarizer_failure == "keep"
    # seed: a failed summary still trims, or the session loops on retries; the
    # previous summary stays and a partial text is never stored.
    then = (
        "keeping the history active"
        if keep
        else "archiving without a summary (recorded for recovery)"
    )
    state = attrs.evolve(state, failure=result)
    return _trim(
        state, with_notes(effects, notes=(("warning", f"{result.detail}; {then}"),))
    )


def folded(state: Folding, seen: Committed) -> Step:
    """Count what a fold's (or a trim's) commit applied and fold on."""
    work = state.current
    assert work is not None
    state = committed(state, seen)
    through = max(state.figures.archived_through or 0, work.chunk.through_id)
    summarized = 0 if state.failure is not None else len(work.chunk.messages)
    tally = attrs.evolve(
        state.tally,
        chunks=state.tally.chunks + 1,
        summarized=state.tally.summarized + summarized,
    )
    figures = attrs.evolve(state.figures, archived_through=through)
    return fold_next(attrs.evolve(state, tally=tally, figures=figures, current=None))


def _trim(state: Folding, effects: Effects) -> Step:
    """Archive the chunk in hand without a summary (keep mode: archive nothing)."""
    if state.setting.config.on_summarizer_failure == "keep":
        return finish(state, WRITTEN, effects=effects)
    assert state.current is not None
    chunk = state.current.chunk
    record = trimmed_record(
        state.record,
        first_id=stored_id(chunk.messages[0]),
        last_id=chunk.through_id,
        generation="",
        now=0.0,
    )
    final: OutcomeKind | None = "trimmed" if state.last else None
    return state, commit(state, record, effects, chunk=chunk, final=final)


def _commit_fold(
    state: Folding,
    summary: Accepted | None,
    effects: Effects = NO_EFFECTS,
    native: NativeArtifact | None = None,
) -> Step:
    assert state.current is not None
    chunk = state.current.chunk
    record = next_record(
        state.record,
        text=summary.text if summary else "",
        tokens=summary.tokens if summary else 0,
        chunk=chunk,
        model=state.model.label,
        now=0.0,
        generation="",
        native=native,
    )
    final: OutcomeKind | None = "compressed" if state.last else None
    version = (stored_id(chunk.messages[0]), chunk.through_id)
    action = commit(state, record, effects, chunk=chunk, final=final, version=version)
    return state, action


def _kept_native(
    state: Folding, summary: Accepted, native: NativeArtifact | None
) -> tuple[NativeArtifact | None, tuple[Note, ...]]:
    """Return the artifact to commit with ``summary`` (None: text only), and a note.

    A signed block cannot be shortened: one whose content is over the summary
    budget, or whose text was cut (by the checks, or to make room for pins), is not
    kept, and the (cut) text goes alone. A kept one carries the text's pinned facts
    beside it, whatever the text's body became.
    """
    if native is None:
        return None, ()
    content = str(native.block.get("content", ""))
    budget = state.plan.summary_tokens
    if summary.cut or state.model.count_tokens(content) > budget:
        note = (
            f"the compaction block is over the summary budget ({budget} tokens); "
            "its text is kept, cut to fit, without the block"
        )
        return None, (("warning", note),)
    beside = pins_line(summary.text, state.setting.config.locale)
    return attrs.evolve(native, beside=beside), ()


def _accounted(state: C, reply: SummaryReply, seconds: float) -> C:
    """Add one answered call's usage: the provider's, else counted, and marked."""
    usage, model = reply.usage, state.model
    estimate = model.estimate_usage
    if usage is None:
        usage = counted_usage(state.request, reply.text, estimate or model.count_tokens)
    call = NO_USAGE.with_call(
        usage,
        counted=reply.usage is None,
        seconds=seconds,
        estimated=estimate is not None,
    )
    tally = state.tally
    tally = attrs.evolve(
        tally,
        calls=tally.calls + 1,
        usage=tally.usage.plus(call),
        uncommitted=tally.uncommitted.plus(call),
        call_durations_s=(*tally.call_durations_s, seconds),
    )
    return attrs.evolve(state, tally=tally)


def _judged(state: Chunking, text: str) -> tuple[Accepted | Failed, BreakerNote]:
    """Return the checked, pinned summary, or why it was rejected."""
    work, plan, config = state.current, state.plan, state.setting.config
    assert work is not None
    count = state.model.count_tokens
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
    # cut: the checks cut the reply, or the pins took room from its body
    body = pinned_section(verdict.text, config.locale)[0]
    cut = verdict.cut or pinned_section(pinned, config.locale)[0] != body
    return Accepted(pinned, count(pinned), cut), "succeeded"


def _after_fold(state: Folding) -> tuple[bool, LoopGuard | None, tuple[Note, ...]]:
    """Set or lift the loop guard after a pressed fold, by what it kept.

    Returns whether the guard changed, the guard now (None: lifted) and a note.
    """
    context, tally = state.setting.context, state.tally
    if (
        context is None
        or not state.tail
        or not (tally.summarized or tally.archived)
        or not is_pressed(state.reason)  # a count trigger keeps the guard
    ):
        return False, None, ()
    kept = kept_tokens(state, state.tail, state.split.stays)
    guard = guard_after(
        tip_id=stored_id(state.tail[-1]),
        kept_tokens=kept,
        trigger_tokens=context.trigger_tokens,
    )
    if guard is None:
        return True, None, ()
    note = (
        f"the kept part ({kept} tokens) is over the trigger; the next auto "
        f"compression waits for {guard.enough_tokens} new tokens"
    )
    return True, guard, (("info", note),)
