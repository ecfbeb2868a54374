"""Every SQLite connection the library opens is closed, on every path.

Each connection opened during a test is tracked: closing it is recorded, and one
the collector takes while still open is a leak. That holds on every Python; from
3.13 such a connection also raises ``ResourceWarning: unclosed database``, which
the suite turns into an error wherever the collector happens to run, so each
test also asserts that no such warning is raised.
"""

from __future__ import annotations

import contextlib
import gc
import io
import sqlite3
import threading
import warnings
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_summary import Message, StoreError, SummaryConfig
from memory_summary.adapters import SqliteArchive, SqliteStore
from memory_summary.cli import main
from memory_summary.domain import StoreUnavailable
from memory_summary.testing.fakes import ScriptedSummarizer


class Tracker:
    """Tracks the connections ``sqlite3.connect`` opens while it is installed."""

    def __init__(self) -> None:
        self.opened = 0
        self.alive: list[weakref.ref[sqlite3.Connection]] = []
        self.open_ids: set[int] = set()
        self.leaked = 0  # collected while still open
        self.lock = threading.Lock()

    def connect(self, real: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        tracker = self

        class Tracked(sqlite3.Connection):
            def close(self) -> None:
                with tracker.lock:
                    tracker.open_ids.discard(id(self))
                super().close()

        kwargs["factory"] = Tracked
        conn = real(*args, **kwargs)
        with self.lock:
            self.opened += 1
            self.open_ids.add(id(conn))
            self.alive.append(weakref.ref(conn))
        weakref.finalize(conn, self._collected, id(conn))
        return conn

    def _collected(self, ident: int) -> None:
        with self.lock:
            if ident in self.open_ids:
                self.open_ids.discard(ident)
                self.leaked += 1

    def still_open(self) -> int:
        with self.lock:
            return len(self.open_ids)


@pytest.fixture
def tracker(monkeypatch) -> Iterator[Tracker]:
    """Track every connection; fail on one left open or an unclosed-database warning."""
    tracked = Tracker()
    real = sqlite3.connect
    monkeypatch.setattr(
        sqlite3, "connect", lambda *a, **kw: tracked.connect(real, *a, **kw)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield tracked
        gc.collect()
    unclosed = [str(w.message) for w in caught if w.category is ResourceWarning]
    assert unclosed == []
    assert tracked.leaked == 0


def _fill(store: SqliteStore, sid: str, count: int) -> None:
    for i in range(count):
        store.save_message(sid, Message("user", f"message {i} about herons"))


def test_close_closes_every_pooled_connection(tracker, tmp_path):
    store = SqliteStore(tmp_path / "s.sqlite3", pool_size=4)
    inside = threading.Barrier(4)

    def hold_one() -> None:
        with _holding(store, inside):
            pass

    threads = [threading.Thread(target=hold_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    _fill(store, "s", 300)  # past CATCH_UP_EVERY: the index thread runs
    store.search_messages("s", ["heron"], limit=3)
    opened = tracker.opened

    store.close()

    assert opened >= 4  # the four threads each held one at once
    assert tracker.still_open() == 0


@contextlib.contextmanager
def _holding(store: SqliteStore, inside: threading.Barrier) -> Iterator[None]:
    """Hold a pooled connection until four threads hold one each."""
    driver: Any = store._driver
    conn = driver._take()
    try:
        inside.wait(10)
        yield
    finally:
        driver._give(conn)


def test_a_file_that_is_not_a_database(tracker, tmp_path):
    path = tmp_path / "garbage.sqlite3"
    path.write_bytes(b"not a database, " * 512)

    with pytest.raises(StoreError, match="not a database"):
        SqliteStore(path)

    assert tracker.opened >= 1
    assert tracker.still_open() == 0


def test_a_schema_from_a_newer_release(tracker, tmp_path):
    path = tmp_path / "newer.sqlite3"
    SqliteStore(path).close()
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("INSERT INTO schema_version (version) VALUES (999)")

    with pytest.raises(StoreUnavailable, match="newer"):
        SqliteStore(path)

    assert tracker.still_open() == 0


def test_a_store_used_after_close_opens_nothing(tracker, tmp_path):
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.close()
    opened = tracker.opened

    with pytest.raises(StoreError, match="closed"):
        store.get_history("s")

    assert tracker.opened == opened
    assert tracker.still_open() == 0


def test_an_engine_stopped_then_its_store_closed(tracker, tmp_path, make_engine):
    store = SqliteStore(tmp_path / "s.sqlite3")
    _fill(store, "s", 30)
    engine = make_engine(
        store,
        ScriptedSummarizer(
            "The user wrote thirty messages about herons and their habits."
        ),
        config=SummaryConfig(threshold=10, keep_recent=4),
        archive=SqliteArchive(store),
    )

    assert engine.compress("s").result(timeout=30).kind == "compressed"
    assert engine.stop(timeout=10)
    store.close()

    assert tracker.still_open() == 0


def _cli(*argv: str) -> int:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        return main(list(argv))


def test_the_cli_closes_what_it_opens(tracker, tmp_path: Path):
    path = tmp_path / "s.sqlite3"
    store = SqliteStore(path)
    _fill(store, "s", 5)
    store.close()
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"not a database, " * 512)

    assert _cli("sessions", "--db", str(path)) == 0
    assert _cli("sessions", "--db", str(garbage)) != 0
    assert _cli("sessions", "--db", str(tmp_path / "absent.sqlite3")) != 0

    assert tracker.opened >= 2
    assert tracker.still_open() == 0


def test_a_demo_whose_engine_cannot_be_wired_closes_its_store(
    tracker, tmp_path, monkeypatch
):
    from memory_summary import demo

    def refuse(*args, **kwargs):
        raise TypeError("this engine cannot be wired")

    monkeypatch.setattr(demo, "SummaryEngine", refuse)
    with pytest.raises(TypeError, match="wired"):
        demo.run_demo(tmp_path / "demo.sqlite3", sessions=1, turns=1, progress=False)

    assert tracker.opened >= 1
    assert tracker.still_open() == 0


def test_a_connection_in_use_during_close_is_closed_when_given_back(tracker, tmp_path):
    store = SqliteStore(tmp_path / "s.sqlite3")
    _fill(store, "s", 2)
    inside, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def hold() -> None:
        try:  # the pool's own hand-off: a transaction still running at close()
            with store._driver.transaction("test") as conn:
                inside.set()
                release.wait(10)
                conn.execute("SELECT count(*) FROM messages")
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(10)
    store.close()
    assert tracker.still_open() == 1  # the one in use stays open under its statement
    release.set()
    holder.join(10)
    assert failures == []
    assert tracker.still_open() == 0


def test_a_waiting_thread_gets_the_only_connection_before_a_busy_one(tracker, tmp_path):
    """A thread that gives the connection back and takes it again queues behind.

    Before, the busy thread took the one connection of ``pool_size=1`` straight back
    while a waiting thread was still waking: under a host's loop of turns the
    engine's gate counts and compressions waited until the host paused, or failed
    after ``busy_timeout_s`` (``no free SQLite connection``).
    """
    store = SqliteStore(tmp_path / "s.sqlite3", pool_size=1)
    _fill(store, "s", 1)
    driver: Any = store._driver
    waiting = threading.Event()

    class Observed(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            waiting.set()  # a thread found every connection out
            return super().wait(timeout)

    driver._freed = Observed(threading.Lock())
    order: list[str] = []

    def count() -> None:
        taken = driver._take()
        order.append("waiting thread")  # while it holds the connection: no race
        driver._give(taken)

    conn = driver._take()
    thread = threading.Thread(target=count)
    thread.start()
    assert waiting.wait(10)
    driver._give(conn)
    again = driver._take()  # the busy thread comes straight back for it
    order.append("busy thread")
    driver._give(again)
    thread.join(10)
    store.close()

    assert order == ["waiting thread", "busy thread"]


def test_a_failed_fetch_leaves_no_read_transaction_open(tracker, tmp_path):
    """A read whose row cannot be decoded stops inside the fetch, its statement still
    pending on the connection's own cursor: the cursor is replaced, so the connection
    goes back to the pool with no snapshot that a later write would have to upgrade
    (a stale one fails the write)."""
    path = tmp_path / "s.sqlite3"
    store = SqliteStore(path, pool_size=1)
    try:
        store.save_message("s1", Message("user", "hi"))
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            insert = (
                "INSERT INTO messages (session_id, role, content) "
                "VALUES ('s1', 'user', CAST(? AS TEXT))"
            )
            other.execute(insert, (b"caf\xe9",))
            with contextlib.suppress(StoreError):
                store.get_history("s1")
            other.execute(insert, (b"later",))  # commits past the failed read
        saved = store.save_messages(
            "s1", [Message("user", "a"), Message("assistant", "b")]
        )
        assert [m.id for m in saved] == [4, 5]
        assert store.count_history("s1") == 5
    finally:
        store.close()
