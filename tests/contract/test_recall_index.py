"""The recall index policy (``recall_index``) on every store.

The property: a lazily indexed store returns exactly the hits, scores and archive
flags of an eagerly indexed one after any sequence of saves, compressions, trims,
pops, clears and forgets, however the searches fall between them. On the stores a
database shares (SQLite, PostgreSQL, Redis), the lazy side's messages are saved
through two store objects on one database, one lazy and one eager, as two processes
with different policies would. ``off`` refuses search and does no index work.
"""

from __future__ import annotations

import contextlib
import sqlite3
from uuid import uuid4

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

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore, SqliteStore
from memory_summary.domain import CommitRequest, ConfigError, RecallUnsupported
from memory_summary.domain.recall import query_terms
from memory_summary.testing.search_contract import SearchContract
from tests.contract.stores import (
    STORE_KINDS,
    dispose,
    make_postgres,
    make_redis,
    postgres_dsn,
    run_sql,
)

WORDS = ("apple", "banana", "cherry", "damson", "elder", "fig")


def _pair(kind: str, tmp_path) -> tuple[object, object, object]:
    """Return (lazy store, a second store on the lazy one's database, eager store).

    The second store indexes eagerly: two processes with different policies.
    """
    if kind == "memory":
        lazy = InMemoryStore(recall_index="lazy")
        return lazy, lazy, InMemoryStore(recall_index="eager")
    if kind == "sqlite":
        path = tmp_path / f"lazy-{uuid4().hex[:6]}.sqlite3"
        return (
            SqliteStore(path, recall_index="lazy"),
            SqliteStore(path, recall_index="eager"),
            SqliteStore(
                tmp_path / f"eager-{uuid4().hex[:6]}.sqlite3", recall_index="eager"
            ),
        )
    if kind == "postgres":
        from memory_summary.adapters import PostgresStore

        lazy = make_postgres()
        other = PostgresStore(postgres_dsn(), schema=lazy.schema, recall_index="eager")
        eager = make_postgres()
        eager.set_recall_index("eager")
        return lazy, other, eager
    prefix = f"t-{uuid4().hex[:12]}:"
    lazy = make_redis(prefix)
    return lazy, make_redis(prefix, recall_index="eager"), make_redis()


class PolicyMachine(RuleBasedStateMachine):
    """The same operations on a lazy and an eager store; searches must agree."""

    lazy: object
    other: object
    eager: object
    kind: str

    @initialize()
    def start(self) -> None:
        base = uuid4().hex[:8]
        self.sessions = (f"{base}-a", f"{base}-b")
        self.generation: dict[str, str | None] = dict.fromkeys(self.sessions)

    def _both(self, via_other: bool = False) -> tuple[object, object]:
        return (self.other if via_other else self.lazy), self.eager

    @rule(
        which=st.integers(0, 1),
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
        via_other=st.booleans(),
        batch=st.booleans(),
    )
    def save(self, which: int, words: list[str], via_other: bool, batch: bool) -> None:
        sid = self.sessions[which]
        message = Message("user", " ".join(words))
        for store in self._both(via_other):
            if batch:
                store.save_messages(sid, [message, Message("assistant", words[0])])
            else:
                store.save_message(sid, message)

    @rule(which=st.integers(0, 1), keep=st.integers(0, 3))
    def compress(self, which: int, keep: int) -> None:
        sid = self.sessions[which]
        generation = uuid4().hex[:8]
        for store in self._both():
            active = store.get_history(sid)
            fold = active[: max(len(active) - keep, 0)]
            if not fold:
                return
            result = store.commit(
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

    @rule(which=st.integers(0, 1), via_other=st.booleans())
    def pop(self, which: int, via_other: bool) -> None:
        popped = [s.pop_message(self.sessions[which]) for s in self._both(via_other)]
        assert (popped[0] is None) == (popped[1] is None)

    @rule(which=st.integers(0, 1), forget=st.booleans())
    def clear(self, which: int, forget: bool) -> None:
        sid = self.sessions[which]
        for store in self._both():
            if forget:
                store.forget_session(sid, namespaces=("summary",))
            else:
                store.clear_session(sid)
        if forget:
            self.generation[sid] = None

    @rule(
        which=st.integers(0, 1),
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
        archived_only=st.booleans(),
    )
    def search(self, which: int, words: list[str], archived_only: bool) -> None:
        sid = self.sessions[which]
        found = [
            [
                (h.message.content, h.message.role, h.archived, round(h.score, 9))
                for h in store.search_messages(
                    sid,
                    query_terms(" ".join(words)),
                    limit=8,
                    archived_only=archived_only,
                )
            ]
            for store in (self.lazy, self.eager)
        ]
        assert found[0] == found[1]
        assert _statistics(self.lazy, sid) == _statistics(self.eager, sid)

    @invariant()
    def histories_agree(self) -> None:
        for sid in self.sessions:
            lazy = [m.content for m in self.lazy.get_full_history(sid)]
            assert lazy == [m.content for m in self.eager.get_full_history(sid)]


def _statistics(store: object, sid: str) -> object:
    """Return the session's BM25 statistics as the store keeps them (after a search)."""
    kind = type(store).__name__
    if kind in ("SqliteStore", "PostgresStore"):
        totals = run_sql(
            store,
            "SELECT documents, length FROM {t}session_totals WHERE session_id = ?",
            (sid,),
        )
        terms = run_sql(
            store,
            "SELECT term, documents FROM {t}session_terms WHERE session_id = ? "
            "ORDER BY term",
            (sid,),
        )
        return totals, terms
    if kind == "InMemoryStore":
        session = store._sessions.get(sid)  # type: ignore[attr-defined]
        if session is None:
            return None
        session.take_in([])  # nothing: the search took everything in
        index = session.index
        return len(index.lengths), index.total_length
    import redis

    with redis.Redis.from_url(store.url) as client:  # type: ignore[attr-defined]
        prefix = store.prefix  # type: ignore[attr-defined]
        postings = client.zrangebylex(f"{prefix}p:{sid}", b"[\x01", b"+")
        return (
            client.hlen(f"{prefix}e:{sid}"),
            int(client.get(f"{prefix}w:{sid}") or 0),
            sorted(p.split(b"\x00")[0] for p in postings),
        )


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_lazy_and_eager_find_the_same_after_any_sequence(kind, tmp_path, request):
    if kind == "redis":
        request.getfixturevalue("redis_server")
    lazy, other, eager = _pair(kind, tmp_path)
    try:
        PolicyMachine.lazy, PolicyMachine.other, PolicyMachine.eager = (
            lazy,
            other,
            eager,
        )
        run_state_machine_as_test(
            PolicyMachine,
            settings=settings(max_examples=30, stateful_step_count=25, deadline=None),
        )
    finally:
        for store in dict.fromkeys((other, lazy, eager)):  # the lazy side's last
            if store is other and other is not lazy and kind == "postgres":
                store.close()  # type: ignore[attr-defined]  # its schema is lazy's
            elif store is other and other is not lazy and kind == "redis":
                store.close()  # type: ignore[attr-defined]  # its prefix is lazy's
            else:
                dispose(store)


# -- off


def _index_work(store: object, sid: str) -> object:
    """Return what the store holds of its history index for ``sid``."""
    kind = type(store).__name__
    if kind == "SqliteStore":
        return (
            run_sql(store, "SELECT count(*) FROM message_index")[0][0]
            + run_sql(store, "SELECT count(*) FROM session_totals")[0][0]
            + run_sql(store, "SELECT count(*) FROM session_index")[0][0]
        )
    if kind == "PostgresStore":
        return sum(
            run_sql(store, f"SELECT count(*) FROM {{t}}{table}")[0][0]
            for table in ("message_terms", "session_totals", "session_index")
        )
    if kind == "InMemoryStore":
        session = store._sessions[sid]  # type: ignore[attr-defined]
        return len(session.index.lengths) + len(session.terms)
    import redis

    with redis.Redis.from_url(store.url) as client:  # type: ignore[attr-defined]
        prefix = store.prefix  # type: ignore[attr-defined]
        return client.exists(*(f"{prefix}{k}:{sid}" for k in ("p", "e", "w")))


def _make(kind: str, tmp_path, policy: str) -> object:
    if kind == "memory":
        return InMemoryStore(recall_index=policy)
    if kind == "sqlite":
        return SqliteStore(tmp_path / "off.sqlite3", recall_index=policy)
    if kind == "postgres":
        made = make_postgres()
        made.set_recall_index(policy)
        return made
    return make_redis(recall_index=policy)


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_off_refuses_search_and_does_no_index_work(kind, tmp_path, request):
    if kind == "redis":
        request.getfixturevalue("redis_server")
    store = _make(kind, tmp_path, "off")
    try:
        store.save_message("s1", Message("user", "a zebra"))
        store.save_messages("s1", [Message("user", "more zebras")] * 300)

        with pytest.raises(RecallUnsupported, match="recall_index='off'"):
            store.search_messages("s1", query_terms("zebra"), limit=5)
        wait = getattr(getattr(store, "_index", None), "wait_idle", None)
        if wait is not None:
            assert wait(5)
        assert _index_work(store, "s1") == 0
        assert [
            h.message.content for h in store.read_messages("s1", 1, before=0, after=0)
        ]
    finally:
        dispose(store)


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_lazy_does_no_index_work_until_the_first_search(kind, tmp_path, request):
    if kind == "redis":
        request.getfixturevalue("redis_server")
    store = _make(kind, tmp_path, "lazy")
    try:
        first = store.save_message("s1", Message("user", "a zebra"))
        store.save_messages("s1", [Message("user", "filler words")] * 300)

        assert _index_work(store, "s1") == 0
        hits = store.search_messages("s1", query_terms("zebra"), limit=5)

        assert hits[0].message.id == first.id
        assert _index_work(store, "s1") != 0
    finally:
        dispose(store)


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_leaving_off_indexes_what_was_saved_meanwhile(kind, tmp_path, request):
    if kind == "redis":
        request.getfixturevalue("redis_server")
    store = _make(kind, tmp_path, "off")
    try:
        saved = store.save_message("s1", Message("user", "a quiet zebra"))

        store.set_recall_index("lazy")

        hits = store.search_messages("s1", query_terms("zebra"), limit=5)
        assert hits[0].message.id == saved.id
    finally:
        dispose(store)


# -- the policy reaches the store


@pytest.mark.parametrize("policy", ["lazy", "eager", "off"])
def test_the_engine_gives_its_store_the_configured_policy(policy):
    store = InMemoryStore(recall_index="eager" if policy != "eager" else "lazy")

    with SummaryEngine(store, config=SummaryConfig(recall_index=policy)):
        assert store.recall_index == policy


@pytest.mark.parametrize("policy", ["lazy", "eager", "off"])
def test_an_engine_whose_config_names_no_policy_leaves_the_stores_own(policy):
    store = InMemoryStore(recall_index=policy)

    with SummaryEngine(store, config=SummaryConfig()) as engine:
        assert store.recall_index == policy
        store.save_message("s1", Message("user", "a zebra"))
        if policy == "off":
            with pytest.raises(RecallUnsupported):
                engine.search_history("s1", "zebra")
        else:
            hits = engine.search_history("s1", "zebra")
            assert [hit.message.content for hit in hits] == ["a zebra"]
    assert InMemoryStore().recall_index == "lazy"


def test_an_engine_with_recall_off_refuses_search_history():
    store = InMemoryStore()
    with SummaryEngine(store, config=SummaryConfig(recall_index="off")) as engine:
        store.save_message("s1", Message("user", "a zebra"))

        with pytest.raises(RecallUnsupported, match="recall_index='off'"):
            engine.search_history("s1", "zebra")
        assert engine.read_history("s1", 1, before=0, after=0)


@pytest.mark.parametrize("bad", ["LAZY", "", None, 1, "sometimes"])
def test_a_store_refuses_an_unknown_policy(bad, tmp_path):
    with pytest.raises(ConfigError, match="recall_index"):
        InMemoryStore(recall_index=bad)
    with pytest.raises(ConfigError, match="recall_index"):
        SqliteStore(tmp_path / "x.sqlite3", recall_index=bad)
    with pytest.raises(ConfigError, match="recall_index"):
        InMemoryStore().set_recall_index(bad)


# -- the search contract under the policies not run by test_store_search


class TestInMemorySearchEager(SearchContract):
    def make_store(self, tmp_path):
        return InMemoryStore(recall_index="eager")


class TestSqliteSearchEager(SearchContract):
    def make_store(self, tmp_path):
        return SqliteStore(tmp_path / "store.sqlite3", recall_index="eager")


@pytest.mark.postgres
class TestPostgresSearchEager(SearchContract):
    @pytest.fixture
    def store(self, shared_postgres):
        shared_postgres.clear_all()
        shared_postgres.set_recall_index("eager")
        yield shared_postgres
        shared_postgres.set_recall_index("lazy")


@pytest.mark.redis
class TestRedisSearchEager(SearchContract):
    @pytest.fixture
    def store(self, redis_server):
        made = make_redis(recall_index="eager")
        yield made
        dispose(made)


# -- an old database opens


def _as_version_5_sqlite(path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DROP TRIGGER messages_unmark")
        conn.execute("DROP TABLE session_index")
        conn.execute("DELETE FROM schema_version WHERE version = 6")


def test_a_version_5_sqlite_file_opens_and_finds_what_it_indexed(tmp_path):
    path = tmp_path / "v5.sqlite3"
    old = SqliteStore(path, recall_index="eager")
    indexed = old.save_message("s1", Message("user", "an indexed zebra"))
    old.search_messages("s1", query_terms("zebra"), limit=5)
    old.close()
    _as_version_5_sqlite(path)

    store = SqliteStore(path)
    try:
        later = store.save_message("s1", Message("user", "a later zebra"))
        hits = store.search_messages("s1", query_terms("zebra"), limit=5)

        assert store.schema_version() == 6
        assert sorted(h.message.id for h in hits) == [indexed.id, later.id]
        assert run_sql(store, "SELECT count(*) FROM message_index")[0][0] == 2
    finally:
        store.close()


def _version_5_counting() -> tuple[str, ...]:
    """Return version 5's counting functions, as it created them (no postings)."""
    from memory_summary.adapters.recall.postgres_index import STATISTICS_SCHEMA

    return tuple(
        f.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
        for f in STATISTICS_SCHEMA[2:4]
    )


_VERSION_5_COUNTING = _version_5_counting()


@pytest.mark.postgres
def test_a_version_5_postgres_schema_opens_and_finds_what_it_indexed():
    from memory_summary.adapters import PostgresStore

    old = make_postgres()
    old.set_recall_index("eager")
    indexed = old.save_message("s1", Message("user", "an indexed zebra"))
    for statement in (
        "DROP TABLE {t}term_postings",  # version 7's
        "ALTER TABLE {t}session_terms DROP COLUMN key",
        "CREATE INDEX message_terms_tsv ON {t}message_terms USING gin (tsv)",
        *(v5.replace("{s}.", "{t}") for v5 in _VERSION_5_COUNTING),
        "DROP TRIGGER messages_unmark ON {t}messages",
        "DROP FUNCTION {t}unmark_sessions()",
        "DROP TABLE {t}session_index",
        "DELETE FROM {t}schema_version WHERE version >= 6",
    ):
        run_sql(old, statement)
    old.close()

    store = PostgresStore(postgres_dsn(), schema=old.schema)
    try:
        later = store.save_message("s1", Message("user", "a later zebra"))
        hits = store.search_messages("s1", query_terms("zebra"), limit=5)

        assert store.schema_version() == 7
        assert sorted(h.message.id for h in hits) == [indexed.id, later.id]
        assert run_sql(store, "SELECT count(*) FROM {t}message_terms")[0][0] == 2
    finally:
        dispose(store)


def _indexed_ids(store: object, sid: str) -> set[int]:
    """Return the ids of ``sid`` the store's index holds."""
    kind = type(store).__name__
    if kind == "SqliteStore":
        rows = run_sql(
            store,
            "SELECT i.rowid FROM message_index i JOIN messages m ON m.id = i.rowid "
            "WHERE m.session_id = ?",
            (sid,),
        )
    elif kind == "PostgresStore":
        rows = run_sql(
            store, "SELECT id FROM {t}message_terms WHERE session_id = ?", (sid,)
        )
    elif kind == "InMemoryStore":
        session = store._sessions[sid]  # type: ignore[attr-defined]
        return set(session.terms)
    else:
        import redis

        with redis.Redis.from_url(store.url) as client:  # type: ignore[attr-defined]
            keys = client.hkeys(f"{store.prefix}e:{sid}")  # type: ignore[attr-defined]
            return {int(k) for k in keys}
    return {int(row[0]) for row in rows}


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_lazy_search_indexes_its_own_session_only(kind, tmp_path, request):
    if kind == "redis":
        request.getfixturevalue("redis_server")
    store = _make(kind, tmp_path, "lazy")
    try:
        mine = [
            store.save_message("mine", Message("user", f"zebra {i}")) for i in range(3)
        ]
        theirs = store.save_message("theirs", Message("user", "zebra elsewhere"))

        store.search_messages("mine", query_terms("zebra"), limit=5)

        assert _indexed_ids(store, "mine") == {m.id for m in mine}
        assert _indexed_ids(store, "theirs") == set()
        assert theirs.id not in _indexed_ids(store, "mine")
    finally:
        dispose(store)


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_first_lazy_search_reaches_past_pages_another_writer_indexed(
    kind, tmp_path, request
):
    # An eager writer (another process, or the same database before an upgrade)
    # indexed several pages of the session; what the lazy one saved after them is
    # found by the first search, not a page further on each search.
    if kind == "redis":
        request.getfixturevalue("redis_server")
    lazy, other, eager = _pair(kind, tmp_path)
    try:
        words = [Message("user", f"{WORDS[i % 6]} note {i}") for i in range(2_300)]
        for at in range(0, len(words), 500):
            other.save_messages("s1", words[at : at + 500])
        saved = lazy.save_message("s1", Message("user", "a zebra in the garden"))

        hits = lazy.search_messages("s1", query_terms("zebra"), limit=3)

        assert [h.message.id for h in hits][:1] == [saved.id]
    finally:
        for store in {id(s): s for s in (lazy, other, eager)}.values():
            dispose(store)


@pytest.mark.redis
def test_a_redis_catch_up_writes_bounded_postings_per_script(redis_server, monkeypatch):
    from memory_summary.adapters.stores.redis import history

    monkeypatch.setattr(history, "POSTINGS_PER_CALL", 40)
    store = make_redis(recall_index="lazy")
    calls: list[int] = []
    real = store._scripts["INDEX"]

    def counting(**kwargs):
        entries = kwargs["args"][2::2]
        calls.append(sum((len(str(e).split()) - 1) // 2 for e in entries))
        return real(**kwargs)

    store._scripts["INDEX"] = counting
    try:
        for i in range(30):
            text = " ".join(f"w{i}x{j}" for j in range(15))
            store.save_message("s1", Message("user", text))

        hits = store.search_messages("s1", query_terms("w0x3 w29x7"), limit=5)

        assert {h.message.id for h in hits} >= {1, 30}
        assert len(calls) >= 10
        assert max(calls) <= 40
    finally:
        dispose(store)


def test_a_sqlite_first_search_holds_up_no_other_sessions_search(tmp_path, monkeypatch):
    import threading
    import zlib

    from memory_summary.adapters.recall import sqlite_index

    slow, quick = "s-slow", "s-quick"
    stripes = sqlite_index._SESSION_LOCKS
    assert zlib.crc32(slow.encode()) % stripes != zlib.crc32(quick.encode()) % stripes
    store = SqliteStore(tmp_path / "s.sqlite3", recall_index="lazy")
    store.save_messages(slow, [Message("user", f"a heron {i}") for i in range(50)])
    store.save_message(quick, Message("user", "a zebra"))
    store.search_messages(quick, query_terms("zebra"), limit=1)  # indexed now
    inside, release = threading.Event(), threading.Event()
    real = sqlite_index._index_row

    def held(row):
        if not inside.is_set():
            inside.set()
            release.wait(30)
        return real(row)

    monkeypatch.setattr(sqlite_index, "_index_row", held)
    found: list[object] = []
    first = threading.Thread(
        target=lambda: found.append(
            store.search_messages(slow, query_terms("heron"), limit=1)
        )
    )
    try:
        first.start()
        assert inside.wait(10)  # the slow session's catch-up is under way, held
        store.save_message(quick, Message("user", "another zebra"))
        hits: list[object] = []
        second = threading.Thread(
            target=lambda: hits.extend(
                store.search_messages(quick, query_terms("zebra"), limit=2)
            )
        )
        second.start()
        second.join(10)  # a search behind the held one would still be waiting
        assert not second.is_alive()
        assert {h.message.content for h in hits} == {"a zebra", "another zebra"}
    finally:
        release.set()
        first.join(10)
        second.join(10)
        store.close()
    assert found
    assert found[0]


@pytest.mark.parametrize(
    ("configured", "own", "offered"),
    [
        (None, "lazy", True),
        (None, "off", False),
        ("off", "lazy", False),
        ("eager", "off", True),
    ],
)
def test_the_search_tool_is_offered_only_where_search_is_kept(configured, own, offered):
    store = InMemoryStore(recall_index=own)
    config = SummaryConfig(recall_index=configured)
    with SummaryEngine(store, config=config) as engine:
        names = [t["function"]["name"] for t in engine.recall_tools()]
    assert names[-2:] == ["read_history", "compact_context"]
    assert ("search_history" in names) is offered


@pytest.mark.parametrize("policy", ["lazy", "off"])
def test_the_recall_hint_names_only_the_tools_offered(policy):
    from memory_summary.testing.fakes import InstrumentedSummarizer

    store = InMemoryStore(recall_index=policy)
    config = SummaryConfig(recall_hint=True, threshold=6, keep_recent=2)
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        for turn in range(8):
            store.save_message("s1", Message("user", f"question {turn}"))
        assert engine.compress("s1").result(timeout=10).kind == "compressed"
        prompt = engine.build_prompt("s1") or ""
    assert "read_history" in prompt
    assert ("search_history" in prompt) is (policy != "off")
