"""The SQLite store, the embedded default: WAL mode, versioned schema, bounded pool.

Every read that the engine makes per turn or per compression is an index range scan on
``(session_id, archived, id)``, so its cost follows the active history, not the total.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import attrs

from memory_summary.domain import Message, StoreError

from .message_rows import (
    SELECT_COLUMNS,
    check_limit,
    message_values,
    metadata_json,
    row_message,
)

log = logging.getLogger(__name__)

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
        timestamp REAL,
        metadata TEXT"""
MIGRATIONS: tuple[str, ...] = (
    # 1: messages, metadata and the archive of separator messages
    f"""
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,{_MESSAGE_COLUMNS_V1},
        archived INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX messages_by_session ON messages (session_id, archived, id);
    CREATE TABLE metadata (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (namespace, key)
    ) WITHOUT ROWID;
    CREATE TABLE archive (
        id INTEGER PRIMARY KEY AUTOINCREMENT,{_MESSAGE_COLUMNS_V1}
    );
    CREATE INDEX archive_by_session ON archive (session_id, id);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
_INSERT = (
    "INSERT INTO {table} (session_id, role, content, tool_calls, tool_call_id, name, "
    "kind, timestamp, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class SqliteStore:
    """A memory store in one SQLite file, safe to use from many threads.

    Args:
        path: the database file (created with its schema if missing); ``":memory:"``
            keeps everything in one private in-memory connection.
        pool_size: connections shared by all threads (each operation borrows one).
        busy_timeout_s: how long a writer waits for another before failing.

    >>> store = SqliteStore(":memory:")
    >>> store.save_message("s1", Message("user", "hi")).id
    1
    >>> store.close()
    """

    def __init__(
        self, path: str | Path, *, pool_size: int = 4, busy_timeout_s: float = 10.0
    ) -> None:
        self.path = str(path)
        self._memory = self.path == ":memory:"
        self._busy_timeout_s = busy_timeout_s
        self._size = 1 if self._memory else max(pool_size, 1)
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        with self._connection() as conn:
            self._migrate(conn)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout_s,
                isolation_level=None,
                check_same_thread=False,
            )
            if not self._memory:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open SQLite database {self.path!r}: {exc}"
            ) from exc
        return conn

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise StoreError(f"SqliteStore {self.path!r} is closed")
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            with self._lock:
                grow = len(self._all) < self._size
                if grow:
                    conn = self._connect()
                    self._all.append(conn)
            if not grow:
                conn = self._idle.get()
        try:
            yield conn
        finally:
            self._idle.put(conn)

    @contextlib.contextmanager
    def _transaction(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._connection() as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"{what} failed: {exc}") from exc
                raise

    def _read(self, what: str, sql: str, params: tuple[object, ...]) -> list[tuple]:
        with self._connection() as conn:
            try:
                return conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"{what} failed: {exc}") from exc

    def _migrate(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
            )
            row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
            current = row[0] or 0
            if current > SCHEMA_VERSION:
                conn.execute("ROLLBACK")
                raise StoreError(
                    f"{self.path!r} has schema version {current}, newer than this "
                    f"library's {SCHEMA_VERSION}; upgrade memory-summary"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version - 1].split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (version) VALUES (?)", (version,)
                )
                log.info("sqlite %s: migrated to schema version %d", self.path, version)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(f"migrating {self.path!r} failed: {exc}") from exc

    def schema_version(self) -> int:
        """Return the database's schema version."""
        return int(
            self._read("schema_version", "SELECT max(version) FROM schema_version", ())[
                0
            ][0]
        )

    def close(self) -> None:
        """Close every connection; the store cannot be used afterwards."""
        self._closed = True
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()

    def save_message(self, session_id: str, message: Message) -> Message:
        values = message_values(message)
        with self._transaction(f"save_message for {session_id!r}") as conn:
            cursor = conn.execute(
                _INSERT.format(table="messages"), (session_id, *values)
            )
        return _with_id(message, cursor.lastrowid)

    def get_history(self, session_id: str, limit: int | None = None) -> list[Message]:
        return self._newest(session_id, limit, active_only=True)

    def get_full_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        return self._newest(session_id, limit, active_only=False)

    def _newest(
        self, session_id: str, limit: int | None, *, active_only: bool
    ) -> list[Message]:
        check_limit(limit)
        where = "session_id = ? AND archived = 0" if active_only else "session_id = ?"
        rows = self._read(
            "get_history",
            f"SELECT {SELECT_COLUMNS} FROM messages WHERE {where} "
            "ORDER BY id DESC LIMIT ?",
            (session_id, -1 if limit is None else limit),
        )
        return [row_message(row) for row in reversed(rows)]

    def count_history(self, session_id: str) -> int:
        rows = self._read(
            "count_history",
            "SELECT count(*) FROM messages WHERE session_id = ? AND archived = 0",
            (session_id,),
        )
        return int(rows[0][0])

    def get_oldest_history(
        self, session_id: str, limit: int, after_id: int | None = None
    ) -> list[Message]:
        rows = self._read(
            "get_oldest_history",
            f"SELECT {SELECT_COLUMNS} FROM messages "
            "WHERE session_id = ? AND archived = 0 AND id > ? ORDER BY id LIMIT ?",
            (session_id, after_id or 0, limit),
        )
        return [row_message(row) for row in rows]

    def trim_history(self, session_id: str, keep_recent: int) -> int:
        if keep_recent < 0:
            raise ValueError(f"keep_recent={keep_recent} is invalid; allowed: int >= 0")
        with self._transaction(f"trim_history for {session_id!r}") as conn:
            row = conn.execute(
                "SELECT id FROM messages WHERE session_id = ? AND archived = 0 "
                "ORDER BY id DESC LIMIT 1 OFFSET ?",
                (session_id, keep_recent),
            ).fetchone()
            if row is None:
                return 0
            return _archive_through(conn, session_id, row[0])

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
            archived = _archive_through(conn, session_id, through_id)
            if (
                summary is not None
            ):  # serialized inside: a failure rolls the archive back
                _upsert_metadata(conn, namespace, session_id, summary)
            marker = separator(archived) if separator is not None else None
            if marker is not None:
                conn.execute(
                    _INSERT.format(table="archive"),
                    (session_id, *message_values(marker)),
                )
        return archived

    def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        with self._transaction(f"save_metadata {namespace}/{key}") as conn:
            _upsert_metadata(conn, namespace, key, data)

    def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        rows = self._read(
            "get_metadata",
            "SELECT data FROM metadata WHERE namespace = ? AND key = ?",
            (namespace, key),
        )
        if not rows:
            return None
        data: dict[str, object] = json.loads(rows[0][0])
        return data

    def list_metadata(self, namespace: str) -> list[str]:
        rows = self._read(
            "list_metadata",
            "SELECT key FROM metadata WHERE namespace = ? ORDER BY key",
            (namespace,),
        )
        return [row[0] for row in rows]

    def delete_metadata(self, namespace: str, key: str) -> bool:
        with self._transaction(f"delete_metadata {namespace}/{key}") as conn:
            cursor = conn.execute(
                "DELETE FROM metadata WHERE namespace = ? AND key = ?", (namespace, key)
            )
        return cursor.rowcount > 0

    def clear_session(self, session_id: str) -> None:
        with self._transaction(f"clear_session {session_id!r}") as conn:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))

    def clear_all(self) -> None:
        with self._transaction("clear_all") as conn:
            conn.execute("DELETE FROM messages")
            conn.execute("DELETE FROM metadata")
            conn.execute("DELETE FROM archive")

    def save_archive_message(self, session_id: str, message: Message) -> Message:
        """Write a message to the archive table (``SqliteArchive`` uses this)."""
        with self._transaction(f"archive message for {session_id!r}") as conn:
            cursor = conn.execute(
                _INSERT.format(table="archive"), (session_id, *message_values(message))
            )
        return _with_id(message, cursor.lastrowid)

    def archive_messages(self, session_id: str) -> list[Message]:
        """Return the session's archive messages, oldest first."""
        rows = self._read(
            "archive_messages",
            f"SELECT {SELECT_COLUMNS} FROM archive WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        return [row_message(row) for row in rows]


class SqliteArchive:
    """The archive in the store's own database: separators commit with the compaction.

    >>> store = SqliteStore(":memory:")
    >>> archive = SqliteArchive(store)
    >>> archive.store is store
    True
    >>> store.close()
    """

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def save_message(self, session_id: str, message: Message) -> Message:
        return self.store.save_archive_message(session_id, message)

    def messages(self, session_id: str) -> list[Message]:
        """Return the session's archive messages, oldest first."""
        return self.store.archive_messages(session_id)


def _archive_through(conn: sqlite3.Connection, session_id: str, through_id: int) -> int:
    cursor = conn.execute(
        "UPDATE messages SET archived = 1 "
        "WHERE session_id = ? AND archived = 0 AND id <= ?",
        (session_id, through_id),
    )
    return cursor.rowcount


def _upsert_metadata(
    conn: sqlite3.Connection, namespace: str, key: str, data: Mapping[str, object]
) -> None:
    conn.execute(
        "INSERT INTO metadata (namespace, key, data) VALUES (?, ?, ?) "
        "ON CONFLICT (namespace, key) DO UPDATE SET data = excluded.data",
        (namespace, key, metadata_json(namespace, key, data)),
    )


def _with_id(message: Message, row_id: int | None) -> Message:
    if row_id is None:
        raise StoreError("SQLite returned no id for the saved message")
    return attrs.evolve(message, id=row_id, metadata=dict(message.metadata))
