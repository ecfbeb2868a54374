"""Concurrency guarantees: one compression per session, global limit, hot path, stop."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from memory_summary import Compressing, SummaryConfig
from tests.fakes import InstrumentedSummarizer, OverlapRecorder
from tests.integration.helpers import fill


def eventually(predicate, timeout_s=5.0):
    """Poll ``predicate`` until it holds or ``timeout_s`` passes; return it."""
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while not predicate() and time.monotonic() < deadline:
        tick.wait(0.01)
    return predicate()


def actor_threads():
    return [t for t in threading.enumerate() if t.name.startswith("SessionActor")]


@pytest.mark.slow
def test_200_sessions_from_16_threads_never_overlap_and_respect_the_limit(
    store, make_engine
):
    llm = InstrumentedSummarizer(delay_s=0.002)
    config = SummaryConfig(threshold=12, keep_recent=4, max_concurrent_summaries=4)
    engine = make_engine(store, llm, config=config)
    recorder = OverlapRecorder()
    engine.subscribe(recorder)
    sessions = [f"s{i}" for i in range(200)]

    def drive(worker: int) -> None:
        rng = random.Random(worker)
        for _ in range(150):
            sid = rng.choice(sessions)
            fill(store, sid, rng.randint(1, 4), start=rng.randint(0, 10_000))
            action = rng.random()
            if action < 0.6:
                engine.turn_after(sid)
            elif action < 0.85:
                engine.token_usage(sid, rng.uniform(0.5, 1.0))
            else:
                engine.compress(sid, reason=rng.choice(["manual", "auto"]))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(drive, range(16)))
    assert engine.wait_idle(timeout=60)

    assert recorder.overlaps == []
    assert llm.max_in_flight <= 4
    assert llm.calls > 50
    assert set(recorder.open.values()) <= {0}  # every start got its done or error
    assert any(isinstance(e, Compressing) for e in recorder.events)
    for sid in sessions:  # no message lost, active is a suffix of the full history
        full, active = store.get_full_history(sid), store.get_history(sid)
        assert full[len(full) - len(active) :] == active


def test_messages_saved_during_a_slow_compression_stay_active(store, make_engine):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm)
    fill(store, "s1", 40)
    future = engine.compress("s1")
    assert llm.entered.wait(5)

    late = fill(store, "s1", 10, start=40)
    gate.set()
    outcome = future.result(timeout=10)

    active_ids = [m.id for m in store.get_history("s1")]
    assert outcome.archived == 20
    assert active_ids[-10:] == [m.id for m in late]
    assert len(active_ids) == 30
    assert engine.summary("s1").covered_through_id < late[0].id


def test_turn_after_returns_while_the_summarizer_is_blocked(store, make_engine):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm)
    fill(store, "s1", 30)
    engine.turn_after("s1")
    assert llm.entered.wait(5)

    started = time.perf_counter()
    for _ in range(100):
        engine.turn_after("s1")
        engine.token_usage("s1", 0.9)
        engine.build_prompt("s1")
    elapsed = time.perf_counter() - started
    gate.set()

    assert elapsed < 2.0  # blocked calls would take the gate's 30 s
    assert engine.wait_idle(timeout=10)


def test_triggers_during_a_compression_coalesce_into_one_follow_up(store, make_engine):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm)
    fill(store, "s1", 40)
    first = engine.compress("s1")
    assert llm.entered.wait(5)

    fill(store, "s1", 30, start=40)
    followers = [engine.compress("s1") for _ in range(5)]
    for _ in range(5):
        engine.turn_after("s1")
    gate.set()

    assert first.result(timeout=10).kind == "compressed"
    outcomes = {f.result(timeout=10) for f in followers}
    assert engine.wait_idle(timeout=10)
    # Requests still being routed when the first finished may form a second, empty
    # follow-up; either way ten triggers cost exactly one more summarizer call.
    compressed = [o for o in outcomes if o.kind == "compressed"]
    assert len(compressed) == 1
    assert compressed[0].archived == 30
    assert {o.kind for o in outcomes} <= {"compressed", "skipped"}
    assert llm.calls == 2


def test_the_global_limit_bounds_concurrent_summarizer_calls(store, make_engine):
    llm = InstrumentedSummarizer(delay_s=0.05)
    engine = make_engine(store, llm, config=SummaryConfig(max_concurrent_summaries=2))
    futures = []
    for i in range(12):
        fill(store, f"s{i}", 30)
        futures.append(engine.compress(f"s{i}"))

    assert all(f.result(timeout=20).kind == "compressed" for f in futures)
    assert llm.max_in_flight == 2


def test_stop_leaves_no_actor_threads_behind(store, make_engine):
    engine = make_engine(store, InstrumentedSummarizer())
    before = len(actor_threads())
    for i in range(50):
        fill(store, f"s{i}", 3)
        engine.turn_after(f"s{i}")
    assert engine.wait_idle(timeout=5)
    assert len(actor_threads()) - before == 50

    assert engine.stop(timeout=5)

    assert len(actor_threads()) == before
    engine_threads = ("memory-summary-reaper", "memory-summary-router")
    assert not [t for t in threading.enumerate() if t.name in engine_threads]


def test_stop_with_a_blocked_summarizer_returns_in_time_and_commits_nothing(
    store, make_engine
):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm)
    fill(store, "s1", 40)
    future = engine.compress("s1")
    assert llm.entered.wait(5)

    started = time.perf_counter()
    finished = engine.stop(timeout=0.5)
    took = time.perf_counter() - started
    gate.set()

    assert not finished
    assert took < 3
    assert store.count_history("s1") == 40  # nothing committed after stop
    with pytest.raises(Exception, match="stopped"):
        future.result(timeout=5)


def test_idle_actors_are_reaped_and_respawned_on_demand(store, make_engine):
    config = SummaryConfig(actor_idle_s=0.1)
    engine = make_engine(store, InstrumentedSummarizer(), config=config)
    before = len(actor_threads())
    for i in range(30):
        fill(store, f"s{i}", 2)
        engine.turn_after(f"s{i}")
    assert engine.wait_idle(timeout=5)

    assert eventually(lambda: engine.live_actors() == 0)
    assert eventually(lambda: len(actor_threads()) == before)

    fill(store, "s0", 40)
    assert engine.compress("s0").result(timeout=10).kind == "compressed"
    assert engine.live_actors() == 1


def test_a_busy_actor_is_never_reaped(store, make_engine):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm)
    recorder = OverlapRecorder()
    engine.subscribe(recorder)
    fill(store, "s1", 40)
    first = engine.compress("s1")
    assert llm.entered.wait(5)

    assert engine._core.reap(time.monotonic() + 3600) == 1  # every actor looks idle
    second = engine.compress("s1")  # reaches the same actor, queued behind the Reap
    assert engine.live_actors() == 1
    gate.set()

    assert first.result(timeout=10).kind == "compressed"
    assert second.result(timeout=10).kind in ("compressed", "skipped")
    assert recorder.overlaps == []
