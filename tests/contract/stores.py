"""Builds each store under test; PostgreSQL gets a schema of its own per test."""

from __future__ import annotations

import os
from pathlib import Path
from uuid import uuid4

import pytest

from memory_summary import StoreError
from memory_summary.adapters import InMemoryStore, SqliteStore

STORE_KINDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
DEFAULT_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres connect_timeout=3"


def postgres_dsn() -> str:
    return os.environ.get("MEMORY_SUMMARY_PG_DSN", DEFAULT_DSN)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def make_postgres(schema: str | None = None) -> object:
    """Return a PostgresStore in a fresh schema; skip without a server (CI fails)."""
    from memory_summary.adapters import PostgresStore

    try:
        return PostgresStore(
            postgres_dsn(), schema=schema or f"t_{uuid4().hex[:12]}", timeout_s=5
        )
    except StoreError as exc:
        message = (
            f"no PostgreSQL at {postgres_dsn()!r} ({exc}); start one on 127.0.0.1:5432 "
            "or set MEMORY_SUMMARY_PG_DSN to run these tests"
        )
        if in_ci():
            pytest.fail(f"CI needs PostgreSQL: {message}")
        pytest.skip(message)


def make_store(kind: str, tmp_path: Path) -> object:
    if kind == "memory":
        return InMemoryStore()
    if kind == "sqlite":
        return SqliteStore(tmp_path / "store.sqlite3")
    if kind == "postgres":
        return make_postgres()
    raise ValueError(kind)


def dispose(store: object) -> None:
    """Drop what a test store created and close it."""
    drop = getattr(store, "drop_schema", None)
    if drop is not None:
        drop()
    close = getattr(store, "close", None)
    if close is not None:
        close()
