"""The history index of the PostgreSQL store: a ``tsvector`` table and postings.

Why about 620 lines: one concept, the history index. Its schema and the triggers that
keep its statistics and postings, the writes that index a message (at its save or at
its session's search, by the policy) and the search over it are one body of SQL that
changes together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from memory_summary.adapters.stores.rows import SELECT_COLUMNS, row_message
from memory_summary.adapters.stores.sql.driver import Executor, SqlDriver
from memory_summary.domain import MalformedRecord, Message, StoreError
from memory_summary.domain.config import RecallIndex
from memory_summary.domain.ranking import (
    CONTEXT_REACH,
    PER_TERM,
    Coverage,
    bm25_search,
    informative,
    seed_terms,
)
from memory_summary.domain.recall import message_terms

from .terms import (
    BACKFILL_PAGE,
    Matches,
    check_terms,
    logs_progress,
    session_term,
)

log = logging.getLogger(__name__)

STATISTICS_SCHEMA = (
    "CREATE TABLE {s}.session_totals (session_id TEXT PRIMARY KEY, "
    "documents BIGINT NOT NULL, length BIGINT NOT NULL)",
    "CREATE TABLE {s}.session_terms (session_id TEXT NOT NULL, term TEXT NOT NULL, "
    "documents BIGINT NOT NULL, PRIMARY KEY (session_id, term))",
    """CREATE FUNCTION {s}.count_added_terms() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {s}.session_totals AS k (session_id, documents, length)
        VALUES (NEW.session_id, 1, NEW.length) ON CONFLICT (session_id) DO UPDATE
        SET documents = k.documents + 1, length = k.length + excluded.length;
        INSERT INTO {s}.session_terms AS k (session_id, term, documents)
        SELECT NEW.session_id, w.term, 1
        FROM unnest(tsvector_to_array(NEW.tsv)) AS w(term) ORDER BY w.term
        ON CONFLICT (session_id, term) DO UPDATE SET documents = k.documents + 1;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION {s}.count_removed_terms() RETURNS trigger LANGUAGE plpgsql
    AS $$
    DECLARE
        sessions TEXT[];
        terms TEXT[];
    BEGIN
        INSERT INTO {s}.session_totals AS k (session_id, documents, length)
        SELECT session_id, -count(*), -sum(length) FROM gone
        GROUP BY session_id ORDER BY session_id
        ON CONFLICT (session_id) DO UPDATE SET
            documents = k.documents + excluded.documents,
            length = k.length + excluded.length;
        WITH counted AS (
            INSERT INTO {s}.session_terms AS k (session_id, term, documents)
            SELECT g.session_id, w.term, -count(*)
            FROM gone g, unnest(tsvector_to_array(g.tsv)) AS w(term)
            GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (session_id, term) DO UPDATE SET
                documents = k.documents + excluded.documents
            RETURNING k.session_id, k.term, k.documents)
        SELECT array_agg(session_id), array_agg(term) INTO sessions, terms
        FROM counted WHERE documents <= 0;
        DELETE FROM {s}.session_terms k USING unnest(sessions, terms) AS g(s, t)
        WHERE k.session_id = g.s AND k.term = g.t AND k.documents <= 0;
        DELETE FROM {s}.session_totals k USING (SELECT DISTINCT session_id FROM gone)
        AS g WHERE k.session_id = g.session_id AND k.documents <= 0;
        RETURN NULL;
    END $$""",
    # Triggers before counting: they lock out writers until the migration commits.
    "CREATE TRIGGER message_terms_added AFTER INSERT ON {s}.message_terms "
    "FOR EACH ROW EXECUTE PROCEDURE {s}.count_added_terms()",
    "CREATE TRIGGER message_terms_removed AFTER DELETE ON {s}.message_terms "
    "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
    "EXECUTE PROCEDURE {s}.count_removed_terms()",
    "DROP INDEX {s}.message_terms_by_session",
    "CREATE INDEX message_terms_in_order ON {s}.message_terms (session_id, id)",
    "INSERT INTO {s}.session_totals (session_id, documents, length) "
    "SELECT session_id, count(*), sum(length) FROM {s}.message_terms "
    "GROUP BY session_id",
    "INSERT INTO {s}.session_terms (session_id, term, documents) "
    "SELECT c.session_id, w.term, count(*) FROM {s}.message_terms c, "
    "unnest(tsvector_to_array(c.tsv)) AS w(term) GROUP BY 1, 2",
)
"""Migration 5: each session's search statistics, kept by the database.

``session_totals`` holds a session's indexed messages and their summed length (in
terms), ``session_terms`` each term's count of indexed messages in the session (every
lexeme of a row's ``tsv``, as ``@@`` matched them). Triggers on ``message_terms``
add each new row (a row trigger: the store inserts one a statement, and a row
trigger costs about 40 us less than a statement's) and take a statement's deleted
rows away together (a cascade from ``messages`` is one statement too: a cleared
session is counted once), in the writing transaction, whatever path wrote or
deleted: a session or term left at 0 is deleted. Each locks a session's totals
before its terms, in order, so two writers of a session never deadlock. The
migration then counts every row already indexed, and swaps the ``(session_id,
length)`` index the counting read for ``(session_id, id)``, the order a walk read
(version 7 replaced the walk by ``term_postings``).
"""


_COUNTED = "memory_summary.counted_in_bulk"
"""A transaction-local setting: while on, the row trigger leaves the statistics of
the rows a statement inserts to that statement (a lazy catch-up counts a page in
bulk: a trigger per row updates the session's totals once per row, each update a new
version of one row that the next must walk to, quadratic in the page). Schema 6's;
the code of schema 7 sets ``_BULK``, and its trigger still obeys this one the way a
process of schema 6, running on after another migrated, needs (``POSTINGS_SCHEMA``)."""

_BULK = "memory_summary.indexed_in_bulk"
"""``_COUNTED`` of schema 7: the statement writes its rows' statistics and postings,
and the row trigger does nothing."""

SESSION_INDEX_SCHEMA = (
    STATISTICS_SCHEMA[2]
    .replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
    .replace(
        "BEGIN\n",
        f"BEGIN\n        IF current_setting('{_COUNTED}', true) = 'on' THEN "
        "RETURN NULL; END IF;\n",
        1,
    ),
    "CREATE TABLE {s}.session_index (session_id TEXT PRIMARY KEY, "
    "last_id BIGINT NOT NULL)",
    """CREATE FUNCTION {s}.unmark_sessions() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM {s}.session_index k USING (SELECT DISTINCT session_id FROM gone)
        AS g WHERE k.session_id = g.session_id AND NOT EXISTS
        (SELECT 1 FROM {s}.messages m WHERE m.session_id = g.session_id);
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER messages_unmark AFTER DELETE ON {s}.messages "
    "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
    "EXECUTE PROCEDURE {s}.unmark_sessions()",
)
"""Migration 6: how far a search indexed each session (``recall_index='lazy'``).

The row trigger that counts an index row learns to leave a bulk insert's rows to it
(``_COUNTED``).

``session_index.last_id``: every message of the session with an id up to it is
indexed (or deleted). It is only moved while no lazy save of the session is in
flight (``PostgresIndex.catch_up_session``). A session whose last message is deleted
loses its row in the deleting statement, so a forgotten session leaves nothing.
"""


POSTINGS_SCHEMA = (
    # Every lock the migration needs, first, in the order writers take them (a save
    # or a delete locks ``messages``, then ``message_terms``, whose triggers lock
    # the totals, then the terms): a writer of the old code in flight finishes
    # first, and one that comes after waits, instead of a deadlock. ``messages``
    # is shared: a catch-up, which locks ``message_terms`` before it reads
    # ``messages``, gets through to its counts and commits.
    "LOCK TABLE {s}.messages IN SHARE MODE",
    "LOCK TABLE {s}.message_terms, {s}.session_totals, {s}.session_terms "
    "IN ACCESS EXCLUSIVE MODE",
    "ALTER TABLE {s}.session_terms ADD COLUMN key BIGINT "
    "GENERATED BY DEFAULT AS IDENTITY",
    "CREATE TABLE {s}.term_postings (term_key BIGINT NOT NULL, id BIGINT NOT NULL, "
    "PRIMARY KEY (term_key, id))",
    f"""CREATE OR REPLACE FUNCTION {{s}}.count_added_terms() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF current_setting('{_BULK}', true) = 'on' THEN RETURN NULL; END IF;
        IF current_setting('{_COUNTED}', true) = 'on' THEN
            -- a catch-up of schema 6's code: its statement counted the row, and
            -- upserted (so keyed) its terms; their postings are left
            INSERT INTO {{s}}.term_postings (term_key, id) SELECT k.key, NEW.id
            FROM unnest(tsvector_to_array(NEW.tsv)) AS w(term)
            JOIN {{s}}.session_terms k
            ON k.session_id = NEW.session_id AND k.term = w.term;
            RETURN NULL;
        END IF;
        INSERT INTO {{s}}.session_totals AS k (session_id, documents, length)
        VALUES (NEW.session_id, 1, NEW.length) ON CONFLICT (session_id) DO UPDATE
        SET documents = k.documents + 1, length = k.length + excluded.length;
        WITH counted AS (
            INSERT INTO {{s}}.session_terms AS k (session_id, term, documents)
            SELECT NEW.session_id, w.term, 1
            FROM unnest(tsvector_to_array(NEW.tsv)) AS w(term) ORDER BY w.term
            ON CONFLICT (session_id, term) DO UPDATE SET documents = k.documents + 1
            RETURNING k.key)
        INSERT INTO {{s}}.term_postings (term_key, id) SELECT key, NEW.id FROM counted;
        RETURN NULL;
    END $$""",
    STATISTICS_SCHEMA[3]
    .replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
    .replace(
        "BEGIN\n",
        # planned at each run: a plan kept from a pop's one row took seconds to
        # delete a cleared session's
        "BEGIN\n        EXECUTE 'DELETE FROM {s}.term_postings p USING gone g,\n"
        "            unnest(tsvector_to_array(g.tsv)) AS w(term), {s}.session_terms k\n"
        "            WHERE k.session_id = g.session_id AND k.term = w.term\n"
        "            AND p.term_key = k.key AND p.id = g.id';\n",
        1,
    ),
    "INSERT INTO {s}.term_postings (term_key, id) SELECT k.key, c.id "
    "FROM {s}.message_terms c, unnest(tsvector_to_array(c.tsv)) AS w(term), "
    "{s}.session_terms k WHERE k.session_id = c.session_id AND k.term = w.term",
    "DROP INDEX {s}.message_terms_tsv",
)
"""Migration 7: each term's messages in a session, in id order (``term_postings``).

``session_terms.key`` names a (session, term) pair; ``term_postings`` holds one row
per pair and message that holds the term, keyed (pair, message id): a term's newest
``PER_TERM`` matches in a session are the first rows of one backward index range,
whatever its count (GIN returns a term's matches in no order: each had to be fetched
and sorted, or the session's rows walked newest first until enough matched, several
milliseconds a term at 100k messages). The triggers of migration 5 write and delete
a row's postings with its counts, in the same statements; the rows already indexed
get theirs here. The GIN index on ``tsv`` served only that search: it goes.

Rolling upgrades: the migration first locks the four tables in the writers' order
(``messages`` shared, which stops every save and delete; the others exclusively) and
holds them until it commits, 7 to 10 s per 80,000 indexed messages. A process of
schema 6 still running afterwards keeps working: its lazy catch-up sets
``_COUNTED`` and counts a page itself, and the row trigger then writes only the
page's postings; its searches, without the GIN index, read more rows (slower, same
results).
"""


class PostgresIndex:
    """Table ``message_terms(id, session_id, length, terms, tsv)``, and postings.

    A search reads the session's statistics, then its seed terms' newest matches
    from ``term_postings`` (``POSTINGS_SCHEMA``), each with the ids around it.

    ``eager``: a message's index row is written in the statement that stores it.
    ``lazy``: a save stores the message alone, holding the session's recall lock
    shared until it commits; a search first indexes the session's messages above
    its watermark (``catch_up_session``). ``off``: nothing is indexed.
    """

    def __init__(
        self,
        tables: str,
        driver: SqlDriver | None = None,
        lock: str = "",
        policy: RecallIndex = "lazy",
    ) -> None:
        self.policy: RecallIndex = policy
        self._driver = driver
        self._lock = lock  # pg_advisory_xact_lock{_shared}(%s), keyed by session
        self._tables = tables
        self._insert = (
            f"INSERT INTO {tables}message_terms (id, session_id, length, terms, tsv) "
            "VALUES (%s, %s, %s, %s, array_to_tsvector(%s::text[]))"
        )
        # How far the session is indexed (``catch_up_session``), the session's size
        # and each term's count and key in it, kept by the database as index rows
        # come and go (``STATISTICS_SCHEMA``), in one statement (one snapshot: a pop
        # between two reads gave a term more messages than the session); then each
        # seed term's newest matches (domain.ranking): the database returns a
        # bounded set of rows to score.
        self._statistics = (
            f"SELECT b.mark, b.newest, t.documents, t.length, s.term, s.documents, "
            f"s.key FROM (SELECT coalesce((SELECT last_id FROM {tables}session_index "
            "WHERE session_id = %s), 0) AS mark, (SELECT max(id) FROM "
            f"{tables}messages WHERE session_id = %s) AS newest) AS b "
            f"LEFT JOIN {tables}session_totals t ON t.session_id = %s "
            f"LEFT JOIN {tables}session_terms s ON s.session_id = t.session_id "
            "AND s.term = ANY(%s::text[])"
        )
        # Each seed term's newest matches: the first rows of one backward range of
        # its postings (``POSTINGS_SCHEMA``), joined to the messages when only the
        # archived count; the final filter on ``session_id`` makes sure no other
        # session's row is ever returned. Each comes with the session's ids within
        # CONTEXT_REACH of it (what the context step reads next: ``held``).
        self._around = (
            "(SELECT string_agg(m.id::text, ' ') FROM "
            f"{tables}messages m WHERE m.session_id = %s AND m.id BETWEEN "
            f"t.id - {CONTEXT_REACH} AND t.id + {CONTEXT_REACH})"
        )
        newest = (
            f"SELECT t.id, t.terms, t.length, {self._around} "
            f"FROM {tables}message_terms t "
            "WHERE t.session_id = %s AND t.id IN (SELECT n.id FROM "
            "unnest(string_to_array(%s, ' ')::bigint[]) AS q(key) "
            "CROSS JOIN LATERAL (SELECT p.id "
            f"FROM {tables}term_postings p {{join}}WHERE p.term_key = q.key "
            "ORDER BY p.id DESC LIMIT %s) AS n)"
        )
        self._newest = newest.format(join="")
        self._newest_archived = newest.format(
            join=f"JOIN {tables}messages m ON m.id = p.id AND m.archived "
        )
        self._window = (
            "SELECT m.id FROM unnest(string_to_array(%s, ' ')::bigint[], "
            "string_to_array(%s, ' ')::bigint[]) AS r(lo, hi) "
            f"JOIN {tables}messages m ON m.session_id = %s "
            "AND m.id BETWEEN r.lo AND r.hi"
        )

    def prepare(self, message: Message) -> list[str] | None:
        """Return ``message``'s terms under ``eager``, else None.

        Eager: its index row is written with it; else no term is computed on the
        saving thread.
        """
        return message_terms(message) if self.policy == "eager" else None

    def _lazy_insert(self, insert: str) -> str:
        """Return ``insert`` holding the session's recall lock shared till commit.

        A search's catch-up takes it exclusively to read a watermark no save of the
        session still in flight can fall under (``catch_up_session``).
        """
        values = insert.index("VALUES (")
        returning = insert.rindex(") RETURNING")
        columns = insert[insert.index("(") + 1 : insert.index(")")].split(", ")
        # typed as the columns are: a NULL in a SELECT list would be read as text
        selected = [
            "%s::double precision" if column == "timestamp" else "%s"
            for column in columns
        ]
        return (
            f"WITH l AS (SELECT {self._lock.format(mode='_shared')}) "
            f"{insert[:values]}SELECT {', '.join(selected)} FROM l"
            f"{insert[returning + 1 :]}"
        )

    def _lazy_params(self, session_id: str, values: Sequence[object]) -> list[object]:
        return [self._lock_key(session_id), session_id, *values]

    def _lock_key(self, session_id: str) -> str:
        return f"{self._tables}recall/{session_id}"

    def save(
        self,
        driver: SqlDriver,
        insert: str,
        session_id: str,
        values: Sequence[object],
        terms: list[str] | None,
    ) -> int:
        # One statement, atomic on its own: the message and its index row together.
        if terms is None:  # lazy or off: the message alone
            sql = self._lazy_insert(insert)
            params: Sequence[object] = self._lazy_params(session_id, values)
        else:
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
        terms: list[str] | None,
    ) -> int:
        if terms is None:  # lazy or off: the message alone
            sql = self._lazy_insert(insert)
            row = tx.execute(sql, self._lazy_params(session_id, values)).fetchone()
        else:
            row = tx.execute(insert, (session_id, *values)).fetchone()
        if row is None:
            raise StoreError(f"save_message for {session_id!r}: no id returned")
        if terms is not None:
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
        held: set[int] | None = None,
        coverage: Coverage | None = None,
    ) -> Matches:
        terms = list(dict.fromkeys(terms))
        check_terms(terms)
        params = (session_id, session_id, session_id, terms)
        rows = read(self._statistics, params)
        mark, newest = rows[0][0], rows[0][1]
        if newest is not None and int(newest) > int(mark):  # not all indexed yet
            self.catch_up_session(session_id)
            rows = read(self._statistics, params)
        matching = {str(row[4]): int(row[5]) for row in rows if row[5]}
        if not matching:
            return []
        keys = {str(row[4]): int(row[6]) for row in rows if row[5]}
        documents, total = int(rows[0][2]), int(rows[0][3])
        terms = informative(terms, matching, documents)
        seeds = seed_terms(terms, matching)
        sql = self._newest_archived if archived_only else self._newest
        frequencies: dict[int, dict[str, int]] = {}
        lengths: dict[int, int] = {}
        seeded = self.id_list([keys[t] for t in seeds])
        for row in read(sql, (session_id, session_id, seeded, PER_TERM)):
            words = str(row[1]).split()
            frequencies[int(row[0])] = {term: words.count(term) for term in terms}
            lengths[int(row[0])] = int(row[2])
            if held is not None:
                held.update(map(int, str(row[3]).split()))
        return bm25_search(
            terms,
            frequencies,
            matching,
            lengths,
            documents=documents,
            total_length=total,
            coverage=coverage,
        )

    def catch_up_session(self, session_id: str) -> int:
        """Index the session's stored messages not indexed yet; count them.

        Whatever the policy (a process saving lazily may share the database): one
        read tells whether the session holds messages above its watermark; if so,
        a transaction takes the session's recall lock exclusively, so every save of
        it in flight has committed, and reads the session's newest id, ``top``: no
        message of the session below it can still appear. The rows above the
        watermark up to ``top`` are then read, their terms computed outside any
        transaction, and inserted a page a statement, each column one text value
        the database splits (a row deleted meanwhile, or indexed by another
        process, is skipped), the watermark moved to ``top``.
        """
        driver = self._driver
        if driver is None:  # pragma: no cover - every store passes its driver
            return 0
        mark, newest = driver.read(self._bounds, (session_id, session_id), "search")[0]
        if newest is None or int(newest) <= int(mark):
            return 0
        key = self._lock_key(session_id)
        with driver.transaction("search_messages", session_id) as tx:
            tx.execute(f"SELECT {self._lock.format(mode='')}", (key,))
            row = tx.execute(self._bounds, (session_id, session_id)).fetchone()
        after, top = int(row[0]), int(row[1] or 0)
        done = 0
        while after < top:
            rows = driver.read(
                self._pending, (session_id, after, top, BACKFILL_PAGE), "search"
            )
            with driver.transaction("search_messages", session_id) as tx:
                if rows:
                    tx.execute(self._bulk, (_BULK,))
                    page = self._page(rows)
                    done += int(tx.execute(self._index_stored, page).fetchone()[0])
                end = int(rows[-1][0]) if len(rows) == BACKFILL_PAGE else top
                tx.execute(self._mark, (session_id, end, session_id))
            after = end
        return done

    # The page's statistics in bulk (``_BULK``), with memory enough to group its
    # terms by hashing (the default 4 MB sorted them on disk: twice the time), and
    # no wait for the WAL's flush at commit: a page is derived data, and a crash
    # that loses it loses its watermark with it (the next search redoes it).
    _bulk = (
        "SELECT set_config(%s, 'on', true), set_config('work_mem', '32MB', true), "
        "set_config('synchronous_commit', 'off', true)"
    )

    @staticmethod
    def _page(rows: Sequence[Sequence[Any]]) -> tuple[str, str, str]:
        """Return a page of stored rows as ``_index_stored`` takes it.

        The session's term, which every row also holds; the ids, space-separated;
        each row's terms, space-separated, one row a line (a term holds letters and
        digits only). One text value a column: an array parameter costs the driver
        a conversion per element in Python.
        """
        ids = " ".join(str(int(found[0])) for found in rows)
        terms = "\n".join(
            " ".join(message_terms(row_message(found[:-1]))) for found in rows
        )
        return session_term(str(rows[0][-1])), ids, terms

    @property
    def _bounds(self) -> str:
        t = self._tables
        return (
            "SELECT coalesce((SELECT last_id FROM "
            f"{t}session_index WHERE session_id = %s), 0), (SELECT max(id) FROM "
            f"{t}messages WHERE session_id = %s)"
        )

    @property
    def _pending(self) -> str:
        t = self._tables
        return (
            f"SELECT {SELECT_COLUMNS}, session_id FROM {t}messages m WHERE "
            "session_id = %s AND id > %s AND id <= %s AND NOT EXISTS (SELECT 1 FROM "
            f"{t}message_terms i WHERE i.id = m.id) ORDER BY id LIMIT %s"
        )

    @property
    def _index_stored(self) -> str:
        t = self._tables
        # the page's rows (``_page``; each row's length and lexemes, the session's
        # term and its distinct terms, are made here from its terms), then their
        # statistics and postings in bulk (``_BULK``; each term grouped once),
        # totals before terms, in order, as the triggers lock them
        return (
            f"WITH added AS (INSERT INTO {t}message_terms "
            "(id, session_id, length, terms, tsv) "
            "SELECT m.id, m.session_id, cardinality(string_to_array(b.terms, ' ')), "
            "b.terms, array_to_tsvector(array_prepend(%s::text, "
            "string_to_array(b.terms, ' '))) FROM "
            "unnest(string_to_array(%s, ' ')::bigint[], "
            "regexp_split_to_array(%s, E'\\n')) "
            f"AS b(id, terms) JOIN {t}messages m ON m.id = b.id "
            "ORDER BY m.id FOR KEY SHARE OF m ON CONFLICT (id) DO NOTHING "
            "RETURNING id, session_id, length, tsv), "
            f"totals AS (INSERT INTO {t}session_totals AS k "
            "(session_id, documents, length) SELECT session_id, count(*), "
            "sum(length) FROM added GROUP BY session_id ON CONFLICT (session_id) "
            "DO UPDATE SET documents = k.documents + excluded.documents, "
            "length = k.length + excluded.length RETURNING 1), "
            "grouped AS (SELECT a.session_id, w.term, count(*) AS documents, "
            "array_agg(a.id) AS ids FROM added a, "
            "unnest(tsvector_to_array(a.tsv)) AS w(term) GROUP BY 1, 2), "
            f"terms AS (INSERT INTO {t}session_terms AS k (session_id, term, "
            "documents) SELECT session_id, term, documents FROM grouped "
            "ORDER BY 1, 2 ON CONFLICT (session_id, term) DO UPDATE SET "
            "documents = k.documents + excluded.documents "
            "RETURNING k.session_id, k.term, k.key), "
            f"postings AS (INSERT INTO {t}term_postings (term_key, id) "
            "SELECT k.key, unnest(g.ids) FROM grouped g JOIN terms k "
            "ON k.session_id = g.session_id AND k.term = g.term RETURNING 1) "
            "SELECT count(*) FROM added"
        )

    @property
    def _mark(self) -> str:
        t = self._tables
        return (
            f"INSERT INTO {t}session_index AS k (session_id, last_id) SELECT %s, %s "
            f"WHERE EXISTS (SELECT 1 FROM {t}messages WHERE session_id = %s) "
            "ON CONFLICT (session_id) DO UPDATE SET "
            "last_id = greatest(k.last_id, excluded.last_id)"
        )

    # Ids travel as one text of digits and spaces (``id_list``): a list parameter
    # costs the driver a conversion per element in Python, about 1 us each.
    id_source = "unnest(string_to_array(%s, ' ')::bigint[]) AS c(value)"
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
        lows = self.id_list([r[0] for r in ranges])
        rows = read(sql, (lows, self.id_list([r[1] for r in ranges]), session_id))
        return [int(row[0]) for row in rows]

    def id_list(self, ids: Sequence[int]) -> object:
        return " ".join(map(str, map(int, ids)))


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
        "%s ORDER BY id LIMIT %s"
    )
    while True:
        rows = tx.execute(page, (after, BACKFILL_PAGE)).fetchall()
        for row in rows:
            try:
                terms = message_terms(row_message(row[:-1]))
            except MalformedRecord:  # another program's row: found by no search,
                terms = []  # and the migration still opens the store
            search.index(tx, row[-1], int(row[0]), terms)
        done += len(rows)
        if rows:
            after = int(rows[-1][0])
        if logs_progress(done, len(rows)):
            log.info("%s: indexed %d of %d messages", where, done, total)
        if len(rows) < BACKFILL_PAGE:
            return
