"""What only RedisStore has: key prefixes per tenant, idle-session expiry, its server.

The contract every store passes runs in ``test_store_contract.py`` and through the
``store`` fixture; the restarts and the processes are in ``tests/e2e``.
"""

from __future__ import annotations

import threading
import time
from uuid import uuid4

import pytest

from memory_summary import Message, StoreError
from memory_summary.domain import NAMESPACE, QUARANTINE_NAMESPACE, CommitRequest
from tests.contract.stores import dispose, make_redis
from tests.pgcluster import free_port

pytestmark = pytest.mark.redis


def free_port_url() -> str:
    return f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there


@pytest.fixture
def tenants(redis_server):
    base = f"t-{uuid4().hex[:8]}"
    made = [make_redis(f"{base}-a:"), make_redis(f"{base}-a:b:")]  # nested prefixes
    yield made
    for store in made:
        dispose(store)


def ttl_ms(store, key: str) -> int:
    import redis

    with redis.Redis.from_url(store.url) as client:
        return int(client.pttl(key))


def test_tenants_under_their_own_prefix_never_see_each_other(tenants):
    first, second = tenants
    mine = first.save_message("s1", Message("user", "mine"))
    theirs = second.save_message("s1", Message("user", "theirs"))
    first.save_metadata(NAMESPACE, "s1", {"generation": "a"})
    token = first.acquire_lease("s1", owner="a", ttl_s=60)

    second.clear_all()

    assert first.get_history("s1") == [mine]
    assert second.get_history("s1") == []
    assert theirs.id is not None
    assert first.get_metadata(NAMESPACE, "s1") == {"generation": "a"}
    assert second.list_metadata(NAMESPACE) == []
    assert second.acquire_lease("s1", owner="b", ttl_s=60) is not None
    assert first.renew_lease("s1", token, ttl_s=60)


@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_a_session_ttl_covers_the_history_and_the_summary_only(redis_server, policy):
    store = make_redis(session_ttl_s=300, recall_index=policy)
    try:
        store.save_message("s1", Message("user", "hi"))
        store.search_messages("s1", ["hi"], limit=1)  # lazy: the search indexes
        store.commit(
            CommitRequest(
                session_id="s1",
                namespace=NAMESPACE,
                record={"generation": "g"},
                expect_generation=None,
            )
        )
        store.save_metadata(QUARANTINE_NAMESPACE, "s1", {"kept": True})
        store.save_metadata("settings", "s1", {"kept": True})
        prefix = store.prefix

        index = [ttl_ms(store, f"{prefix}{kind}:s1") for kind in ("p", "e", "w")]
        history = ttl_ms(store, f"{prefix}h:s1")
        summary = ttl_ms(store, f"{prefix}r:{NAMESPACE}\x00s1")
        quarantined = ttl_ms(store, f"{prefix}r:{QUARANTINE_NAMESPACE}\x00s1")
        other = ttl_ms(store, f"{prefix}r:settings\x00s1")
    finally:
        dispose(store)

    assert 0 < history <= 300_000
    assert all(0 < ttl <= 300_000 for ttl in index)  # the history index expires too
    assert 0 < summary <= 300_000
    assert quarantined == other == -1  # -1: the key exists and never expires


def test_an_idle_session_expires_with_its_summary_and_others_stay(redis_server):
    store = make_redis(session_ttl_s=0.2)
    keep = make_redis(store.prefix.replace(":", "-keep:"))
    try:
        store.save_message("idle", Message("user", "bye"))
        store.save_metadata(NAMESPACE, "idle", {"generation": "g"})
        kept = keep.save_message("idle", Message("user", "stay"))
        deadline = time.monotonic() + 10
        pause = threading.Event()
        while store.get_full_history("idle") and time.monotonic() < deadline:
            pause.wait(0.05)

        assert store.get_full_history("idle") == []
        assert store.get_metadata(NAMESPACE, "idle") is None
        assert store.list_metadata(NAMESPACE) == []
        assert store.metadata_page(NAMESPACE) == []
        assert keep.get_history("idle") == [kept]  # no TTL on that store
    finally:
        dispose(store)
        dispose(keep)


def test_expired_sessions_leave_the_listing_and_the_session_set(redis_server):
    import redis

    store = make_redis(session_ttl_s=0.2)
    try:
        store.save_messages("idle", [Message("user", "a"), Message("user", "b")])
        assert store.session_counts() == [("idle", 2, 0)]
        deadline = time.monotonic() + 10
        pause = threading.Event()
        while store.get_full_history("idle") and time.monotonic() < deadline:
            pause.wait(0.05)

        assert store.session_counts() == []
        with redis.Redis.from_url(store.url) as client:
            assert client.zcard(store.prefix + "sessions") == 0
    finally:
        dispose(store)


def test_no_server_is_a_store_error_when_the_store_is_built():
    from memory_summary.adapters import RedisStore

    with pytest.raises(StoreError, match="connect failed"):
        RedisStore(free_port_url(), timeout_s=1)


@pytest.mark.parametrize(
    ("option", "value"),
    [("prefix", "a\x00b"), ("session_ttl_s", 0), ("session_namespaces", "summary")],
)
def test_bad_options_are_refused_before_connecting(option, value):
    from memory_summary.adapters import RedisStore

    with pytest.raises((StoreError, ValueError, TypeError)):
        RedisStore(free_port_url(), **{option: value})


def test_a_search_racing_a_restart_never_lifts_the_mark_over_new_ids(
    redis_server, monkeypatch
):
    import redis

    from memory_summary.adapters import RedisStore

    store = make_redis()
    other = make_redis(store.prefix)
    for i in range(5):
        store.save_message("a", Message("user", f"alpha {i}"))
    run = RedisStore._script

    def restart_before_index(self, name, where, keys, args):
        if name == "INDEX":  # the keys lost (no persistence), ids given anew
            monkeypatch.setattr(RedisStore, "_script", run)
            with redis.Redis.from_url(store.url) as client:
                for key in list(client.scan_iter(match=store.prefix + "*")):
                    client.delete(key)
            other.save_message("a", Message("user", "first after restart"))
        return run(self, name, where, keys, args)

    monkeypatch.setattr(RedisStore, "_script", restart_before_index)
    try:
        store.search_messages("a", ["alpha"], limit=3)
        saved = store.save_message("a", Message("user", "next"))

        assert saved.id == 2
    finally:
        dispose(store)
        other.close()


def test_a_search_racing_a_restart_never_gives_a_new_row_an_old_rows_entry(
    redis_server, monkeypatch
):
    """The keys are lost between PENDING and INDEX, and the first save after the
    restart gets id 1 again: INDEX used to attach the old row's entry to it, so a
    search for "alpha" found "beta gamma" and one for "beta" found nothing."""
    import redis

    from memory_summary.adapters import RedisStore

    store = make_redis()
    other = make_redis(store.prefix)
    for i in range(3):
        store.save_message("a", Message("user", f"alpha {i}"))
    run = RedisStore._script

    def restart_before_index(self, name, where, keys, args):
        if name == "INDEX":
            monkeypatch.setattr(RedisStore, "_script", run)
            with redis.Redis.from_url(store.url) as client:
                for key in list(client.scan_iter(match=store.prefix + "*")):
                    client.delete(key)
            reused = other.save_message("a", Message("user", "beta gamma"))
            assert reused.id == 1
        return run(self, name, where, keys, args)

    monkeypatch.setattr(RedisStore, "_script", restart_before_index)
    try:
        assert store.search_messages("a", ["alpha"], limit=3) == []
        found = store.search_messages("a", ["beta"], limit=3)
        assert [(h.message.id, h.message.content) for h in found] == [(1, "beta gamma")]
        assert store.search_messages("a", ["alpha"], limit=3) == []
        assert store.save_message("a", Message("user", "next")).id == 2
    finally:
        dispose(store)
        other.close()


def test_after_a_restart_race_every_row_given_an_id_anew_is_indexed(
    redis_server, monkeypatch
):
    """PENDING saw rows 1-2 indexed (saved eagerly) and listed 3-4; the keys are
    lost and four lazy saves get ids 1-4 anew. INDEX finds another row at 3: the
    mark must not move past 1-2, which now hold unindexed messages."""
    import redis

    from memory_summary.adapters import RedisStore

    store = make_redis(recall_index="eager")
    other = make_redis(store.prefix)
    store.save_messages("a", [Message("user", f"alpha {i}") for i in range(2)])
    store.set_recall_index("lazy")
    store.save_messages("a", [Message("user", f"alpha {i}") for i in range(2, 4)])
    run = RedisStore._script

    def restart_before_index(self, name, where, keys, args):
        if name == "INDEX":
            monkeypatch.setattr(RedisStore, "_script", run)
            with redis.Redis.from_url(store.url) as client:
                for key in list(client.scan_iter(match=store.prefix + "*")):
                    client.delete(key)
            words = ["beta", "gamma", "delta", "omega"]
            other.save_messages("a", [Message("user", word) for word in words])
        return run(self, name, where, keys, args)

    monkeypatch.setattr(RedisStore, "_script", restart_before_index)
    try:
        assert store.search_messages("a", ["alpha"], limit=5) == []
        for row_id, word in enumerate(["beta", "gamma", "delta", "omega"], 1):
            hits = store.search_messages("a", [word], limit=5)
            best = max(hits, key=lambda hit: hit.score)  # with its neighbours
            assert (best.message.id, best.message.content) == (row_id, word)
            assert all(hit.message.content != f"alpha {row_id - 1}" for hit in hits)
    finally:
        dispose(store)
        other.close()


def test_a_restart_race_in_a_page_of_several_index_calls_indexes_every_new_row(
    redis_server, monkeypatch
):
    """A page too big for one INDEX call goes in several. The keys are lost before
    the first, and a lazy save gets id 1 anew: the first call holds the mark, and
    the search must send none of the page's later calls (each moved the mark to its
    own top, past row 1, which was then never found) but read the page anew."""
    import redis

    from memory_summary.adapters import RedisStore
    from memory_summary.adapters.stores.redis import history

    monkeypatch.setattr(history, "POSTINGS_PER_CALL", 4)  # one row of 4 terms a call
    store = make_redis()
    other = make_redis(store.prefix)
    for i in range(4):
        store.save_message("a", Message("user", f"alpha{i} one two three"))
    run = RedisStore._script
    calls = []

    def restart_before_index(self, name, where, keys, args):
        calls.append(name)
        if name == "INDEX" and calls.count("INDEX") == 1:
            with redis.Redis.from_url(store.url) as client:
                for key in list(client.scan_iter(match=store.prefix + "*")):
                    client.delete(key)
            assert other.save_message("a", Message("user", "beta")).id == 1
        return run(self, name, where, keys, args)

    monkeypatch.setattr(RedisStore, "_script", restart_before_index)
    try:
        assert store.search_messages("a", ["alpha0"], limit=3) == []
        assert calls[:3] == ["PENDING", "INDEX", "PENDING"]  # the page read anew
        found = store.search_messages("a", ["beta"], limit=3)
        assert [(h.message.id, h.message.content) for h in found] == [(1, "beta")]
    finally:
        dispose(store)
        other.close()


def test_a_restart_race_that_leaves_the_read_ids_empty_holds_the_mark(
    redis_server, monkeypatch
):
    """PENDING saw rows 1-2 indexed (saved eagerly) and listed 3-4; the keys are
    lost and one lazy save gets id 1 anew. Ids 3-4 hold no row: the mark used to
    move to the history's highest id, 1, past the new row, never found after."""
    import redis

    from memory_summary.adapters import RedisStore

    store = make_redis(recall_index="eager")
    other = make_redis(store.prefix)
    store.save_messages("a", [Message("user", f"alpha {i}") for i in range(2)])
    store.set_recall_index("lazy")
    store.save_messages("a", [Message("user", f"alpha {i}") for i in range(2, 4)])
    run = RedisStore._script

    def restart_before_index(self, name, where, keys, args):
        if name == "INDEX":
            monkeypatch.setattr(RedisStore, "_script", run)
            with redis.Redis.from_url(store.url) as client:
                for key in list(client.scan_iter(match=store.prefix + "*")):
                    client.delete(key)
            assert other.save_message("a", Message("user", "beta")).id == 1
        return run(self, name, where, keys, args)

    monkeypatch.setattr(RedisStore, "_script", restart_before_index)
    try:
        assert store.search_messages("a", ["alpha"], limit=5) == []
        found = store.search_messages("a", ["beta"], limit=5)
        assert [(h.message.id, h.message.content) for h in found] == [(1, "beta")]
    finally:
        dispose(store)
        other.close()
