"""One SQL core for every SQL store: the whole contract over a thin driver face.

``SqliteStore`` and ``PostgresStore`` differ only in how they connect, pool, define
their tables and spell a few things (a ``Dialect``). Everything else lives here, once:
the queries, the fenced commit, leases, forgetting, quarantine and row decoding.

A face (``SqlDriver``) is the only code that touches its driver: it runs statements
and turns the driver's exceptions into ``StoreError``, so none escapes ``adapters/``.
Every query the engine makes per turn or per compression is an index range scan on
``(session_id, archived, id)``, so its cost follows the active history, not the total.

Why about 410 lines: one concept, the store's contract over a driver; the records,
the history search and the fence's reads already live in modules of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeAlias

from memory_summary.adapters.recall.sql_index import SearchIndex
from memory_summary.adapters.stores.fence import (
    DeprecatedCommits,
    commit_prelude,
    fence_reason,
)
from memory_summary.adapters.stores.rows import (
    check_forget,
    check_key,
    check_limit,
    check_read,
    message_values,
    popped,
    row_message,
    stored_message,
)
from memory_summary.domain import (
    NO_SPAN,
    ActiveSpan,
    AttachedRecord,
    CommitRequest,
    CommitResult,
    Message,
    StoreUnavailable,
)

from .dialect import Dialect, render_queries
from .driver import Executor, SqlDriver
from .fence import DecodedRecords, Fenced, SqlCommitChecks, WrittenGenerations
from .history import SqlHistory
from .records import SqlRecords
from .sqlite_nulls import inline_nulls
from .turn import SqlTurnReads

log = logging.getLogger(__name__)


Migration: TypeAlias = "str | tuple[str, ...] | Callable[[Executor], None]"
"""A schema migration: statements separated by ``;``, a tuple of statements (each
run whole: a trigger's body holds ``;``), or a function run in its transaction (say,
building an index of the rows already stored)."""


class SqlStore(SqlHistory, SqlRecords, SqlTurnReads, DeprecatedCommits):
    """The contract of ``CompressionStore`` over any ``SqlDriver``; faces subclass it.

    A subclass builds its driver, dialect, history index and migrations and calls
    ``__init__``; it adds nothing else to the contract. The history index
    (``SearchableStore``) is written in the transaction of every ``save_message``.
    """

    counts_locally: ClassVar[bool] = False
    """Whether ``count_history`` is a cheap local read the host's thread may run."""

    def __init__(
        self,
        driver: SqlDriver,
        dialect: Dialect,
        migrations: Sequence[Migration],
        *,
        where: str,
        search: SearchIndex,
    ) -> None:
        self._driver = driver
        self._dialect = dialect
        self._search = search
        self._q = render_queries(dialect)
        self._where = where
        self._written = WrittenGenerations()
        self._decoded = DecodedRecords()
        self._migrate(migrations)

    def _before_migration(self, tx: Executor) -> None:
        """Prepare a migration transaction (the PostgreSQL face takes a lock)."""

    def _migrate(self, migrations: Sequence[Migration]) -> None:
        q, latest = self._q, len(migrations)
        with self._driver.transaction("migrating", self._where) as tx:
            self._before_migration(tx)
            tx.execute(q["create_versions"], ())
            current = tx.execute(q["schema_version"], ()).fetchone()[0] or 0
            if current > latest:
                raise StoreUnavailable(
                    f"{self._where} has schema version {current}, newer than this "
                    f"library's {latest}; upgrade memory-summary"
                )
            for version in range(current + 1, latest + 1):
                migration = migrations[version - 1]
                statements: Sequence[str] = ()
                if callable(migration):
                    migration(tx)
                elif isinstance(migration, str):
                    statements = migration.split(";")
                else:
                    statements = migration
                for statement in statements:
                    if statement.strip():
                        tx.execute(statement, ())
                tx.execute(q["insert_version"], (version,))
                log.info("%s: migrated to schema version %d", self._where, version)

    def schema_version(self) -> int:
        """Return the database's schema version."""
        return int(
            self._driver.read(self._q["schema_version"], (), "schema_version")[0][0]
        )

    def close(self) -> None:
        """Release every connection; the store cannot be used afterwards."""
        self._driver.close()

    def _lock_session(self, tx: Executor, session_id: str) -> None:
        """Serialize this transaction with every other one on the same session."""
        lock = self._dialect.lock_session
        if lock is not None:
            tx.execute(lock, (f"{self._dialect.scope}/{session_id}",))

    # -- messages

    def save_message(self, session_id: str, message: Message) -> Message:
        return self._save_one(session_id, message)

    def _save_one(self, session_id: str, message: Message) -> Message:
        """Store one message in one statement (atomic on its own)."""
        check_key("session_id", session_id)
        return self._insert_one(session_id, message, message_values(message))

    def _insert_one(
        self, session_id: str, message: Message, values: tuple[object, ...]
    ) -> Message:
        """Store one message whose row ``values`` are already computed."""
        row_id = self._search.save(
            self._driver,
            self._q["insert_message"],
            session_id,
            values,
            self._search.prepare(message),
        )
        return stored_message(message, row_id)

    def save_messages(
        self, session_id: str, messages: Sequence[Message]
    ) -> list[Message]:
        """Store ``messages`` in order, in one transaction; see ``BatchSavingStore``.

        Locked like a commit, so two batches of one session never interleave. A
        batch of one is ``save_message``'s single statement, atomic on its own (a
        chat turn's reply: no BEGIN and COMMIT round trips).
        """
        check_key("session_id", session_id)
        rows = [message_values(message) for message in messages]  # all checked
        if not rows:
            return []
        if len(rows) == 1:  # not through save_message, which a subclass may route here
            return [self._insert_one(session_id, messages[0], rows[0])]
        terms = [self._search.prepare(message) for message in messages]
        insert, ids = self._q["insert_message"], []
        with self._driver.transaction("save_messages", session_id) as tx:
            self._lock_session(tx, session_id)
            for values, words in zip(rows, terms, strict=True):
                ids.append(self._search.insert(tx, insert, session_id, values, words))
        return [
            stored_message(m, row_id) for m, row_id in zip(messages, ids, strict=True)
        ]

    def get_history(self, session_id: str, limit: int | None = None) -> list[Message]:
        return self._newest("newest_active", session_id, limit)

    def get_full_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        return self._newest("newest_all", session_id, limit)

    def _newest(self, query: str, session_id: str, limit: int | None) -> list[Message]:
        check_read(session_id, limit)
        if limit == 0:
            return []
        rows = self._driver.read(
            self._q[query],
            (session_id, self._dialect.unlimited if limit is None else limit),
            "get_history",
            session_id,
        )
        rows.reverse()
        return [row_message(row) for row in rows]

    def read_window(
        self, session_id: str, *, limit: int, namespace: str
    ) -> tuple[list[Message], dict[str, object] | None]:
        """Return the newest ``limit`` active messages and the record, in one query.

        See ``WindowReadingStore``: one statement instead of two round trips.
        """
        check_key("session_id", session_id)
        check_key("namespace", namespace)
        check_limit(limit)
        if limit == 0:
            return [], self.get_metadata(namespace, session_id)
        rows = self._driver.read(
            self._q["newest_active_and_record"],
            (session_id, namespace, session_id, session_id, limit),
            "read_window",
            session_id,
        )
        if not rows:  # no message: the record alone
            return [], self.get_metadata(namespace, session_id)
        data = rows[0][-1]
        record = (
            None if data is None else self._decoded.decoded(namespace, session_id, data)
        )
        rows.reverse()
        return [row_message(row[:-1]) for row in rows], record

    def count_history(self, session_id: str) -> int:
        check_key("session_id", session_id)
        rows = self._driver.read(
            self._q["count_active"], (session_id,), "count_history", session_id
        )
        return int(rows[0][0])

    def active_span(self, session_id: str) -> ActiveSpan:
        check_key("session_id", session_id)
        rows = self._driver.read(
            self._q["active_span"], (session_id,) * 3, "active_span", session_id
        )
        count, first, last, total = rows[0]
        if not count:
            return NO_SPAN
        return ActiveSpan(int(count), int(first), int(last), int(total))

    def get_oldest_history(
        self, session_id: str, limit: int, after_id: int | None = None
    ) -> list[Message]:
        check_read(session_id, limit, after_id=after_id)
        rows = self._driver.read(
            self._q["oldest_active"],
            (session_id, 0 if after_id is None else after_id, limit),
            "get_oldest_history",
            session_id,
        )
        return [row_message(row) for row in rows]

    def get_archived(
        self, session_id: str, *, after_id: int | None, through_id: int, limit: int
    ) -> list[Message]:
        check_read(session_id, limit, after_id=after_id, through_id=through_id)
        rows = self._driver.read(
            self._q["archived_range"],
            (session_id, 0 if after_id is None else after_id, through_id, limit),
            "get_archived",
            session_id,
        )
        return [row_message(row) for row in rows]

    def pop_message(self, session_id: str) -> Message | None:
        """Delete the newest active message and return it; see ``PoppingStore``.

        Locked like a commit, so it serializes with a compression of the session: a
        compression that read the popped message fails its archive count and is
        fenced; one that committed first leaves nothing active to pop.
        """
        check_key("session_id", session_id)
        q = self._q
        with self._driver.transaction("pop_message", session_id) as tx:
            self._lock_session(tx, session_id)
            row = tx.execute(q["newest_active_row"], (session_id,)).fetchone()
            if row is None:
                return None
            tx.execute(q["delete_message"], (session_id, row[0]))
        return popped(session_id, lambda: row_message(row))

    def trim_history(self, session_id: str, keep_recent: int) -> int:
        check_key("session_id", session_id)
        if keep_recent < 0:
            raise ValueError(f"keep_recent={keep_recent} is invalid; allowed: int >= 0")
        q = self._q
        with self._driver.transaction("trim_history", session_id) as tx:
            row = tx.execute(q["trim_cut"], (session_id, keep_recent)).fetchone()
            if row is None:
                return 0
            return tx.execute(q["archive_through"], (session_id, row[0])).rowcount

    def clear_session(self, session_id: str) -> None:
        check_key("session_id", session_id)
        self._driver.write(
            self._q["delete_messages"], (session_id,), "clear_session", session_id
        )

    def clear_all(self) -> None:
        q = self._q
        with self._driver.transaction("clear_all") as tx:
            for name in ("clear_messages", "clear_metadata", "clear_archive"):
                tx.execute(q[name], ())
            tx.execute(q["clear_leases"], ())

    # -- the fenced commit and forgetting

    def commit(self, request: CommitRequest) -> CommitResult:
        """The fenced commit, its attached record, the lease release: one transaction.

        See ``CommitRequest``. A stored record that cannot be decoded fences the
        commit (``"generation"``): it is never overwritten before the engine moved
        it aside with ``quarantine_metadata``. An attached record's stored one that
        cannot be decoded is left as it is, for the same reason.
        """
        data, attached = commit_prelude(request)
        q, sid, attach = self._q, request.session_id, request.attach
        wrote = False
        try:
            with self._driver.transaction("commit", sid) as tx:
                checks = SqlCommitChecks(
                    q,
                    self._dialect,
                    tx,
                    sid,
                    request.namespace,
                    self._written,
                    side=None if attach is None else attach.namespace,
                )
                archived = self._fenced(tx, request, checks)
                tx.execute(q["upsert_metadata"], (request.namespace, sid, data))
                self._written.wrote(request.namespace, sid, data, request.record)
                self._decoded.wrote(request.namespace, sid, data, request.record)
                separator = request.separator
                marker = separator(archived) if separator is not None else None
                if marker is not None:
                    values = (sid, *message_values(marker))
                    tx.execute(*inline_nulls(q["insert_archive"], values))
                if attach is not None and attached is not None:
                    wrote = self._attach(tx, checks, attach, attached)
                if request.release_lease:
                    tx.execute(q["release_lease"], (sid, request.lease))
        except Fenced as fence:
            log.debug("session %s: commit fenced (%s)", sid, fence.reason)
            return CommitResult(fenced=fence.reason)
        return CommitResult(
            archived=archived, attached=wrote, released=request.release_lease
        )

    def _fenced(
        self, tx: Executor, request: CommitRequest, checks: SqlCommitChecks
    ) -> int:
        """Lock the session, check the fences in order; return how many archived.

        Raises:
            Fenced: a check failed; the caller's transaction rolls back.
        """
        self._lock_session(tx, request.session_id)
        outcome = fence_reason(checks, request)
        if isinstance(outcome, str):
            raise Fenced(outcome)  # rolls back an archive already made
        return outcome

    def _attach(
        self,
        tx: Executor,
        checks: SqlCommitChecks,
        attach: AttachedRecord,
        data: str,
    ) -> bool:
        """Replace the attached record if its generation matches; tell whether."""
        namespace, session_id = attach.namespace, checks.session_id
        try:
            stored = checks.side_generation(namespace)
        except Fenced:
            return False  # undecodable: left for the reader to quarantine
        if stored != attach.expect_generation:
            return False
        tx.execute(self._q["upsert_metadata"], (namespace, session_id, data))
        self._written.wrote(namespace, session_id, data, attach.record)
        self._decoded.wrote(namespace, session_id, data, attach.record)
        return True

    def forget_session(self, session_id: str, *, namespaces: Sequence[str]) -> int:
        check_forget(session_id, namespaces)
        q = self._q
        with self._driver.transaction("forget_session", session_id) as tx:
            self._lock_session(tx, session_id)
            deleted = tx.execute(q["delete_messages"], (session_id,)).rowcount
            tx.execute(q["delete_archive"], (session_id,))
            tx.execute(q["delete_lease"], (session_id,))
            for namespace in namespaces:
                tx.execute(q["delete_metadata"], (namespace, session_id))
        return deleted


class SqlArchive:
    """The archive in a SQL store's database: separators commit with compressions."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    def save_message(self, session_id: str, message: Message) -> Message:
        return self.store.save_archive_message(session_id, message)

    def forget_session(self, session_id: str) -> int:
        """Delete the session's archive messages; return how many."""
        return self.store.delete_archive_messages(session_id)

    def messages(self, session_id: str) -> list[Message]:
        """Return the session's archive messages, oldest first."""
        return self.store.archive_messages(session_id)
