"""The history index on real payloads: huge messages and searches racing a pop.

A message is never refused, nor its write hidden, because of its index: each store
indexes the bounded prefix of ``domain.recall.indexed_terms`` (a PostgreSQL
``tsvector`` is capped at 1 MB, a Redis script blocks its server while it runs).
A search reads its statistics from one snapshot, whatever pops or forgets meanwhile.
"""

from __future__ import annotations

from typing import Any

import pytest

from memory_summary import Message
from memory_summary.domain.recall import MAX_INDEXED_TERMS, query_terms
from tests.contract.stores import dispose, make_postgres, postgres_dsn

# 150,000 distinct numbers (about 1.2 MB, a tsvector of about 2 MB: past
# PostgreSQL's 1 MB cap); numbers skip the stemmer, so it is quick to make.
FIRST_WORD = "zebrafirst"
HUGE_TEXT = FIRST_WORD + " " + " ".join(str(10**8 + i) for i in range(150_000))
PAST_THE_BOUND = str(10**8 + MAX_INDEXED_TERMS + 10)


def _found(store: Any, sid: str, word: str) -> list[int]:
    return [
        h.message.id for h in store.search_messages(sid, query_terms(word), limit=5)
    ]


@pytest.mark.postgres
def test_postgres_stores_a_message_of_megabytes_of_distinct_words_whole(
    shared_postgres,
) -> None:
    store = shared_postgres
    store.clear_all()

    saved = store.save_message("s1", Message("tool", HUGE_TEXT, tool_call_id="c1"))
    [batch] = store.save_messages("s1", [Message("user", HUGE_TEXT)])

    assert store.get_history("s1")[0].content == HUGE_TEXT  # whole, not cut
    assert _found(store, "s1", FIRST_WORD) == [batch.id, saved.id]
    assert _found(store, "s1", PAST_THE_BOUND) == []  # past the documented bound


@pytest.mark.postgres
def test_a_version_3_postgres_schema_holding_a_huge_message_migrates() -> None:
    import psycopg

    from memory_summary.adapters import postgres

    first = make_postgres()
    schema = first.schema  # type: ignore[attr-defined]
    dispose(first)
    with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        for migration in postgres.MIGRATIONS:
            for statement in migration.split(";"):
                conn.execute(statement.replace("{s}", f'"{schema}"'))
        conn.execute(f'CREATE TABLE "{schema}".schema_version (version INT NOT NULL)')
        conn.execute(f'INSERT INTO "{schema}".schema_version VALUES (1), (2), (3)')
        conn.execute(
            f'INSERT INTO "{schema}".messages (session_id, role, content, archived) '
            "VALUES ('s1', 'tool', %s, FALSE), ('s1', 'user', 'an old zebra', FALSE)",
            (HUGE_TEXT,),
        )

    # Opened directly: make_postgres skips on a StoreError, as without a server.
    store = postgres.PostgresStore(postgres_dsn(), schema=schema, timeout_s=5)
    try:
        assert store.schema_version() == postgres.SCHEMA_VERSION  # type: ignore[attr-defined]
        assert store.get_history("s1")[0].content == HUGE_TEXT  # type: ignore[attr-defined]
        huge, old = (m.id for m in store.get_history("s1"))  # type: ignore[attr-defined]
        assert _found(store, "s1", FIRST_WORD)[0] == huge
        assert _found(store, "s1", "zebra")[0] == old
    finally:
        dispose(store)


def _racing_read(store: Any, between: Any) -> list[str]:
    """Make ``store``'s search run ``between()`` after its first statement."""
    read = store._read
    statements: list[str] = []

    def racing(sql: str, params: Any) -> Any:
        rows = read(sql, params)
        statements.append(sql)
        if len(statements) == 1:
            between()
        return rows

    store._read = racing
    return statements


@pytest.mark.postgres
@pytest.mark.parametrize("change", ["pop", "forget", "clear"])
def test_a_postgres_search_racing_a_pop_or_forget_reads_one_snapshot(
    shared_postgres, change: str
) -> None:
    store = shared_postgres
    store.clear_all()
    older = store.save_message("s1", Message("user", "a zebra here"))
    store.save_message("s1", Message("user", "another zebra there"))

    def between() -> None:  # on another pooled connection, committed at once
        if change == "pop":
            store.pop_message("s1")
        elif change == "forget":
            store.forget_session("s1", namespaces=())
        else:
            store.clear_session("s1")

    statements = _racing_read(store, between)
    try:
        found = _found(store, "s1", "zebra")
    finally:
        del store._read  # the instance's wrapper: back to the class's method

    assert statements  # the race was injected
    assert found == ([older.id] if change == "pop" else [])
