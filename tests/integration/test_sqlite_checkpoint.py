"""The SQLite store checkpoints its write-ahead log on a thread of its own.

A commit that finds the log over ``wal_autocheckpoint`` pages checkpoints it on the
writer's thread (copying the log and syncing: milliseconds to tens of them), often
the host's, saving a chat turn, while every other writer of the process waits.
"""

from __future__ import annotations

import sqlite3
import threading

import pytest

from memory_summary import Message
from memory_summary.adapters import SqliteStore
from memory_summary.adapters.stores.sql import sqlite as sqlite_face


def _fill(store: SqliteStore, count: int, size: int = 40) -> None:
    for i in range(count):
        store.save_message("s", Message("user", f"{i} " + "x" * size))


def test_checkpoints_run_on_the_stores_thread_and_take_in_the_whole_log(
    tmp_path, monkeypatch
):
    runs = []
    real = sqlite_face.SqliteDriver._checkpoint

    def recorded(self):
        answer = real(self)
        runs.append((threading.current_thread().name, answer))
        return answer

    monkeypatch.setattr(sqlite_face.SqliteDriver, "_checkpoint", recorded)
    monkeypatch.setattr(sqlite_face, "CHECKPOINT_EVERY", 20)
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        _fill(store, 45)  # two nudges
        assert store._driver._checkpoints.wait_idle(10)
    finally:
        store.close()

    assert runs
    assert {name for name, _ in runs} == {"memory-summary-sqlite-checkpoint"}
    busy, log, done = runs[-1][1]
    assert busy == 0
    assert log > 0
    assert done == log  # no reader held it back: all of it is in the database


def test_a_writer_does_not_checkpoint_at_sqlites_default_of_1000_pages(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(sqlite_face, "CHECKPOINT_EVERY", 10**9)  # no thread's either
    path = tmp_path / "s.sqlite3"
    store = SqliteStore(path)
    try:
        (limit,) = store._driver.read("PRAGMA wal_autocheckpoint", (), "test")[0]
        (page,) = store._driver.read("PRAGMA page_size", (), "test")[0]
        _fill(store, 450, size=8000)  # two or three pages each
        wal = (tmp_path / "s.sqlite3-wal").stat().st_size
    finally:
        store.close()

    assert limit == sqlite_face.BACKSTOP_PAGES
    # SQLite's default would have checkpointed at 1,000 pages and reused the log
    # from its start: it would not have grown past that
    assert wal > 1_100 * page


def test_closing_the_store_stops_the_thread_and_closes_its_connection(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(sqlite_face, "CHECKPOINT_EVERY", 5)
    store = SqliteStore(tmp_path / "s.sqlite3")
    _fill(store, 6)
    driver = store._driver
    assert driver._checkpoints.wait_idle(10)
    conn = driver._checkpoint_conn
    thread = driver._checkpoints._thread

    store.close()

    assert conn is not None
    assert driver._checkpoint_conn is None
    assert thread is not None
    assert not thread.is_alive()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")


def test_a_thread_that_cannot_start_fails_no_write(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(sqlite_face, "CHECKPOINT_EVERY", 3)
    real_start = threading.Thread.start
    refused = []

    def start(self):
        if self.name == "memory-summary-sqlite-checkpoint" and not refused:
            refused.append(self)
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        _fill(store, 3)  # the third write's nudge: refused, and still saved
        _fill(store, 3)  # the next one starts the thread
        assert store._driver._checkpoints.wait_idle(10)
        saved = len(store.get_full_history("s"))
        thread = store._driver._checkpoints._thread
    finally:
        store.close()

    assert refused
    assert saved == 6
    assert thread is not None
    assert "postponed" in caplog.text
