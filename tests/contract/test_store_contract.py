"""One suite for every store: InMemoryStore is the reference the others must match.

The suite is the public kit's ``StoreContract`` (``memory_summary.testing.contract``):
history, metadata, content parts, archived ranges, fencing, forgetting, leases and
hostile input. Each of the project's stores runs through it here, by the same one
subclass a store written elsewhere uses. Below them: what only the SQL faces have.
"""

from __future__ import annotations

import importlib
import sqlite3

import pytest

from memory_summary import Message, StoreError
from memory_summary.adapters import InMemoryStore, SqliteStore
from memory_summary.domain import BatchSavingStore
from memory_summary.testing.contract import StoreContract
from memory_summary.testing.history_contract import save
from tests.contract.stores import (
    SQL_KINDS,
    dispose,
    kind_of,
    make_postgres,
    make_redis,
    make_store,
)


class TestInMemoryStore(StoreContract):
    def make_store(self, tmp_path):
        return InMemoryStore()


class TestSqliteStore(StoreContract):
    def make_store(self, tmp_path):
        return SqliteStore(tmp_path / "store.sqlite3")


@pytest.mark.postgres
class TestPostgresStore(StoreContract):
    """The run's one schema, emptied before each test; skipped without a server.

    Creating a schema costs a PostgreSQL store ten times what its tests do; building
    one from nothing is tested by ``test_reopening_keeps_data_and_schema_version``
    and ``test_sql_schema.py``.
    """

    @pytest.fixture
    def store(self, shared_postgres):
        shared_postgres.clear_all()
        return shared_postgres


@pytest.mark.redis
class TestRedisStore(StoreContract):
    """A key prefix of its own per test on the session's throw-away redis-server."""

    @pytest.fixture
    def store(self, redis_server):
        made = make_redis()
        yield made
        dispose(made)


@pytest.mark.parametrize("kind", SQL_KINDS)
def test_reopening_keeps_data_and_schema_version(kind, tmp_path, sid):
    first = make_store(kind, tmp_path)
    saved = save(first, sid, 3)
    first.save_metadata("summary", sid, {"text": "kept"})
    token = first.acquire_lease(sid, owner="first", ttl_s=60)
    first.close()

    again = (
        make_postgres(first.schema)
        if kind == "postgres"
        else make_store(kind, tmp_path)
    )

    try:
        module = importlib.import_module(f"memory_summary.adapters.{kind}")
        assert again.schema_version() == module.SCHEMA_VERSION == 4
        assert again.get_history(sid) == saved
        assert again.get_metadata("summary", sid) == {"text": "kept"}
        assert again.acquire_lease(sid, owner="again", ttl_s=60) is None
        assert again.renew_lease(sid, token, ttl_s=60)
    finally:
        dispose(again)


def test_a_database_from_a_newer_release_is_refused(tmp_path):
    path = tmp_path / "newer.sqlite3"
    SqliteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO schema_version (version) VALUES (99)")

    with pytest.raises(StoreError, match="schema version 99, newer than"):
        SqliteStore(path)


def test_stores_say_whether_counting_is_a_local_read(store):
    assert store.counts_locally is (kind_of(store) == "memory")


def test_every_shipped_store_saves_batches_atomically(store):
    assert isinstance(store, BatchSavingStore)


def test_the_window_and_the_record_read_together_as_apart(store):
    from memory_summary.actors.records import read_window
    from memory_summary.domain import WindowReadingStore

    sid = "window-read"
    assert read_window(store, sid, limit=5, namespace="summary") == ([], None)
    for text in ("one", "two", "three"):
        store.save_message(sid, Message("user", text))
    assert read_window(store, sid, limit=2, namespace="summary") == (
        store.get_history(sid, limit=2),
        None,
    )
    store.save_metadata("summary", sid, {"text": "s", "generation": "g"})
    window, record = read_window(store, sid, limit=5, namespace="summary")
    assert window == store.get_history(sid, limit=5)
    assert record == store.get_metadata("summary", sid)
    if kind_of(store) != "redis":
        assert isinstance(store, WindowReadingStore)
