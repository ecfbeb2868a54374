"""The PostgreSQL store, for several chat-server processes sharing sessions.

Same contract as ``SqliteStore``, plus ``compaction_lock``: a session-level advisory
lock, held on its own connection for the whole compression, so that across every
process at most one compression of a session runs at a time. A process that dies
drops its connection and with it the lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping

import attrs
import psycopg
import psycopg_pool
from psycopg import sql

from memory_summary.domain import Message, StoreError

from .message_rows import (
    SELECT_COLUMNS,
    check_limit,
    message_values,
    metadata_json,
    row_message,
)

log = logging.getLogger(__name__)

DSN_VARIABLE = "MEMORY_SUMMARY_PG_DSN"
LOCK_CLASS = 0x4D53  # "MS": our advisory-lock namespace, paired with hashtext(session)
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
)
SCHEMA_VERSION = len(MIGRATIONS)
_COLUMNS = (
    "session_id, role, content, tool_calls, tool_call_id, name, kind, "
    "timestamp, metadata"
)


class PostgresStore:
    """A memory store in PostgreSQL (psycopg 3 with a connection pool).

    Args:
        dsn: the connection string; default ``$MEMORY_SUMMARY_PG_DSN``.
        schema: the PostgreSQL schema holding the tables (created if missing).
        min_size, max_size: the connection pool's bounds.

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
    ) -> None:
        dsn = dsn or os.environ.get(DSN_VARIABLE)
        if not dsn:
            raise StoreError(f"PostgresStore needs a DSN argument or ${DSN_VARIABLE}")
        if not _SCHEMA_NAME.match(schema):
            raise StoreError(f"schema={schema!r} is invalid; allowed: [a-z_][a-z0-9_]*")
        self.schema = schema
        self._s = sql.Identifier(schema)
        try:
            self._pool = psycopg_pool.ConnectionPool(
                dsn,
                min_size=min_size,
                max_size=max(max_size, min_size, 2),
                timeout=timeout_s,
                kwargs={"autocommit": True},
                open=True,
                name=f"memory-summary-{schema}",
            )
            self._pool.wait(timeout=timeout_s)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreError(f"cannot connect to PostgreSQL: {exc}") from exc
        self._migrate()

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=self._s)

    @contextlib.contextmanager
    def _transaction(self, what: str) -> Iterator[psycopg.Connection]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as exc:
            raise StoreError(f"{what} failed: {exc}") from exc
        except psycopg_pool.PoolTimeout as exc:
            raise StoreError(f"{what} failed: no database connection: {exc}") from exc

    def _read(self, what: str, query: str, params: tuple[object, ...]) -> list[tuple]:
        try:
            with self._pool.connection() as conn:
                return conn.execute(self._q(query), params).fetchall()
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreError(f"{what} failed: {exc}") from exc

    def _migrate(self) -> None:
        with self._transaction(f"migrating schema {self.schema}") as conn:
            # Serializes concurrent first starts of several processes.
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS,))
            conn.execute(self._q("CREATE SCHEMA IF NOT EXISTS {s}"))
            conn.execute(
                self._q(
                    "CREATE TABLE IF NOT EXISTS {s}.schema_version "
                    "(version INT NOT NULL)"
                )
            )
            row = conn.execute(
                self._q("SELECT max(version) FROM {s}.schema_version")
            ).fetchone()
            current = (row[0] if row else None) or 0
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"schema {self.schema} has version {current}, newer than this "
                    f"library's {SCHEMA_VERSION}; upgrade memory-summary"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version - 1].split(";"):
                    if statement.strip():
                        conn.execute(self._q(statement))
                conn.execute(
                    self._q("INSERT INTO {s}.schema_version (version) VALUES (%s)"),
                    (version,),
                )
                log.info(
                    "postgres %s: migrated to schema version %d", self.schema, version
                )

    def schema_version(self) -> int:
        """Return the schema's version."""
        return int(
            self._read(
                "schema_version", "SELECT max(version) FROM {s}.schema_version", ()
            )[0][0]
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._pool.close()

    def drop_schema(self) -> None:
        """Drop the schema and everything in it (tests and tear-downs)."""
        with self._transaction(f"dropping schema {self.schema}") as conn:
            conn.execute(self._q("DROP SCHEMA IF EXISTS {s} CASCADE"))

    @contextlib.contextmanager
    def compaction_lock(self, session_id: str) -> Iterator[bool]:
        """Try to take the session's cluster-wide compaction lock; yield if it did."""
        try:
            with self._pool.connection() as conn:
                row = conn.execute(
                    "SELECT pg_try_advisory_lock(%s, hashtext(%s))",
                    (LOCK_CLASS, session_id),
                ).fetchone()
                locked = bool(row and row[0])
                try:
                    yield locked
                finally:
                    if locked:
                        conn.execute(
                            "SELECT pg_advisory_unlock(%s, hashtext(%s))",
                            (LOCK_CLASS, session_id),
                        )
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreError(
                f"compaction_lock for {session_id!r} failed: {exc}"
            ) from exc

    def save_message(self, session_id: str, message: Message) -> Message:
        values = message_values(message)
        with self._transaction(f"save_message for {session_id!r}") as conn:
            row = conn.execute(
                self._q(
                    f"INSERT INTO {{s}}.messages ({_COLUMNS}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
                ),
                (session_id, *values),
            ).fetchone()
        assert row is not None
        return attrs.evolve(message, id=int(row[0]), metadata=dict(message.metadata))

    def get_history(self, session_id: str, limit: int | None = None) -> list[Message]:
        return self._newest(session_id, limit, "AND archived = FALSE")

    def get_full_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        return self._newest(session_id, limit, "")

    def _newest(self, session_id: str, limit: int | None, active: str) -> list[Message]:
        check_limit(limit)
        rows = self._read(
            "get_history",
            f"SELECT {SELECT_COLUMNS} FROM {{s}}.messages "
            f"WHERE session_id = %s {active} "
            "ORDER BY id DESC LIMIT %s",
            (session_id, limit),
        )
        return [row_message(row) for row in reversed(rows)]

    def count_history(self, session_id: str) -> int:
        rows = self._read(
            "count_history",
            "SELECT count(*) FROM {s}.messages "
            "WHERE session_id = %s AND archived = FALSE",
            (session_id,),
        )
        return int(rows[0][0])

    def get_oldest_history(
        self, session_id: str, limit: int, after_id: int | None = None
    ) -> list[Message]:
        rows = self._read(
            "get_oldest_history",
            f"SELECT {SELECT_COLUMNS} FROM {{s}}.messages WHERE session_id = %s "
            "AND archived = FALSE AND id > %s ORDER BY id LIMIT %s",
            (session_id, after_id or 0, limit),
        )
        return [row_message(row) for row in rows]

    def trim_history(self, session_id: str, keep_recent: int) -> int:
        if keep_recent < 0:
            raise ValueError(f"keep_recent={keep_recent} is invalid; allowed: int >= 0")
        with self._transaction(f"trim_history for {session_id!r}") as conn:
            row = conn.execute(
                self._q(
                    "SELECT id FROM {s}.messages "
                    "WHERE session_id = %s AND archived = FALSE "
                    "ORDER BY id DESC LIMIT 1 OFFSET %s"
                ),
                (session_id, keep_recent),
            ).fetchone()
            return 0 if row is None else self._archive_through(conn, session_id, row[0])

    def _archive_through(
        self, conn: psycopg.Connection, session_id: str, through_id: int
    ) -> int:
        cursor = conn.execute(
            self._q(
                "UPDATE {s}.messages SET archived = TRUE "
                "WHERE session_id = %s AND archived = FALSE AND id <= %s"
            ),
            (session_id, through_id),
        )
        return cursor.rowcount

    def commit_compaction(
        self,
        session_id: str,
        *,
        through_id: int,
        summary: Mapping[str, object] | None,
        namespace: str,
        separator: Callable[[int], Message | None] | None = None,
    ) -> int:
        with self._transaction(f"commit_compaction for {session_id!r}") as conn:
            archived = self._archive_through(conn, session_id, through_id)
            if (
                summary is not None
            ):  # serialized inside: a failure rolls the archive back
                self._upsert(conn, namespace, session_id, summary)
            marker = separator(archived) if separator is not None else None
            if marker is not None:
                self._insert_archive(conn, session_id, marker)
        return archived

    def _upsert(
        self,
        conn: psycopg.Connection,
        namespace: str,
        key: str,
        data: Mapping[str, object],
    ) -> None:
        conn.execute(
            self._q(
                "INSERT INTO {s}.metadata (namespace, key, data) VALUES (%s, %s, %s) "
                "ON CONFLICT (namespace, key) DO UPDATE SET data = EXCLUDED.data"
            ),
            (namespace, key, metadata_json(namespace, key, data)),
        )

    def _insert_archive(
        self, conn: psycopg.Connection, session_id: str, message: Message
    ) -> int:
        row = conn.execute(
            self._q(
                f"INSERT INTO {{s}}.archive ({_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
            ),
            (session_id, *message_values(message)),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        with self._transaction(f"save_metadata {namespace}/{key}") as conn:
            self._upsert(conn, namespace, key, data)

    def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        rows = self._read(
            "get_metadata",
            "SELECT data FROM {s}.metadata WHERE namespace = %s AND key = %s",
            (namespace, key),
        )
        if not rows:
            return None
        data: dict[str, object] = json.loads(rows[0][0])
        return data

    def list_metadata(self, namespace: str) -> list[str]:
        rows = self._read(
            "list_metadata",
            "SELECT key FROM {s}.metadata WHERE namespace = %s "
            'ORDER BY key COLLATE "C"',
            (namespace,),
        )
        return [row[0] for row in rows]

    def delete_metadata(self, namespace: str, key: str) -> bool:
        with self._transaction(f"delete_metadata {namespace}/{key}") as conn:
            cursor = conn.execute(
                self._q("DELETE FROM {s}.metadata WHERE namespace = %s AND key = %s"),
                (namespace, key),
            )
        return cursor.rowcount > 0

    def clear_session(self, session_id: str) -> None:
        with self._transaction(f"clear_session {session_id!r}") as conn:
            conn.execute(
                self._q("DELETE FROM {s}.messages WHERE session_id = %s"), (session_id,)
            )

    def clear_all(self) -> None:
        with self._transaction("clear_all") as conn:
            conn.execute(self._q("TRUNCATE {s}.messages, {s}.metadata, {s}.archive"))

    def save_archive_message(self, session_id: str, message: Message) -> Message:
        """Write a message to the archive table (``PostgresArchive`` uses this)."""
        with self._transaction(f"archive message for {session_id!r}") as conn:
            row_id = self._insert_archive(conn, session_id, message)
        return attrs.evolve(message, id=row_id)

    def archive_messages(self, session_id: str) -> list[Message]:
        """Return the session's archive messages, oldest first."""
        rows = self._read(
            "archive_messages",
            f"SELECT {SELECT_COLUMNS} FROM {{s}}.archive "
            "WHERE session_id = %s ORDER BY id",
            (session_id,),
        )
        return [row_message(row) for row in rows]


class PostgresArchive:
    """The archive in the store's own schema: separators commit with the compaction."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def save_message(self, session_id: str, message: Message) -> Message:
        return self.store.save_archive_message(session_id, message)

    def messages(self, session_id: str) -> list[Message]:
        """Return the session's archive messages, oldest first."""
        return self.store.archive_messages(session_id)
