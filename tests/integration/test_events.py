"""Typed lifecycle events: ``Compressing`` carries its outcome, ``Skipped`` says why."""

from __future__ import annotations

from memory_summary import (
    Compressing,
    Skipped,
    SummarizerError,
    SummaryConfig,
)
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.contract.stores import every_store
from tests.integration.conversation import fill

SMALL = SummaryConfig(threshold=10, keep_recent=4)
GOOD = "The user and the assistant discussed the weather forecast for Paris in detail."


def of(events, kind, session_id="s1"):
    return [e for e in events if isinstance(e, kind) and e.session_id == session_id]


def test_done_carries_the_outcome_and_start_carries_none(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 12)

    engine.turn_after("s1")

    assert engine.wait_idle(timeout=10)
    start, done = of(events, Compressing)
    assert (start.status, start.outcome) == ("start", None)
    assert done.status == "done"
    outcome = done.outcome
    assert (outcome.kind, outcome.code, outcome.reason) == (
        "compressed",
        "summary_written",
        "turn",
    )
    assert (outcome.summarized, outcome.archived) == (8, 8)
    assert outcome.tokens_before > outcome.tokens_after > 0
    assert outcome.usage.calls == 1
    assert outcome.duration_s > 0
    assert of(events, Skipped) == []


@every_store
def test_a_turn_while_another_worker_holds_the_lease_is_skipped(store, make_engine):
    llm = ScriptedSummarizer(GOOD)
    engine = make_engine(store, llm, config=SMALL)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 12)
    token = store.acquire_lease("s1", owner="another-host:1:2:3", ttl_s=3600)

    engine.turn_after("s1")

    assert engine.wait_idle(timeout=10)
    assert of(events, Compressing) == []
    assert of(events, Skipped) == [
        Skipped("s1", "turn", "lease_held", "another worker holds the session's lease")
    ]
    assert llm.calls == []
    store.release_lease("s1", token)


def test_a_manual_compression_with_nothing_to_fold_reports_done_then_skipped(
    store, make_engine
):
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 3)

    outcome = engine.compress("s1").result(timeout=10)

    assert (outcome.kind, outcome.code) == ("skipped", "nothing_to_fold")
    assert [type(e).__name__ for e in events] == [
        "Compressing",
        "Compressing",
        "Skipped",
    ]
    assert events[1].outcome == outcome
    assert events[2] == Skipped(
        "s1", "manual", "nothing_to_fold", "nothing to compress"
    )


def open_the_breaker(engine, store):
    """Fail two compressions of session ``warm-up`` (breaker_failures=2)."""
    for start in (0, 12):
        fill(store, "warm-up", 12, start=start)
        engine.compress("warm-up").result(timeout=10)


def test_keep_mode_skips_a_turn_while_the_breaker_is_open(store, make_engine):
    llm = ScriptedSummarizer(SummarizerError("down"))
    config = SummaryConfig(
        threshold=10,
        keep_recent=4,
        on_summarizer_failure="keep",
        breaker_failures=2,
        breaker_cooldown_s=3600,
    )
    engine = make_engine(store, llm, config=config)
    open_the_breaker(engine, store)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 12)

    engine.turn_after("s1")

    assert engine.wait_idle(timeout=10)
    assert len(llm.calls) == 2
    assert of(events, Compressing) == []
    assert of(events, Skipped) == [
        Skipped("s1", "turn", "breaker_open", "summarizer circuit open")
    ]
    assert store.count_history("s1") == 12


def test_trim_mode_still_trims_while_the_breaker_is_open_and_says_why(
    store, make_engine
):
    llm = ScriptedSummarizer(SummarizerError("down"))
    config = SummaryConfig(
        threshold=10, keep_recent=4, breaker_failures=2, breaker_cooldown_s=3600
    )
    engine = make_engine(store, llm, config=config)
    open_the_breaker(engine, store)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 12)

    engine.turn_after("s1")

    assert engine.wait_idle(timeout=10)
    start, end = of(events, Compressing)
    assert (start.status, end.status) == ("start", "error")
    assert (end.outcome.kind, end.outcome.code) == ("trimmed", "breaker_open")
    assert end.outcome.summarizer_calls == 0
    assert of(events, Skipped) == []


def test_an_error_carries_the_failed_outcome(store, make_engine):
    engine = make_engine(
        store, ScriptedSummarizer(SummarizerError("down")), config=SMALL
    )
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 12)

    outcome = engine.compress("s1").result(timeout=10)

    end = of(events, Compressing)[-1]
    assert end.status == "error"
    assert end.outcome == outcome
    assert (outcome.kind, outcome.code) == ("trimmed", "summarizer_failed")
    assert end.detail == outcome.detail
