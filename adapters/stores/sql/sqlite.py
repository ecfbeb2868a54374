"""The SQLite store, the embedded default: WAL mode, versioned schema, small pool.

This face only connects, pools and defines the tables; ``sql.SqlStore`` is the store.
A lone statement runs in autocommit mode (atomic by itself, one round of locking);
only multi-statement work opens ``BEGIN IMMEDIATE``, which serializes writers across
every process sharing the file. Leases use this host's clock, ``time.time()``: every
process that opens one SQLite file runs on the same host. The write-ahead log is
checkpointed on a thread of the store's own, never on a writer's (``_wrote``).

Why about 520 lines: one concept, the SQLite file's connections (a fair pool, lone
writes, transactions, the log's checkpoints) and its schema's migrations.
"""

from __future__ import annotations

import collections
import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memory_summary.adapters.nudged import Nudged
from memory_summary.adapters.recall.sql_index import SqliteIndex
from memory_summary.adapters.recall.sqlite_index import (
    COUNT_ALL,
    SESSION_INDEX_SCHEMA,
    STATISTICS_SCHEMA,
)
from memory_summary.domain import StoreError
from memory_summary.domain.config import RecallIndex, check_recall_index

from .core import SqlArchive, SqlStore
from .dialect import Dialect
from .driver import Executor, store_error
from .sqlite_text import (
    driver_error,
    foreign_text_as_bytes,
    read_foreign_text,
    undecodable,
)

CHECKPOINT_EVERY = 250
"""Writes of this process between two checkpoints of the write-ahead log, run on a
thread of the store's own (a message's save adds about four pages to the log)."""
BACKSTOP_PAGES = 10_000
"""The log's size in pages (about 40 MB) at which a commit checkpoints it itself,
SQLite's own rule (its default is 1,000): reached only when the checkpoint thread
falls behind, or by another process's writes."""

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
    # 2: compaction leases, one row per session (expires_at: time.time() seconds)
    """
    CREATE TABLE leases (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        token TEXT NOT NULL,
        expires_at REAL NOT NULL
    ) WITHOUT ROWID;
    """,
    # 3: content given as parts or None (JSON) and an assistant's refusal; rows
    # written before read as before (both NULL)
    """
    ALTER TABLE messages ADD COLUMN content_json TEXT;
    ALTER TABLE messages ADD COLUMN refusal TEXT;
    ALTER TABLE archive ADD COLUMN content_json TEXT;
    ALTER TABLE archive ADD COLUMN refusal TEXT;
    """,
)
# 4: the history index: a column for a message's terms (written by 0.2; newer
# versions leave it NULL and compute the terms when the batch is taken in), FTS5
# over the terms (rowid = message id) taken in by batches up to
# ``index_state.last_id``, a trigger that
# unindexes a deleted message, and an index for reading a session in id order; then
# every stored message taken in (in the migration's transaction, with progress). A
# function, not a script: a trigger's body holds semicolons.
SEARCH_SCHEMA = (
    "ALTER TABLE messages ADD COLUMN search_terms TEXT",
    "CREATE INDEX messages_in_order ON messages (session_id, id)",
    "CREATE VIRTUAL TABLE message_index USING fts5(session, terms, tokenize = 'ascii')",
    "INSERT INTO message_index (message_index, rank) VALUES ('rank', 'bm25(0.0, 1.0)')",
    "CREATE VIRTUAL TABLE message_vocab USING fts5vocab(message_index, 'row')",
    "CREATE TABLE index_state (last_id INTEGER NOT NULL, rows INTEGER NOT NULL)",
    "INSERT INTO index_state (last_id, rows) VALUES (0, 0)",
    "CREATE TRIGGER messages_unindex AFTER DELETE ON messages BEGIN "
    "DELETE FROM message_index WHERE rowid = old.id; "
    "UPDATE index_state SET rows = rows - 1 WHERE old.id <= last_id; END",
)
# 5: each session's statistics, kept by the batch and the delete trigger
# (``sqlite_index.STATISTICS_SCHEMA``), counted from the rows already indexed.
# 6: how far a lazy search indexed each session (``sqlite_index.SESSION_INDEX_SCHEMA``);
# an old database's rows are all indexed up to ``index_state.last_id`` already.
SCHEMA_VERSION = len(MIGRATIONS) + 3
_CLOCK_FUNCTION = "memory_summary_now"
DIALECT = Dialect(clock=f"{_CLOCK_FUNCTION}()", unlimited=-1)
_DRIVER_ERRORS = (sqlite3.Error, OverflowError, UnicodeError)


class _Slot:
    """Where ``SqliteDriver._give`` puts the connection a waiting thread receives."""

    __slots__ = ("conn",)

    def __init__(self) -> None:
        self.conn: sqlite3.Connection | None = None


class SqliteDriver:
    """Connections to one SQLite file: a bounded pool, lone writes, transactions.

    The pool is a deque (taking and returning are atomic); a condition variable is
    touched only when every connection is out. Threads that wait are served in turn:
    a connection given back goes straight to the first of them, and a thread that
    finds any waiting queues behind it, so a busy host thread cannot keep taking the
    only connection back (a pool of 1 starved the engine's gate counts until the host
    paused, and compressions ran only then). Writers of one process take turns on a
    lock: SQLite admits one writer at a time anyway, and a writer that found the file
    locked would sleep in SQLite's busy handler (1, 2, 5, 10... ms), which is what a
    chat turn's ``save_message`` would wait for behind a compression's commit. Other
    processes still meet the busy handler (``busy_timeout_s``).
    """

    def __init__(self, path: str, *, pool_size: int, busy_timeout_s: float) -> None:
        self.path = path
        self._memory = path == ":memory:"
        self._busy_timeout_s = busy_timeout_s
        self._size = 1 if self._memory else max(pool_size, 1)
        self._idle: collections.deque[sqlite3.Connection] = collections.deque()
        self._all: list[sqlite3.Connection] = []
        self._freed = threading.Condition(threading.Lock())
        # each waiting thread's slot, first come first served: _give fills the first
        self._queue: collections.deque[_Slot] = collections.deque()
        self._closed = False
        self._writing = threading.Lock()
        # one cursor per connection for the lone statements: ``conn.execute`` makes
        # (and frees) a cursor each time, about 2,400 instructions of an insert's
        # 97,000; a connection serves one thread at a time, so its cursor does too
        self._cursors: dict[sqlite3.Connection, sqlite3.Cursor] = {}
        self._writes = 0  # since the last nudge of ``_checkpoints`` (``_writing`` held)
        self._checkpoints = Nudged(
            self._checkpoint,
            repr(path),
            name="sqlite-checkpoint",
            what="checkpointing the write-ahead log",
        )
        self._checkpoint_conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout_s,
                isolation_level=None,  # autocommit: we open transactions ourselves
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open SQLite database {self.path!r}: {exc}"
            ) from exc
        try:
            if not self._memory:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.create_function(_CLOCK_FUNCTION, 0, time.time)
        except BaseException as exc:
            conn.close()  # never left to the collector (ResourceWarning on 3.13)
            if isinstance(exc, sqlite3.Error):
                raise StoreError(
                    f"cannot open SQLite database {self.path!r}: {exc}"
                ) from exc
            raise
        return conn

    def _take(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"SqliteStore {self.path!r} is closed")
        if not self._queue:  # a thread already waiting goes first
            try:
                return self._idle.pop()
            except IndexError:
                pass
        return self._take_or_wait()

    def _take_or_wait(self) -> sqlite3.Connection:
        deadline = time.monotonic() + self._busy_timeout_s
        with self._freed:
            if self._closed:  # close() may have run since _take looked
                raise StoreError(f"SqliteStore {self.path!r} is closed")
            if not self._queue:
                try:
                    return self._idle.pop()
                except IndexError:
                    pass
            if len(self._all) < self._size:
                conn = self._connect()
                self._cursors[conn] = conn.cursor()
                self._all.append(conn)
                return conn
            slot = _Slot()
            self._queue.append(slot)
            try:
                return self._wait_in_turn(slot, deadline)
            except BaseException:
                if slot.conn is None:
                    self._queue.remove(slot)  # by identity: _Slot has no __eq__
                elif self._closed:  # handed over, then closed: nobody else will
                    self._cursors.pop(slot.conn, None)
                    with contextlib.suppress(sqlite3.Error):
                        slot.conn.close()
                else:  # handed over as this thread was interrupted: pass it on
                    self._idle.append(slot.conn)
                    self._hand_over()
                raise

    def _wait_in_turn(self, slot: _Slot, deadline: float) -> sqlite3.Connection:
        """Wait, ``_freed`` held, until ``_give`` hands ``slot`` a connection."""
        while True:
            self._hand_over()  # one given back before this thread queued
            if slot.conn is not None:
                return slot.conn
            if self._closed:
                raise StoreError(f"SqliteStore {self.path!r} is closed")
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreError(
                    f"no free SQLite connection to {self.path!r} within "
                    f"{self._busy_timeout_s} s"
                )
            self._freed.wait(left)

    def _hand_over(self) -> None:
        """Give idle connections to the waiting threads, first come first served.

        Called with ``_freed`` held.
        """
        while self._queue:
            try:
                conn = self._idle.pop()
            except IndexError:
                return
            self._queue.popleft().conn = conn
            self._freed.notify_all()

    def _give(self, conn: sqlite3.Connection) -> None:
        self._idle.append(conn)
        if self._closed:  # closed while this one was out: close it now, here
            try:
                self._idle.remove(conn)
            except ValueError:  # close() took it from the pool and closes it
                return
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            self._cursors.pop(conn, None)
            return
        if self._queue:
            with self._freed:
                self._hand_over()

    def _cursor_rows(
        self, conn: sqlite3.Connection, sql: str, params: Sequence[object]
    ) -> list[Any]:
        """Return the rows of ``sql`` read through ``conn``'s own cursor.

        A fetch that fails (a row's text that cannot be decoded, an interrupt) leaves
        its statement pending, and with it the connection's read transaction: the
        cursor is closed (which ends both) and replaced before the error goes on.
        """
        cursor = self._cursors[conn]
        try:
            return cursor.execute(sql, params).fetchall()
        except BaseException:
            # the new one first: an interrupt between the two steps leaves the
            # pool a working cursor, never a closed one
            with contextlib.suppress(sqlite3.Error):
                self._cursors[conn] = conn.cursor()
            with contextlib.suppress(sqlite3.Error):
                cursor.close()
            raise

    def read(
        self, sql: str, params: Sequence[object], what: str, about: str | None = None
    ) -> list[Any]:
        conn = self._take()
        try:
            try:
                return self._cursor_rows(conn, sql, params)
            except sqlite3.OperationalError as exc:
                if not undecodable(exc):
                    raise
                return read_foreign_text(conn, sql, params)
        except _DRIVER_ERRORS as exc:
            raise store_error(what, about, exc) from exc
        finally:
            self._give(conn)

    def write(
        self, sql: str, params: Sequence[object], what: str, about: str | None = None
    ) -> tuple[int, int | None]:
        with self._writing:  # taken first: a waiting writer holds no connection
            conn = self._take()
            try:
                cursor = self._cursors[conn]
                # autocommit: atomic on its own. A lone write returns no rows here
                # (no RETURNING): a row left unread would keep the statement, and
                # the connection's transaction, open in this kept cursor.
                cursor.execute(sql, params)
                done = cursor.rowcount, cursor.lastrowid  # before another uses it
            except _DRIVER_ERRORS as exc:
                raise store_error(what, about, exc) from exc
            finally:
                self._give(conn)
            self._wrote()
        return done

    def _wrote(self) -> None:
        """Count a write (``_writing`` held); every ``CHECKPOINT_EVERY``, checkpoint.

        A commit that finds the log over SQLite's ``wal_autocheckpoint`` checkpoints
        it itself: it copies the log into the database and syncs it, milliseconds
        to tens of milliseconds, on the writer's thread, often the host's saving a
        chat turn, and under ``_writing``, so every other writer of this process
        waits as long. A passive checkpoint on a connection of its own, on a thread
        of the store's own, waits for no one and no one waits for it.
        """
        self._writes += 1
        if self._writes >= CHECKPOINT_EVERY and not self._memory:
            self._writes = 0
            self._checkpoints.nudge()

    def _checkpoint(self) -> tuple[int, int, int]:
        """Checkpoint the log as far as its readers allow (on ``_checkpoints``).

        Returns SQLite's answer: busy (1 if another checkpoint ran), the log's
        pages, the pages now in the database.
        """
        conn = self._checkpoint_conn
        if conn is None:
            conn = self._checkpoint_conn = self._connect()
        try:
            busy, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(str(exc)) from exc
        return int(busy), int(log), int(done)

    @contextlib.contextmanager
    def transaction(
        self, what: str, about: str | None = None
    ) -> Iterator[sqlite3.Connection]:
        with self._writing:  # taken first: a waiting writer holds no connection
            conn = self._take()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                    self._wrote()
                except BaseException:
                    if conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    raise
            except _DRIVER_ERRORS as exc:
                raise driver_error(what, about, exc) from exc
            finally:
                self._give(conn)

    def close(self) -> None:
        """Close every idle connection and refuse new ones.

        A connection a thread still holds is closed by that thread as it gives it
        back (``_give``): closing it under a running statement could crash the
        interpreter's sqlite3 module.
        """
        if not self._checkpoints.close():
            # a checkpoint still runs: its connection is left to the collector,
            # never closed under it
            self._checkpoint_conn = None
        with self._freed:
            self._closed = True
            self._all = []
            conns = []
            while True:
                try:
                    conns.append(self._idle.pop())
                except IndexError:  # noqa: PERF203 - pop, never a copy: see _give
                    break
            self._freed.notify_all()
        if self._checkpoint_conn is not None:
            conns.append(self._checkpoint_conn)
            self._checkpoint_conn = None
        failed: sqlite3.Error | None = None
        for conn in conns:  # each one, even when another fails to close
            self._cursors.pop(conn, None)  # idle: no thread reads it
            try:
                conn.close()
            except sqlite3.Error as exc:  # and close the others
                failed = exc
        if failed is not None:
            raise StoreError(f"closing SQLite database {self.path!r}: {failed}")


class SqliteStore(SqlStore):
    """A memory store in one SQLite file, safe to use from many threads and processes.

    Args:
        path: the database file (created with its schema if missing); ``":memory:"``
            keeps everything in one private in-memory connection.
        pool_size: connections shared by all threads (each operation borrows one).
        busy_timeout_s: how long a writer waits for another before failing.
        recall_index: when a session is indexed for search (``IndexPolicyStore``):
            ``"lazy"`` at its first search, ``"eager"`` in batches as it is saved,
            ``"off"`` never (search refused). An engine applies its own
            ``SummaryConfig.recall_index`` when it is wired.

    >>> from memory_summary import Message
    >>> store = SqliteStore(":memory:")
    >>> store.save_message("s1", Message("user", "hi")).id
    1
    >>> store.close()
    """

    counts_locally = False
    """The threshold count runs on the engine's gate threads, not the host's: under
    write contention a WAL reader can wait in SQLite's read-lock retries (milliseconds)
    even for a one-row count, which made ``turn_after``'s p99 reach 10-15 ms with 8
    host threads; handed off, it stays under 0.1 ms."""

    def __init__(
        self,
        path: str | Path,
        *,
        pool_size: int = 4,
        busy_timeout_s: float = 10.0,
        recall_index: RecallIndex = "lazy",
    ) -> None:
        self.path = str(path)
        policy = check_recall_index(recall_index)
        driver = SqliteDriver(
            self.path, pool_size=pool_size, busy_timeout_s=busy_timeout_s
        )
        where = repr(self.path)
        search = SqliteIndex(driver, where, policy)
        self._index = search

        def index_stored(tx: Executor) -> None:
            for statement in SEARCH_SCHEMA:
                tx.execute(statement, ())
            with foreign_text_as_bytes(tx):  # another program's row is no failure
                search.take_in(tx, report=True)

        try:
            super().__init__(
                driver,
                DIALECT,
                (
                    *MIGRATIONS,
                    index_stored,
                    (*STATISTICS_SCHEMA, *COUNT_ALL),
                    SESSION_INDEX_SCHEMA,
                ),
                where=where,
                search=search,
            )
        except BaseException:
            search.close()
            driver.close()
            raise

    def close(self) -> None:
        """Stop the background indexing, then release every connection."""
        self._index.close()
        super().close()


class SqliteArchive(SqlArchive):
    """The archive in the store's own database: separators commit with the compaction.

    Args:
        store: the ``SqliteStore`` whose database holds the archive messages; pass
            the same store to the engine, so a compression's separator commits in
            its own transaction.

    >>> store = SqliteStore(":memory:")
    >>> archive = SqliteArchive(store)
    >>> archive.store is store
    True
    >>> store.close()
    """

    def __init__(self, store: SqliteStore) -> None:
        super().__init__(store)
