"""The history index of the SQL stores: SQLite FTS5 and PostgreSQL ``tsvector``.

Both index the terms ``domain.recall`` makes (stemmed English words, CJK bigrams and
characters; letters and digits only), so a query never reaches the database as text a
user typed: it is a list of quoted terms, OR'ed. PostgreSQL writes a message's index
row in the statement that stores it; SQLite takes stored messages in by the batch,
off the saving thread and before every search (``sqlite_index``). Rows are removed
with their message by the database itself (a trigger
in SQLite, a cascading foreign key in PostgreSQL), so every path that deletes a
message (``pop_message``, ``clear_session``, ``forget_session``, ``clear_all``, a
foreign writer) unindexes it in the same transaction.

Each index row also holds a *session term* (``session_term``), but a search does not
AND it with the query's terms: that makes FTS5 read the session's whole doclist.
SQLite walks a term's rows inside the session's id span, each joined to its message's
``session_id``; PostgreSQL reads a term's newest rows in the session from its postings
(``postgres_index.POSTINGS_SCHEMA``: one backward index range a term). The final
filter on ``session_id`` makes sure no other session's row is ever returned.

Both bound the candidates as ``domain.ranking`` does (the rarest terms' newest
matches) and score them here with the reference formula and the session's own
statistics, as every store does, read in one statement (one snapshot): the counts
each keeps per session as rows are indexed and deleted (``session_totals``: indexed
messages and their summed length in terms; ``session_terms``: each term's count), a
few key lookups. SQLite writes them with each FTS5 batch and in its delete trigger,
PostgreSQL by statement triggers on ``message_terms``, in the transaction that writes
or deletes the rows.

This module holds the ``SearchIndex`` protocol the SQL core calls and names the rest:
``terms`` (what both share), ``sqlite_index`` and ``postgres_index``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from memory_summary.adapters.stores.sql.driver import Executor, SqlDriver
from memory_summary.domain import Message
from memory_summary.domain.config import RecallIndex
from memory_summary.domain.ranking import Coverage

from .postgres_index import PostgresIndex, backfill
from .sqlite_index import SqliteIndex
from .terms import CATCH_UP_EVERY, Matches, fts5_term

__all__ = [
    "CATCH_UP_EVERY",
    "PostgresIndex",
    "SearchIndex",
    "SqliteIndex",
    "backfill",
    "fts5_term",
]


class SearchIndex(Protocol):
    """The part of the history index that differs between databases.

    ``policy`` is the store's ``recall_index`` (``IndexPolicyStore``): ``lazy``
    indexes a session when it is searched, ``eager`` as it is saved, ``off`` never.
    """

    policy: RecallIndex

    def prepare(self, message: Message) -> list[str] | None:
        """Return what indexing ``message`` needs, computed before any transaction.

        The terms when the index row is written with the message (PostgreSQL); None
        when the index takes stored messages in later, by the batch and before every
        search (SQLite): then a save costs no term computation on the caller's thread.
        """
        ...

    def save(
        self,
        driver: SqlDriver,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str] | None,
    ) -> int:
        """Store one message (``insert`` with ``session_id, *values``) and index it.

        ``terms`` is what ``prepare`` returned for the message. Returns its id.
        """
        ...

    def insert(
        self,
        tx: Executor,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str] | None,
    ) -> int:
        """Store one message inside ``tx`` (a batch's transaction) and index it.

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
        held: set[int] | None = None,
        coverage: Coverage | None = None,
    ) -> Matches:
        """Return the session's best ``CANDIDATES`` matches as (id, BM25 score).

        ``held``: when given, the index may add to it the session's ids within
        ``CONTEXT_REACH`` of every match, if it read them with the matches (one
        round trip fewer); the caller reads whatever it does not hold.
        ``coverage``: when given, filled by ``bm25_search`` (``domain.ranking``).
        """
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
