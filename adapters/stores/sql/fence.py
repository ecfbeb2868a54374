"""The SQL stores' side of the fenced commit: the fences' reads in its transaction.

``fence.fence_reason`` applies the order; ``SqlCommitChecks`` reads what it compares
in the commit's transaction, and ``Fenced`` rolls that transaction back.
``WrittenGenerations`` spares a commit decoding the records it compares when they are
exactly what the store wrote.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from memory_summary.adapters.stores.rows import decode_record, record_generation
from memory_summary.domain import EncodedRecord, FenceReason, MalformedRecord

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


WRITTEN_CHARS = 16_000_000
"""The record characters a ``WrittenGenerations`` keeps at most (about 16-64 MB)."""


class WrittenGenerations:
    """The generation of the record text a store last wrote, per record.

    A commit reads two records only for their ``"generation"``: the summary record
    (the fence) and the lineage it attaches (every kept summary's text). Decoding
    them whole each time cost more than the rest of the commit's SQL. The store
    therefore keeps, per (namespace, key), the exact text it last wrote there and
    that text's generation. A stored row holding that very text (compared whole)
    has that generation: decoding is a function of the text. Any other text (a
    foreign writer's edit, a record rewritten or moved aside by another process,
    corruption) is decoded in full, and one that cannot be is still fenced and left
    as it is. Least recently written records go first once ``max_chars`` would be
    exceeded; a record larger than that is not kept.

    Thread-safety: every method may be called from any thread.
    """

    def __init__(self, max_chars: int = WRITTEN_CHARS) -> None:
        self._max = max_chars
        self._size = 0
        self._lock = threading.Lock()
        self._texts: OrderedDict[tuple[str, str], tuple[str, str | None]] = (
            OrderedDict()
        )

    def wrote(self, namespace: str, key: str, text: str, record: object) -> None:
        """Remember that ``text``, the JSON of ``record``, was written at the key.

        Only a plain dict or an ``EncodedRecord`` is remembered: their
        ``"generation"`` is exactly the one their JSON holds. Any other mapping is
        forgotten, so the next read decodes.
        """
        at = (namespace, key)
        kind = type(record)
        if kind is not dict and kind is not EncodedRecord:
            self._drop(at)
            return
        generation = record_generation(record)  # type: ignore[arg-type]
        size = len(text)
        with self._lock:
            before = self._texts.pop(at, None)
            if before is not None:
                self._size -= len(before[0])
            if size > self._max:
                return
            self._texts[at] = (text, generation)
            self._size += size
            while self._size > self._max:
                _, (dropped, _) = self._texts.popitem(last=False)
                self._size -= len(dropped)

    def _drop(self, at: tuple[str, str]) -> None:
        with self._lock:
            before = self._texts.pop(at, None)
            if before is not None:
                self._size -= len(before[0])

    def generation(
        self, namespace: str, key: str, row: Sequence[object] | None
    ) -> str | None:
        """``stored_generation_of``, without decoding the text last written there.

        Raises:
            Fenced: the record cannot be decoded (``"generation"``).
        """
        if row is not None:
            raw = row[0]
            with self._lock:
                known = self._texts.get((namespace, key))
            if known is not None and type(raw) is str and raw == known[0]:
                return known[1]
        return stored_generation_of(namespace, key, row)

    @property
    def chars(self) -> int:
        """How many characters are kept now."""
        with self._lock:
            return self._size


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
        written: WrittenGenerations | None = None,
    ) -> None:
        self._q = queries
        self._written = WrittenGenerations(0) if written is None else written
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
        return self._written.generation(self._namespace, self._session_id, self._row)

    def archivable(self, through_id: int) -> int:
        return int(
            self._tx.execute(
                self._q["archive_through"], (self._session_id, through_id)
            ).rowcount
        )
