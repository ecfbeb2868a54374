"""Text that is no UTF-8 in SQLite, and message rows no store can decode.

SQLite keeps whatever bytes a program gives a TEXT column (``CAST(x'ff61' AS TEXT)``);
Python's sqlite3 then fails the whole fetch. The store reads such text as its bytes,
as it reads a blob (docs/stores.md): listings skip a key or session id that is one,
a record that is one is a ``MalformedRecord`` the engine moves aside, a message row
holding one a ``MalformedRecord`` naming its id, on every read.
"""

from __future__ import annotations

import logging

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.domain import MalformedRecord
from tests.contract.stores import kind_of, open_store, redis_client, run_sql

NO_UTF8 = [b"al\xffice", b"\xed\xa0\x80", b"\xc3"]  # a stray byte, a surrogate, cut
RECORD = '{"text": "about them", "tokens": 3}'


def _foreign_key(store, namespace: str, key: bytes) -> None:
    run_sql(
        store,
        "INSERT INTO metadata (namespace, key, data) VALUES (?, CAST(? AS TEXT), ?)",
        (namespace, key, RECORD),
    )


def _foreign_session(store, sid: bytes) -> None:
    run_sql(
        store,
        "INSERT INTO messages (session_id, role, content) "
        "VALUES (CAST(? AS TEXT), 'user', 'hi')",
        (sid,),
    )


@pytest.mark.parametrize("key", NO_UTF8, ids=repr)
def test_sqlite_listings_skip_a_key_that_is_no_utf8_text(
    request, tmp_path, caplog, key
):
    store = open_store(request, "sqlite", tmp_path)
    for sid in ("alice", "bob", "carol"):
        store.save_message(sid, Message("user", f"hello {sid}"))
        store.save_metadata("summary", sid, {"text": f"about {sid}", "tokens": 3})
    _foreign_key(store, "summary", key)
    _foreign_session(store, key)

    with caplog.at_level(logging.WARNING):
        page = store.metadata_page("summary")
        counts = store.session_counts()

    assert [k for k, _ in page] == ["alice", "bob", "carol"]
    assert counts == [("alice", 1, 0), ("bob", 1, 0), ("carol", 1, 0)]
    assert "no UTF-8 text" in caplog.text
    # every key, a foreign one too: ``clear --all`` names what it leaves
    listed = store.list_metadata("summary")
    assert key in listed
    assert len(listed) == 4
    with SummaryEngine(store) as engine:
        assert list(engine.usage_by_session()) == ["alice", "bob", "carol"]


def test_a_skipped_key_never_shortens_a_page(request, tmp_path):
    """Callers page on until a page comes back short: a skip must not end it.

    ``al\\xff`` sorts between ``alice`` and ``bob``: a page of two read as the
    rows ``alice, al\\xff`` would have held one session and ended the listing.
    """
    store = open_store(request, "sqlite", tmp_path)
    for sid in ("alice", "bob", "carol"):
        store.save_message(sid, Message("user", "hi"))
        store.save_metadata("summary", sid, {"text": "x", "tokens": 1})
    for raw in (b"al\xff", b"al\xfe", b"b\xff"):
        _foreign_key(store, "summary", raw)
        _foreign_session(store, raw)

    first = store.metadata_page("summary", limit=2)
    rest = store.metadata_page("summary", after_key=first[-1][0], limit=2)
    counted = store.session_counts(limit=2)
    more = store.session_counts(after=counted[-1][0], limit=2)

    assert [k for k, _ in first] == ["alice", "bob"]
    assert [k for k, _ in rest] == ["carol"]
    assert [s for s, _, _ in counted] == ["alice", "bob"]
    assert [s for s, _, _ in more] == ["carol"]


def test_a_sqlite_record_that_is_no_utf8_text_is_moved_aside(request, tmp_path, sid):
    store = open_store(request, "sqlite", tmp_path)
    for i in range(10):
        store.save_message(sid, Message("user", f"message {i} about apples"))
    run_sql(
        store,
        "INSERT INTO metadata (namespace, key, data) VALUES "
        "('summary', ?, CAST(? AS TEXT))",
        (sid, b'{"text": "\xff"}'),
    )

    with pytest.raises(MalformedRecord, match=f"metadata summary/{sid}"):
        store.get_metadata("summary", sid)
    with pytest.raises(MalformedRecord, match=f"metadata summary/{sid}"):
        store.read_window(sid, limit=5, namespace="summary")
    with SummaryEngine(store, config=SummaryConfig(keep_recent=2)) as engine:
        assert engine.summary(sid) is None
        outcome = engine.compress(sid).result(timeout=30)

        assert outcome.kind == "compressed", outcome
        assert engine.summary(sid) is not None
    moved = run_sql(
        store,
        "SELECT CAST(data AS BLOB) FROM metadata WHERE namespace = ? AND key = ?",
        ("summary.quarantine", sid),
    )
    assert moved == [(b'{"text": "\xff"}',)]


def _no_utf8_message(store, sid: str) -> int:
    """Add a message whose content is no UTF-8; return its id."""
    run_sql(
        store,
        "INSERT INTO messages (session_id, role, content) "
        "VALUES (?, 'user', CAST(? AS TEXT))",
        (sid, b"caf\xe9"),
    )
    return int(run_sql(store, "SELECT max(id) FROM messages")[0][0])


def test_a_sqlite_message_that_is_no_utf8_text_is_a_malformed_record(
    request, tmp_path, sid
):
    """Named by its id on every read; a pop of it deletes nothing."""
    store = open_store(request, "sqlite", tmp_path)
    store.save_message(sid, Message("user", "hello apples"))
    bad = _no_utf8_message(store, sid)
    reads = [
        lambda: store.get_history(sid),
        lambda: store.get_full_history(sid),
        lambda: store.read_window(sid, limit=5, namespace="summary"),
        lambda: store.get_oldest_history(sid, 5),
        lambda: store.read_messages(sid, bad, before=1, after=1),
    ]
    for read in reads:
        with pytest.raises(MalformedRecord, match=f"stored message {bad}"):
            read()

    with pytest.raises(MalformedRecord, match="not UTF-8"):
        store.pop_message(sid)
    assert store.count_history(sid) == 2
    assert store.session_counts() == [(sid, 2, 0)]


def _malformed_message(store, sid: str) -> None:
    """Add a message row no store can decode, as another program would."""
    kind = kind_of(store)
    if kind == "sqlite":
        _no_utf8_message(store, sid)
    elif kind == "postgres":
        run_sql(
            store,
            "INSERT INTO {t}messages (session_id, role, content, metadata) "
            "VALUES (?, 'user', 'x', '[not json')",
            (sid,),
        )
    else:  # its id from the counter, as the SQL rows' from their sequence: the
        # store refuses to give an id a session holds
        with redis_client(store) as client:
            row_id = client.incr(f"{store.prefix}id")
            client.zadd(f"{store.prefix}h:{sid}", {b"not json": row_id})


@pytest.mark.parametrize(
    "kind",
    [
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("redis", marks=pytest.mark.redis),
    ],
)
def test_a_message_row_that_cannot_be_read_leaves_the_summary_in_place(
    request, tmp_path, sid, kind
):
    """A compression fails on it, clearly; the good summary is not moved aside.

    Before, the engine took any ``MalformedRecord`` from ``read_window`` for one
    of the record and moved the session's summary into quarantine.
    """
    store = open_store(request, kind, tmp_path)
    for i in range(10):
        store.save_message(sid, Message("user", f"message {i} about apples"))
    config = SummaryConfig(keep_recent=2)
    with SummaryEngine(store, config=config) as engine:
        assert engine.compress(sid).result(timeout=30).kind == "compressed"
        record = engine.summary(sid)
        assert record is not None
    _malformed_message(store, sid)
    for i in range(6):
        store.save_message(sid, Message("user", f"later {i}"))

    with SummaryEngine(store, config=config) as engine:
        outcome = engine.compress(sid).result(timeout=30)

        assert outcome.kind == "failed", outcome
        assert "stored message" in outcome.detail
        assert engine.summary(sid) == record
    assert store.get_metadata("summary.quarantine", sid) is None


def test_a_row_no_store_can_read_never_stops_another_sessions_search(tmp_path):
    """The eager index takes every session's rows in one batch: a malformed row
    is taken in with no terms, not raised, so the batches after it go on.

    Before, every search of every session raised its ``MalformedRecord`` for good.
    """
    from memory_summary.adapters import SqliteStore

    store = SqliteStore(tmp_path / "eager.sqlite3", recall_index="eager")
    try:
        store.save_message("a", Message("user", "apples in a"))
        _no_utf8_message(store, "a")
        run_sql(
            store,
            "INSERT INTO messages (session_id, role, content) "
            "VALUES (CAST(? AS TEXT), 'user', 'apples')",
            (b"\xff",),
        )
        for i in range(5):
            store.save_message("b", Message("user", f"bananas {i} in b"))

        hits = store.search_messages("b", ["banana"], limit=3)

        assert len(hits) == 3
        with pytest.raises(MalformedRecord, match="stored message 2"):
            store.search_messages("a", ["appl"], limit=3)  # reads the row as context
        assert run_sql(store, "SELECT last_id FROM index_state") == [(8,)]
    finally:
        store.close()


def test_a_version_1_sqlite_file_with_a_malformed_row_still_opens(tmp_path):
    """Migration 4 indexes every stored row: one no message is taken in bare."""
    import contextlib
    import sqlite3

    from memory_summary.adapters import SqliteStore
    from memory_summary.adapters.stores.sql import sqlite

    path = tmp_path / "v1.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(sqlite.MIGRATIONS[0])
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version (version) VALUES (1)")
        for content in (b"caf\xe9", b"apples"):
            conn.execute(
                "INSERT INTO messages (session_id, role, content) "
                "VALUES ('s1', 'user', CAST(? AS TEXT))",
                (content,),
            )

    store = SqliteStore(path)
    try:
        assert store.schema_version() == sqlite.SCHEMA_VERSION
        with pytest.raises(MalformedRecord, match="stored message 1"):
            store.get_history("s1")
        assert [m.content for m in store.get_history("s1", limit=1)] == ["apples"]
    finally:
        store.close()


@pytest.mark.postgres
def test_a_version_1_postgres_schema_with_a_malformed_row_still_opens():
    import psycopg

    from memory_summary.adapters.stores.sql import postgres
    from tests.contract.stores import dispose, make_postgres, postgres_dsn

    first = make_postgres()
    schema = first.schema
    dispose(first)
    with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        for statement in postgres.MIGRATIONS[0].split(";"):
            conn.execute(statement.replace("{s}", f'"{schema}"'))
        conn.execute(f'CREATE TABLE "{schema}".schema_version (version INT NOT NULL)')
        conn.execute(f'INSERT INTO "{schema}".schema_version VALUES (1)')
        conn.execute(
            f'INSERT INTO "{schema}".messages (session_id, role, content, metadata) '
            "VALUES ('s1', 'user', 'x', '[not json'), ('s1', 'user', 'apples', NULL)"
        )

    store = make_postgres(schema)
    try:
        assert store.schema_version() == postgres.SCHEMA_VERSION
        with pytest.raises(MalformedRecord, match="stored message 1"):
            store.get_history("s1")
        assert [m.content for m in store.get_history("s1", limit=1)] == ["apples"]
    finally:
        dispose(store)


BOOKKEEPING = [
    "UPDATE index_state SET last_id = 'abc'",
    "UPDATE index_state SET last_id = 1e999",
    "DELETE FROM index_state",
]


@pytest.mark.parametrize(
    ("policy", "sql"),
    [
        *[("lazy", sql) for sql in BOOKKEEPING],
        *[("eager", sql) for sql in BOOKKEEPING],
        # what a lazy search reads of its session (eager searches never do)
        ("lazy", "INSERT INTO session_index (session_id, last_id) VALUES ('s', 'x')"),
    ],
)
def test_foreign_search_bookkeeping_is_a_malformed_record(tmp_path, policy, sql):
    """Before, a bare ValueError, OverflowError or TypeError reached the caller."""
    from memory_summary.adapters import SqliteStore

    store = SqliteStore(tmp_path / "index.sqlite3", recall_index=policy)
    try:
        for i in range(3):
            store.save_message("s", Message("user", f"apples {i}"))
        run_sql(store, sql)
        store.save_message("s", Message("user", "more apples"))

        with pytest.raises(MalformedRecord, match="bookkeeping"):
            store.search_messages("s", ["appl"], limit=3)
        assert len(store.get_history("s")) == 4
    finally:
        store.close()


@pytest.mark.parametrize("policy", ["lazy", "eager"])
def test_an_error_of_the_index_itself_is_not_blamed_on_its_bookkeeping(
    tmp_path, monkeypatch, policy
):
    """Only the bookkeeping values are checked: before, the whole catch-up was."""
    from memory_summary.adapters import SqliteStore
    from memory_summary.adapters.recall import sqlite_index

    def broken(row):
        raise ValueError("a bug of the indexer")

    store = SqliteStore(tmp_path / "index.sqlite3", recall_index=policy)
    try:
        for i in range(3):
            store.save_message("s", Message("user", f"apples {i}"))
        monkeypatch.setattr(sqlite_index, "_index_row", broken)
        store.save_message("s", Message("user", "more apples"))

        with pytest.raises(ValueError, match="a bug of the indexer") as raised:
            store.search_messages("s", ["appl"], limit=3)
        assert not isinstance(raised.value, MalformedRecord)
    finally:
        store.close()
