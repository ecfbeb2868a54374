"""Operators see degrades without logging: ``health()`` and the start-up check.

A wrong or dead summarizer trims quietly under the seed's default; ``health()``
reports the open breaker, the last degraded compression and the ranges archived
without a summary, and ``check_summarizer()`` asks the endpoint (real HTTP on
loopback) before the first compression does.
"""

from __future__ import annotations

import pytest

from memory_summary import SummaryConfig, SummaryEngine
from memory_summary.adapters import OpenAIChatLLM
from memory_summary.testing.fakes import InstrumentedSummarizer, ScriptedSummarizer
from tests.integration.conversation import fill
from tests.openai_server import Behaviour, OpenAICompatibleServer
from tests.pgcluster import free_port

BOUND_S = 30.0


def test_a_dead_summarizer_shows_as_an_open_breaker_a_failure_and_a_gap(store):
    llm = ScriptedSummarizer(ConnectionError("connection refused"))
    config = SummaryConfig(breaker_failures=1)
    fill(store, "s", 30)
    with SummaryEngine(store, llm, config=config) as engine:
        outcome = engine.compress("s").result(timeout=BOUND_S)
        health = engine.health()
        one = engine.health("s")
        other = engine.health("nobody")

    assert outcome.kind == "trimmed"  # the quiet degrade of the seed's default
    assert health.degraded
    [summarizer] = health.summarizers
    assert summarizer.state == "open"
    assert summarizer.failures == 1
    assert summarizer.retry_in_s is not None
    assert summarizer.retry_in_s > 0
    assert health.last_failure is not None
    assert health.last_failure.session_id == "s"
    assert health.last_failure.kind == "trimmed"
    assert health.last_failure.code == "summarizer_failed"
    assert list(health.unsummarized) == ["s"]
    assert one.unsummarized == health.unsummarized
    assert other.unsummarized == {}


def test_a_working_engine_reports_nothing_degraded(store):
    fill(store, "s", 30)
    with SummaryEngine(store, InstrumentedSummarizer()) as engine:
        assert engine.compress("s").result(timeout=BOUND_S).kind == "compressed"
        health = engine.health()

    assert not health.degraded
    assert [s.state for s in health.summarizers] == ["closed"]
    assert health.last_failure is None
    assert health.unsummarized == {}


@pytest.fixture
def server():
    with OpenAICompatibleServer() as running:
        yield running


def test_the_start_check_says_whether_the_endpoint_answers(server, store):
    live = OpenAIChatLLM(
        "test-model", base_url=server.base_url, api_key="k", max_retries=0
    )
    dead = OpenAIChatLLM(
        "test-model",
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        api_key="k",
        max_retries=0,
    )
    server.then(Behaviour(text="OK"))
    try:
        with SummaryEngine(store, live) as engine:
            answered = engine.check_summarizer(timeout=BOUND_S)
        with SummaryEngine(store, dead) as engine:
            refused = engine.check_summarizer(timeout=BOUND_S)
            breakers = engine.health().summarizers
    finally:
        live.close()
        dead.close()

    assert answered.ok
    assert answered.summarizer == "test-model"
    assert not refused.ok
    assert "Connection" in refused.detail or "connect" in refused.detail.lower()
    assert breakers == ()  # a check is not a compression: the breaker is untouched


def test_a_store_failing_the_turn_count_shows_in_health_and_one_warning(
    tmp_path, caplog
):
    import contextlib
    import logging

    from memory_summary import StoreError
    from memory_summary.adapters import SqliteStore

    class LockedCount(SqliteStore):
        def count_history(self, session_id):
            raise StoreError(f"count_history failed for {session_id!r}: locked")

    caplog.set_level(logging.WARNING, logger="memory_summary")
    with contextlib.closing(LockedCount(tmp_path / "locked.sqlite3")) as store:
        assert not store.counts_locally  # counted on a gate thread
        fill(store, "s", 3)  # far below the threshold
        with SummaryEngine(store, InstrumentedSummarizer()) as engine:
            before = engine.health().count_failures
            for _ in range(3):
                engine.turn_after("s")
                assert engine.wait_idle(timeout=BOUND_S)
            health = engine.health()
            actors = engine.stats().live_actors

    warned = [r for r in caplog.records if "the turn's count" in r.getMessage()]
    assert before == 0
    assert health.count_failures == 3
    assert len(warned) == 1  # rate-limited: not one per turn
    assert warned[0].levelno == logging.WARNING
    assert actors == 1  # the turns went on to the session's actor (safe)
