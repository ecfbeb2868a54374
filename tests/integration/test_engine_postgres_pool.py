"""On PostgreSQL, compressions hold no pooled connection while the model works."""

from __future__ import annotations

import threading
from uuid import uuid4

import pytest

from memory_summary import Message, StoreError, SummaryConfig, SummaryEngine
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.contract.stores import postgres_dsn, skip_or_fail
from tests.integration.conversation import fill

pytestmark = pytest.mark.postgres
BOUND_S = 10.0


@pytest.fixture
def small_pool_store():
    from memory_summary.adapters import PostgresStore

    try:
        store = PostgresStore(
            postgres_dsn(), schema=f"t_{uuid4().hex[:12]}", max_size=2, timeout_s=2
        )
    except StoreError as exc:
        skip_or_fail(f"no PostgreSQL at {postgres_dsn()!r} ({exc})")
    yield store
    store.drop_schema()
    store.close()


def test_host_calls_never_wait_on_the_pool_while_summaries_run(small_pool_store):
    store = small_pool_store
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    config = SummaryConfig(threshold=10, keep_recent=4, max_concurrent_summaries=4)
    sessions = [f"s{i}" for i in range(4)]
    for sid in sessions:
        fill(store, sid, 12)
    with SummaryEngine(store, llm, config=config) as engine:
        futures = [engine.compress(sid) for sid in sessions]
        all_in_calls = threading.Event()

        def watch() -> None:
            while llm.in_flight < 4 and not gate.is_set():
                gate.wait(0.01)  # polls; the gate opens only after the check
            all_in_calls.set()

        threading.Thread(target=watch, daemon=True).start()
        try:
            assert all_in_calls.wait(BOUND_S)  # twice the pool size in model calls
            saved = [
                store.save_message("host", Message("user", f"turn {i}"))
                for i in range(20)
            ]
        finally:
            gate.set()
        outcomes = [f.result(timeout=BOUND_S) for f in futures]

    assert len(saved) == 20  # none timed out waiting for a connection
    assert llm.max_in_flight == 4
    assert [o.kind for o in outcomes] == ["compressed"] * 4


@pytest.fixture
def pg_store():
    from tests.contract.stores import dispose, make_postgres

    store = make_postgres()
    yield store
    dispose(store)


def test_turns_far_below_the_threshold_start_no_actor_and_stop_holds(pg_store):
    store = pg_store
    sessions = [f"s{i}" for i in range(60)]
    for sid in sessions:
        store.save_message(sid, Message("user", "hello"))
    fill(store, "busy", 30)
    before = {t.ident for t in threading.enumerate()}
    engine = SummaryEngine(store, InstrumentedSummarizer()).start()

    for sid in sessions:
        engine.turn_after(sid)
    assert engine.wait_idle(timeout=BOUND_S)
    idle_actors = engine.stats().live_actors
    engine.turn_after("busy")  # at the threshold: it still compresses
    assert engine.wait_idle(timeout=BOUND_S)
    grown = [t.name for t in threading.enumerate() if t.ident not in before]
    stopped = engine.stop(timeout=5)

    assert idle_actors == 0  # threads grow with compressions, not with sessions
    assert len(grown) <= 10, grown  # router, reaper, gate, pools, keeper, one actor
    assert len(store.get_history("busy")) == 20
    assert stopped
