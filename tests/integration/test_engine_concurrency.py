"""Concurrency guarantees: one compression per session, global limit, hot path, stop."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from uuid import uuid4

import pytest

from memory_summary import Compressing, SummaryConfig
from memory_summary.adapters import SqliteStore
from memory_summary.testing.fakes import OverlapRecorder
from tests.contract.stores import every_store
from tests.integration.conversation import fill

WAIT_S = 10.0  # the bound of every wait; a passing run never gets near it
UNLIMITED = 10**9


class HeldSummarizer:
    """Blocks every call until the test releases it; counts calls and their peak.

    Each ``release()`` lets one waiting (or future) call return; ``held=False`` lets
    every call through at once. A call never released returns after ``hold_s``, so a
    failing test cannot hang the engine. Replies are long enough to be accepted.
    """

    def __init__(
        self, *, held: bool = True, work_s: float = 0.0, hold_s: float = 60.0
    ) -> None:
        self._changed = threading.Condition()
        self._permits = 0 if held else UNLIMITED
        self._work_s = work_s
        self._hold_s = hold_s
        self.started = 0
        self.finished = 0
        self.in_flight = 0
        self.peak = 0

    def context_length(self, model: str | None = None) -> int | None:
        return 32768

    def complete(self, messages: object, **kwargs: object) -> str:
        with self._changed:
            self.started += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            number = self.started
            self._changed.notify_all()
            self._changed.wait_for(lambda: self._permits > 0, timeout=self._hold_s)
            self._permits = max(0, self._permits - 1)
        if self._work_s:
            time.sleep(self._work_s)  # the model's latency, so calls overlap
        with self._changed:
            self.in_flight -= 1
            self.finished += 1
            self._changed.notify_all()
        return (
            f"The user and the assistant exchanged numbered messages (call {number})."
        )

    def release(self, calls: int = 1) -> None:
        with self._changed:
            self._permits += calls
            self._changed.notify_all()

    def release_all(self) -> None:
        self.release(UNLIMITED)

    def wait_started(self, calls: int, timeout_s: float = WAIT_S) -> bool:
        """Wait until ``calls`` calls have entered ``complete``; tell if they did."""
        with self._changed:
            return self._changed.wait_for(lambda: self.started >= calls, timeout_s)


@pytest.fixture
def held(make_engine) -> Iterator[HeldSummarizer]:
    """A held summarizer, released before make_engine stops the engines."""
    summarizer = HeldSummarizer()
    yield summarizer
    summarizer.release_all()  # before make_engine's stop: nothing stays blocked


@pytest.fixture
def sid() -> str:
    """A session id of this test alone (PostgreSQL's compaction locks are global)."""
    return f"s-{uuid4().hex[:8]}"


@pytest.fixture
def prefix() -> str:
    """A session-id prefix of this test alone."""
    return f"s-{uuid4().hex[:8]}-"


def eventually(predicate, timeout_s=WAIT_S):
    """Poll ``predicate`` until it holds or ``timeout_s`` passes; return it."""
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while not predicate() and time.monotonic() < deadline:
        tick.wait(0.01)
    return predicate()


@pytest.mark.slow
def test_200_sessions_from_16_threads_never_overlap_and_respect_the_limit(
    store, make_engine, prefix
):
    llm = HeldSummarizer(held=False, work_s=0.002)
    config = SummaryConfig(threshold=12, keep_recent=4, max_concurrent_summaries=4)
    engine = make_engine(store, llm, config=config)
    recorder = OverlapRecorder()
    engine.subscribe(recorder)
    sessions = [f"{prefix}{i}" for i in range(200)]

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
    assert llm.peak <= 4
    assert llm.started > 50
    assert set(recorder.open.values()) <= {0}  # every start got its done or error
    assert any(isinstance(e, Compressing) for e in recorder.events)
    for sid in sessions:  # no message lost, active is a suffix of the full history
        full, active = store.get_full_history(sid), store.get_history(sid)
        assert full[len(full) - len(active) :] == active


@every_store
def test_messages_saved_during_a_slow_compression_stay_active(
    store, make_engine, held, sid
):
    engine = make_engine(store, held)
    fill(store, sid, 40)
    future = engine.compress(sid)
    assert held.wait_started(1)

    late = fill(store, sid, 10, start=40)
    held.release()
    outcome = future.result(timeout=WAIT_S)

    active_ids = [m.id for m in store.get_history(sid)]
    assert outcome.archived == 20
    assert active_ids[-10:] == [m.id for m in late]
    assert len(active_ids) == 30
    assert engine.summary(sid).covered_through_id < late[0].id


def test_turn_after_returns_while_the_summarizer_is_blocked(
    store, make_engine, held, sid
):
    engine = make_engine(store, held)
    fill(store, sid, 30)
    engine.turn_after(sid)
    assert held.wait_started(1)
    returned = threading.Event()

    def host_turns() -> None:
        for _ in range(100):
            engine.turn_after(sid)
            engine.token_usage(sid, 0.9)
            engine.build_prompt(sid)
        returned.set()

    threading.Thread(target=host_turns, daemon=True).start()

    # The calls return while the summarizer is still held: they never wait for it.
    assert returned.wait(WAIT_S * 3)
    assert (held.in_flight, held.finished) == (1, 0)
    held.release_all()
    assert engine.wait_idle(timeout=WAIT_S)


def test_triggers_during_a_compression_coalesce_into_one_follow_up(
    store, make_engine, held, sid
):
    engine = make_engine(store, held)
    fill(store, sid, 40)
    first = engine.compress(sid)
    assert held.wait_started(1)

    fill(store, sid, 30, start=40)
    followers = [engine.compress(sid) for _ in range(5)]
    for _ in range(5):
        engine.turn_after(sid)
    held.release_all()

    assert first.result(timeout=WAIT_S).kind == "compressed"
    outcomes = {f.result(timeout=WAIT_S) for f in followers}
    assert engine.wait_idle(timeout=WAIT_S)
    # Requests still being routed when the first finished may form a second, empty
    # follow-up; either way ten triggers cost exactly one more summarizer call.
    compressed = [o for o in outcomes if o.kind == "compressed"]
    assert len(compressed) == 1
    assert compressed[0].archived == 30
    assert {o.kind for o in outcomes} <= {"compressed", "skipped"}
    assert held.started == 2


def test_the_global_limit_bounds_concurrent_summarizer_calls(
    store, make_engine, held, prefix
):
    limit, sessions = 2, 12
    engine = make_engine(
        store, held, config=SummaryConfig(max_concurrent_summaries=limit)
    )
    for i in range(sessions):  # every session is full before the first trigger
        fill(store, f"{prefix}{i}", 30)

    futures = [engine.compress(f"{prefix}{i}") for i in range(sessions)]
    assert held.wait_started(limit)
    # While the first calls are held nothing else may enter; a correct engine makes
    # this wait run out, and only a broken limit can end it early.
    assert not held.wait_started(limit + 1, timeout_s=0.5), held.started
    # Then calls are released one at a time: each release admits one more call.
    for released in range(sessions):
        assert held.wait_started(min(sessions, limit + released)), held.started
        held.release()

    assert all(f.result(timeout=WAIT_S).kind == "compressed" for f in futures)
    assert held.started == sessions
    assert held.peak == limit  # reached (the first calls were held) and never passed


def new_threads(before: set[threading.Thread]) -> list[str]:
    return sorted(t.name for t in set(threading.enumerate()) - before)


def spawn_actors(engine, store, sessions: list[str]) -> None:
    """Give each session a live actor: a manual compress always reaches one."""
    for sid in sessions:
        fill(store, sid, 3)
    futures = [engine.compress(sid) for sid in sessions]
    for future in futures:
        future.result(timeout=WAIT_S)


def test_stop_leaves_no_engine_threads_behind(store, make_engine, prefix):
    before = set(threading.enumerate())
    engine = make_engine(store, HeldSummarizer(held=False))
    spawn_actors(engine, store, [f"{prefix}{i}" for i in range(50)])
    assert engine.stats().live_actors == 50

    assert engine.stop(timeout=WAIT_S)

    assert engine.stats().live_actors == 0
    assert eventually(lambda: not new_threads(before)), new_threads(before)


def stop_report(future) -> str:
    """Return how stop() ended a compression: a failed outcome's detail, or the error.

    compress() documents neither, so either form is accepted.
    """
    try:
        outcome = future.result(timeout=WAIT_S)
    except Exception as exc:  # noqa: BLE001 - the error's text is the report
        return str(exc)
    assert outcome.kind == "failed", outcome
    return outcome.detail


def test_stop_with_a_blocked_summarizer_returns_and_commits_nothing(
    store, make_engine, held, sid
):
    engine = make_engine(store, held)
    fill(store, sid, 40)
    future = engine.compress(sid)
    assert held.wait_started(1)

    engine.stop(timeout=0.5)

    # stop() returned while the summarizer was still held: it did not wait for it.
    assert (held.in_flight, held.finished) == (1, 0)
    held.release_all()
    assert "stopped" in stop_report(future)
    assert store.count_history(sid) == 40  # nothing committed after stop


def test_idle_actors_are_reaped_and_respawned_on_demand(store, make_engine, prefix):
    config = SummaryConfig(actor_idle_s=0.1)
    engine = make_engine(store, HeldSummarizer(held=False), config=config)
    spawn_actors(engine, store, [f"{prefix}{i}" for i in range(30)])

    assert eventually(lambda: engine.stats().live_actors == 0)

    fill(store, f"{prefix}0", 40)
    assert engine.compress(f"{prefix}0").result(timeout=WAIT_S).kind == "compressed"
    assert engine.stats().live_actors == 1


def test_a_busy_actor_is_never_reaped(store, make_engine, held, sid, prefix):
    engine = make_engine(store, held, config=SummaryConfig(actor_idle_s=0.05))
    recorder = OverlapRecorder()
    engine.subscribe(recorder)
    fill(store, sid, 40)
    first = engine.compress(sid)
    assert held.wait_started(1)

    # Two idle sessions come and go: the reaper has swept at least twice while
    # the busy actor got no message for much longer than actor_idle_s.
    for idle in (f"{prefix}a", f"{prefix}b"):
        fill(store, idle, 2)
        assert engine.compress(idle).result(timeout=WAIT_S).kind == "skipped"
        assert eventually(lambda: engine.stats().live_actors == 1), engine.stats()
    second = engine.compress(sid)  # reaches the same, still living actor
    assert engine.stats().live_actors == 1
    held.release_all()

    assert first.result(timeout=WAIT_S).kind == "compressed"
    assert second.result(timeout=WAIT_S).kind in ("compressed", "skipped")
    assert recorder.overlaps == []


def test_stop_waits_for_a_gate_check_still_reading_the_store(tmp_path, make_engine):
    # A database store's turn is counted on a gate thread; once stop() returns the
    # host may close the store, so no check may still be reading it then.
    counting, release = threading.Event(), threading.Event()
    finished = []

    class SlowCount(SqliteStore):
        def count_history(self, session_id):
            counting.set()
            release.wait(WAIT_S)
            finished.append(session_id)
            return super().count_history(session_id)

    store = SlowCount(tmp_path / "gate.sqlite3")
    assert not store.counts_locally  # the count runs on the gate
    engine = make_engine(store).start()
    fill(store, "s", 3)
    engine.turn_after("s")
    assert counting.wait(WAIT_S)

    stopped = []
    stopper = threading.Thread(target=lambda: stopped.append(engine.stop(WAIT_S)))
    stopper.start()
    stopper.join(0.5)  # with the wait in place, stop() is still waiting here
    finished_when_stopped = list(finished) if not stopper.is_alive() else None
    release.set()
    stopper.join(WAIT_S)
    store.close()

    assert finished_when_stopped is None, "stop() returned while the count still ran"
    assert stopped == [True]
    assert finished == ["s"]
