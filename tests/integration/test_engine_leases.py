"""A compression's lease lives as long as the compression works, and never outlives it.

The keeper renews while the job counts tokens, extracts pins or validates (not only
around the summarizer call); a lease whose release failed is this engine's own orphan,
which it releases again or reclaims instead of waiting for it to expire.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import attrs

from memory_summary import Message, StoreError, SummaryConfig, SummaryEngine
from memory_summary.domain import CommitRequest, CommitResult
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.contract.stores import every_store

MARKER = "blocks-the-count"
SHORT_TTL_S = 0.3


class LeaseWatch:
    """Delegates to a store; counts lease renewals and can make releases fail.

    Its commits never release the lease (``CommitResult.released`` false), so the
    engine releases it in a call of its own, which is what these tests make fail.
    """

    def __init__(self, store: object) -> None:
        self._store = store
        self.renewals = 0
        self.renewed_twice = threading.Event()
        self.failing_releases = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    def commit(self, request: CommitRequest) -> CommitResult:
        return self._store.commit(attrs.evolve(request, release_lease=False))

    def renew_lease(self, session_id: str, token: str, *, ttl_s: float) -> bool:
        kept = self._store.renew_lease(session_id, token, ttl_s=ttl_s)
        self.renewals += 1
        if self.renewals >= 2:
            self.renewed_twice.set()
        return kept

    def release_lease(self, session_id: str, token: str) -> None:
        if self.failing_releases:
            self.failing_releases -= 1
            raise StoreError("release_lease failed: the server is restarting")
        self._store.release_lease(session_id, token)


def job_of(engine: SummaryEngine):
    return engine._core._compress.__self__


def fill(store, session_id: str, count: int, first: str = "hello") -> None:
    store.save_message(session_id, Message("user", first))
    for i in range(1, count):
        role = "user" if i % 2 == 0 else "assistant"
        store.save_message(session_id, Message(role, f"turn {i} about order ORD-{i}"))


@every_store
def test_the_lease_is_renewed_while_the_job_counts_tokens(store):
    watched = LeaseWatch(store)
    waited = []

    def count(text: str) -> int:
        if MARKER in text and not waited:  # CPU-heavy work outlasting the lease
            waited.append(watched.renewed_twice.wait(timeout=10))
        return len(text) // 4 + 1

    fill(watched, "s", 30, first=f"a long paste that {MARKER}")
    engine = SummaryEngine(
        watched,
        InstrumentedSummarizer(),
        config=SummaryConfig(),
        count_tokens_for=lambda model: count,
    )
    job_of(engine).lease_ttl_s = SHORT_TTL_S
    with engine:
        outcome = engine.compress("s").result(timeout=30)

    assert waited == [True]  # renewed twice while the count was blocked
    assert outcome.kind == "compressed", outcome.detail
    assert len(store.get_history("s")) == 20


@every_store
def test_an_orphaned_lease_of_this_engine_is_released_again_and_not_waited_for(store):
    watched = LeaseWatch(store)
    fill(watched, "s", 25)
    with SummaryEngine(watched, InstrumentedSummarizer()) as engine:
        watched.failing_releases = 1  # the first release fails (a restart)
        first = engine.compress("s").result(timeout=30)
        assert store.lease_owner("s") is not None  # left behind
        for i in range(5):
            store.save_message("s", Message("user", f"more {i}"))

        second = engine.compress("s").result(timeout=30)

    assert first.kind == "compressed"
    assert second.kind == "compressed", second.detail
    assert store.lease_owner("s") is None


@every_store
def test_an_orphan_whose_release_keeps_failing_is_reclaimed_by_its_engine(store):
    watched = LeaseWatch(store)
    fill(watched, "s", 25)
    with SummaryEngine(watched, InstrumentedSummarizer()) as engine:
        watched.failing_releases = 2  # the release and its first retry fail
        first = engine.compress("s").result(timeout=30)
        for i in range(5):
            store.save_message("s", Message("user", f"more {i}"))

        second = engine.compress("s").result(timeout=30)
        third = engine.compress("s").result(timeout=30)

    assert first.kind == "compressed"
    assert second.kind == "compressed", second.detail  # reclaimed, not "lease_held"
    assert third.code != "lease_held"
    assert store.lease_owner("s") is None


# -- the keeper on a fake clock --------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class LeaseRows:
    """A lease store that records renewals and answers what the test says."""

    def __init__(self) -> None:
        self.keep = True
        self.renewed: list[tuple[str, float]] = []
        self.asked = threading.Semaphore(0)

    def renew_lease(self, session_id: str, token: str, *, ttl_s: float) -> bool:
        self.renewed.append((token, ttl_s))
        self.asked.release()
        return self.keep

    def release_lease(self, session_id: str, token: str) -> None:
        pass


def test_the_keeper_renews_each_third_of_the_lease_and_marks_a_refused_one_lost():
    from memory_summary.actors.leases import LeaseKeeper

    rows, clock = LeaseRows(), FakeClock()
    keeper = LeaseKeeper(rows, clock=clock)
    keeper.hold("s", "token", ttl_s=30.0)

    clock.now = 9.0  # not yet a third
    keeper.tick()
    clock.now = 10.0
    keeper.tick()
    assert rows.asked.acquire(timeout=5)
    rows.keep = False  # expired and taken meanwhile
    clock.now = 20.0
    keeper.tick()
    assert rows.asked.acquire(timeout=5)
    with keeper._changed:
        lost = keeper._changed.wait_for(lambda: keeper.is_lost("token"), timeout=5)
    keeper.release("s", "token")

    assert rows.renewed == [("token", 30.0), ("token", 30.0)]
    assert lost
    assert not keeper.holds_session("s")


class BlockedRenewal(LeaseRows):
    """A renewal that waits for the test, then finds the lease gone."""

    def __init__(self) -> None:
        super().__init__()
        self.keep = False
        self.proceed = threading.Event()

    def renew_lease(self, session_id: str, token: str, *, ttl_s: float) -> bool:
        self.asked.release()
        assert self.proceed.wait(timeout=10)
        return self.keep


def test_a_lease_dropped_by_a_commit_during_its_renewal_is_not_reported_lost(caplog):
    from memory_summary.actors.leases import LeaseKeeper

    rows, clock = BlockedRenewal(), FakeClock()
    keeper = LeaseKeeper(rows, clock=clock)
    keeper.hold("s", "token", ttl_s=30.0)
    clock.now = 10.0
    keeper.tick()
    assert rows.asked.acquire(timeout=5)  # the keeper is inside renew_lease

    keeper.dropped("token")  # the final commit dropped it in the store
    thread = keeper._thread
    assert thread is not None
    with caplog.at_level("WARNING", logger="memory_summary.actors.leases"):
        rows.proceed.set()  # the store answers: no such lease
        # the keeper exits with no lease held; it notifies nobody, so join it
        # (waiting on its condition took the whole 5 s timeout)
        thread.join(timeout=5)

    assert not thread.is_alive()
    assert keeper._thread is None
    assert not keeper.is_lost("token")
    assert not keeper.holds_session("s")
    assert keeper.unreleased() == 0
    assert "lost" not in caplog.text


def _until(condition: Callable[[], bool]) -> bool:
    """Wait up to 5 s for ``condition`` (the keeper notifies nobody when it sleeps)."""
    deadline = time.monotonic() + 5
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_shorter_lease_held_while_the_keeper_sleeps_is_renewed_on_its_time():
    """The keeper sleeps until the lease it keeps is due; a sooner one wakes it."""
    from memory_summary.actors.leases import LeaseKeeper

    rows = LeaseRows()
    keeper = LeaseKeeper(rows)
    keeper.hold("a", "long", ttl_s=60.0)  # due in 20 s: the keeper sleeps that long
    assert _until(lambda: keeper._wake_at is not None)
    keeper.hold("b", "short", ttl_s=0.3)  # due in 0.1 s

    assert rows.asked.acquire(timeout=5)
    assert rows.renewed[0] == ("short", 0.3)
    keeper.release("b", "short")
    keeper.release("a", "long")
    assert _until(lambda: keeper._thread is None)


def test_the_keeper_runs_while_any_lease_is_held_and_exits_with_the_last():
    from memory_summary.actors.leases import LeaseKeeper

    rows = LeaseRows()
    keeper = LeaseKeeper(rows)
    keeper.hold("a", "ta", ttl_s=60.0)
    keeper.hold("b", "tb", ttl_s=60.0)
    assert _until(lambda: keeper._wake_at is not None)  # asleep for 20 s
    keeper.dropped("ta")
    thread = keeper._thread

    assert thread is not None
    assert thread.is_alive()
    keeper.dropped("tb")
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert keeper._thread is None
    assert rows.renewed == []
