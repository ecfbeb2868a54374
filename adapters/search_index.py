"""The history index of the SQL stores: SQLite FTS5 and PostgreSQL ``tsvector``.

Both index the terms ``domain.recall`` makes (stemmed English words, CJK bigrams and
characters; letters and digits only), so a query never reaches the database as text a
user typed: it is a list of quoted terms, OR'ed. Rows are written in the transaction
of ``save_message`` and removed with their message by the database itself (a trigger
in SQLite, a cascading foreign key in PostgreSQL), so every path that deletes a
message (``pop_message``, ``clear_session``, ``forget_session``, ``clear_all``, a
foreign writer) unindexes it in the same transaction.

Each index row also holds a *session term* (``session_term``), but a search does not
AND it with the query's terms: that makes FTS5 read the session's whole doclist and
GIN its whole posting tree. SQLite walks a term's rows inside the session's id span,
each joined to its message's ``session_id``; PostgreSQL filters a term's rows on
``session_id``. The final join on ``session_id`` makes sure no other session's row is
ever returned.

Both bound the candidates as ``domain.ranking`` does (the rarest terms' newest
matches) and score them here with the reference formula:

- SQLite with FTS5's statistics, which are the whole database's (its row count and
  total length from FTS5's averages record, each term's count from ``fts5vocab``).
- PostgreSQL with the session's own statistics, as the in-memory store does.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

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
from .message_rows import SELECT_COLUMNS, row_message

log = logging.getLogger(__name__)

BACKFILL_PAGE = 2_000
CATCH_UP_EVERY = 256
"""SQLite takes new messages into FTS5 at least this often (and before a search)."""
PROGRESS_EVERY = 50_000
"""A migration that indexes a big database logs its progress every so many rows."""

Matches = list[tuple[int, float]]


def _progress(done: int, page: int) -> bool:
    """Tell whether indexing logs its progress after a page of ``page`` rows."""
    if not done or not page:
        return False
    return done % PROGRESS_EVERY < page or page < BACKFILL_PAGE


def session_term(session_id: str) -> str:
    """Return the index term that stands for a session (letters and digits)."""
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=10).hexdigest()
    return f"s{digest}"


def fts5_term(term: str) -> str:
    """Return the FTS5 MATCH expression of one term in the ``terms`` column.

    Terms hold letters and digits only, so quoting is safe.
    """
    _check_terms([term])
    return f'terms : "{term}"'


def _term_query(term: str) -> str:
    """Return the ``tsquery`` text of one term (letters and digits, quoted)."""
    _check_terms([term])
    return f"'{term}'"


def _check_terms(terms: Sequence[str]) -> None:
    if not terms or not all(term and term.isalnum() for term in terms):
        raise ValueError(
            "terms must be non-empty letters and digits (domain.recall.query_terms)"
        )


class SearchIndex(Protocol):
    """The part of the history index that differs between databases."""

    def save(
        self,
        driver: SqlDriver,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str],
    ) -> int:
        """Store one message (``insert`` with ``session_id, *values``) and its terms.

        Returns the message's id.
        """
        ...

    def insert(
        self,
        tx: Executor,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str],
    ) -> int:
        """Store one message and its terms inside ``tx`` (a batch's transaction).

        Returns the message's id.
        """
        ...

    def matches(
        self,
        read: Callable[[str, Sequence[object]], list[Any]],
        session_id: str,
        terms: Sequence[str],
        *,
        archived_only: bool,
    ) -> Matches:
        """Return the session's best ``CANDIDATES`` matches as (id, BM25 score)."""
        ...

    @property
    def id_source(self) -> str:
        """A FROM item ``c`` with one column ``value``: the ids of one parameter."""
        ...

    def id_list(self, ids: Sequence[int]) -> object:
        """Return ``ids`` as the parameter of ``id_source``."""
        ...

    @property
    def join(self) -> str:
        """How to join ``id_source`` to the messages so the ids drive the lookup."""
        ...

    def window(
        self,
        read: Callable[[str, Sequence[object]], list[Any]],
        session_id: str,
        ranges: Sequence[tuple[int, int]],
        *,
        archived_only: bool,
    ) -> list[int]:
        """Return the ids of the session's messages inside any of ``ranges``."""
        ...


def backfill(tx: Executor, search: PostgresIndex, tables: str, where: str) -> None:
    """Index every message a database written before the index holds, in id order.

    Runs inside the migration's transaction: a crash leaves the old schema, whole.
    """
    total = int(tx.execute(f"SELECT count(*) FROM {tables}messages", ()).fetchone()[0])
    if total:
        log.info("%s: indexing %d stored messages for search", where, total)
    done, after = 0, 0
    page = (
        f"SELECT {SELECT_COLUMNS}, session_id FROM {tables}messages WHERE id > "
        "{p} ORDER BY id LIMIT {p}"
    )
    while True:
        rows = tx.execute(search_sql(page, search), (after, BACKFILL_PAGE)).fetchall()
        for row in rows:
            message = row_message(row[:-1])
            search.index(tx, row[-1], int(row[0]), message_terms(message))
        done += len(rows)
        if rows:
            after = int(rows[-1][0])
        if _progress(done, len(rows)):
            log.info("%s: indexed %d of %d messages", where, done, total)
        if len(rows) < BACKFILL_PAGE:
            return


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


def search_sql(template: str, search: SearchIndex) -> str:
    """Return ``template`` with its ``{p}`` placeholders in the index's spelling."""
    return template.replace("{p}", getattr(search, "placeholder", "?"))


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
            if report and _progress(done, len(rows)):
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


class PostgresIndex:
    """Table ``message_terms(id, session_id, length, terms, tsv)``, GIN on ``tsv``."""

    placeholder = "%s"

    def __init__(self, tables: str) -> None:
        self._tables = tables
        self._insert = (
            f"INSERT INTO {tables}message_terms (id, session_id, length, terms, tsv) "
            "VALUES (%s, %s, %s, %s, array_to_tsvector(%s::text[]))"
        )
        # Each term's count in the session, then each seed term's newest matches
        # (domain.ranking): the database returns a bounded set of rows to score.
        self._counts = (
            "SELECT q.term, (SELECT count(*) FROM "
            f"{tables}message_terms s WHERE s.tsv @@ q.query::tsquery "
            "AND s.session_id = %s) "
            "FROM unnest(%s::text[], %s::text[]) AS q(term, query)"
        )
        self._newest = (
            f"SELECT t.id, t.terms, t.length FROM {tables}message_terms t "
            "WHERE t.id IN ({seeds})"
        )
        # One branch a term, its tsquery a parameter of its own: the planner sees
        # each term's frequency (GIN for a rare term, the id order for a common one).
        # The term alone and a filter on session_id: ANDing the session's lexeme in
        # the tsquery makes GIN read the session's whole posting tree.
        self._seed = (
            f"(SELECT s.id FROM {tables}message_terms s {{join}}"
            "WHERE s.tsv @@ %s::tsquery AND s.session_id = %s "
            "ORDER BY s.id DESC LIMIT %s)"
        )
        self._archived = f"JOIN {tables}messages m ON m.id = s.id AND m.archived "
        self._size = (
            f"SELECT count(*), coalesce(sum(length), 0) FROM {tables}message_terms "
            "WHERE session_id = %s"
        )
        self._window = (
            "SELECT m.id FROM unnest(%s::bigint[], %s::bigint[]) AS r(lo, hi) "
            f"JOIN {tables}messages m ON m.session_id = %s "
            "AND m.id BETWEEN r.lo AND r.hi"
        )

    def save(
        self,
        driver: SqlDriver,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str],
    ) -> int:
        # One statement, atomic on its own: the message and its index row together.
        sql, params = self._with_terms(insert, session_id, values, terms)
        _, row_id = driver.write(sql, params, "save_message", session_id)
        if row_id is None:
            raise StoreError(f"save_message for {session_id!r}: no id was returned")
        return row_id

    def _with_terms(
        self, insert: str, session_id: str, values: Sequence[object], terms: list[str]
    ) -> tuple[str, tuple[object, ...]]:
        """Return the statement storing a message and its index row, and its values."""
        sql = (
            f"WITH m AS ({insert}) INSERT INTO {self._tables}message_terms "
            "(id, session_id, length, terms, tsv) SELECT m.id, %s, %s, %s, "
            "array_to_tsvector(%s::text[]) FROM m RETURNING id"
        )
        lexemes = [session_term(session_id), *dict.fromkeys(terms)]
        params = (session_id, *values, session_id, len(terms), " ".join(terms), lexemes)
        return sql, params

    def insert(
        self,
        tx: Executor,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str],
    ) -> int:
        row = tx.execute(insert, (session_id, *values)).fetchone()
        if row is None:
            raise StoreError(f"save_message for {session_id!r}: no id returned")
        self.index(tx, session_id, int(row[0]), terms)
        return int(row[0])

    def index(
        self, tx: Executor, session_id: str, row_id: int, terms: list[str]
    ) -> None:
        """Index one stored message inside the transaction that stored it."""
        lexemes = [session_term(session_id), *dict.fromkeys(terms)]
        tx.execute(
            self._insert, (row_id, session_id, len(terms), " ".join(terms), lexemes)
        )

    def matches(
        self,
        read: Callable[[str, Sequence[object]], list[Any]],
        session_id: str,
        terms: Sequence[str],
        *,
        archived_only: bool,
    ) -> Matches:
        terms = list(dict.fromkeys(terms))
        queries = [_term_query(term) for term in terms]
        counts = read(self._counts, (session_id, terms, queries))
        matching = {str(term): int(n) for term, n in counts if n}
        if not matching:
            return []
        documents, total = read(self._size, (session_id,))[0]
        terms = informative(terms, matching, int(documents))
        seeds = [_term_query(term) for term in seed_terms(terms, matching)]
        seed = self._seed.format(join=self._archived if archived_only else "")
        sql = self._newest.format(seeds=" UNION ".join([seed] * len(seeds)))
        frequencies: dict[int, dict[str, int]] = {}
        lengths: dict[int, int] = {}
        params = [p for query in seeds for p in (query, session_id, PER_TERM)]
        for row in read(sql, params):
            words = str(row[1]).split()
            frequencies[int(row[0])] = {term: words.count(term) for term in terms}
            lengths[int(row[0])] = int(row[2])
        return bm25_search(
            terms,
            frequencies,
            matching,
            lengths,
            documents=int(documents),
            average_length=int(total) / int(documents) if documents else 0.0,
            limit=CANDIDATES,
        )

    id_source = "unnest(%s::bigint[]) AS c(value)"
    join = "JOIN"

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
        sql = self._window + (" AND m.archived" if archived_only else "")
        rows = read(sql, ([r[0] for r in ranges], [r[1] for r in ranges], session_id))
        return [int(row[0]) for row in rows]

    def id_list(self, ids: Sequence[int]) -> object:
        return list(ids)
