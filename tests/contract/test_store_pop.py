"""``pop_message`` (the ``PoppingStore`` capability), on every store.

Popping takes back the newest active message and nothing else: archived messages never
come back or go, ids are never reused, and a compression that read the popped message
is fenced when it commits.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from memory_summary import Message
from memory_summary.domain import CommitRequest, PoppingStore

NS = "summary"


def save(store, sid, count, prefix="m"):
    return [
        store.save_message(sid, Message("user", f"{prefix}{i}")) for i in range(count)
    ]


def commit(store, sid, through_id, expect_archived, lease=None):
    return store.commit(
        CommitRequest(
            session_id=sid,
            namespace=NS,
            record={"generation": "g1", "text": "summary"},
            expect_generation=None,
            through_id=through_id,
            expect_archived=expect_archived,
            lease=lease,
        )
    )


def test_every_store_is_a_popping_store(store):
    assert isinstance(store, PoppingStore)


def test_pop_returns_the_newest_active_message_and_removes_only_it(store, sid):
    saved = save(store, sid, 3)
    saved.append(
        store.save_message(
            sid,
            Message(
                "assistant",
                "calling",
                tool_calls=[{"id": "c1", "name": "f", "arguments": "{}"}],
                metadata={"k": [1, "two"]},
            ),
        )
    )

    popped = store.pop_message(sid)

    assert popped == saved[3]
    assert popped.id == saved[3].id
    assert store.get_history(sid) == saved[:3]
    assert store.get_full_history(sid) == saved[:3]
    assert store.count_history(sid) == 3


def test_pop_on_an_unknown_or_empty_session_returns_none(store, sid):
    assert store.pop_message(sid) is None

    save(store, sid, 1)
    store.pop_message(sid)

    assert store.pop_message(sid) is None
    assert store.get_full_history(sid) == []


def test_pop_never_takes_an_archived_message(store, sid):
    saved = save(store, sid, 4)
    store.trim_history(sid, keep_recent=1)

    first = store.pop_message(sid)
    second = store.pop_message(sid)

    assert first == saved[3]
    assert second is None
    assert store.get_history(sid) == []
    assert store.get_full_history(sid) == saved[:3]


def test_pop_leaves_other_sessions_alone(store, sid):
    other = f"{sid}-other"
    mine = save(store, sid, 2)
    theirs = save(store, other, 2)

    store.pop_message(sid)

    assert store.get_history(sid) == mine[:1]
    assert store.get_history(other) == theirs


def test_a_message_saved_after_a_pop_gets_a_new_id(store, sid):
    saved = save(store, sid, 3)
    store.pop_message(sid)

    fresh = store.save_message(sid, Message("user", "again"))

    assert fresh.id > saved[2].id


def test_a_compression_that_read_the_popped_message_is_fenced(store, sid):
    saved = save(store, sid, 6)
    lease = store.acquire_lease(sid, owner="compressor", ttl_s=60)
    store.pop_message(sid)
    store.save_message(sid, Message("user", "replacement"))  # a new id, not saved[5]'s

    result = commit(store, sid, saved[5].id, 6, lease=lease)

    assert result.fenced == "archive"
    assert [m.content for m in store.get_history(sid)] == [
        "m0",
        "m1",
        "m2",
        "m3",
        "m4",
        "replacement",
    ]
    assert store.get_metadata(NS, sid) is None


def test_a_compression_of_older_messages_still_commits_after_a_pop(store, sid):
    saved = save(store, sid, 6)
    lease = store.acquire_lease(sid, owner="compressor", ttl_s=60)
    store.pop_message(sid)

    result = commit(store, sid, saved[2].id, 3, lease=lease)

    assert result.archived == 3
    assert store.get_history(sid) == saved[3:5]
    assert store.get_full_history(sid) == saved[:5]


def test_pops_racing_a_commit_never_lose_or_resurrect_a_message(store, sid):
    saved = save(store, sid, 40)
    lease = store.acquire_lease(sid, owner="compressor", ttl_s=60)
    start = threading.Barrier(5)

    def pop_some():
        start.wait(timeout=10)
        return [store.pop_message(sid) for _ in range(6)]

    def commit_half():
        start.wait(timeout=10)
        return commit(store, sid, saved[19].id, 20, lease=lease)

    with ThreadPoolExecutor(5) as pool:
        poppers = [pool.submit(pop_some) for _ in range(4)]
        result = pool.submit(commit_half).result(timeout=30)
        popped = [m for f in poppers for m in f.result(timeout=30) if m is not None]

    active = store.get_history(sid)
    full = store.get_full_history(sid)
    archived = [m for m in full if m not in active]
    assert sorted(m.id for m in popped + full) == [m.id for m in saved]
    assert len({m.id for m in popped}) == len(popped)
    if result.committed:  # the commit came first: only its 20 kept ones could go
        assert archived == saved[:20]
        assert sorted(m.id for m in popped) == [m.id for m in saved[20:]]
    else:  # a pop reached a message the commit expected: it changed nothing
        assert result.fenced == "archive"
        assert archived == []
        assert sorted(m.id for m in popped) == [m.id for m in saved[16:]]
