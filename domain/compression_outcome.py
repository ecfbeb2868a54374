"""How one compression ends: the usage no commit carried, and one ``Outcome``.

``finish`` turns a phase into ``Finishing`` (which records leftover usage with one
more commit, when calls went out since the last); ``classified`` says what happened;
``failed`` ends a compression that can apply nothing more (a stop, a store failure,
no model). ``closing_events`` are the events the executor emits at the end.
"""

from __future__ import annotations

import attrs

from .compression_io import NO_EFFECTS, Effects, Finish, Note
from .compression_state import (
    CompressionState,
    Finishing,
    Folding,
    Recovering,
    Step,
    Windowing,
    commit,
    with_notes,
)
from .events import Compressing, Event, Skipped, Status
from .folding import Outcome, OutcomeCode, OutcomeKind
from .measure import LoopGuard
from .ports import FenceReason
from .summary import SummaryRecord
from .trigger import is_forced

FENCE_DETAILS: dict[FenceReason, str] = {
    "generation": "the summary changed meanwhile (a clear, a forget or another writer)",
    "archive": "the active history changed meanwhile (a trim, a forget or a writer)",
    "lease": "the session's lease was lost (expired, or taken after a restart)",
}


def finish(
    state: Windowing | Recovering | Folding,
    detail: str,
    code: OutcomeCode = "nothing_to_fold",
    *,
    effects: Effects = NO_EFFECTS,
    fenced: FenceReason | None = None,
    guard_changed: bool = False,
    guard: LoopGuard | None = None,
) -> Step:
    """Record the usage no commit carried, then finish with the outcome."""
    folding = state if isinstance(state, Folding) else None
    done = Finishing(
        setting=state.setting,
        tally=state.tally,
        model=state.model,
        record=state.record,
        detail=detail,
        code=code,
        figures=None if folding is None else folding.figures,
        paused=None if isinstance(state, Recovering) else state.paused,
        failure=None if folding is None else folding.failure,
        fenced=fenced,
        guard_changed=guard_changed,
        guard=guard,
    )
    if done.tally.uncommitted.calls == 0 or fenced is not None:
        return classified(done, effects=effects)
    base = done.record or SummaryRecord(text="", covered_through_id=None, tokens=0)
    return done, commit(done, base, effects)


def classified(
    state: Finishing,
    notes: tuple[Note, ...] = (),
    *,
    effects: Effects = NO_EFFECTS,
) -> Step:
    """Return the final action: what happened, in one ``Outcome``."""
    detail, config, tally = state.detail, state.setting.config, state.tally
    kind: OutcomeKind
    code: OutcomeCode
    if state.fenced is not None:
        kind, detail = "fenced", f"commit fenced: {FENCE_DETAILS[state.fenced]}"
        code = "fenced"
    elif state.failure is not None:
        trimmed = config.on_summarizer_failure == "trim" and tally.archived
        kind = "trimmed" if trimmed else "failed"
        detail, code = state.failure.detail, state.failure.code
    elif state.paused is not None and not (tally.summarized or tally.archived):
        kind, detail = "failed", f"recovery paused: {state.paused}"
        code = "recovery_paused"
    elif tally.summarized or tally.archived:
        kind, code = "compressed", "summary_written"
    else:
        kind, code = "skipped", state.code
    outcome = attrs.evolve(outcome_of(state, kind, code), detail=detail)
    effects = with_notes(effects, notes=notes)
    return state, Finish(
        outcome,
        tally.started,
        guard_changed=state.guard_changed,
        guard=state.guard,
        effects=effects,
    )


def failed(
    state: CompressionState,
    detail: str,
    code: OutcomeCode,
    events: tuple[Event, ...] = (),
) -> Step:
    """Finish as failed: nothing more is applied (a stop, a store failure, no model)."""
    outcome = Outcome(
        state.session_id,
        "failed",
        state.reason,
        detail,
        code=code,
        usage=state.tally.usage,
    )
    return state, Finish(outcome, state.tally.started, effects=Effects(events=events))


def outcome_of(state: Finishing, kind: OutcomeKind, code: OutcomeCode) -> Outcome:
    """Return the ``Outcome`` of ``state`` as ``kind`` and ``code`` (no detail yet)."""
    tally, figures = state.tally, state.figures
    return Outcome(
        state.session_id,
        kind,
        state.reason,
        summarized=tally.summarized,
        archived=tally.archived,
        chunks=tally.chunks,
        summarizer_calls=tally.calls,
        recovered=tally.recovered,
        code=code,
        tokens_before=None if figures is None else figures.tokens_before,
        tokens_estimated=figures is not None and figures.estimated,
        tokens_after=tokens_after(state),
        usage=tally.usage,
        model=state.model.label,
        call_durations_s=tally.call_durations_s,
    )


def tokens_after(state: Finishing) -> int | None:
    """Return the active context's tokens now: the summary and what stayed."""
    figures = state.figures
    if figures is None:
        return None
    through = figures.archived_through
    kept = sum(t for i, t in figures.window_tokens if through is None or i > through)
    kept += figures.instruction_tokens
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
