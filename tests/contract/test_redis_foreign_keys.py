"""Redis keys of a session as another program may have written them.

The archive boundary ``b:<sid>``, then the search's keys (``w:``, ``e:``, ``h:``).

The store writes the highest archived id there, in decimal digits: every id it
gives is at most 2^53 (a score, a double, is exact up to it; the save refuses an id
past it), and every such id reads back, however many digits. Any other value (text
that is no such id, a sign, a point, an exponent, a number above 2^53, another Redis
type) would be read differently by each script: as 0 by some, bringing archived
messages back, as +inf by others, hiding new ones, and as a Python ``ValueError`` by
the search. Every script now refuses it alike: a ``MalformedRecord`` naming the key
(docs/redis.md); the session listing skips that session with a warning naming the
key, as the SQL stores skip a foreign key. A value in the search's keys the store
never writes is a ``MalformedRecord`` too, never a bare ``ValueError``.
"""

from __future__ import annotations

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.domain import MalformedRecord, StoreError
from tests.contract.stores import open_store, redis_client

pytestmark = pytest.mark.redis

FOREIGN = [b"abc", b"5.5", b"-3", b"+4", b"inf", b"nan", b"1e3", b"", b" 5", b"0x3"]
FOREIGN += [b"9" * 17, b"9007199254740993", "list", "hash"]


def _reads(store, sid):
    return {
        "get_history": lambda: store.get_history(sid),
        "get_history(limit)": lambda: store.get_history(sid, limit=2),
        "count_history": lambda: store.count_history(sid),
        "active_span": lambda: store.active_span(sid),
        "span_and_metadata": lambda: store.span_and_metadata(sid, "summary"),
        "get_oldest_history": lambda: store.get_oldest_history(sid, 3),
        "get_archived": lambda: store.get_archived(
            sid, after_id=None, through_id=100, limit=10
        ),
        "read_window": lambda: store.read_window(sid, limit=3, namespace="summary"),
        "search_messages": lambda: store.search_messages(sid, ["appl"], limit=5),
        "search archived": lambda: store.search_messages(
            sid, ["appl"], limit=5, archived_only=True
        ),
        "read_messages": lambda: store.read_messages(sid, 2, before=1, after=1),
        "read_message_range": lambda: store.read_message_range(sid, 1, 8, limit=5),
        "trim_history": lambda: store.trim_history(sid, 1),
        "pop_message": lambda: store.pop_message(sid),
    }


def _stored(request, tmp_path, sid):
    store = open_store(request, "redis", tmp_path)
    for i in range(8):
        store.save_message(sid, Message("user", f"message {i} about apples"))
    assert store.trim_history(sid, 4) == 4
    return store


def _write_boundary(store, sid, value):
    key = f"{store.prefix}b:{sid}"
    with redis_client(store) as client:
        client.delete(key)
        if value == "list":
            client.rpush(key, "5")
        elif value == "hash":
            client.hset(key, "id", "5")
        else:
            client.set(key, value)


@pytest.mark.parametrize("value", FOREIGN, ids=repr)
def test_every_read_refuses_a_foreign_boundary_alike(
    request, tmp_path, sid, value, caplog
):
    store = _stored(request, tmp_path, sid)
    store.save_message(f"{sid}-other", Message("user", "hello"))
    _write_boundary(store, sid, value)

    with caplog.at_level("WARNING", logger="adapters"):
        assert store.session_counts() == [(f"{sid}-other", 1, 0)]
    assert f"{store.prefix}b:{sid}" in caplog.text

    for name, read in _reads(store, sid).items():
        with pytest.raises(MalformedRecord, match=f"archive boundary .*b:{sid}") as e:
            read()
        assert "not a message id" in str(e.value), name
    with redis_client(store) as client:  # nothing was changed: no pop, no trim
        assert client.zcard(f"{store.prefix}h:{sid}") == 8


@pytest.mark.parametrize("value", [b"4", b"0004", b"0" * 20 + b"4"], ids=repr)
def test_a_boundary_of_decimal_digits_reads_as_that_id(request, tmp_path, sid, value):
    store = _stored(request, tmp_path, sid)
    _write_boundary(store, sid, value)

    assert [m.id for m in store.get_history(sid)] == [5, 6, 7, 8]
    assert store.session_counts() == [(sid, 4, 4)]
    assert [h.message.id for h in store.search_messages(sid, ["appl"], limit=8)]


def test_a_compression_over_a_foreign_boundary_fails_and_keeps_the_summary(
    request, tmp_path, sid
):
    store = open_store(request, "redis", tmp_path)
    for i in range(10):
        store.save_message(sid, Message("user", f"message {i} about apples"))
    config = SummaryConfig(keep_recent=2)
    with SummaryEngine(store, config=config) as engine:
        assert engine.compress(sid).result(timeout=30).kind == "compressed"
        record = engine.summary(sid)
    for i in range(4):
        store.save_message(sid, Message("user", f"later {i}"))
    _write_boundary(store, sid, b"-1")

    with SummaryEngine(store, config=config) as engine:
        outcome = engine.compress(sid).result(timeout=30)

        assert outcome.kind == "failed", outcome
        assert "archive boundary" in outcome.detail
        assert engine.summary(sid) == record
    assert store.get_metadata("summary.quarantine", sid) is None


INDEX_VALUES = {
    "word count of text": ("w", lambda c, k: c.set(k, "many")),
    "entry of no length": ("e", lambda c, k: c.hset(k, "3", "appl 1")),
    "member of no integer score": (
        "h",
        lambda c, k: c.zadd(
            k, {b'[99, "user", "apples", null, null, null, null, null, null]': 3.5}
        ),
    ),
}


@pytest.mark.parametrize("case", INDEX_VALUES, ids=str)
def test_a_foreign_value_in_the_search_keys_is_a_malformed_record(
    request, tmp_path, sid, case
):
    """Before, each reached the caller as a bare ValueError or IndexError."""
    from memory_summary.adapters import RedisStore
    from tests.redisserver import shared_server

    request.getfixturevalue("redis_server")
    store = RedisStore(shared_server().url, prefix=f"{sid}:", recall_index="eager")
    request.addfinalizer(store.close)
    request.addfinalizer(store.clear_all)
    for i in range(6):
        store.save_message(sid, Message("user", f"message {i} about apples"))
    kind, write = INDEX_VALUES[case]
    with redis_client(store) as client:
        write(client, f"{store.prefix}{kind}:{sid}")

    with pytest.raises(MalformedRecord, match="another program's"):
        store.search_messages(sid, ["appl"], limit=5)


def test_ids_of_sixteen_digits_read_back(request, tmp_path, sid):
    """A long-lived store's counter reaches 10^15: ids get a sixteenth digit.

    Before, a boundary took at most 15 digits: the store's own trim wrote one it then
    refused, and every read of the session and the listing failed.
    """
    store = open_store(request, "redis", tmp_path)
    with redis_client(store) as client:
        client.set(f"{store.prefix}id", 10**15 - 3)
    saved = [store.save_message(sid, Message("user", f"m{i}")) for i in range(6)]

    assert store.trim_history(sid, 2) == 4
    assert [m.id for m in store.get_history(sid)] == [10**15 + 2, 10**15 + 3]
    assert store.session_counts() == [(sid, 2, 4)]
    assert [m.id for m in saved] == list(range(10**15 - 2, 10**15 + 4))


def test_the_last_exact_id_is_given_and_none_past_it(request, tmp_path, sid):
    """Ids are scores, doubles: exact up to 2^53. The save gives 2^53, then refuses."""
    store = open_store(request, "redis", tmp_path)
    with redis_client(store) as client:
        client.set(f"{store.prefix}id", 2**53 - 2)
    last = store.save_messages(sid, [Message("user", "a"), Message("user", "b")])
    assert [m.id for m in last] == [2**53 - 1, 2**53]
    assert [(m.id, m.content) for m in store.get_history(sid)] == [
        (2**53 - 1, "a"),
        (2**53, "b"),
    ]
    assert store.trim_history(sid, 0) == 2  # the boundary: 2^53 itself
    assert store.get_history(sid) == []
    assert store.session_counts() == [(sid, 0, 2)]

    with pytest.raises(StoreError, match="past 2\\^53") as refused:
        store.save_message(sid, Message("user", "c"))
    assert not isinstance(refused.value, MalformedRecord)
    with redis_client(store) as client:  # nothing given, nothing stored
        assert int(client.get(f"{store.prefix}id")) == 2**53
        assert client.zcard(f"{store.prefix}h:{sid}") == 2
    assert store.count_history(sid) == 0


def test_the_listing_pages_past_sessions_of_a_foreign_boundary(
    request, tmp_path, sid, caplog
):
    """Before, one such session made every page of the listing fail."""
    store = open_store(request, "redis", tmp_path)
    names = [f"{sid}-{i}" for i in range(5)]
    for name in names:
        store.save_message(name, Message("user", "hello"))
    for name in names[1:4]:
        _write_boundary(store, name, b"abc")

    for limit in (1, 2, 10):
        seen, after = [], None
        with caplog.at_level("WARNING", logger="adapters"):
            while page := store.session_counts(after=after, limit=limit):
                seen += page
                after = page[-1][0]
        assert seen == [(names[0], 1, 0), (names[4], 1, 0)], limit
    assert all(f"{store.prefix}b:{name}" in caplog.text for name in names[1:4])


def test_an_error_of_the_search_itself_is_not_blamed_on_foreign_data(
    request, tmp_path, sid, monkeypatch
):
    """Only the parsing of the replies is: before, the whole search was."""
    from memory_summary.adapters.stores.redis import history

    def broken(*args, **kwargs):
        raise ValueError("a bug of the ranking")

    store = _stored(request, tmp_path, sid)
    monkeypatch.setattr(history, "bm25_search", broken)

    with pytest.raises(ValueError, match="a bug of the ranking") as raised:
        store.search_messages(sid, ["appl"], limit=5)
    assert not isinstance(raised.value, MalformedRecord)


@pytest.mark.parametrize("kind", ["hash", "list", "set", "zset"])
def test_a_record_key_of_another_type_is_a_malformed_record_in_the_span_read(
    request, tmp_path, sid, kind
):
    store = _stored(request, tmp_path, sid)
    key = f"{store.prefix}r:summary\x00{sid}"
    with redis_client(store) as client:
        {
            "hash": lambda: client.hset(key, "text", "x"),
            "list": lambda: client.rpush(key, "x"),
            "set": lambda: client.sadd(key, "x"),
            "zset": lambda: client.zadd(key, {"x": 1}),
        }[kind]()

    with pytest.raises(MalformedRecord, match=f"holds a Redis {kind}"):
        store.span_and_metadata(sid, "summary")
    assert store.active_span(sid).count == 4  # the history itself reads


COUNTERS = [b"abc", b"5.5", b"-3", b"", b" 7", b"9" * 17, "hash"]


def _write_counter(store, value):
    key = f"{store.prefix}id"
    with redis_client(store) as client:
        client.delete(key)
        if value == "hash":
            client.hset(key, "id", "9")
        elif value is not None:
            client.set(key, value)


def _keys_of(store, sid):
    with redis_client(store) as client:
        counter = client.dump(f"{store.prefix}id")  # whatever type it holds
        return counter, client.zcard(f"{store.prefix}h:{sid}")


@pytest.mark.parametrize("value", COUNTERS, ids=repr)
def test_a_foreign_id_counter_refuses_every_save_and_stores_nothing(
    request, tmp_path, sid, value
):
    """Before, a save failed with Redis' own text ("value is not an integer ...
    script: <sha>"), and a negative counter gave ids the active history never shows.
    """
    store = _stored(request, tmp_path, sid)
    _write_counter(store, value)
    before = _keys_of(store, sid)

    for where in (sid, f"{sid}-new"):
        with pytest.raises(MalformedRecord, match=f"id counter {store.prefix}id") as e:
            store.save_messages(where, [Message("user", "a"), Message("user", "b")])
        assert "not a message id" in str(e.value)
        assert "script" not in str(e.value)
    assert _keys_of(store, sid) == before
    assert store.get_history(f"{sid}-new") == []


@pytest.mark.parametrize("value", [None, b"3", b"8"], ids=repr)
def test_a_counter_set_back_below_a_session_refuses_its_saves(
    request, tmp_path, sid, value
):
    """Before, the save gave ids the session held: a second message under id 4, or
    one below the archive boundary, archived the moment it was saved.
    """
    store = _stored(request, tmp_path, sid)
    store.pop_message(sid)  # the session holds ids up to 7, the counter says 8
    _write_counter(store, value)

    if value == b"8":
        assert store.save_message(sid, Message("user", "new")).id == 9
        return
    with pytest.raises(MalformedRecord, match="below the id 7 this session"):
        store.save_message(sid, Message("user", "new"))
    assert store.save_message(f"{sid}-new", Message("user", "x")).id >= 1
    _write_counter(store, b"8")
    saved = store.save_message(sid, Message("user", "new"))
    assert [m.id for m in store.get_history(sid)] == [5, 6, 7, saved.id]
    assert saved.id == 9


def _eager(request, sid):
    from memory_summary.adapters import RedisStore
    from tests.redisserver import shared_server

    request.getfixturevalue("redis_server")
    store = RedisStore(shared_server().url, prefix=f"{sid}:", recall_index="eager")
    request.addfinalizer(store.close)
    request.addfinalizer(store.clear_all)
    for i in range(4):
        store.save_message(sid, Message("user", f"message {i} about apples"))
    return store


POSTINGS_KEYS = {
    "string": lambda c, k: c.set(k, "x"),
    "hash": lambda c, k: c.hset(k, "appl", "1"),
    "list": lambda c, k: c.rpush(k, "x"),
}


@pytest.mark.parametrize("kind", POSTINGS_KEYS)
def test_a_postings_key_of_another_type_is_refused_before_any_write(request, sid, kind):
    """Before, Redis' WRONGTYPE text reached the caller, after the save had stored
    its message (a script's writes are not undone): a save reported failed, done.
    """
    store = _eager(request, sid)
    key = f"{store.prefix}p:{sid}"
    with redis_client(store) as client:
        client.delete(key)
        POSTINGS_KEYS[kind](client, key)
    before = _keys_of(store, sid)

    for name, call in {
        "save": lambda: store.save_message(sid, Message("user", "more apples")),
        "pop": lambda: store.pop_message(sid),
        "search": lambda: store.search_messages(sid, ["appl"], limit=3),
    }.items():
        with pytest.raises(MalformedRecord, match=f"index key {key} holds") as e:
            call()
        assert f"a Redis {kind}" in str(e.value), name
        assert "WRONGTYPE" not in str(e.value)
    assert _keys_of(store, sid) == before
    assert len(store.get_history(sid)) == 4


@pytest.mark.parametrize(
    "member", [b"appl\x00x\x001", b"appl\x005", b"\x00abc"], ids=repr
)
def test_a_posting_of_another_shape_is_a_malformed_record_naming_the_key(
    request, sid, member
):
    """Before, Lua's own error text ("table index is nil") reached the caller."""
    store = _eager(request, sid)
    key = f"{store.prefix}p:{sid}"
    with redis_client(store) as client:
        client.zadd(key, {member: 0})

    with pytest.raises(MalformedRecord, match=f"index key {key} holds the") as e:
        store.search_messages(sid, ["appl"], limit=3)
    assert "user_script" not in str(e.value)
    assert store.pop_message(sid).id == 4  # its own postings go, the foreign stays
