"""The history index of the SQLite store: an FTS5 table, taken in by the batch.

Why about 620 lines: one concept, the FTS5 index. Its schema and per-session statistics,
the catch-ups that take new messages in (off the host's thread under ``eager``, a
session at its search under ``lazy``), and the search over them are one body of SQL
and the code that binds it; they change together.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from memory_summary.adapters.nudged import Nudged
from memory_summary.adapters.stores.rows import SELECT_COLUMNS, row_message
from memory_summary.adapters.stores.sql.driver import Executor, SqlDriver
from memory_summary.adapters.stores.sql.sqlite_nulls import inline_nulls
from memory_summary.domain import MalformedRecord, Message, StoreError
from memory_summary.domain.config import RecallIndex
from memory_summary.domain.ranking import (
    PER_TERM,
    Coverage,
    bm25_search,
    informative,
    seed_terms,
)
from memory_summary.domain.recall import message_terms

from .terms import (
    BACKFILL_PAGE,
    CATCH_UP_EVERY,
    Matches,
    check_terms,
    fts5_term,
    logs_progress,
    session_term,
)

log = logging.getLogger(__name__)


_ARRAY = """'["' || replace(lower(i.c1), ' ', '","') || '"]'"""
_TOKENS = (
    "CREATE VIEW message_tokens AS SELECT i.id AS id, t.value AS term "
    f"FROM message_index_content i, json_each(CASE WHEN json_valid({_ARRAY}) "
    f"THEN {_ARRAY} ELSE '[]' END) AS t WHERE t.value <> ''"
)
"""Each indexed row's tokens (``id``, ``term``), read from FTS5's own copy of its terms
(``message_index_content``, column ``c1``) by key.

Terms are letters and digits joined by single spaces (``domain.recall``), which the
``ascii`` tokenizer reads as one token each, ASCII letters folded to lower case as
``lower`` folds them; so the text is a JSON array once its spaces are ``","``, and a
row's tokens are FTS5's: their number is its length in ``message_index_docsize``.
Text that is not (never written by this library) counts as no tokens rather than
failing the statement, a delete above all.
"""


def count_sql(source: str) -> tuple[str, str]:
    """Return the statements that add indexed rows to their sessions' statistics.

    ``source`` names the rows' ids as ``b.value``: ``json_each(?) AS b`` for a batch
    just taken in, or every indexed row for a migration. The first adds each row's
    session to ``session_totals`` (one document, its length in tokens), the second
    each of its distinct terms to ``session_terms``; the delete trigger takes them
    away again.
    """
    totals = (
        "INSERT INTO session_totals (session_id, documents, length) "
        "SELECT m.session_id, count(*), sum((SELECT count(*) FROM message_tokens k "
        f"WHERE k.id = c.id)) FROM {source} "
        "CROSS JOIN message_index_content c ON c.id = b.value "
        "CROSS JOIN messages m ON m.id = c.id WHERE true GROUP BY m.session_id "
        "ON CONFLICT (session_id) DO UPDATE SET "
        "documents = documents + excluded.documents, length = length + excluded.length"
    )
    terms = (
        "INSERT INTO session_terms (session_id, term, documents) "
        "SELECT session_id, term, count(*) FROM (SELECT DISTINCT m.id, m.session_id, "
        f"k.term FROM {source} CROSS JOIN messages m ON m.id = b.value "
        "CROSS JOIN message_tokens k ON k.id = m.id) "
        "WHERE true GROUP BY session_id, term "
        "ON CONFLICT (session_id, term) DO UPDATE SET "
        "documents = documents + excluded.documents"
    )
    return totals, terms


_GONE = "(SELECT term FROM message_tokens WHERE id = old.id)"
STATISTICS_SCHEMA = (
    "CREATE TABLE session_totals (session_id TEXT PRIMARY KEY, "
    "documents INTEGER NOT NULL, length INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE session_terms (session_id TEXT NOT NULL, term TEXT NOT NULL, "
    "documents INTEGER NOT NULL, PRIMARY KEY (session_id, term)) WITHOUT ROWID",
    _TOKENS,
    "DROP TRIGGER messages_unindex",
    "CREATE TRIGGER messages_unindex AFTER DELETE ON messages BEGIN "
    "UPDATE session_terms SET documents = documents - 1 "
    f"WHERE session_id = old.session_id AND term IN {_GONE}; "
    "DELETE FROM session_terms WHERE session_id = old.session_id "
    f"AND documents <= 0 AND term IN {_GONE}; "
    "UPDATE session_totals SET documents = documents - 1, length = length - "
    "(SELECT count(*) FROM message_tokens WHERE id = old.id) "
    "WHERE session_id = old.session_id "
    "AND EXISTS (SELECT 1 FROM message_index_content WHERE id = old.id); "
    "DELETE FROM session_totals WHERE session_id = old.session_id "
    "AND documents <= 0; "
    "DELETE FROM message_index WHERE rowid = old.id; "
    "UPDATE index_state SET rows = rows - 1 WHERE old.id <= last_id; END",
)
"""Migration 5: each session's statistics, kept as rows are taken in and deleted.

``session_totals`` holds a session's indexed messages and their summed length (in
tokens, as FTS5 counts them), ``session_terms`` each term's count of indexed messages
in the session. The delete trigger now takes a deleted message out of both (a session
or term left at 0 is deleted with it: a forgotten session leaves no term behind)
before unindexing it, in the deleting statement's transaction. The migration then
counts every row already indexed (``count_sql``). The statements stay short: the
schema is read by every new connection (and a file whose schema fits its first page
is still told apart as a damaged store, ``sqlite_file``).
"""
SESSION_INDEX_SCHEMA = (
    "CREATE TABLE session_index (session_id TEXT PRIMARY KEY, "
    "last_id INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TRIGGER messages_unmark AFTER DELETE ON messages WHEN NOT EXISTS "
    "(SELECT 1 FROM messages WHERE session_id = old.session_id) BEGIN "
    "DELETE FROM session_index WHERE session_id = old.session_id; END",
)
"""Migration 6: how far each session was indexed by a search (``recall_index='lazy'``).

``session_index.last_id``: every message of the session with an id up to it was
taken in (or deleted since); together with ``index_state.last_id`` (how far the
eager batches went, over every session) it bounds what a lazy search must still take
in. A session whose last message is deleted loses its row with it, so a forgotten
session leaves nothing behind; ids only grow, so the bound stays true meanwhile.
"""
_COUNT_BATCH = count_sql("json_each(?) AS b")
COUNT_ALL = count_sql("(SELECT id AS value FROM message_index_content) AS b")


def statistics_sql(terms: int) -> str:
    """Return the statement of a search's statistics, all from one snapshot.

    Parameters: ``statistics_params``. Returns one row: the session's indexed
    messages, their total length, its lowest and highest message id, then each
    term's count in the session (``domain.ranking``: every store counts in the
    session, so other sessions never change what is found; archived or not, the
    statistics are the whole session's). The counts are kept by the index as rows
    come and go (``STATISTICS_SCHEMA``): a few key lookups, whatever the session's
    size. Plain ``?`` placeholders: Python 3.12 deprecates numbered ones bound to a
    sequence (3.14 refuses them).
    """
    count = (
        "(SELECT documents FROM session_terms WHERE session_id = ? AND term = lower(?))"
    )
    counts = ", ".join([count] * terms)
    return (
        "SELECT coalesce((SELECT documents FROM session_totals WHERE session_id = ?)"
        ", 0), coalesce((SELECT length FROM session_totals WHERE session_id = ?), 0)"
        ", (SELECT min(id) FROM messages WHERE session_id = ?), "
        f"(SELECT max(id) FROM messages WHERE session_id = ?), {counts}"
    )


def statistics_params(session_id: str, terms: Sequence[str]) -> tuple[str, ...]:
    """Return ``statistics_sql``'s parameters, in the order its placeholders come."""
    return (session_id,) * 4 + tuple(
        value for term in terms for value in (session_id, term)
    )


_PAGE = (
    f"SELECT {SELECT_COLUMNS}, session_id, search_terms FROM messages "
    "WHERE id > ? ORDER BY id LIMIT ?"
)
_PAGE_THROUGH = (
    f"SELECT {SELECT_COLUMNS}, session_id, search_terms FROM messages "
    "WHERE id > ? AND id <= ? ORDER BY id LIMIT ?"
)


_SESSION_PAGE = (
    f"SELECT {SELECT_COLUMNS}, session_id, search_terms FROM messages "
    "WHERE session_id = ? AND id > ? AND id <= ? ORDER BY id LIMIT ?"
)
_SESSION_BOUNDS = (
    "SELECT max((SELECT last_id FROM index_state), coalesce((SELECT last_id FROM "
    "session_index WHERE session_id = ?), 0)), "
    "(SELECT seq FROM sqlite_sequence WHERE name = 'messages')"
)
_MARK_SESSION = (
    "INSERT INTO session_index (session_id, last_id) SELECT ?, ? WHERE EXISTS "
    "(SELECT 1 FROM messages WHERE session_id = ?) ON CONFLICT (session_id) "
    "DO UPDATE SET last_id = max(last_id, excluded.last_id)"
)
_STORED_UNINDEXED = (
    "SELECT m.id, i.id IS NOT NULL FROM json_each(?) AS b CROSS JOIN messages m "
    "ON m.id = b.value LEFT JOIN message_index_content i ON i.id = m.id"
)
"""Which of a batch's ids are still stored, and whether each is indexed already."""

_ADD_TOTALS = (
    "INSERT INTO session_totals (session_id, documents, length) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET documents = documents + "
    "excluded.documents, length = length + excluded.length"
)
_ADD_TERMS = (
    "INSERT INTO session_terms (session_id, term, documents) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id, term) DO UPDATE SET "
    "documents = documents + excluded.documents"
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def count_terms(texts: Sequence[str]) -> tuple[int, Counter[str]]:
    """Return the rows' summed length in tokens and each token's count of rows.

    As ``message_tokens`` reads FTS5's copy of a row's terms: split on spaces,
    ASCII letters folded to lower case (SQLite's ``lower``), empty tokens dropped.
    """
    length, documents = 0, Counter[str]()
    for text in texts:
        tokens = text.translate(_ASCII_LOWER).split(" ")
        tokens = [token for token in tokens if token]
        length += len(tokens)
        documents.update(set(tokens))
    return length, documents


_ROWS_PER_WRITE = 32
"""Rows FTS5 takes in per write transaction of ``catch_up`` (about 1-2 ms each)."""
_SESSION_ROWS_PER_WRITE = 256
"""Rows per write transaction of a lazy search's ``catch_up_session``: the search
waits for them all, so fewer, longer transactions (10-15 ms each) finish sooner."""
_SESSION_LOCKS = 64
"""Locks a session's lazy catch-up takes by its id's hash: one catch-up per session
at a time in a process; another session's search waits behind it only when their ids
share a lock (one chance in 64), where a single lock kept every search waiting."""


def _bookkeeping(where: str, *values: Any) -> list[int]:
    """Return the bookkeeping ``values`` as ids; ``MalformedRecord`` if one is none.

    ``index_state`` and ``session_index`` hold integer ids; text, NULL or infinity
    there (another program's) would reach the caller as a bare ``ValueError``. Only
    these values are checked: an error of the index's own code is no foreign data.
    """
    try:
        return [int(value) for value in values]
    except (ValueError, TypeError, OverflowError) as exc:
        raise MalformedRecord(
            f"{where}: the search index's bookkeeping (index_state, session_index) "
            f"holds a value this store never writes (another program's): {exc}"
        ) from exc


def _index_row(row: Sequence[Any]) -> tuple[int, str, str]:
    """Return a page row's FTS5 row: (message id, session term, terms).

    A row that is no message (another program's, ``MalformedRecord``) is taken in
    with no terms, so no search finds it, and one under a session id that is no
    text under a term no session has: either would otherwise stop every batch
    after it, and so every other session's search (docs/stores.md).
    """
    terms, session = row[-1], row[-2]
    if terms is None:  # the usual case; a row written by 0.2 holds its terms
        try:
            terms = " ".join(message_terms(row_message(row[:-2])))
        except MalformedRecord:  # logged by row_message
            terms = ""
    if type(session) is not str:  # session terms are ``s`` and hex digits
        return int(row[0]), "x", str(terms)
    return int(row[0]), session_term(session), str(terms)


class SqliteIndex:
    """FTS5 table ``message_index(session, terms)``, rowid = message id.

    A save stores the message alone: no terms are computed on the caller's thread.
    FTS5 takes stored rows in by the batch (``catch_up``): before every search, and
    on a thread of the index's own each time ``CATCH_UP_EVERY`` more messages were
    stored. A batch's terms are computed before its write transaction, so a save
    never waits behind them; an FTS5 insert per message would open a segment per
    transaction, several times the cost of the message's own insert, where a batch
    costs a few microseconds a row. A search therefore always sees exactly the stored
    messages. ``index_state.last_id`` is the highest id taken in: SQLite commits
    writers one at a time, in id order. Rows written with their terms
    (``messages.search_terms``, by versions before 0.3) are taken in with those.
    """

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
        sql = self._window + (" AND m.archived IS NOT 0" if archived_only else "")
        rows = read(sql, (json.dumps([list(r) for r in ranges]), session_id))
        return [int(row[0]) for row in rows]

    def __init__(
        self, driver: SqlDriver, where: str, policy: RecallIndex = "lazy"
    ) -> None:
        self.policy: RecallIndex = policy
        self._driver = driver
        self._where = where
        self._catching_up = threading.Lock()  # one batch of this process at a time
        # one lazy catch-up per session at a time; other sessions' searches go on
        self._session_locks = [threading.Lock() for _ in range(_SESSION_LOCKS)]
        self._indexer = Nudged(
            self.catch_up, where, name="sqlite-index", what="indexing new messages"
        )
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
        self._newest_archived = newest.format(archived=" AND m.archived IS NOT 0")
        self._terms = (
            "SELECT rowid, terms FROM message_index WHERE rowid IN "
            "(SELECT value FROM json_each(?))"
        )

    def prepare(self, message: Message) -> None:
        """Return None: a stored message is taken in later, by the batch."""
        return None

    def save(
        self,
        driver: SqlDriver,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str] | None,
    ) -> int:
        sql, params = inline_nulls(insert, (session_id, *values))
        _, row_id = driver.write(sql, params, "save_message", session_id)
        if row_id is None:
            raise StoreError(f"save_message for {session_id!r}: no id was returned")
        if self.policy == "eager" and row_id % CATCH_UP_EVERY == 0:
            self._indexer.nudge()
        return row_id

    def insert(
        self,
        tx: Executor,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str] | None,
    ) -> int:
        rows = tx.execute(*inline_nulls(insert, (session_id, *values)))
        row_id = getattr(rows, "lastrowid", None)
        if row_id is None:
            raise StoreError(f"save_messages for {session_id!r}: no id was returned")
        if self.policy == "eager" and row_id % CATCH_UP_EVERY == 0:
            self._indexer.nudge()  # runs once the batch is committed (or finds less)
        return int(row_id)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the background catch-up is neither pending nor running."""
        return self._indexer.wait_idle(timeout)

    def close(self) -> None:
        """Stop the background catch-up (the store closes its connections after)."""
        self._indexer.close()

    def catch_up(self) -> int:
        """Take every message stored since the last batch into FTS5; count them.

        Each page is read and its terms computed outside any write transaction; the
        transaction then inserts the page's rows that are still stored and not yet
        taken in (another process, or a search, may have taken some meanwhile).

        Computing terms is pure Python: run as one long stretch on a background
        thread, it would keep a host thread that returns from SQLite waiting for the
        GIL up to the switch interval (5 ms) each time, tens of milliseconds per
        turn. The page therefore hands the GIL over after every row. FTS5 takes the
        rows in ``_ROWS_PER_WRITE`` at a time, one short write transaction each: a
        page of 256 in one would keep a chat turn's save waiting 10-15 ms.
        """
        done = 0
        with self._catching_up:
            while True:
                read_last, read_newest = self._driver.read(
                    "SELECT (SELECT last_id FROM index_state), "
                    "(SELECT seq FROM sqlite_sequence WHERE name = 'messages')",
                    (),
                    "catch_up",
                )[0]
                if read_newest is None:
                    return done
                last, newest = _bookkeeping(self._where, read_last, read_newest)
                if last >= newest:
                    return done
                rows = self._driver.read(
                    _PAGE_THROUGH, (last, newest, BACKFILL_PAGE), "catch_up"
                )
                batch = []
                for row in rows:
                    batch.append(_index_row(row))
                    time.sleep(0)  # lets a waiting thread take the GIL (see above)
                # a full page ends at its last row; a short one covers every stored
                # id up to ``newest`` (ids are committed in order, so none is missing)
                top = batch[-1][0] if len(rows) == BACKFILL_PAGE else newest
                # an empty page (every message since the last batch deleted before
                # it was taken in) still moves ``last_id`` up to ``newest``
                for at in range(0, max(len(batch), 1), _ROWS_PER_WRITE):
                    part = batch[at : at + _ROWS_PER_WRITE]
                    end = top if at + _ROWS_PER_WRITE >= len(batch) else part[-1][0]
                    with self._driver.transaction("catch_up") as tx:
                        done += self._put(tx, part, end)
                    time.sleep(0)  # a writer waiting on the lock goes first

    def _put(self, tx: Executor, batch: list[tuple[int, str, str]], top: int) -> int:
        """Insert ``batch``'s rows that are new and still stored; move ``last_id``.

        ``index_state.rows`` counts the indexed rows up to ``last_id``: a row a lazy
        search took in already is counted as the batches pass it.
        """
        state = tx.execute("SELECT last_id FROM index_state", ()).fetchone()
        [after] = _bookkeeping(self._where, None if state is None else state[0])
        fresh, passed = self._insert_new(tx, [row for row in batch if row[0] > after])
        if top > after:
            tx.execute(
                "UPDATE index_state SET last_id = ?, rows = rows + ?", (top, passed)
            )
        return fresh

    def _insert_new(
        self,
        tx: Executor,
        batch: list[tuple[int, str, str]],
        session_id: str | None = None,
    ) -> tuple[int, int]:
        """Index ``batch``'s rows still stored and not indexed yet, with statistics.

        A message cleared since the page was read stays out; one another process
        (or a search) took in meanwhile is not taken twice. The rows of one session
        (``session_id``: a lazy search's) are counted here from their terms, as FTS5
        counts them (``count_terms``), a few times cheaper than reading them back
        through ``message_tokens``. Returns how many were taken in and how many of
        the batch are indexed now.
        """
        if not batch:
            return 0, 0
        found = tx.execute(
            _STORED_UNINDEXED, (json.dumps([row[0] for row in batch]),)
        ).fetchall()
        stored = {int(row[0]): bool(row[1]) for row in found}
        fresh = [row for row in batch if stored.get(row[0]) is False]
        if fresh:
            tx.executemany(self._insert, fresh)  # type: ignore[attr-defined]
            if session_id is None:
                ids = json.dumps([row[0] for row in fresh])
                for statement in _COUNT_BATCH:
                    tx.execute(statement, (ids,))
            else:
                length, documents = count_terms([row[2] for row in fresh])
                tx.execute(_ADD_TOTALS, (session_id, len(fresh), length))
                tx.executemany(  # type: ignore[attr-defined]
                    _ADD_TERMS, [(session_id, t, n) for t, n in documents.items()]
                )
        return len(fresh), len(stored)

    def catch_up_session(self, session_id: str) -> int:
        """Take the session's messages not indexed yet into FTS5; count them.

        What a search under ``lazy`` runs first: the session's rows above both
        watermarks (``index_state.last_id``, ``session_index.last_id``), read and
        their terms computed outside any write transaction, then inserted a few
        hundred at a time (whatever is still stored and not indexed), the session's
        watermark moved with them. SQLite commits writers one at a time in id order,
        so every id up to the newest read is either seen or gone.
        """
        done = 0
        lock = self._session_locks[zlib.crc32(session_id.encode()) % _SESSION_LOCKS]
        with lock:
            while True:
                read_after, read_newest = self._driver.read(
                    _SESSION_BOUNDS, (session_id,), "search_messages", session_id
                )[0]
                if read_newest is None:
                    return done
                after, newest = _bookkeeping(self._where, read_after, read_newest)
                if after >= newest:
                    return done
                rows = self._driver.read(
                    _SESSION_PAGE,
                    (session_id, after, newest, BACKFILL_PAGE),
                    "search_messages",
                    session_id,
                )
                # no GIL hand-over per row here (catch_up's): the search waits for
                # this, and each hand-over to a busy thread costs up to 5 ms
                batch = [_index_row(row) for row in rows]
                top = batch[-1][0] if len(rows) == BACKFILL_PAGE else newest
                for at in range(0, max(len(batch), 1), _SESSION_ROWS_PER_WRITE):
                    part = batch[at : at + _SESSION_ROWS_PER_WRITE]
                    last = at + _SESSION_ROWS_PER_WRITE >= len(batch)
                    end = top if last else part[-1][0]
                    with self._driver.transaction("search_messages", session_id) as tx:
                        done += self._insert_new(tx, part, session_id)[0]
                        tx.execute(_MARK_SESSION, (session_id, end, session_id))
                    time.sleep(0)  # a writer waiting on the lock goes first
                if len(rows) < BACKFILL_PAGE:
                    return done

    def take_in(self, tx: Executor, *, report: bool = False) -> int:
        """Index the rows after ``index_state.last_id`` inside ``tx``; count them.

        The migration that creates the index runs it, in its own transaction;
        migration 5 counts the sessions' statistics of every row taken in then.
        """
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
        while True:
            rows = tx.execute(_PAGE, (after, BACKFILL_PAGE)).fetchall()
            batch = [_index_row(row) for row in rows]
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
        held: set[int] | None = None,
        coverage: Coverage | None = None,
    ) -> Matches:
        if self.policy == "eager":
            self.catch_up()  # every session's rows: what the batches left
        else:
            self.catch_up_session(session_id)
        # The session's statistics, as every store counts them, in one statement:
        # one snapshot, whatever a pop or a catch-up commits meanwhile.
        terms = list(dict.fromkeys(terms))
        check_terms(terms)
        row = read(statistics_sql(len(terms)), statistics_params(session_id, terms))[0]
        documents, total, low, high = (int(v or 0) for v in row[:4])
        matching = {t: int(n) for t, n in zip(terms, row[4:], strict=True) if n}
        terms = informative(terms, matching, documents)
        if not terms or low == 0:
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
            total_length=total,
            coverage=coverage,
        )

    def id_list(self, ids: Sequence[int]) -> object:
        return json.dumps(list(ids))
