"""The PostgreSQL store, for several chat-server processes sharing sessions.

This face only connects, pools and defines the tables; ``sql.SqlStore`` is the store.
Each store lives in its own schema, so stores of two schemas in one database never see
or block each other. Leases are rows in that schema, timed by the database clock: they
bind every process, hold no connection while held and outlive a server restart. A
fenced commit serializes with every other commit and forget of its session through a
transaction-scoped advisory lock keyed on (schema, session).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import select
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import psycopg_pool
from psycopg.pq import TransactionStatus

from memory_summary.adapters.recall.postgres_index import (
    POSTINGS_SCHEMA,
    SESSION_INDEX_SCHEMA,
    STATISTICS_SCHEMA,
)
from memory_summary.adapters.recall.sql_index import PostgresIndex, backfill
from memory_summary.domain import ConfigError, StoreError, StoreUnavailable
from memory_summary.domain.config import RecallIndex, check_recall_index

from .core import SqlArchive, SqlStore
from .dialect import Dialect
from .driver import Executor, store_error

DSN_VARIABLE = "MEMORY_SUMMARY_PG_DSN"
LOCK_CLASS = 0x4D53  # "MS": our advisory-lock namespace, paired with hashtext(key)
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

# The columns of a stored message, shared by the history and the archive tables.
# Released migrations never change: a new column needs a new migration.
_MESSAGE_COLUMNS_V1 = """
        session_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        tool_calls TEXT,
        tool_call_id TEXT,
        name TEXT,
        kind TEXT,
        timestamp DOUBLE PRECISION,
        metadata TEXT"""
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE {s}.messages (
        id BIGSERIAL PRIMARY KEY,{columns},
        archived BOOLEAN NOT NULL DEFAULT FALSE
    );
    CREATE INDEX messages_by_session ON {s}.messages (session_id, archived, id);
    CREATE TABLE {s}.metadata (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (namespace, key)
    );
    CREATE TABLE {s}.archive (
        id BIGSERIAL PRIMARY KEY,{columns}
    );
    CREATE INDEX archive_by_session ON {s}.archive (session_id, id)
    """.replace("{columns}", _MESSAGE_COLUMNS_V1),
    # 2: compression leases, one row per session (expires_at: database clock seconds)
    """
    CREATE TABLE {s}.leases (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        token TEXT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL
    )
    """,
    # 3: content given as parts or None (JSON) and an assistant's refusal; rows
    # written before read as before (both NULL)
    """
    ALTER TABLE {s}.messages ADD COLUMN content_json TEXT;
    ALTER TABLE {s}.messages ADD COLUMN refusal TEXT;
    ALTER TABLE {s}.archive ADD COLUMN content_json TEXT;
    ALTER TABLE {s}.archive ADD COLUMN refusal TEXT
    """,
)
# 4: the history index: one row per message (its terms, their count and a tsvector
# of them with the session's lexeme), GIN-indexed, deleted with its message by the
# foreign key; then every stored message indexed (``search_index.backfill``, in the
# migration's transaction).
SEARCH_SCHEMA = """
    CREATE TABLE {s}.message_terms (
        id BIGINT PRIMARY KEY REFERENCES {s}.messages (id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        length INTEGER NOT NULL,
        terms TEXT NOT NULL,
        tsv TSVECTOR NOT NULL
    );
    CREATE INDEX message_terms_tsv ON {s}.message_terms USING gin (tsv);
    CREATE INDEX message_terms_by_session ON {s}.message_terms (session_id, length);
    CREATE INDEX messages_in_order ON {s}.messages (session_id, id)
    """
# 5: each session's search statistics (``postgres_index.STATISTICS_SCHEMA``).
# 6: how far a search indexed each session (``postgres_index.SESSION_INDEX_SCHEMA``);
# an old schema's messages are all indexed, and a first search moves the mark.
# 7: each term's messages in a session, in id order
# (``postgres_index.POSTINGS_SCHEMA``).
SCHEMA_VERSION = len(MIGRATIONS) + 4


def dialect(schema: str) -> Dialect:
    """Return how the queries are spelled for the tables of ``schema``."""
    return Dialect(
        clock="extract(epoch from clock_timestamp())::double precision",
        unlimited=None,
        tables=f'"{schema}".',
        scope=schema,
        placeholder="%s",
        true="TRUE",
        false="FALSE",
        archived="archived",  # BOOLEAN NOT NULL: no third value to place
        returning_id=" RETURNING id",
        lock_rows=" FOR UPDATE",
        lock_session=f"SELECT pg_advisory_xact_lock({LOCK_CLASS}, hashtext(%s))",
        sort_bytes=' COLLATE "C"',
    )


def _check_idle(conn: psycopg.Connection[Any]) -> None:
    """Refuse a pooled connection the server ended (a restart, a crash).

    An idle connection has nothing to read; if it has, the server most likely sent
    its goodbye, so ping it: a dead one raises and the pool hands out another. This
    keeps a write from being sent on a connection that was already gone.
    """
    if _has_input(conn.fileno()):
        conn.execute("")


def _has_input(fd: int) -> bool:
    """Tell, without waiting, whether ``fd`` has something to read."""
    if hasattr(select, "poll"):  # select() fails on descriptors >= FD_SETSIZE
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])


def _probe(dsn: str, timeout_s: float) -> None:
    """Connect once before the pool does: a bad or dead DSN fails at once, once.

    The pool would retry in the background and log each failed attempt until its
    timeout; one direct connection tells the same thing in one error.
    """
    try:
        with psycopg.connect(
            dsn, autocommit=True, connect_timeout=max(1, math.ceil(timeout_s))
        ):
            pass
    except psycopg.Error as exc:
        said = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        raise StoreUnavailable(f"cannot connect to PostgreSQL: {said}") from exc


class PostgresDriver:
    """A psycopg connection pool: lone autocommit statements and transactions."""

    def __init__(
        self,
        dsn: str,
        *,
        name: str,
        min_size: int,
        max_size: int,
        timeout_s: float,
    ) -> None:
        _probe(dsn, timeout_s)
        try:
            self._pool = psycopg_pool.ConnectionPool(
                dsn,
                min_size=min_size,
                max_size=max(max_size, min_size, 2),
                timeout=timeout_s,
                kwargs={"autocommit": True},
                check=_check_idle,
                open=False,
                name=name,
            )
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc
        try:
            self._pool.open(wait=True, timeout=timeout_s)
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc

    def read(
        self, sql: str, params: Sequence[object], what: str, about: str | None = None
    ) -> list[Any]:
        try:
            with self._pool.connection() as conn:
                return conn.execute(sql, params).fetchall()
        except psycopg.Error as exc:
            raise store_error(what, about, exc) from exc

    def write(
        self, sql: str, params: Sequence[object], what: str, about: str | None = None
    ) -> tuple[int, int | None]:
        try:
            with self._pool.connection() as conn:
                cursor = conn.execute(sql, params)  # autocommit: atomic on its own
                row = cursor.fetchone() if cursor.description else None
                return cursor.rowcount, None if row is None else int(row[0])
        except psycopg.Error as exc:
            raise store_error(what, about, exc) from exc

    @contextlib.contextmanager
    def transaction(
        self, what: str, about: str | None = None
    ) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as conn:
                conn.execute("BEGIN")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.info.transaction_status != TransactionStatus.IDLE:
                        with contextlib.suppress(psycopg.Error):
                            conn.execute("ROLLBACK")
                    raise
        except psycopg.Error as exc:
            raise store_error(what, about, exc) from exc

    def close(self) -> None:
        self._pool.close()


class PostgresStore(SqlStore):
    """A memory store in one PostgreSQL schema (psycopg 3 with a connection pool).

    Args:
        dsn: the connection string; default ``$MEMORY_SUMMARY_PG_DSN``.
        schema: the PostgreSQL schema holding the tables (created if missing).
        min_size: the fewest connections the pool keeps open.
        max_size: the most connections the pool opens (operations beyond wait
            for one, up to ``timeout_s``).
        timeout_s: how long to wait for a connection.
        create: create the schema and tables when missing (the default); False
            opens only a schema that already holds this library's store and raises
            ``StoreUnavailable`` otherwise, creating nothing (tools that only read).
        recall_index: when a session is indexed for search (``IndexPolicyStore``):
            ``"lazy"`` at its first search, ``"eager"`` in the statement that saves
            each message, ``"off"`` never (search refused). An engine applies its own
            ``SummaryConfig.recall_index`` when it is wired.

    Raises:
        ConfigError: ``schema`` is not a name this store uses (``[a-z_][a-z0-9_]*``,
            at most 63 characters); nothing was connected to.
        StoreUnavailable: the database cannot be reached, or (``create=False``) the
            schema is missing or holds no store of this library.

    Example:
        >>> dsn = "host=127.0.0.1 dbname=test user=postgres"
        >>> store = PostgresStore(dsn)  # doctest: +SKIP
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        schema: str = "memory_summary",
        min_size: int = 1,
        max_size: int = 8,
        timeout_s: float = 10.0,
        create: bool = True,
        recall_index: RecallIndex = "lazy",
    ) -> None:
        dsn = dsn or os.environ.get(DSN_VARIABLE)
        if not dsn:
            raise StoreError(f"PostgresStore needs a DSN argument or ${DSN_VARIABLE}")
        if not _SCHEMA_NAME.match(schema):
            raise ConfigError("schema", schema, _schema_names_allowed(schema))
        policy = check_recall_index(recall_index)
        self.schema = schema
        driver = PostgresDriver(
            dsn,
            name=f"memory-summary-{schema}",
            min_size=min_size,
            max_size=max_size,
            timeout_s=timeout_s,
        )
        quoted = f'"{schema}"'
        search = PostgresIndex(
            f"{quoted}.",
            driver,
            f"pg_advisory_xact_lock{{mode}}({LOCK_CLASS}, hashtext(%s))",
            policy,
        )
        where = f"schema {schema}"

        def index_stored(tx: Executor) -> None:
            for statement in SEARCH_SCHEMA.replace("{s}", quoted).split(";"):
                tx.execute(statement, ())
            backfill(tx, search, f"{quoted}.", where)

        # 1-3, the index (4), then statistics (5), session marks (6), postings (7)
        migrations = [m.replace("{s}", quoted) for m in MIGRATIONS]
        later = (STATISTICS_SCHEMA, SESSION_INDEX_SCHEMA, POSTINGS_SCHEMA)
        statements = [tuple(s.replace("{s}", quoted) for s in m) for m in later]
        try:
            if not create:
                _check_installed(driver, schema)
            super().__init__(
                driver,
                dialect(schema),
                (*migrations, index_stored, *statements),
                where=where,
                search=search,
            )
        except BaseException:
            driver.close()
            raise

    def _before_migration(self, tx: Executor) -> None:
        # Serializes concurrent first starts of several processes on this schema.
        tx.execute(
            f"SELECT pg_advisory_xact_lock({LOCK_CLASS}, hashtext(%s))", (self.schema,)
        )
        tx.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"', ())

    def drop_schema(self) -> None:
        """Drop the schema and everything in it (tests and tear-downs)."""
        with self._driver.transaction("drop_schema", self.schema) as tx:
            tx.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE', ())


def _schema_names_allowed(schema: str) -> str:
    """Say which schema names are allowed, with the nearest one to ``schema``."""
    allowed = "a name of [a-z_][a-z0-9_]*, at most 63 characters"
    near = re.sub(r"[^a-z0-9_]", "_", schema.strip().lower())[:63]
    if near and not near[0].isdigit() and _SCHEMA_NAME.match(near):
        return f"{allowed} (did you mean {near!r}?)"
    return allowed


def _check_installed(driver: PostgresDriver, schema: str) -> None:
    """Refuse a schema that does not exist or holds no store of this library."""
    rows = driver.read(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s), "
        "to_regclass(%s) IS NOT NULL",
        (schema, f'"{schema}".schema_version'),
        "open",
        schema,
    )
    exists, installed = rows[0]
    if not exists:
        raise StoreUnavailable(
            f"schema {schema!r} does not exist in this database; nothing was created "
            "(check the schema name)"
        )
    if not installed:
        raise StoreUnavailable(
            f"schema {schema!r} holds no memory-summary store (another "
            "application's?); nothing was installed in it"
        )


class PostgresArchive(SqlArchive):
    """The archive in the store's own schema: separators commit with the compression.

    Args:
        store: the ``PostgresStore`` whose schema holds the archive messages; pass
            the same store to the engine, so a compression's separator commits in
            its own transaction.
    """

    def __init__(self, store: PostgresStore) -> None:
        super().__init__(store)
