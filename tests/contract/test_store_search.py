"""The history index of every store: ``SearchContract``, plus a stateful property.

The property: after any sequence of saves, compactions, trims, pops, clears and
forgets, a message is found by a word only it holds exactly while it is stored, and
never after it was popped, cleared or forgotten; no search returns another session's
message.
"""

from __future__ import annotations

import contextlib
import itertools

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from memory_summary import Message, StoreError
from memory_summary.adapters import InMemoryStore, SqliteStore
from memory_summary.adapters.recall.sql_index import CATCH_UP_EVERY
from memory_summary.domain import CommitRequest
from memory_summary.domain.recall import query_terms
from memory_summary.testing.search_contract import SearchContract
from tests.contract.stores import (
    STORE_KINDS,
    dispose,
    make_postgres,
    make_redis,
    store_for,
)

SEARCHABLE_KINDS = STORE_KINDS


@pytest.fixture(params=SEARCHABLE_KINDS)
def store(request, tmp_path):
    yield from store_for(request, request.param, tmp_path)


class TestInMemorySearch(SearchContract):
    def make_store(self, tmp_path):
        return InMemoryStore()


class TestSqliteSearch(SearchContract):
    def make_store(self, tmp_path):
        return SqliteStore(tmp_path / "store.sqlite3")


@pytest.mark.postgres
class TestPostgresSearch(SearchContract):
    """The run's one schema, emptied before each test (as ``TestPostgresStore``)."""

    @pytest.fixture
    def store(self, shared_postgres):
        shared_postgres.clear_all()
        return shared_postgres


_WORDS = itertools.count()


def _unique_word() -> str:
    # Letters only: a word no stemmer folds into another one of the run.
    n = next(_WORDS)
    letters = ""
    while True:
        n, r = divmod(n, 26)
        letters += "abcdefghijklmnopqrstuvwxyz"[r]
        if n == 0:
            break
    return f"qz{letters}x"


class IndexMachine(RuleBasedStateMachine):
    """Two sessions; the model is the set of stored (session, word, id) triples."""

    store: object

    @initialize()
    def start(self) -> None:
        base = _unique_word()
        self.sessions = (f"{base}-a", f"{base}-b")
        self.stored: dict[str, dict[int, str]] = {s: {} for s in self.sessions}
        self.gone: list[tuple[str, str]] = []
        self.generation: dict[str, str | None] = dict.fromkeys(self.sessions)

    @rule(which=st.integers(0, 1), filler=st.sampled_from(["", "the cat ", "北京 "]))
    def save(self, which: int, filler: str) -> None:
        sid = self.sessions[which]
        word = _unique_word()
        saved = self.store.save_message(sid, Message("user", f"{filler}{word}"))
        self.stored[sid][saved.id] = word

    @rule(which=st.integers(0, 1), keep=st.integers(0, 3))
    def compact(self, which: int, keep: int) -> None:
        sid = self.sessions[which]
        active = self.store.get_history(sid)
        fold = active[: max(len(active) - keep, 0)]
        if not fold:
            return
        generation = _unique_word()
        result = self.store.commit(
            CommitRequest(
                session_id=sid,
                namespace="summary",
                record={"text": "s", "generation": generation},
                expect_generation=self.generation[sid],
                through_id=fold[-1].id,
                expect_archived=len(fold),
            )
        )
        assert result.committed
        self.generation[sid] = generation

    @rule(which=st.integers(0, 1), keep=st.integers(0, 3))
    def trim(self, which: int, keep: int) -> None:
        self.store.trim_history(self.sessions[which], keep)

    @rule(which=st.integers(0, 1))
    def pop(self, which: int) -> None:
        sid = self.sessions[which]
        popped = self.store.pop_message(sid)
        if popped is not None:
            self.gone.append((sid, self.stored[sid].pop(popped.id)))

    @rule(which=st.integers(0, 1), forget=st.booleans())
    def clear(self, which: int, forget: bool) -> None:
        sid = self.sessions[which]
        if forget:
            self.store.forget_session(sid, namespaces=("summary",))
            self.generation[sid] = None
        else:
            self.store.clear_session(sid)
        self.gone.extend((sid, word) for word in self.stored[sid].values())
        self.stored[sid] = {}

    @invariant()
    def found_exactly_while_stored(self) -> None:
        for sid in self.sessions:
            for message_id, word in self.stored[sid].items():
                hits = self.store.search_messages(sid, query_terms(word), limit=5)
                assert hits[0].message.id == message_id
                assert {h.message.id for h in hits} <= set(self.stored[sid])
            for other in self.sessions:
                if other != sid:
                    for word in self.stored[other].values():
                        hits = self.store.search_messages(
                            sid, query_terms(word), limit=5
                        )
                        assert hits == []
        for sid, word in self.gone[-10:]:
            assert self.store.search_messages(sid, query_terms(word), limit=5) == []


def test_a_message_is_found_exactly_while_it_is_stored(store) -> None:
    IndexMachine.store = store
    run_state_machine_as_test(
        IndexMachine,
        settings=settings(max_examples=25, stateful_step_count=20, deadline=None),
    )


def test_a_batch_is_indexed_and_a_refused_batch_leaves_nothing(store) -> None:
    sid = f"batch-{_unique_word()}"
    saved = store.save_messages(
        sid, [Message("user", "qzalphax one"), Message("assistant", "qzbetax two")]
    )
    refused = [
        Message("user", "qzgammax"),
        Message("user", "bad", metadata={"x": "a\ud800b"}),  # a lone surrogate
    ]

    with pytest.raises(StoreError):
        store.save_messages(sid, refused)

    for message in saved:
        query = query_terms(str(message.content).split()[0])
        assert store.search_messages(sid, query, limit=5)[0].message == message
    assert store.search_messages(sid, query_terms("qzgammax"), limit=5) == []


def test_a_batch_longer_than_a_catch_up_is_found_whole(store) -> None:
    sid = f"long-{_unique_word()}"
    words = [_unique_word() for _ in range(2 * CATCH_UP_EVERY + 5)]

    saved = store.save_messages(sid, [Message("user", word) for word in words])

    for at in (0, CATCH_UP_EVERY - 1, CATCH_UP_EVERY, len(words) - 1):
        hits = store.search_messages(sid, query_terms(words[at]), limit=3)
        assert hits[0].message == saved[at]


def _version_3_sqlite(path) -> None:
    import sqlite3

    from memory_summary.adapters.stores.sql import sqlite

    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        for migration in sqlite.MIGRATIONS:
            conn.executescript(migration)
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.executemany("INSERT INTO schema_version VALUES (?)", [(1,), (2,), (3,)])
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, archived) "
            "VALUES (?, 'user', ?, ?)",
            [("s1", "an old zebra", 1), ("s1", "a newer giraffe", 0)]
            + [("s2", f"filler {i} zebra", 0) for i in range(5)],
        )


def test_a_version_3_sqlite_file_indexes_its_messages_when_migrated(
    tmp_path, caplog
) -> None:
    path = tmp_path / "v3.sqlite3"
    _version_3_sqlite(path)

    with caplog.at_level("INFO", logger="memory_summary.adapters"):
        store = SqliteStore(path)
    try:
        found = store.search_messages("s1", query_terms("zebra"), limit=5)
        assert store.schema_version() == 6
        assert (found[0].message.content, found[0].archived) == ("an old zebra", True)
        assert len(store.search_messages("s2", query_terms("zebra"), limit=9)) == 5
        assert "indexed 7 of 7 messages" in caplog.text
    finally:
        store.close()


@pytest.mark.postgres
def test_a_version_3_postgres_schema_indexes_its_messages_when_migrated() -> None:
    import psycopg

    from memory_summary.adapters.stores.sql import postgres
    from tests.contract.stores import postgres_dsn

    first = make_postgres()
    schema = first.schema
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
            "VALUES ('s1', 'user', 'an old zebra', TRUE), "
            "('s1', 'user', '北京大学', FALSE)"
        )

    store = make_postgres(schema)
    try:
        assert store.schema_version() == postgres.SCHEMA_VERSION
        found = store.search_messages("s1", query_terms("zebra"), limit=5)
        assert (found[0].message.content, found[0].archived) == ("an old zebra", True)
        chinese = store.search_messages("s1", query_terms("北京"), limit=5)
        assert chinese[0].message.content == "北京大学"
    finally:
        dispose(store)


def test_a_batch_save_indexes_every_message_of_the_batch(store) -> None:
    """A batch saved in one transaction (``save_messages``) is searchable at once."""
    saved = store.save_messages(
        "s1",
        [
            Message("user", "my zanzibar trip"),
            Message("assistant", "the quetzal feather"),
        ],
    )
    store.save_message("s2", Message("user", "zanzibar elsewhere"))

    for word, message in (("zanzibar", saved[0]), ("quetzal", saved[1])):
        hits = store.search_messages("s1", query_terms(word), limit=5)
        assert [hit.message.id for hit in hits][:1] == [message.id]
        assert all(hit.message.id in {m.id for m in saved} for hit in hits)


@pytest.mark.redis
class TestRedisSearch(SearchContract):
    """A key prefix of its own per test on the session's throw-away redis-server."""

    @pytest.fixture
    def store(self, redis_server):
        made = make_redis()
        yield made
        dispose(made)
