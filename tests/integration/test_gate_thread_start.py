"""A gate thread that fails to start ("can't start new thread") wedges nothing.

The gate pool counted such a thread as started and kept its check queued: after two
failures (the pool's size) no turn was checked again, so no session compressed and
``wait_idle`` never returned True. The turns whose check could not start are
settled by the caller, each with a WARNING; the next turn, with threads to spare
again, compresses.
"""

from __future__ import annotations

from contextlib import closing

import pytest

import memory_summary.actors.workers as workers
from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import SqliteStore
from memory_summary.testing.fakes import InstrumentedSummarizer

GUARD_S = 30.0
"""Only a bound on a hang when the gate is wedged; no assertion is about time."""


@pytest.mark.parametrize("fails", [1, 2, 3])
def test_turns_compress_after_gate_threads_failed_to_start(
    monkeypatch, tmp_path, fails, caplog
):
    real = workers.daemon
    left = [fails]

    def flaky(target, name):
        thread = real(target, name)
        if name.startswith("memory-summary-gate") and left[0]:
            left[0] -= 1

            def boom() -> None:
                raise RuntimeError("can't start new thread")

            thread.start = boom
        return thread

    summarizer = InstrumentedSummarizer()
    config = SummaryConfig(threshold=12, keep_recent=6)
    with (
        closing(SqliteStore(str(tmp_path / "m.db"))) as store,  # counted on the gate
        SummaryEngine(store, summarizer, config=config) as engine,
    ):
        for i in range(20):
            store.save_message(
                "s", Message("user" if i % 2 == 0 else "assistant", f"m{i}")
            )
        monkeypatch.setattr(workers, "daemon", flaky)
        for _ in range(fails):  # each turn's gate check fails to start
            engine.turn_after("s")
        assert left == [0]
        assert engine.wait_idle(GUARD_S)  # the failed checks were settled
        assert engine.summary("s") is None
        said = [r for r in caplog.records if "gate check did not start" in r.message]
        assert [r.levelname for r in said] == ["WARNING"] * fails
        monkeypatch.setattr(workers, "daemon", real)
        engine.turn_after("s")
        assert engine.wait_idle(GUARD_S)
        assert engine.summary("s") is not None
        assert summarizer.calls == 1
