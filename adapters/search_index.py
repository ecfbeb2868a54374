"""The history index of the SQL stores: SQLite FTS5 and PostgreSQL ``tsvector``.

Both index the terms ``domain.recall`` makes (stemmed English words, CJK bigrams and
characters; letters and digits only), so a query never reaches the database as text a
user typed: it is a list of quoted terms, OR'ed. Rows are written in the transaction
of ``save_message`` and removed with their message by the database itself (a trigger
in SQLite, a cascading foreign key in PostgreSQL), so every path that deletes a
message (``pop_message``, ``clear_session``, ``forget_session``, ``clear_all``, a
foreign writer) unindexes it in the same transaction.

Each index row also holds a *session term* (``session_term``): the search asks for it
AND any query term, so the database only ranks the session's own messages; the
final join on ``session_id`` makes sure no other session's row is ever returned.

- SQLite ranks with FTS5's ``bm25()`` (the reference formula; its statistics are the
  whole database's).
- PostgreSQL has no BM25: it finds the session's matches through the GIN index and
  ranks them here with ``domain.ranking`` and the session's own statistics, as the
  in-memory store does.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from memory_summary.domain.ranking import CANDIDATES, bm25_search
from memory_summary.domain.recall import message_terms

from .driver import Executor
from .message_rows import SELECT_COLUMNS, row_message

log = logging.getLogger(__name__)

BACKFILL_PAGE = 2_000
PROGRESS_EVERY = 50_000
"""A migration that indexes a big database logs its progress every so many rows."""

Matches = list[tuple[int, float]]


def session_term(session_id: str) -> str:
    """Return the index term that stands for a session (letters and digits)."""
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=10).hexdigest()
    return f"s{digest}"


def fts5_query(session_id: str, terms: Sequence[str]) -> str:
    """Return the FTS5 MATCH expression: the session AND any of ``terms``.

    Terms hold letters and digits only, so quoting each is safe.
    """
    _check_terms(terms)
    any_term = " OR ".join(f'"{term}"' for term in terms)
    return f'session : "{session_term(session_id)}" AND terms : ({any_term})'


def tsquery(session_id: str, terms: Sequence[str]) -> str:
    """Return the ``tsquery`` text: the session's lexeme & any of ``terms``."""
    _check_terms(terms)
    any_term = " | ".join(f"'{term}'" for term in terms)
    return f"'{session_term(session_id)}' & ({any_term})"


def _check_terms(terms: Sequence[str]) -> None:
    if not terms or not all(term and term.isalnum() for term in terms):
        raise ValueError(
            "terms must be non-empty letters and digits (domain.recall.query_terms)"
        )


class SearchIndex(Protocol):
    """The part of the history index that differs between databases."""

    def index(
        self, tx: Executor, session_id: str, row_id: int, terms: list[str]
    ) -> None:
        """Index one stored message, inside the transaction that stored it."""
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


def backfill(tx: Executor, search: SearchIndex, tables: str, where: str) -> None:
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
        if done and (
            done % PROGRESS_EVERY < BACKFILL_PAGE or len(rows) < BACKFILL_PAGE
        ):
            log.info("%s: indexed %d of %d messages", where, done, total)
        if len(rows) < BACKFILL_PAGE:
            return


def search_sql(template: str, search: SearchIndex) -> str:
    """Return ``template`` with its ``{p}`` placeholders in the index's spelling."""
    return template.replace("{p}", getattr(search, "placeholder", "?"))


class SqliteIndex:
    """FTS5 table ``message_index(session, terms)``, rowid = message id."""

    placeholder = "?"

    def __init__(self, tables: str = "") -> None:
        self._insert = (
            f"INSERT INTO {tables}message_index (rowid, session, terms) "
            "VALUES (?, ?, ?)"
        )
        scored = (
            f"SELECT i.rowid AS id, -i.rank AS score FROM {tables}message_index i "
            "{join} WHERE message_index MATCH ? {where} ORDER BY i.rank LIMIT ?"
        )
        self._all = scored.format(join="", where="")
        self._archived = scored.format(
            join=f"JOIN {tables}messages m ON m.id = i.rowid",
            where="AND m.session_id = ? AND m.archived = 1",
        )

    def index(
        self, tx: Executor, session_id: str, row_id: int, terms: list[str]
    ) -> None:
        tx.execute(self._insert, (row_id, session_term(session_id), " ".join(terms)))

    def matches(
        self,
        read: Callable[[str, Sequence[object]], list[Any]],
        session_id: str,
        terms: Sequence[str],
        *,
        archived_only: bool,
    ) -> Matches:
        match = fts5_query(session_id, terms)
        if archived_only:
            rows = read(self._archived, (match, session_id, CANDIDATES))
        else:
            rows = read(self._all, (match, CANDIDATES))
        return [(int(row[0]), float(row[1])) for row in rows]

    id_source = "json_each(?) AS c"

    def id_list(self, ids: Sequence[int]) -> object:
        return json.dumps(list(ids))


class PostgresIndex:
    """Table ``message_terms(id, session_id, length, terms, tsv)``, GIN on ``tsv``."""

    placeholder = "%s"

    def __init__(self, tables: str) -> None:
        self._insert = (
            f"INSERT INTO {tables}message_terms (id, session_id, length, terms, tsv) "
            "VALUES (%s, %s, %s, %s, array_to_tsvector(%s::text[]))"
        )
        self._candidates = (
            f"SELECT t.id, t.terms, t.length, m.archived FROM {tables}message_terms t "
            f"JOIN {tables}messages m ON m.id = t.id "
            "WHERE t.tsv @@ %s::tsquery AND m.session_id = %s"
        )
        self._size = (
            f"SELECT count(*), coalesce(sum(length), 0) FROM {tables}message_terms "
            "WHERE session_id = %s"
        )

    def index(
        self, tx: Executor, session_id: str, row_id: int, terms: list[str]
    ) -> None:
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
        rows = read(self._candidates, (tsquery(session_id, terms), session_id))
        if not rows:
            return []
        documents, total = read(self._size, (session_id,))[0]
        frequencies = {int(row[0]): Counter(str(row[1]).split()) for row in rows}
        matching = {
            term: sum(1 for f in frequencies.values() if term in f) for term in terms
        }
        candidates = {
            int(row[0]): frequencies[int(row[0])]
            for row in rows
            if row[3] or not archived_only
        }
        return bm25_search(
            terms,
            candidates,
            matching,
            {int(row[0]): int(row[2]) for row in rows},
            documents=int(documents),
            average_length=int(total) / int(documents) if documents else 0.0,
            limit=CANDIDATES,
        )

    id_source = "unnest(%s::bigint[]) AS c(value)"

    def id_list(self, ids: Sequence[int]) -> object:
        return list(ids)
