"""One suite for every store: InMemoryStore is the reference the others must match.

The suite is the public kit's ``StoreContract`` (``memory_summary.testing.contract``):
history, metadata, content parts, archived ranges, fencing, forgetting, leases and
hostile input. Each of the project's stores runs through it here, by the same one
subclass a store written elsewhere uses. Below them: what only the SQL faces have.
"""

from __future__ import annotations

import contextlib
import importlib
import sqlite3

import pytest

from memory_summary import MalformedRecord, Message, StoreError
from memory_summary.adapters import InMemoryStore, SqliteStore
from memory_summary.domain import AttachedRecord, BatchSavingStore, CommitResult
from memory_summary.testing.contract import LeaseLimitContract, StoreContract
from memory_summary.testing.history_contract import save
from tests.contract.stores import (
    SQL_KINDS,
    dispose,
    kind_of,
    make_postgres,
    make_redis,
    make_store,
    write_raw_metadata,
)


class TestInMemoryStore(StoreContract, LeaseLimitContract):
    def make_store(self, tmp_path):
        return InMemoryStore()


class TestSqliteStore(StoreContract, LeaseLimitContract):
    def make_store(self, tmp_path):
        return SqliteStore(tmp_path / "store.sqlite3")


@pytest.mark.postgres
class TestPostgresStore(StoreContract, LeaseLimitContract):
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
class TestRedisStore(StoreContract, LeaseLimitContract):
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
        module = importlib.import_module(f"memory_summary.adapters.stores.sql.{kind}")
        assert again.schema_version() == module.SCHEMA_VERSION
        assert {"sqlite": 6, "postgres": 7}[kind] == module.SCHEMA_VERSION
        assert again.get_history(sid) == saved
        assert again.get_metadata("summary", sid) == {"text": "kept"}
        assert again.acquire_lease(sid, owner="again", ttl_s=60) is None
        assert again.renew_lease(sid, token, ttl_s=60)
    finally:
        dispose(again)


def test_a_database_from_a_newer_release_is_refused(tmp_path):
    path = tmp_path / "newer.sqlite3"
    SqliteStore(path).close()
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
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
    for limit in (1, 2):  # a window shorter than the history still has the record
        assert read_window(store, sid, limit=limit, namespace="summary") == (
            store.get_history(sid, limit=limit),
            store.get_metadata("summary", sid),
        )
    assert isinstance(store, WindowReadingStore)


def test_the_window_read_together_keeps_instructions_and_the_archive_apart(store):
    from memory_summary.actors.records import read_window

    sid = "window-archive"
    saved = [store.save_message(sid, Message("system", "rules"))]
    saved += [store.save_message(sid, Message("user", f"m{i}")) for i in range(5)]
    store.trim_history(sid, 2)  # the instructions stay active below the archive

    for limit in (1, 2, 3, 4, 50):
        assert read_window(store, sid, limit=limit, namespace="summary") == (
            store.get_history(sid, limit=limit),
            None,
        )
    assert store.get_history(sid, limit=3) == [saved[0], *saved[-2:]]


def test_an_undecodable_record_fails_the_window_read_as_it_fails_a_read(
    foreign_store,
):
    from memory_summary.actors.records import read_window

    sid = "window-garbage"
    store = foreign_store
    store.save_message(sid, Message("user", "one"))
    write_raw_metadata(store, "summary", sid, "not json")

    with pytest.raises(MalformedRecord):
        store.get_metadata("summary", sid)
    with pytest.raises(MalformedRecord):
        read_window(store, sid, limit=5, namespace="summary")


def test_every_shipped_store_has_every_store_protocol(store):
    from memory_summary.domain import ports
    from memory_summary.domain.capabilities import missing_members

    protocols = [
        ports.CompressionStore,
        ports.PoppingStore,
        ports.BatchSavingStore,
        ports.SearchableStore,
        ports.WindowReadingStore,
        ports.SpanningStore,
        ports.MetadataPages,
        ports.SessionCountingStore,
        ports.LocallyCountingStore,
    ]

    assert {p.__name__: missing_members(store, p) for p in protocols} == {
        p.__name__: [] for p in protocols
    }


def test_the_deprecated_commit_methods_still_commit(store, sid):
    saved = save(store, sid, 3)

    with pytest.deprecated_call():
        first = store.commit_compaction(
            sid,
            namespace="summary",
            record={"generation": "g1"},
            expect_generation=None,
            through_id=saved[0].id,
            expect_archived=1,
        )
    with pytest.deprecated_call():
        second = store.commit_compaction_with(
            sid,
            namespace="summary",
            record={"generation": "g2"},
            expect_generation="g1",
            attach=AttachedRecord("lineage", {"generation": "l1"}, None),
        )

    assert first == CommitResult(archived=1)
    assert second == CommitResult(attached=True)
    assert store.get_history(sid) == saved[1:]
    assert store.get_metadata("summary", sid) == {"generation": "g2"}
    assert store.get_metadata("lineage", sid) == {"generation": "l1"}
