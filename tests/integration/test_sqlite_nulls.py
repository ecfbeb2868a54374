"""None parameters written as NULL in SQLite statements: same rows, same answers."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from memory_summary import Message
from memory_summary.adapters import SqliteArchive, SqliteStore
from memory_summary.adapters.stores.sql import sqlite_nulls
from memory_summary.adapters.stores.sql.sqlite_nulls import inline_nulls


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a, b, c)")
    yield connection
    connection.close()


def test_a_row_with_none_reads_back_as_bound(conn):
    insert = "INSERT INTO t (a, b, c) VALUES (?, ?, ?)"
    assert inline_nulls(insert, ("x", None, 2.5)) == (
        "INSERT INTO t (a, b, c) VALUES (?, NULL, ?)",
        ("x", 2.5),
    )
    conn.execute(*inline_nulls(insert, ("x", None, 2.5)))
    conn.execute(*inline_nulls(insert, (None, None, None)))
    rows = conn.execute("SELECT a, b, c, typeof(b) FROM t ORDER BY id").fetchall()
    assert rows == [("x", None, 2.5, "null"), (None, None, None, "null")]


def test_a_comparison_with_none_means_what_a_bound_null_means(conn):
    conn.execute("INSERT INTO t (a) VALUES ('v')")
    sql = "SELECT CASE WHEN a = ? THEN 1 ELSE a END, a IS ? FROM t"
    for params in ((None, None), ("v", None), (None, "v")):
        inlined = inline_nulls(sql, params)
        assert inlined[0] != sql
        assert conn.execute(*inlined).fetchall() == conn.execute(sql, params).fetchall()


def test_parameters_without_none_are_left_as_they_are():
    params = ("a", 1, 2.0)
    sql = "SELECT ?, ?, ?"
    got_sql, got_params = inline_nulls(sql, params)
    assert got_sql is sql
    assert got_params is params


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT ?, '?'",  # a ? in a literal
        "SELECT ? -- ?",  # or a comment
        "SELECT ?1, ?2",  # numbered
        'SELECT ? AS "a?"',  # a quoted name
        "SELECT ?, ?, ?",  # more marks than parameters
        "SELECT %s, %s",  # another dialect's placeholders
        "SELECT 1 FROM t WHERE data ? %s AND ?",  # PostgreSQL's jsonb ? operator
        "SELECT #a, ?",  # a named parameter SQLite also reads
    ],
)
def test_a_statement_whose_marks_may_not_be_placeholders_runs_as_given(sql):
    assert inline_nulls(sql, (None, None)) == (sql, (None, None))


def test_a_value_equal_to_none_is_bound_as_it_is(conn):
    class EqualToAll(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            return True

    value = EqualToAll("kept")
    sql, params = inline_nulls("INSERT INTO t (a) VALUES (?)", (value,))
    assert params == (value,)
    conn.execute(sql, params)
    assert conn.execute("SELECT a FROM t").fetchall() == [("kept",)]


def test_a_value_whose_comparison_raises_is_bound_as_it_is(conn):
    class Hostile(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            raise RuntimeError("compared")

    value = Hostile("kept")
    sql, params = inline_nulls("INSERT INTO t (a, b) VALUES (?, ?)", (value, None))
    assert sql == "INSERT INTO t (a, b) VALUES (?, NULL)"
    assert params[0] is value


def test_one_statement_gets_a_bounded_number_of_variants(conn, monkeypatch):
    """Past ``VARIANTS_PER_STATEMENT`` patterns of None, the statement is bound as
    given: a connection prepares 128 statements at most, and variants beyond that
    would be prepared again on every insert."""
    monkeypatch.setattr(sqlite_nulls, "_VARIANTS", {})
    monkeypatch.setattr(sqlite_nulls, "_PER_STATEMENT", {})
    monkeypatch.setattr(sqlite_nulls, "_BY_TYPES", {})
    monkeypatch.setattr(sqlite_nulls, "VARIANTS_PER_STATEMENT", 2)
    sql = "SELECT ?, ?, ?"
    patterns = [(None, 1, 2), (1, None, 2), (1, 2, None), (None, None, 2)]
    results = [inline_nulls(sql, params) for params in patterns]
    assert [r[0] for r in results[:2]] == ["SELECT NULL, ?, ?", "SELECT ?, NULL, ?"]
    assert results[2:] == [(sql, patterns[2]), (sql, patterns[3])]
    assert inline_nulls(sql, patterns[0]) == results[0]  # kept ones still apply
    for inlined in results:
        assert len(conn.execute(*inlined).fetchall()) == 1


def test_the_memo_of_variants_stays_bounded(conn, monkeypatch):
    monkeypatch.setattr(sqlite_nulls, "_VARIANTS", {})
    monkeypatch.setattr(sqlite_nulls, "_PER_STATEMENT", {})
    monkeypatch.setattr(sqlite_nulls, "_BY_TYPES", {})
    monkeypatch.setattr(sqlite_nulls, "MAX_VARIANTS", 3)
    for width in range(1, 8):
        sql = f"SELECT {', '.join(['?'] * width)}"
        inlined = inline_nulls(sql, (None,) * width)
        assert conn.execute(*inlined).fetchall() == [(None,) * width]
        assert len(sqlite_nulls._VARIANTS) <= 3


def test_a_store_saves_and_reads_none_fields(tmp_path):
    store = SqliteStore(tmp_path / "s.sqlite3")
    try:
        saved = store.save_message("s1", Message("user", "hi"))
        tool = store.save_message(
            "s1", Message("tool", "42", tool_call_id="c1", name="calc")
        )
        batch = store.save_messages(
            "s1", [Message("user", "a"), Message("assistant", "b", name="bot")]
        )
        marker = SqliteArchive(store).save_message("s1", Message("system", "---"))
        assert store.get_history("s1") == [saved, tool, *batch]
        assert store.archive_messages("s1") == [marker]
        assert store.get_history("s1")[0].tool_call_id is None
        assert store.get_history("s1")[1].name == "calc"
    finally:
        store.close()
