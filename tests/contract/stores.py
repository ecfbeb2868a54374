"""Builds each store under test; PostgreSQL gets a schema of its own per test.

Also the driver-level helpers the contract suite uses to play a foreign writer: they
write and read rows behind the store's back, as another program sharing the database
would.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn
from uuid import uuid4

import pytest

from memory_summary import StoreError
from memory_summary.adapters import InMemoryStore, SqliteStore
from memory_summary.testing.lease_contract import poll_until_acquired

__all__ = [
    "DEFAULT_DSN",
    "SQL_KINDS",
    "STORE_KINDS",
    "dispose",
    "every_store",
    "in_ci",
    "kind_of",
    "make_postgres",
    "make_redis",
    "make_store",
    "poll_until_acquired",
    "postgres_dsn",
    "read_raw_metadata",
    "redis_client",
    "run_sql",
    "skip_or_fail",
    "store_for",
    "write_raw_metadata",
]

STORE_KINDS = [
    "memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("redis", marks=pytest.mark.redis),
]
SQL_KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
# An engine test about store behaviour (fencing, leases, persistence, SQL specifics)
# runs on every store: tests/integration/conftest.py gives the others the in-memory one.
every_store = pytest.mark.parametrize("store", STORE_KINDS, indirect=True)
DEFAULT_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres connect_timeout=3"


def postgres_dsn() -> str:
    return os.environ.get("MEMORY_SUMMARY_PG_DSN", DEFAULT_DSN)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def skip_or_fail(message: str) -> NoReturn:
    """Skip a test that lacks its database; under CI that is a failure."""
    if in_ci():
        pytest.fail(f"CI needs this: {message}")
    pytest.skip(message)


def make_postgres(schema: str | None = None) -> object:
    """Return a PostgresStore in a fresh schema; skip without a server (CI fails)."""
    from memory_summary.adapters import PostgresStore

    try:
        return PostgresStore(
            postgres_dsn(), schema=schema or f"t_{uuid4().hex[:12]}", timeout_s=5
        )
    except StoreError as exc:
        skip_or_fail(
            f"no PostgreSQL at {postgres_dsn()!r} ({exc}); start one on "
            "127.0.0.1:5432 or set MEMORY_SUMMARY_PG_DSN to run these tests"
        )


def make_redis(prefix: str | None = None, **options: object) -> object:
    """Return a RedisStore under a fresh key prefix on the session's throw-away server.

    Skips without redis-server or the redis package (a failure under CI).
    """
    from memory_summary.adapters import RedisStore
    from tests.redisserver import shared_server

    return RedisStore(
        shared_server().url,
        prefix=prefix or f"t-{uuid4().hex[:12]}:",
        **options,  # type: ignore[arg-type]
    )


def make_store(kind: str, tmp_path: Path) -> object:
    if kind == "memory":
        return InMemoryStore()
    if kind == "sqlite":
        return SqliteStore(tmp_path / "store.sqlite3")
    if kind == "postgres":
        return make_postgres()
    if kind == "redis":
        return make_redis()
    raise ValueError(kind)


def store_for(
    request: pytest.FixtureRequest, kind: str, tmp_path: Path
) -> Iterator[object]:
    """Yield a store of ``kind`` for one test and dispose of it afterwards.

    PostgreSQL is the run's one schema (``shared_postgres``), emptied first: creating
    a schema costs ten times what a test does with it. Redis gets a key prefix of its
    own on the run's throw-away server.
    """
    if kind == "postgres":
        shared = request.getfixturevalue("shared_postgres")
        shared.clear_all()  # type: ignore[attr-defined]
        yield shared
        return
    if kind == "redis":
        request.getfixturevalue("redis_server")
    made = make_store(kind, tmp_path)
    yield made
    dispose(made)


def open_store(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> Any:
    """Return a store of ``kind`` that is disposed of when the test ends.

    For a test that picks its store kind itself: ``next(store_for(...))`` alone
    never runs the disposal, and the collector then closes the connections (a
    ResourceWarning on Python 3.13, raised in whichever test runs next).
    """
    made = store_for(request, kind, tmp_path)
    store = next(made)
    request.addfinalizer(lambda: next(made, None))
    return store


def dispose(store: object) -> None:
    """Drop what a test store created and close it."""
    drop = getattr(store, "drop_schema", None)
    if drop is not None:
        drop()
    if kind_of(store) == "redis":
        store.clear_all()  # type: ignore[attr-defined]  # its prefix's keys only
    close = getattr(store, "close", None)
    if close is not None:
        close()


def kind_of(store: object) -> str:
    if isinstance(store, InMemoryStore):
        return "memory"
    if isinstance(store, SqliteStore):
        return "sqlite"
    if type(store).__name__ == "RedisStore":
        return "redis"
    return "postgres"


def run_sql(store: object, sql: str, params: tuple[object, ...] = ()) -> list[tuple]:
    """Run one statement on the store's database with the bare driver; return rows.

    Write ``{t}`` before a table name: it becomes the store's schema on PostgreSQL.
    Placeholders are ``?`` for both drivers.
    """
    kind = kind_of(store)
    if kind == "sqlite":
        path: str = store.path  # type: ignore[attr-defined]
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
            cursor = conn.execute(sql.replace("{t}", ""), params)
            return cursor.fetchall() if cursor.description else []
    if kind == "postgres":
        import psycopg

        with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
            text = sql.replace("{t}", f'"{store.schema}".').replace("?", "%s")  # type: ignore[attr-defined]
            cursor = conn.execute(text, params)
            return cursor.fetchall() if cursor.description else []
    raise ValueError(f"{kind} has no driver: nothing else can write to it")


def redis_record_keys(store: object, namespace: str, key: str) -> tuple[str, str]:
    """Return the keys of a Redis record and its namespace's index (docs/redis.md)."""
    prefix = store.prefix  # type: ignore[attr-defined]
    return f"{prefix}r:{namespace}\x00{key}", f"{prefix}x:{namespace}"


def redis_client(store: object):  # type: ignore[no-untyped-def]
    """Return a bare client of the Redis store's server, to write as another program."""
    import redis

    return redis.Redis.from_url(store.url)  # type: ignore[attr-defined]


def write_raw_metadata(store: object, namespace: str, key: str, raw: object) -> None:
    """Write a metadata row as a foreign program would, bypassing every check."""
    if kind_of(store) == "redis":
        record, index = redis_record_keys(store, namespace, key)
        with redis_client(store) as client:
            client.set(record, raw)  # type: ignore[arg-type]
            client.zadd(index, {key: 0})
        return
    run_sql(
        store,
        "DELETE FROM {t}metadata WHERE namespace = ? AND key = ?",
        (namespace, key),
    )
    run_sql(
        store,
        "INSERT INTO {t}metadata (namespace, key, data) VALUES (?, ?, ?)",
        (namespace, key, raw),
    )


def read_raw_metadata(store: object, namespace: str, key: str) -> object:
    """Return the raw data column of a metadata row (None when absent)."""
    if kind_of(store) == "redis":
        with redis_client(store) as client:
            raw = client.get(redis_record_keys(store, namespace, key)[0])
        return None if raw is None else raw.decode()
    rows = run_sql(
        store,
        "SELECT data FROM {t}metadata WHERE namespace = ? AND key = ?",
        (namespace, key),
    )
    return rows[0][0] if rows else None
