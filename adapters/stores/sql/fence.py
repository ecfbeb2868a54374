"""The SQL stores' side of the fenced commit: the fences' reads in its transaction.

``fence.fence_reason`` applies the order; ``SqlCommitChecks`` reads what it compares
in the commit's transaction, and ``Fenced`` rolls that transaction back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memory_summary.adapters.stores.rows import decode_record, record_generation
from memory_summary.domain import FenceReason, MalformedRecord

from .dialect import Dialect
from .driver import Executor


class Fenced(Exception):
    """Raised inside a commit's transaction to roll it back and report why."""

    def __init__(self, reason: FenceReason) -> None:
        super().__init__(reason)
        self.reason: FenceReason = reason


def stored_generation_of(
    namespace: str, key: str, row: Sequence[object] | None
) -> str | None:
    """Return the generation of a stored record's row (None: no record).

    Raises:
        Fenced: the record cannot be decoded (``"generation"``).
    """
    if row is None:
        return None
    try:
        return record_generation(decode_record(namespace, key, row[0]))
    except MalformedRecord:
        raise Fenced("generation") from None


class SqlCommitChecks:
    """The fences' reads for one commit (``fence.CommitChecks``), in its transaction.

    Where every write transaction is serialized (SQLite: no row locks to take), the
    lease and the record are read in one statement; elsewhere the lease row is
    locked by its own read (``lock_rows``), so a broken lease waits for the commit.
    ``archivable`` archives in the transaction: a later fence rolls it back.
    """

    def __init__(
        self,
        queries: Mapping[str, str],
        dialect: Dialect,
        tx: Executor,
        session_id: str,
        namespace: str,
    ) -> None:
        self._q = queries
        self._serialized = not dialect.lock_rows
        self._tx = tx
        self._session_id = session_id
        self._namespace = namespace
        self._row: Sequence[object] | None = None
        self._read = False

    def lease_held(self, lease: str) -> bool:
        tx, sid = self._tx, self._session_id
        if self._serialized:  # one row, with or without a record
            data, held = tx.execute(
                self._q["lease_and_metadata"], (self._namespace, sid, sid, lease)
            ).fetchone()
            self._row, self._read = (None if data is None else (data,)), True
            return bool(held)
        return tx.execute(self._q["check_lease"], (sid, lease)).fetchone() is not None

    def stored_generation(self) -> str | None:
        if not self._read:
            self._row = self._tx.execute(
                self._q["lock_metadata"], (self._namespace, self._session_id)
            ).fetchone()
        return stored_generation_of(self._namespace, self._session_id, self._row)

    def archivable(self, through_id: int) -> int:
        return int(
            self._tx.execute(
                self._q["archive_through"], (self._session_id, through_id)
            ).rowcount
        )
