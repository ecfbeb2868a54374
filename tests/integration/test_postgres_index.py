"""PostgreSQL's kept search statistics and postings: what a count of the rows says."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memory_summary import Message
from memory_summary.domain import CommitRequest
from memory_summary.domain.recall import query_terms
from tests.contract.stores import dispose, make_postgres, postgres_dsn

pytestmark = pytest.mark.postgres

_WORDS = ("zebra", "Zebras", "giraffe", "the", "north", "北京大学", "42", "kiwi")
_SESSIONS = ("a", "b", "c")


@pytest.fixture(scope="module")
def schema() -> Iterator[str]:
    store = make_postgres()
    name = store.schema  # type: ignore[attr-defined]
    store.close()  # type: ignore[attr-defined]
    yield name
    dispose(make_postgres(name))


def _rows(schema: str, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
        return conn.execute(sql.replace("{s}", f'"{schema}"')).fetchall()


def _kept_statistics(schema: str) -> tuple[dict, dict, dict]:
    """Return the kept statistics: {session: (documents, length)}, {(s, term): n}.

    And the postings: {(session, term): the ids of its rows that hold the term}.
    """
    totals = {sid: (n, length) for sid, n, length in _rows(schema, _KEPT_TOTALS)}
    terms = {(sid, term): n for sid, term, n in _rows(schema, _KEPT_TERMS)}
    postings: dict[tuple[str, str], set[int]] = {}
    for sid, term, id_ in _rows(schema, _KEPT_POSTINGS):
        postings.setdefault((sid, term), set()).add(id_)
    return totals, terms, postings


_KEPT_TOTALS = "SELECT session_id, documents, length FROM {s}.session_totals"
_KEPT_TERMS = "SELECT session_id, term, documents FROM {s}.session_terms"
_KEPT_POSTINGS = (
    "SELECT k.session_id, k.term, p.id FROM {s}.term_postings p "
    "JOIN {s}.session_terms k ON k.key = p.term_key"
)


def _counted_statistics(schema: str) -> tuple[dict, dict, dict]:
    """Return them counted afresh, as a search counted them before they were kept.

    Each session's index rows and their summed ``length``; each lexeme a row holds,
    its count by ``@@`` among the session's rows, and those rows' ids.
    """
    totals = {
        sid: (n, length)
        for sid, n, length in _rows(
            schema,
            "SELECT session_id, count(*), sum(length) FROM {s}.message_terms "
            "GROUP BY session_id",
        )
    }
    held = _rows(
        schema,
        "SELECT DISTINCT session_id, unnest(tsvector_to_array(tsv)) "
        "FROM {s}.message_terms",
    )
    terms, postings = {}, {}
    for sid, term in held:
        quoted = term.replace("'", "''")
        ids = _rows(
            schema,
            "SELECT id FROM {s}.message_terms WHERE session_id = "
            f"'{sid}' AND tsv @@ '''{quoted}'''::tsquery",
        )
        terms[(sid, term)] = len(ids)
        postings[(sid, term)] = {id_ for (id_,) in ids}
    return totals, terms, postings


def _to_version_4(schema: str) -> None:
    """Turn the schema into what version 4 left: no statistics or postings kept."""
    import psycopg

    with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
        for statement in (
            "DROP TABLE {s}.term_postings",  # version 7's
            "CREATE INDEX message_terms_tsv ON {s}.message_terms USING gin (tsv)",
            "DROP TABLE {s}.session_totals",
            "DROP TABLE {s}.session_terms",
            "DROP FUNCTION {s}.count_added_terms() CASCADE",  # and its trigger
            "DROP FUNCTION {s}.count_removed_terms() CASCADE",
            "DROP INDEX {s}.message_terms_in_order",
            "CREATE INDEX message_terms_by_session ON {s}.message_terms "
            "(session_id, length)",
            "DROP FUNCTION {s}.unmark_sessions() CASCADE",  # version 6's
            "DROP TABLE {s}.session_index",
            "DELETE FROM {s}.schema_version WHERE version >= 5",
        ):
            conn.execute(statement.replace("{s}", f'"{schema}"'))


def _eager(schema: str):
    """Return a store on ``schema`` that indexes each message as it is saved."""
    store = make_postgres(schema)
    store.set_recall_index("eager")  # type: ignore[attr-defined]
    return store


def _commit(store, sid: str) -> None:
    """Archive the older half of the session's active messages, as a compression."""
    active = store.get_history(sid)
    if not active:
        return
    record = store.get_metadata("summary", sid)
    through = active[: max(1, len(active) // 2)]
    result = store.commit(
        CommitRequest(
            session_id=sid,
            namespace="summary",
            record={"generation": f"g{len(active)}-{through[-1].id}"},
            expect_generation=record["generation"] if record else None,
            through_id=through[-1].id,
            expect_archived=len(through),
        )
    )
    assert result.archived == len(through)


_text = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=4).map(" ".join)
_session = st.sampled_from(_SESSIONS)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("save"), _session, _text),
        st.tuples(st.just("save_many"), _session, st.lists(_text, max_size=4)),
        st.tuples(st.just("search"), _session, st.sampled_from(_WORDS)),
        st.tuples(st.just("pop"), _session),
        st.tuples(st.just("commit"), _session),
        st.tuples(st.just("clear"), _session),
        st.tuples(st.just("forget"), _session),
        st.tuples(st.just("clear_all")),
        st.tuples(st.just("version_4")),
    ),
    max_size=20,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=_steps)
@example(
    steps=[
        ("save_many", "a", ["zebra the", "the zebra giraffe", "kiwi"]),
        ("save", "b", "zebra 42"),
        ("save", "a", "giraffe north"),
        ("pop", "a"),
        ("pop", "a"),
        ("commit", "a"),
        ("search", "b", "zebra"),
        ("version_4",),
        ("save", "a", "北京大学 Zebras"),
        ("forget", "b"),
        ("search", "a", "zebra"),
        ("clear", "a"),
        ("save", "c", "north north kiwi"),
        ("version_4",),
        ("clear_all",),
    ]
)
def test_each_sessions_statistics_stay_what_a_count_says_through_any_sequence(
    schema, steps
):
    store = make_postgres(schema)
    try:
        store.clear_all()
        for step in steps:
            kind, args = step[0], step[1:]
            if kind == "save":
                store.save_message(args[0], Message("user", args[1]))
            elif kind == "save_many":
                texts = args[1]
                store.save_messages(args[0], [Message("user", t) for t in texts])
            elif kind == "search":
                store.search_messages(args[0], query_terms(args[1]), limit=3)
            elif kind == "pop":
                store.pop_message(args[0])
            elif kind == "commit":
                _commit(store, args[0])
            elif kind == "clear":
                store.clear_session(args[0])
            elif kind == "forget":
                store.forget_session(args[0], namespaces=["summary"])
            elif kind == "clear_all":
                store.clear_all()
            else:  # a database of the previous version, migrated as it is reopened
                store.close()
                _to_version_4(schema)
                store = make_postgres(schema)
                assert store.schema_version() == 7
            assert _kept_statistics(schema) == _counted_statistics(schema), step
    finally:
        store.close()


def test_a_version_4_schema_counts_its_statistics_and_finds_the_same(schema) -> None:
    store = _eager(schema)
    try:
        store.clear_all()
        store.save_messages(
            "s1", [Message("user", f"zebra {i} kiwi") for i in range(5)]
        )
        store.save_messages("s2", [Message("user", "zebra giraffe")] * 3)
        _commit(store, "s1")  # archived messages stay counted and found
        before = store.search_messages("s1", query_terms("zebra kiwi 0"), limit=5)
    finally:
        store.close()
    _to_version_4(schema)

    store = _eager(schema)
    try:
        assert store.schema_version() == 7
        kept = _kept_statistics(schema)
        assert kept == _counted_statistics(schema)
        assert kept[0] == {"s1": (5, 15), "s2": (3, 6)}
        assert (kept[1][("s1", "kiwi")], kept[1][("s2", "zebra")]) == (5, 3)
        after = store.search_messages("s1", query_terms("zebra kiwi 0"), limit=5)
        assert after == before
        assert (after[0].message.content, after[0].archived) == ("zebra 0 kiwi", True)
    finally:
        store.close()


def test_concurrent_writers_of_one_session_keep_its_statistics(schema) -> None:
    """Saves, batches and pops at once: no deadlock, no count lost."""
    store = _eager(schema)
    try:
        store.clear_all()
        start = threading.Barrier(4)

        def work(worker: int) -> None:
            start.wait()
            for i in range(15):
                words = [_WORDS[(worker + i + k) % len(_WORDS)] for k in range(3)]
                if i % 3 == 0:
                    store.save_messages("a", [Message("user", w) for w in words])
                else:
                    store.save_message("a", Message("user", " ".join(words)))
                if i % 5 == 4:
                    store.pop_message("a")

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert _kept_statistics(schema) == _counted_statistics(schema)
        assert _kept_statistics(schema)[0]["a"][0] == len(store.get_history("a"))
    finally:
        with contextlib.suppress(Exception):
            store.close()


@pytest.mark.parametrize("archived_only", [False, True])
def test_each_terms_newest_matches_rank_as_the_reference_store(
    schema, archived_only
) -> None:
    from memory_summary.adapters import InMemoryStore

    texts = [
        " ".join(w for k, w in enumerate(_WORDS) if i % (k + 2)) for i in range(300)
    ]
    stores = [_eager(schema), InMemoryStore()]
    found = []
    try:
        stores[0].clear_all()
        for store in stores:
            store.save_messages("s1", [Message("user", text) for text in texts])
            store.save_message("s2", Message("user", "zebra kiwi north"))
            _commit(store, "s1")
            found.append(
                [
                    [
                        (hit.message.content, hit.archived, round(hit.score, 9))
                        for hit in store.search_messages(
                            "s1",
                            query_terms(query),
                            limit=20,
                            archived_only=archived_only,
                        )
                    ]
                    for query in ("zebra giraffe", "north kiwi 42", "北京大学 the")
                ]
            )
    finally:
        stores[0].close()

    assert [len(hits) for hits in found[0]] == [20, 20, 20]
    assert found[0] == found[1]


def _to_version_6(schema: str) -> None:
    """Turn the schema into what version 6 left: no postings, the GIN index back.

    The triggers become version 6's (the released migrations' text): they count a
    row unless a statement set ``memory_summary.counted_in_bulk``, and write no
    postings.
    """
    import psycopg

    from memory_summary.adapters.recall.postgres_index import (
        SESSION_INDEX_SCHEMA,
        STATISTICS_SCHEMA,
    )

    removed = STATISTICS_SCHEMA[3].replace(
        "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
    )
    with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
        for statement in (
            SESSION_INDEX_SCHEMA[0],  # count_added_terms of version 6
            removed,
            "DROP TABLE {s}.term_postings",
            "ALTER TABLE {s}.session_terms DROP COLUMN key",
            "CREATE INDEX message_terms_tsv ON {s}.message_terms USING gin (tsv)",
            "DELETE FROM {s}.schema_version WHERE version >= 7",
        ):
            conn.execute(statement.replace("{s}", f'"{schema}"'))


# What a lazy catch-up of version 6's code runs for a page, in its transaction: the
# flag, then the rows and their statistics in one statement (its ``_index_stored``,
# verbatim but for the parameters' placeholders), then the session's watermark.
_V6_FLAG = "SELECT set_config('memory_summary.counted_in_bulk', 'on', true)"
_V6_INDEX_STORED = (
    "WITH added AS (INSERT INTO {s}.message_terms "
    "(id, session_id, length, terms, tsv) "
    "SELECT m.id, m.session_id, b.length, b.terms, "
    "array_to_tsvector(string_to_array(b.lexemes, ' ')) FROM "
    "unnest(%s::bigint[], %s::int[], %s::text[], %s::text[]) "
    "AS b(id, length, terms, lexemes) JOIN {s}.messages m ON m.id = b.id "
    "ORDER BY m.id FOR KEY SHARE OF m ON CONFLICT (id) DO NOTHING "
    "RETURNING session_id, length, tsv), "
    "totals AS (INSERT INTO {s}.session_totals AS k "
    "(session_id, documents, length) SELECT session_id, count(*), "
    "sum(length) FROM added GROUP BY session_id ON CONFLICT (session_id) "
    "DO UPDATE SET documents = k.documents + excluded.documents, "
    "length = k.length + excluded.length RETURNING 1), "
    "terms AS (INSERT INTO {s}.session_terms AS k (session_id, term, "
    "documents) SELECT a.session_id, w.term, count(*) FROM added a, "
    "unnest(tsvector_to_array(a.tsv)) AS w(term) GROUP BY 1, 2 "
    "ORDER BY 1, 2 ON CONFLICT (session_id, term) DO UPDATE SET "
    "documents = k.documents + excluded.documents RETURNING 1) "
    "SELECT count(*) FROM added"
)
_V6_MARK = (
    "INSERT INTO {s}.session_index AS k (session_id, last_id) SELECT %s, %s "
    "WHERE EXISTS (SELECT 1 FROM {s}.messages WHERE session_id = %s) "
    "ON CONFLICT (session_id) DO UPDATE SET "
    "last_id = greatest(k.last_id, excluded.last_id)"
)


def test_a_version_6_processs_catch_up_on_a_version_7_schema_is_found(schema) -> None:
    """A process of version 6 still running after another migrated to version 7.

    Its catch-up counts a page in its own statement under its flag; the row trigger
    of version 7 then writes the page's postings, so version 7's search (which reads
    the postings, and trusts the watermark the old process moved) finds the rows.
    """
    import psycopg

    from memory_summary.adapters.recall.terms import session_term
    from memory_summary.adapters.stores.sql import postgres
    from memory_summary.domain.recall import message_terms

    store = make_postgres(schema)  # lazy: a save stores the message alone
    try:
        store.clear_all()
        store.save_messages(
            "s1", [Message("user", f"kiwi north {i}") for i in range(4)]
        )
        assert store.search_messages("s1", query_terms("kiwi"), limit=5)  # indexed
        old = [Message("user", text) for text in ("an old zebra", "zebra kiwi zebra")]
        saved = store.save_messages("s1", old)
        store.save_message("s2", Message("user", "zebra in another session"))
        ids = [message.id for message in saved]
        assert store.schema_version() == postgres.SCHEMA_VERSION == 7

        # the old process's catch-up of s1's page, as version 6 wrote it
        words = [message_terms(message) for message in saved]
        own = session_term("s1")
        columns = (
            ids,
            [len(w) for w in words],
            [" ".join(w) for w in words],
            [" ".join([own, *dict.fromkeys(w)]) for w in words],
        )
        with psycopg.connect(postgres_dsn()) as conn:  # one transaction
            conn.execute(_V6_FLAG)
            sql = _V6_INDEX_STORED.replace("{s}", f'"{schema}"')
            assert conn.execute(sql, columns).fetchone()[0] == 2
            mark = _V6_MARK.replace("{s}", f'"{schema}"')
            conn.execute(mark, ("s1", ids[-1], "s1"))

        kept = _kept_statistics(schema)
        assert kept == _counted_statistics(schema)  # counted once, and posted
        assert kept[2][("s1", "zebra")] == set(ids)
        found = store.search_messages("s1", query_terms("zebra"), limit=5)
        assert [hit.message.content for hit in found][:2] == [
            "zebra kiwi zebra",
            "an old zebra",
        ]
        # version 7's own catch-up, of s2, still counts and posts in its statement
        assert store.search_messages("s2", query_terms("zebra"), limit=5)
        assert _kept_statistics(schema) == _counted_statistics(schema)
    finally:
        store.close()


def test_migration_7_waits_for_a_save_in_flight_instead_of_deadlocking(
    schema,
) -> None:
    """Migration 7 takes its locks first, in the writers' order.

    A save of version 6's code in flight holds ``messages`` and ``message_terms``
    and has still to count its row in ``session_terms``; the migration, started
    then, waits for it at its first lock, and both complete (a migration that
    altered ``session_terms`` first, and dropped the index on ``message_terms``
    last, deadlocked with it).
    """
    import psycopg

    from memory_summary.adapters import PostgresStore
    from memory_summary.adapters.recall.terms import session_term
    from memory_summary.domain import StoreError

    lexemes = [session_term("s1"), "zebra", "saved", "meanwhile"]
    store = _eager(schema)
    try:
        store.clear_all()
        store.save_messages(
            "s1", [Message("user", f"zebra kiwi {i}") for i in range(5)]
        )
    finally:
        store.close()
    _to_version_6(schema)

    def q(sql: str) -> str:
        return sql.replace("{s}", f'"{schema}"')

    with psycopg.connect(postgres_dsn()) as saver:  # one transaction
        pid = saver.info.backend_pid
        row_id = saver.execute(
            q(
                "INSERT INTO {s}.messages (session_id, role, content) "
                "VALUES ('s1', 'user', 'zebra saved meanwhile') RETURNING id"
            )
        ).fetchone()[0]
        # its index row, the count left to the statements below (a save's trigger
        # counts after the row is written: the row's lock is held first)
        saver.execute(_V6_FLAG)
        saver.execute(
            q(
                "INSERT INTO {s}.message_terms (id, session_id, length, terms, tsv) "
                "VALUES (%s, 's1', 3, 'zebra saved meanwhile', "
                "array_to_tsvector(%s::text[]))"
            ),
            (row_id, lexemes),
        )
        outcome: list[object] = []
        done = threading.Event()

        def migrate() -> None:
            try:
                outcome.append(PostgresStore(postgres_dsn(), schema=schema))
            except StoreError as exc:  # a deadlock, reported by the test thread
                outcome.append(exc)
            finally:
                done.set()

        thread = threading.Thread(target=migrate)
        thread.start()
        try:
            # the migration's statement blocked by the save, once it waits
            with psycopg.connect(postgres_dsn(), autocommit=True) as watch:
                waiting: list[tuple] = []
                while not waiting and not done.is_set():
                    waiting = watch.execute(
                        "SELECT query FROM pg_stat_activity "
                        "WHERE %s = ANY(pg_blocking_pids(pid))",
                        (pid,),
                    ).fetchall()
                    done.wait(0.01)  # the next look, unless the migration ended
            assert not done.is_set(), outcome  # it waited for the save
            saver.execute(
                q(
                    "INSERT INTO {s}.session_totals AS k VALUES ('s1', 1, 3) "
                    "ON CONFLICT (session_id) DO UPDATE SET "
                    "documents = k.documents + 1, length = k.length + 3"
                )
            )
            saver.execute(
                q(
                    "INSERT INTO {s}.session_terms AS k (session_id, term, documents) "
                    "SELECT 's1', t, 1 FROM unnest(%s::text[]) AS t ORDER BY t "
                    "ON CONFLICT (session_id, term) DO UPDATE SET "
                    "documents = k.documents + 1"
                ),
                (sorted(lexemes),),
            )
            saver.commit()
        finally:
            saver.rollback()  # nothing left after the commit; else frees the thread
            thread.join()
    migrated = outcome[0]
    assert not isinstance(migrated, BaseException), migrated
    assert waiting == [(q("LOCK TABLE {s}.messages IN SHARE MODE"),)]  # its first
    try:
        assert migrated.schema_version() == 7  # type: ignore[attr-defined]
        assert _kept_statistics(schema) == _counted_statistics(schema)
        found = migrated.search_messages(  # type: ignore[attr-defined]
            "s1", query_terms("zebra meanwhile"), limit=3
        )
        assert found[0].message.content == "zebra saved meanwhile"
    finally:
        migrated.close()  # type: ignore[attr-defined]
