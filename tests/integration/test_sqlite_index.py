"""SQLite's history index: saves compute no terms; batches are taken in off the caller.

A save stores the message alone. Under ``recall_index="eager"`` FTS5 takes stored rows
in on the index's own thread every ``CATCH_UP_EVERY`` messages, and before every
search; under ``lazy`` (the default) a search takes its session's rows in first; the
terms are computed outside the write transaction either way. These tests pin what
that must never cost: a message missing from a search, a message indexed twice, or a
cleared message left in FTS5.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memory_summary import Message, StoreError
from memory_summary.adapters import SqliteStore
from memory_summary.adapters.recall import sqlite_index
from memory_summary.adapters.recall.sql_index import CATCH_UP_EVERY, fts5_term
from memory_summary.adapters.stores.sql import sqlite
from memory_summary.domain import CommitRequest
from memory_summary.domain.recall import query_terms


def _counts(path) -> tuple[int, int, int, int]:
    """Return (messages, FTS5 rows, index_state.rows, index_state.last_id)."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        indexed = conn.execute("SELECT count(*) FROM message_index").fetchone()[0]
        rows, last = conn.execute("SELECT rows, last_id FROM index_state").fetchone()
    return messages, indexed, rows, last


def _word(n: int) -> str:
    """Return a word only message ``n`` holds (letters only: no stem folds two)."""
    return "qz" + "".join("abcdefghij"[int(d)] for d in str(n)) + "x"


def _thread(store: SqliteStore) -> threading.Thread | None:
    """Return the store's indexing thread, if it was started."""
    return store._index._indexer._thread


def test_a_save_stores_no_terms_and_the_index_takes_rows_in_on_its_thread(tmp_path):
    path = tmp_path / "h.sqlite3"
    store = SqliteStore(path, recall_index="eager")
    try:
        for i in range(CATCH_UP_EVERY):
            store.save_message("s", Message("user", f"word{i} qzsavedx"))
        assert store._index.wait_idle(timeout=60)

        assert _counts(path) == (CATCH_UP_EVERY, CATCH_UP_EVERY, CATCH_UP_EVERY, 256)
        with contextlib.closing(sqlite3.connect(path)) as conn, conn:
            stored_terms = conn.execute(
                "SELECT count(*) FROM messages WHERE search_terms IS NOT NULL"
            ).fetchone()[0]
        assert stored_terms == 0
        thread = _thread(store)
        assert thread is not None
        assert thread.name == "memory-summary-sqlite-index"
    finally:
        store.close()
    assert not thread.is_alive()


def test_a_search_takes_in_what_no_batch_took_yet(tmp_path):
    store = SqliteStore(tmp_path / "h.sqlite3", recall_index="eager")
    try:
        saved = store.save_message("s", Message("user", "a lonely qzpenguinx"))

        hits = store.search_messages("s", query_terms("qzpenguinx"), limit=3)

        assert [h.message for h in hits] == [saved]
        assert _thread(store) is None  # fewer than CATCH_UP_EVERY: never nudged
    finally:
        store.close()


@pytest.mark.parametrize("remove", ["clear_session", "pop_message", "clear_all"])
def test_a_search_after_every_unindexed_message_was_deleted_moves_on(tmp_path, remove):
    path = tmp_path / "h.sqlite3"
    store = SqliteStore(path, recall_index="eager")
    try:
        gone = store.save_message("s", Message("user", "qzgonex"))
        getattr(store, remove)(*(["s"] if remove != "clear_all" else []))
        found: list[object] = []
        search = threading.Thread(  # a liveness guard: it looped forever before
            target=lambda: found.append(
                store.search_messages("s", query_terms("qzgonex"), limit=3)
            ),
            daemon=True,
        )
        search.start()
        search.join(timeout=60)

        assert found == [[]]
        assert _counts(path) == (0, 0, 0, gone.id)
    finally:
        store.close()


def test_a_message_cleared_while_its_batch_is_prepared_stays_out(tmp_path, monkeypatch):
    path = tmp_path / "h.sqlite3"
    store = SqliteStore(path, recall_index="eager")
    try:
        store.save_message("gone", Message("user", "qzclearedx"))
        kept = store.save_message("kept", Message("user", "qzkeptx"))
        prepare = sqlite_index._index_row
        cleared = []

        def clear_while_preparing(row):
            if not cleared:  # between the page's read and its transaction
                store.clear_session("gone")
                cleared.append(True)
            return prepare(row)

        monkeypatch.setattr(sqlite_index, "_index_row", clear_while_preparing)

        assert store._index.catch_up() == 1

        assert _counts(path) == (1, 1, 1, kept.id)
        assert store.search_messages("gone", query_terms("qzclearedx"), limit=3) == []
    finally:
        store.close()


def test_concurrent_saves_batches_and_searches_index_every_message_once(tmp_path):
    path = tmp_path / "h.sqlite3"
    store = SqliteStore(path, recall_index="eager")
    writers, per_writer = 3, CATCH_UP_EVERY + 40
    start = threading.Barrier(writers + 1)
    errors: list[Exception] = []

    def write(n: int) -> None:
        try:
            start.wait()
            for i in range(per_writer):
                if i % 50 == 0:
                    store.save_messages(
                        f"w{n}", [Message("user", f"qzbatch{n}x {i}")] * 3
                    )
                else:
                    store.save_message(f"w{n}", Message("user", f"qzw{n}x {i}"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    try:
        for thread in threads:
            thread.start()
        start.wait()
        while any(t.is_alive() for t in threads):
            store.search_messages("w0", query_terms("qzw0x"), limit=5)
        for thread in threads:
            thread.join()
        assert errors == []
        assert store._index.wait_idle(timeout=60)
        store.search_messages("w1", query_terms("qzw1x"), limit=1)  # the tail

        messages, indexed, rows, last = _counts(path)
        assert messages == writers * (per_writer + 2 * len(range(0, per_writer, 50)))
        assert (indexed, rows, last) == (messages, messages, messages)
    finally:
        store.close()


def test_rows_written_with_their_terms_are_taken_in_with_those(tmp_path):
    """A 0.2 writer stored each message's terms in its row: the batch uses them."""
    path = tmp_path / "h.sqlite3"
    SqliteStore(path).close()
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "INSERT INTO messages (session_id, role, content, search_terms) "
            "VALUES ('s', 'user', 'what the row says', 'qzfromtermsx')"
        )
    store = SqliteStore(path, recall_index="eager")
    try:
        hits = store.search_messages("s", query_terms("qzfromtermsx"), limit=3)
        assert [h.message.content for h in hits] == ["what the row says"]
    finally:
        store.close()


def test_a_failed_background_batch_is_logged_and_left_to_the_next_search(
    tmp_path, caplog
):
    store = SqliteStore(tmp_path / "h.sqlite3", recall_index="eager")
    index = store._index
    run = index._indexer._run
    failed = threading.Event()

    def fail_once() -> int:
        if not failed.is_set():
            failed.set()
            raise StoreError("disk I/O error (injected)")
        return run()

    index._indexer._run = fail_once
    try:
        with caplog.at_level(logging.WARNING, logger="memory_summary.adapters"):
            saved = [
                store.save_message("s", Message("user", _word(i)))
                for i in range(CATCH_UP_EVERY)
            ]
            assert index.wait_idle(timeout=60)
        assert "indexing new messages failed: disk I/O error (injected)" in caplog.text

        hits = store.search_messages("s", query_terms(_word(7)), limit=3)
        assert hits[0].message == saved[7]
    finally:
        store.close()


def test_a_closed_store_takes_no_more_batches(tmp_path):
    store = SqliteStore(tmp_path / "h.sqlite3", recall_index="eager")
    store.close()

    store._index._indexer.nudge()

    assert _thread(store) is None
    with pytest.raises(StoreError, match="closed"):
        store.save_message("s", Message("user", "late"))


def test_a_save_goes_between_two_writes_of_a_catch_up(tmp_path, monkeypatch):
    """FTS5 takes a page in by short transactions: a turn's save never waits it out."""
    store = SqliteStore(tmp_path / "h.sqlite3", recall_index="eager")
    try:
        rows = 3 * sqlite_index._ROWS_PER_WRITE  # fewer than CATCH_UP_EVERY: no nudge
        for i in range(rows):
            store.save_message("s", Message("user", _word(i)))
        index = store._index
        put = index._put
        order: list[str] = []
        saved = threading.Event()

        def save() -> None:
            store.save_message("s", Message("user", "qzlatex"))
            order.append("save")
            saved.set()

        def put_then_save(tx, batch, top):
            taken = put(tx, batch, top)
            order.append(f"put {taken}")
            if len(order) == 1:  # inside the first write transaction
                threading.Thread(target=save).start()
            return taken

        class Clock:  # time.sleep(0) between two writes: let the saver go first
            @staticmethod
            def sleep(seconds: float) -> None:
                if order and not saved.is_set():
                    saved.wait(10)

        monkeypatch.setattr(index, "_put", put_then_save)
        monkeypatch.setattr(sqlite_index, "time", Clock)

        assert index.catch_up() == rows + 1  # the late save too, in a page of its own

        assert order == ["put 32", "save", "put 32", "put 32", "put 1"]
    finally:
        store.close()


# -- each session's statistics, kept as rows come and go

_WORDS = ("zebra", "Zebras", "giraffe", "the", "north", "北京大学", "42", "kiwi")
_SESSIONS = ("a", "b", "c")


def _kept_statistics(conn) -> tuple[dict, dict]:
    """Return the kept statistics: {session: (documents, length)}, {(s, term): n}."""
    totals = {
        sid: (documents, length)
        for sid, documents, length in conn.execute("SELECT * FROM session_totals")
    }
    terms = {
        (sid, term): n for sid, term, n in conn.execute("SELECT * FROM session_terms")
    }
    return totals, terms


def _byte(at: int) -> str:
    """SQL: the ``at``-th byte (0-based) of the hex text ``h``, as an integer."""
    digits = "'0123456789ABCDEF'"
    high = f"instr({digits}, substr(h, {2 * at + 1}, 1))"
    low = f"instr({digits}, substr(h, {2 * at + 2}, 1))"
    return f"(({high} - 1) * 16 + {low} - 1)"


# A message's length in terms, read from FTS5's own record of it: the ``sz`` blob of
# ``message_index_docsize`` holds each column's size as a varint (big-endian groups
# of 7 bits, the high bit set on every byte but the last): ``session`` (1, one byte)
# then ``terms``. Under 128 terms (two bytes in all, the usual case) the second byte
# is the length, read as an ASCII character; else up to four bytes (268 million
# terms) are decoded from their hex text. The store counts a length from its
# tokens (``message_tokens``); this reads FTS5's own record: an independent check.
_LONG_LENGTH = (
    f"CASE WHEN {_byte(1)} < 128 THEN (({_byte(0)} & 127) << 7) | {_byte(1)} "
    f"WHEN {_byte(2)} < 128 THEN (({_byte(0)} & 127) << 14) "
    f"| (({_byte(1)} & 127) << 7) | {_byte(2)} "
    f"ELSE (({_byte(0)} & 127) << 21) | (({_byte(1)} & 127) << 14) "
    f"| (({_byte(2)} & 127) << 7) | {_byte(3)} END"
)
_LENGTH = (
    "CASE WHEN length(d.sz) = 2 THEN "
    "coalesce(unicode(CAST(substr(d.sz, 2, 1) AS TEXT)), 0) "
    f"ELSE (SELECT {_LONG_LENGTH} FROM (SELECT hex(substr(d.sz, 2, 4)) AS h)) END"
)


def _counted_statistics(conn) -> tuple[dict, dict]:
    """Return the same statistics counted afresh from FTS5, as a search counted them.

    Each session's indexed messages and their lengths from FTS5's per-row sizes, each
    term's count by MATCHing it among the session's rows (every term an indexed row
    of the session holds).
    """
    length = _LENGTH
    totals = {
        sid: (documents, total)
        for sid, documents, total in conn.execute(
            f"SELECT m.session_id, count(*), sum({length}) FROM messages m "
            "JOIN message_index_docsize d ON d.id = m.id GROUP BY m.session_id"
        )
    }
    held = {
        (sid, term)
        for sid, text in conn.execute(
            "SELECT m.session_id, i.terms FROM message_index i "
            "JOIN messages m ON m.id = i.rowid"
        )
        for term in str(text).split()
    }
    terms = {}
    for sid, term in held:
        (n,) = conn.execute(
            "SELECT count(*) FROM message_index i JOIN messages m ON m.id = i.rowid "
            "AND m.session_id = ? WHERE message_index MATCH ?",
            (sid, fts5_term(term)),
        ).fetchone()
        terms[(sid, term)] = n
    return totals, terms


def _to_version_4(path) -> None:
    """Turn a closed store's file into what version 4 left: no statistics kept."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DROP TABLE session_totals")
        conn.execute("DROP TABLE session_terms")
        conn.execute("DROP VIEW message_tokens")
        conn.execute("DROP TRIGGER messages_unindex")
        conn.execute(sqlite.SEARCH_SCHEMA[-1])  # version 4's trigger
        conn.execute("DROP TRIGGER messages_unmark")
        conn.execute("DROP TABLE session_index")
        conn.execute("DELETE FROM schema_version WHERE version >= 5")


_text = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=4).map(" ".join)
_session = st.sampled_from(_SESSIONS)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("save"), _session, _text),
        st.tuples(st.just("save_many"), _session, st.lists(_text, max_size=4)),
        st.tuples(st.just("catch_up")),
        st.tuples(st.just("search"), _session, st.sampled_from(_WORDS)),
        st.tuples(st.just("pop"), _session),
        st.tuples(st.just("commit"), _session),
        st.tuples(st.just("clear"), _session),
        st.tuples(st.just("forget"), _session),
        st.tuples(st.just("clear_all")),
        st.tuples(st.just("version_4")),
    ),
    max_size=25,
)


def _commit(store: SqliteStore, sid: str) -> None:
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


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(steps=_steps)
@example(
    steps=[
        ("save_many", "a", ["zebra the", "the zebra giraffe", "kiwi"]),
        ("save", "b", "zebra 42"),
        ("catch_up",),
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
        ("catch_up",),
        ("clear_all",),
    ]
)
def test_each_sessions_statistics_stay_what_fts5_counts_through_any_sequence(steps):
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "h.sqlite3"
        store = SqliteStore(path)
        try:
            for step in steps:
                kind, args = step[0], step[1:]
                if kind == "save":
                    store.save_message(args[0], Message("user", args[1]))
                elif kind == "save_many":
                    texts = args[1]
                    store.save_messages(args[0], [Message("user", t) for t in texts])
                elif kind == "catch_up":
                    store._index.catch_up()
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
                else:  # an old database, migrated as it is reopened
                    store.close()
                    _to_version_4(path)
                    store = SqliteStore(path)
                    assert store.schema_version() == sqlite.SCHEMA_VERSION == 6
                with contextlib.closing(sqlite3.connect(path)) as conn:
                    kept, counted = _kept_statistics(conn), _counted_statistics(conn)
                assert kept == counted, step
        finally:
            store.close()
