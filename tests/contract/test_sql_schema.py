"""What only the SQL faces have: versioned schemas, migrations and the SQLite pool."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from memory_summary import Message, StoreError
from memory_summary.adapters import SqliteStore
from memory_summary.adapters.stores.sql import sqlite
from memory_summary.domain import CommitRequest
from tests.contract.stores import dispose, make_postgres, postgres_dsn

# sha256 of migration 1 as released: a released migration never changes.
RELEASED_V1 = {
    "sqlite": "41418179bffecbf48cacc4ca8433ab5c965dbb3607748f03d1cca312d9385300",
    "postgres": "ca250bd4eb9cdcdb6c66f881c3c16830339d79d48099bb185884c95ece50ded8",
}


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def test_released_sqlite_migration_1_is_unchanged():
    assert digest(sqlite.MIGRATIONS[0]) == RELEASED_V1["sqlite"]


@pytest.mark.postgres
def test_released_postgres_migration_1_is_unchanged():
    from memory_summary.adapters.stores.sql import postgres

    assert digest(postgres.MIGRATIONS[0]) == RELEASED_V1["postgres"]


def test_a_version_1_sqlite_file_is_migrated_and_keeps_its_data(tmp_path):
    path = tmp_path / "v1.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(sqlite.MIGRATIONS[0])
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version (version) VALUES (1)")
        conn.execute(
            "INSERT INTO messages (session_id, role, content) "
            "VALUES ('s1', 'user', 'old')"
        )
        conn.execute(
            "INSERT INTO metadata (namespace, key, data) VALUES ('summary', 's1', '{}')"
        )

    store = SqliteStore(path)
    try:
        assert store.schema_version() == sqlite.SCHEMA_VERSION
        assert [m.content for m in store.get_history("s1")] == ["old"]
        assert store.get_metadata("summary", "s1") == {}
        assert store.acquire_lease("s1", owner="new", ttl_s=60) is not None
    finally:
        store.close()


def test_a_version_4_sqlite_file_counts_its_sessions_statistics_when_migrated(
    tmp_path,
):
    from memory_summary.domain.recall import query_terms
    from tests.integration.test_sqlite_index import (
        _counted_statistics,
        _kept_statistics,
        _to_version_4,
    )

    path = tmp_path / "v4.sqlite3"
    store = SqliteStore(path, recall_index="eager")  # as version 4 indexed
    try:
        store.save_messages(
            "s1", [Message("user", f"zebra {i} kiwi") for i in range(5)]
        )
        store.save_messages("s2", [Message("user", "zebra giraffe")] * 3)
        before = store.search_messages("s1", query_terms("zebra kiwi 3"), limit=5)
    finally:
        store.close()
    _to_version_4(path)

    store = SqliteStore(path)
    try:
        assert store.schema_version() == sqlite.SCHEMA_VERSION == 6
        with contextlib.closing(sqlite3.connect(path)) as conn:
            kept = _kept_statistics(conn)
            assert kept == _counted_statistics(conn)
        assert kept[0] == {"s1": (5, 15), "s2": (3, 6)}
        assert kept[1][("s1", "kiwi")] == 5
        assert kept[1][("s2", "zebra")] == 3
        assert store.search_messages("s1", query_terms("zebra kiwi 3"), limit=5) == (
            before
        )
        store.forget_session("s2", namespaces=[])
        store.save_message("s1", Message("user", "after: zebra"))
        store.search_messages("s1", query_terms("zebra"), limit=5)
        with contextlib.closing(sqlite3.connect(path)) as conn:
            assert not [key for key in _kept_statistics(conn)[1] if key[0] == "s2"]
            assert _kept_statistics(conn) == _counted_statistics(conn)
    finally:
        store.close()


@pytest.mark.postgres
def test_a_version_1_postgres_schema_is_migrated_and_keeps_its_data():
    import psycopg

    from memory_summary.adapters.stores.sql import postgres

    first = make_postgres()
    schema = first.schema
    dispose(first)
    with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        for statement in postgres.MIGRATIONS[0].split(";"):
            conn.execute(statement.replace("{s}", f'"{schema}"'))
        conn.execute(f'CREATE TABLE "{schema}".schema_version (version INT NOT NULL)')
        conn.execute(f'INSERT INTO "{schema}".schema_version VALUES (1)')
        conn.execute(
            f'INSERT INTO "{schema}".messages (session_id, role, content) '
            "VALUES ('s1', 'user', 'old')"
        )

    store = make_postgres(schema)
    try:
        assert store.schema_version() == postgres.SCHEMA_VERSION
        assert [m.content for m in store.get_history("s1")] == ["old"]
        assert store.acquire_lease("s1", owner="new", ttl_s=60) is not None
    finally:
        dispose(store)


@pytest.mark.postgres
def test_concurrent_first_starts_on_one_schema_migrate_once():
    from memory_summary.adapters.stores.sql import postgres

    schema = make_postgres().schema  # a name nobody else uses
    dispose_later = []
    first = None
    try:
        barrier = threading.Barrier(4)

        def start(_):
            barrier.wait()
            return make_postgres(schema)

        with ThreadPoolExecutor(4) as pool:
            dispose_later = list(pool.map(start, range(4)))
        first = dispose_later[0]

        assert {s.schema_version() for s in dispose_later} == {postgres.SCHEMA_VERSION}
    finally:
        for store in dispose_later[1:]:
            store.close()
        if first is not None:
            dispose(first)


def test_a_closed_store_refuses_work(tmp_path):
    store = SqliteStore(tmp_path / "closed.sqlite3")
    store.close()

    with pytest.raises(StoreError, match="closed"):
        store.get_history("s1")


def test_a_busy_pool_makes_callers_wait_and_then_fail_cleanly(tmp_path):
    store = SqliteStore(tmp_path / "pool.sqlite3", pool_size=1, busy_timeout_s=0.2)
    holding, release = threading.Event(), threading.Event()
    saved = store.save_message("s1", Message("user", "m"))

    def hold(
        archived,
    ):  # runs inside the commit's transaction, holding the one connection
        holding.set()
        assert release.wait(10)

    with ThreadPoolExecutor(2) as pool:
        commit = pool.submit(
            store.commit,
            CommitRequest(
                session_id="s1",
                namespace="summary",
                record={"generation": "g1"},
                expect_generation=None,
                through_id=saved.id,
                expect_archived=1,
                separator=hold,
            ),
        )
        assert holding.wait(10)
        with pytest.raises(StoreError, match="no free SQLite connection"):
            store.get_history("s1")
        waiting = pool.submit(store.count_history, "s1")
        release.set()

        assert commit.result(10).committed
        assert waiting.result(10) == 0
    store.close()


def test_an_in_memory_sqlite_store_works_from_many_threads():
    store = SqliteStore(":memory:")
    try:
        with ThreadPoolExecutor(4) as pool:
            list(
                pool.map(
                    lambda i: store.save_message("s", Message("user", f"{i}")),
                    range(40),
                )
            )

        assert store.count_history("s") == 40
    finally:
        store.close()
