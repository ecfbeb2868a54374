"""A worker thread that fails to start leaves the pool as it was.

``submit`` counted the thread and queued the task before ``Thread.start()``; when the
start failed ("can't start new thread"), the caller settled the task's work, but the
pool believed it had the thread and kept the task: after ``size`` such failures no
task ran again, and a queued task that ran once a thread started did its work twice.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memory_summary.actors.workers as workers
from memory_summary.actors.workers import WorkerPool

GUARD_S = 30.0
"""Only a bound on a hang when the pool is broken; no assertion is about time."""


class FlakyStarts:
    """Make the next ``fails`` thread starts raise, as a process out of threads does."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.started = 0
        self.real = workers.daemon

    def __call__(self, target, name):
        thread = self.real(target, name)
        if self.fails:
            self.fails -= 1

            def boom() -> None:
                raise RuntimeError("can't start new thread")

            thread.start = boom  # type: ignore[method-assign]
        else:
            self.started += 1
        return thread


@pytest.fixture
def flaky(monkeypatch):
    def make(fails: int) -> FlakyStarts:
        starts = FlakyStarts(fails)
        monkeypatch.setattr(workers, "daemon", starts)
        return starts

    return make


def _run_after_failed_starts(flaky, size: int, fails: int) -> None:
    starts = flaky(fails)
    pool = WorkerPool("test-pool", size)
    ran: list[int] = []
    try:
        for index in range(fails):
            with pytest.raises(RuntimeError, match="can't start new thread"):
                pool.submit(ran.append, index)
        assert starts.started == 0
        # every thread the pool may keep starts now: `size` tasks meet at a barrier
        barrier = threading.Barrier(size + 1, timeout=GUARD_S)
        futures = [pool.submit(barrier.wait) for _ in range(size)]
        barrier.wait()
        for future in futures:
            future.result(GUARD_S)
        assert starts.started == size
        after = pool.submit(ran.append, "after")
        after.result(GUARD_S)
    finally:
        pool.shutdown()
        assert pool.wait_running(GUARD_S)
    assert ran == ["after"]  # a task whose thread failed to start never runs


@pytest.mark.parametrize(("size", "fails"), [(1, 1), (2, 2), (2, 5)])
def test_a_failed_thread_start_queues_nothing_and_counts_no_thread(flaky, size, fails):
    _run_after_failed_starts(flaky, size, fails)


@settings(max_examples=20, deadline=None)
@given(size=st.integers(1, 3), fails=st.integers(0, 4))
def test_any_number_of_failed_starts_leaves_the_pool_whole(size, fails):
    real = workers.daemon

    def install(n: int) -> FlakyStarts:
        starts = FlakyStarts(n)
        workers.daemon = starts  # type: ignore[assignment]
        return starts

    try:
        _run_after_failed_starts(install, size, fails)
    finally:
        workers.daemon = real
