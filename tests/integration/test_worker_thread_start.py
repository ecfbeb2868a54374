"""A compression whose compress or llm thread fails to start is a failure of its own.

It ended as ``engine_stopped`` (the pools' refusal at stop() and a thread that did not
start were one ``RuntimeError``), and ``health().last_failure`` stayed None. Now it
is ``thread_start_failed``, named in ``health()``, and the next compression, with
threads to spare again, runs.
"""

from __future__ import annotations

import pytest

import memory_summary.actors.workers as workers
from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.testing.fakes import InstrumentedSummarizer

GUARD_S = 30.0
"""Only a bound on a hang; no assertion is about time."""


@pytest.mark.parametrize("pool", ["memory-summary-compress", "memory-summary-llm"])
def test_a_thread_that_cannot_start_fails_the_compression_visibly(monkeypatch, pool):
    real = workers.daemon

    def flaky(target, name):
        thread = real(target, name)
        if name.startswith(pool):

            def boom() -> None:
                raise RuntimeError("can't start new thread")

            thread.start = boom
        return thread

    store = InMemoryStore()
    for i in range(20):
        store.save_message("s", Message("user" if i % 2 == 0 else "assistant", f"m{i}"))
    seen = []
    config = SummaryConfig(threshold=12, keep_recent=6)
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        engine.subscribe(seen.append)
        monkeypatch.setattr(workers, "daemon", flaky)

        outcome = engine.compress("s").result(timeout=GUARD_S)
        failure = engine.health().last_failure
        monkeypatch.setattr(workers, "daemon", real)
        again = engine.compress("s").result(timeout=GUARD_S)
        assert engine.wait_idle(GUARD_S)

    assert (outcome.kind, outcome.code) == ("failed", "thread_start_failed")
    assert "thread start failed" in outcome.detail
    assert pool in outcome.detail
    assert failure is not None
    assert (failure.code, failure.detail) == ("thread_start_failed", outcome.detail)
    statuses = [e.status for e in seen if type(e).__name__ == "Compressing"]
    assert statuses[:2] == ["start", "error"]
    assert again.kind == "compressed"
