"""The SQL stores' side of the fenced commit: the fences' reads in its transaction.

``fence.fence_reason`` applies the order; ``SqlCommitChecks`` reads what it compares
in the commit's transaction, and ``Fenced`` rolls that transaction back.
``WrittenGenerations`` spares a commit decoding the records it compares when they are
exactly what the store wrote; ``DecodedRecords`` spares a read decoding a record whose
text it decoded before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from memory_summary.adapters.stores.rows import (
    decode_record,
    json_copy,
    plain_copy,
    record_generation,
)
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

    def known(self, namespace: str, key: str) -> tuple[str, str | None] | None:
        """Return the text last written at the key and its generation, if kept."""
        with self._lock:
            return self._texts.get((namespace, key))

    def generation(
        self, namespace: str, key: str, row: Sequence[object] | None
    ) -> str | None:
        """``stored_generation_of``, without decoding the text last written there.

        Raises:
            Fenced: the record cannot be decoded (``"generation"``).
        """
        if row is not None:
            raw = row[0]
            known = self.known(namespace, key)
            if known is not None and type(raw) is str and raw == known[0]:
                return known[1]
        return stored_generation_of(namespace, key, row)

    @property
    def chars(self) -> int:
        """How many characters are kept now."""
        with self._lock:
            return self._size


DECODED_CHARS = 4_000_000
"""The record characters a ``DecodedRecords`` keeps the mappings of at most."""


class DecodedRecords:
    """The mapping of the record text last read or written, per record.

    The summary record is read before every model call and the lineage before every
    compression, mostly unchanged since the last read. Decoding is a function of the
    text, so a read whose text equals the one kept here (compared whole) gets a copy
    of the mapping kept with it (``json_copy``: containers copied, scalars shared,
    a fraction of ``json.loads``' cost on a long summary). Any other text is decoded
    and kept instead. A record the store writes as an ``EncodedRecord`` (the lineage
    a commit attaches) is kept as written (``wrote``): it equals the decoding of its
    JSON, so the next read of that text (the next compression's) decodes nothing.
    Least recently used mappings go first once ``max_chars`` (of their texts) would
    be exceeded; a record larger than half of that is not kept. A big record is
    kept as well as a small one (a 1 MB summary costs about 2 ms a decoding): what a
    decoding costs grows with the text as what keeping it does. Its own budget: it
    never evicts a ``WrittenGenerations`` text (and keeps the very text object that
    one holds when the store wrote it: the text costs no memory twice).

    Thread-safety: every method may be called from any thread.
    """

    def __init__(self, max_chars: int = DECODED_CHARS) -> None:
        self._max = max_chars
        self._size = 0
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str], tuple[str, Mapping[str, object]]] = (
            OrderedDict()
        )

    def wrote(self, namespace: str, key: str, text: str, record: object) -> None:
        """Keep ``record`` as the mapping of ``text``, just written at the key.

        Only an ``EncodedRecord`` whose JSON is ``text``: it is what decoding that
        text gives (and cannot change). Any other record is left for the next read
        to decode.
        """
        if type(record) is not EncodedRecord or (
            record.json_text is not text and record.json_text != text
        ):
            return
        self._keep((namespace, key), text, record)

    def decoded(self, namespace: str, key: str, raw: object) -> dict[str, object]:
        """``decode_record(namespace, key, raw)``, decoding each text once.

        Returns a mapping of the caller's own: never the one kept.

        Raises:
            MalformedRecord: see ``decode_record``.
        """
        at = (namespace, key)
        with self._lock:
            kept = self._kept.get(at)
            if kept is not None:
                self._kept.move_to_end(at)
        if kept is not None and type(raw) is str and raw == kept[0]:
            return plain_copy(kept[1])
        record = decode_record(namespace, key, raw)
        if type(raw) is not str or len(raw) > self._max // 2:
            return record
        self._keep(at, raw, record)
        return json_copy(record)  # type: ignore[return-value]

    def _keep(
        self, at: tuple[str, str], text: str, record: Mapping[str, object]
    ) -> None:
        if len(text) > self._max // 2:
            return
        with self._lock:
            before = self._kept.pop(at, None)
            if before is not None:
                self._size -= len(before[0])
            self._kept[at] = (text, record)
            self._size += len(text)
            while self._size > self._max:
                _, (dropped, _) = self._kept.popitem(last=False)
                self._size -= len(dropped)

    @property
    def chars(self) -> int:
        """How many characters of text the kept mappings stand for."""
        with self._lock:
            return self._size


class SqlCommitChecks:
    """The fences' reads for one commit (``fence.CommitChecks``), in its transaction.

    Where every write transaction is serialized (SQLite: no row locks to take), the
    lease, the record and the attached record (``side``, in another namespace) are
    read in one statement: nothing else writes them before the commit ends. A
    record whose text is the one ``written`` kept is compared in SQL and comes back
    as ``1`` instead of its text (a text column never holds an integer), so its
    generation is known without copying the text out. Elsewhere the lease row is
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
        *,
        side: str | None = None,
    ) -> None:
        self._q = queries
        self._written = WrittenGenerations(0) if written is None else written
        self._serialized = not dialect.lock_rows
        self._tx = tx
        self._session_id = session_id
        self._namespace = namespace
        self._side = None if side == namespace else side
        self._generation: str | None = None
        self._read = False
        self._fenced = False
        self._side_generation: str | None = None
        self._side_read = False
        self._side_fenced = False

    def lease_held(self, lease: str) -> bool:
        tx, sid = self._tx, self._session_id
        if self._serialized:  # one row: both records and the lease
            mine = self._written.known(self._namespace, sid)
            side = self._side
            theirs = None if side is None else self._written.known(side, sid)
            raw, side_raw, held = tx.execute(
                self._q["lease_and_records"],
                (
                    None if mine is None else mine[0],
                    self._namespace,
                    sid,
                    None if theirs is None else theirs[0],
                    side,
                    sid,
                    sid,
                    lease,
                ),
            ).fetchone()
            # an undecodable record fences only after the lease is checked
            self._read = True
            try:
                self._generation = self._known(self._namespace, raw, mine)
            except Fenced:
                self._fenced = True
            if side is not None:
                self._side_read = True
                try:
                    self._side_generation = self._known(side, side_raw, theirs)
                except Fenced:
                    self._side_fenced = True
            return bool(held)
        return tx.execute(self._q["check_lease"], (sid, lease)).fetchone() is not None

    @property
    def session_id(self) -> str:
        """The session this commit is for."""
        return self._session_id

    def _known(
        self, namespace: str, raw: object, known: tuple[str, str | None] | None
    ) -> str | None:
        """Return the generation of a record read as ``lease_and_records`` does."""
        if type(raw) is int and known is not None:  # the text ``known`` holds
            return known[1]
        row = None if raw is None else (raw,)
        return self._written.generation(namespace, self._session_id, row)

    def stored_generation(self) -> str | None:
        if not self._read:
            row = self._tx.execute(
                self._q["lock_metadata"], (self._namespace, self._session_id)
            ).fetchone()
            return self._written.generation(self._namespace, self._session_id, row)
        if self._fenced:
            raise Fenced("generation")
        return self._generation

    def side_generation(self, namespace: str) -> str | None:
        """Return the generation of the session's record in ``namespace``.

        Read with the lease when it is the ``side`` of this commit; otherwise now.

        Raises:
            Fenced: the record cannot be decoded (``"generation"``).
        """
        if self._side_read and namespace == self._side:
            if self._side_fenced:
                raise Fenced("generation")
            return self._side_generation
        row = self._tx.execute(
            self._q["lock_metadata"], (namespace, self._session_id)
        ).fetchone()
        return self._written.generation(namespace, self._session_id, row)

    def archivable(self, through_id: int) -> int:
        return int(
            self._tx.execute(
                self._q["archive_through"], (self._session_id, through_id)
            ).rowcount
        )
