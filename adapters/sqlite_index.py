"""The history index of the SQLite store: an FTS5 table, taken in by the batch."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from memory_summary.domain import StoreError
from memory_summary.domain.ranking import (
    CANDIDATES,
    PER_TERM,
    bm25_search,
    informative,
    seed_terms,
)
from memory_summary.domain.recall import message_terms

from .driver import Executor, SqlDriver
from .index_terms import (
    BACKFILL_PAGE,
    CATCH_UP_EVERY,
    Matches,
    fts5_term,
    logs_progress,
    session_term,
)
from .message_rows import SELECT_COLUMNS, row_message

log = logging.getLogger(__name__)


def _fts5_totals(rows: list[Any]) -> tuple[int, int]:
    """Return FTS5's row count and the total length of the ``terms`` column.

    They are FTS5's "averages" record (rowid 1 of its ``_data`` table): varints, the
    row count then each column's total size (``session``, ``terms``).
    """
    if not rows or rows[0][0] is None:
        return 0, 0
    block, at = bytes(rows[0][0]), 0
    values: list[int] = []
    while at < len(block) and len(values) < 3:
        value = 0
        for _ in range(8):
            byte = block[at]
            at += 1
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        else:
            value = (value << 8) | block[at]
            at += 1
        values.append(value)
    if len(values) < 3:
        return 0, 0
    return values[0], values[2]


def _with_terms(insert: str) -> str:
    """Return SQLite's message ``insert`` that also writes the row's search terms."""
    return insert.replace(") VALUES (", ", search_terms) VALUES (?, ", 1)


class SqliteIndex:
    """FTS5 table ``message_index(session, terms)``, rowid = message id.

    A message's terms are written in its own row (``messages.search_terms``), in the
    one statement that stores it; FTS5 takes rows in by the batch (``catch_up``):
    before every search, and every ``CATCH_UP_EVERY`` messages. An FTS5 insert per
    message would open a segment per transaction, several times the cost of the
    message's own insert; a batch costs a few microseconds a row. A search therefore
    always sees exactly the stored messages. ``index_state.last_id`` is the highest
    id taken in: SQLite commits writers one at a time, in id order.
    """

    placeholder = "?"
    id_source = "json_each(?) AS c"
    join = "CROSS JOIN"  # SQLite: the left table drives
    _window = (
        "SELECT m.id FROM json_each(?) AS r CROSS JOIN messages m "
        "ON m.session_id = ? AND m.id BETWEEN json_extract(r.value, '$[0]') "
        "AND json_extract(r.value, '$[1]')"
    )

    def window(
        self,
        read: Callable[[str, Sequence[object]], list[Any]],
        session_id: str,
        ranges: Sequence[tuple[int, int]],
        *,
        archived_only: bool,
    ) -> list[int]:
        if not ranges:
            return []
        sql = self._window + (" AND m.archived = 1" if archived_only else "")
        rows = read(sql, (json.dumps([list(r) for r in ranges]), session_id))
        return [int(row[0]) for row in rows]

    def __init__(self, driver: SqlDriver, where: str) -> None:
        self._driver = driver
        self._where = where
        self._insert = (
            "INSERT INTO message_index (rowid, session, terms) VALUES (?, ?, ?)"
        )
        # The term alone, walked newest first inside the session's id span, each row
        # checked against the session: FTS5 ANDing the session term reads the
        # session's whole doclist, several times slower on a big session.
        newest = (
            "SELECT i.rowid FROM message_index i JOIN messages m ON m.id = i.rowid "
            "AND m.session_id = ?{archived} WHERE message_index MATCH ? "
            "AND i.rowid BETWEEN ? AND ? ORDER BY i.rowid DESC LIMIT ?"
        )
        self._newest = newest.format(archived="")
        self._newest_archived = newest.format(archived=" AND m.archived = 1")
        self._span = (  # two subqueries: each an index seek
            "SELECT (SELECT min(id) FROM messages WHERE session_id = ?), "
            "(SELECT max(id) FROM messages WHERE session_id = ?)"
        )
        self._terms = (
            "SELECT rowid, terms FROM message_index WHERE rowid IN "
            "(SELECT value FROM json_each(?))"
        )

    def save(
        self,
        driver: SqlDriver,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str],
    ) -> int:
        sql = _with_terms(insert)
        _, row_id = driver.write(
            sql, (session_id, *values, " ".join(terms)), "save_message", session_id
        )
        if row_id is None:
            raise StoreError(f"save_message for {session_id!r}: no id was returned")
        if row_id % CATCH_UP_EVERY == 0:
            self.catch_up()
        return row_id

    def insert(
        self,
        tx: Executor,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str],
    ) -> int:
        rows = tx.execute(_with_terms(insert), (session_id, *values, " ".join(terms)))
        row_id = getattr(rows, "lastrowid", None)
        if row_id is None:
            raise StoreError(f"save_messages for {session_id!r}: no id was returned")
        if row_id % CATCH_UP_EVERY == 0:
            self.take_in(tx)  # in the batch's transaction: undone with it
        return int(row_id)

    def catch_up(self) -> int:
        """Take every message stored since the last batch into FTS5; count them."""
        last = self._driver.read(
            "SELECT (SELECT last_id FROM index_state), "
            "(SELECT seq FROM sqlite_sequence WHERE name = 'messages')",
            (),
            "catch_up",
        )[0]
        if last[1] is None or int(last[0]) >= int(last[1]):
            return 0
        with self._driver.transaction("catch_up") as tx:
            return self.take_in(tx)

    def take_in(self, tx: Executor, *, report: bool = False) -> int:
        """Index the rows after ``index_state.last_id`` inside ``tx``; count them."""
        after = int(tx.execute("SELECT last_id FROM index_state", ()).fetchone()[0])
        total = 0
        if report:
            total = int(
                tx.execute(
                    "SELECT count(*) FROM messages WHERE id > ?", (after,)
                ).fetchone()[0]
            )
            if total:
                log.info(
                    "%s: indexing %d stored messages for search", self._where, total
                )
        done = 0
        page = (
            f"SELECT {SELECT_COLUMNS}, session_id, search_terms FROM messages "
            "WHERE id > ? ORDER BY id LIMIT ?"
        )
        while True:
            rows = tx.execute(page, (after, BACKFILL_PAGE)).fetchall()
            batch = []
            for row in rows:
                terms = row[-1]
                if terms is None:  # written before the index, or by a foreign writer
                    terms = " ".join(message_terms(row_message(row[:-2])))
                batch.append((int(row[0]), session_term(row[-2]), terms))
            if batch:
                tx.executemany(self._insert, batch)  # type: ignore[attr-defined]
                after = batch[-1][0]
            done += len(rows)
            if report and logs_progress(done, len(rows)):
                log.info("%s: indexed %d of %d messages", self._where, done, total)
            if len(rows) < BACKFILL_PAGE:
                break
        newest = tx.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'messages'", ()
        ).fetchone()
        top = max(after, int(newest[0]) if newest else 0)
        tx.execute("UPDATE index_state SET last_id = ?, rows = rows + ?", (top, done))
        return done

    def matches(
        self,
        read: Callable[[str, Sequence[object]], list[Any]],
        session_id: str,
        terms: Sequence[str],
        *,
        archived_only: bool,
    ) -> Matches:
        self.catch_up()
        # FTS5's statistics are the whole database's: so is what counts as frequent.
        documents, total = _fts5_totals(
            read("SELECT block FROM message_index_data WHERE id = 1", ())
        )
        counts = read(
            "SELECT term, doc FROM message_vocab WHERE term IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps(list(terms)),),
        )
        matching = {str(t): int(n) for t, n in counts}
        terms = informative(terms, matching, documents)
        if not terms:
            return []
        low, high = read(self._span, (session_id, session_id))[0]
        if low is None:
            return []
        newest = self._newest_archived if archived_only else self._newest
        ids: set[int] = set()
        for term in seed_terms(terms, matching):
            params = (session_id, fts5_term(term), low, high, PER_TERM)
            ids.update(int(row[0]) for row in read(newest, params))
        if not ids:
            return []
        frequencies, lengths = {}, {}
        for row in read(self._terms, (json.dumps(sorted(ids)),)):
            words = str(row[1]).split()
            frequencies[int(row[0])] = {term: words.count(term) for term in terms}
            lengths[int(row[0])] = len(words)
        return bm25_search(
            terms,
            frequencies,
            matching,
            lengths,
            documents=documents,
            average_length=total / documents if documents else 0.0,
            limit=CANDIDATES,
        )

    def id_list(self, ids: Sequence[int]) -> object:
        return json.dumps(list(ids))
