"""Flags a foreign writer put in a SQL store: archive marks and lease expiries.

A program sharing the database may write what the library never writes: an
``archived`` value other than 0 and 1 (SQLite keeps whatever it is given), or a lease
whose ``expires_at`` is text, a blob, NaN or centuries ahead. The documented
normalizations (docs/stores.md) keep every message visible in exactly one of the
active history and the archive, and never let such a lease block a session for good.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import time

import pytest

from memory_summary import Message
from memory_summary.adapters.stores.rows import is_archived
from tests.contract.stores import open_store, redis_client, run_sql

# What SQLite keeps in an INTEGER column, as a foreign writer may put it there.
FOREIGN_ARCHIVED = [2, -1, "1", "yes", "", 0.5, b"\x01", b"", b"\x00", None]


def loosen_sqlite_column(store, table, declared, loosened):
    """Rewrite a column's declaration as a foreign program's schema might have it.

    Dropping a NOT NULL changes no stored byte: SQLite documents editing the schema
    text for it (``PRAGMA writable_schema``); the cookie bump makes every open
    connection, the store's too, read the schema again.
    """
    with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as db:
        version = db.execute("PRAGMA schema_version").fetchone()[0]
        db.execute("PRAGMA writable_schema = ON")
        changed = db.execute(
            "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE name = ?",
            (declared, loosened, table),
        ).rowcount
        db.execute(f"PRAGMA schema_version = {version + 1}")
        db.execute("PRAGMA writable_schema = OFF")
    assert changed == 1


def _save(store, sid, *texts):
    return [store.save_message(sid, Message("user", text)).id for text in texts]


@pytest.mark.parametrize("value", FOREIGN_ARCHIVED, ids=repr)
def test_a_foreign_archived_value_other_than_zero_counts_as_archived(
    request, tmp_path, sid, value
):
    store = open_store(request, "sqlite", tmp_path)
    loosen_sqlite_column(
        store, "messages", "archived INTEGER NOT NULL", "archived INTEGER"
    )
    ids = _save(store, sid, "alpha one", "zebra two", "gamma three", "delta four")
    run_sql(store, "UPDATE messages SET archived = ? WHERE id = ?", (value, ids[1]))
    active = [ids[0], ids[2], ids[3]]

    history = store.get_history(sid)
    archived = store.get_archived(sid, after_id=None, through_id=ids[-1], limit=10)
    window, _ = store.read_window(sid, limit=10, namespace="summary")
    hits = store.search_messages(sid, ["zebra"], limit=5)
    archived_hits = store.search_messages(sid, ["zebra"], limit=5, archived_only=True)

    assert [m.id for m in history] == active
    assert [m.id for m in archived] == [ids[1]]
    assert [m.id for m in window] == active
    assert store.count_history(sid) == 3
    assert store.active_span(sid).count == 3
    assert store.session_counts(limit=10) == [(sid, 3, 1)]
    assert ids[1] in {h.message.id for h in hits}
    assert all(h.archived is (h.message.id == ids[1]) for h in hits)
    assert ids[1] in {h.message.id for h in archived_hits}
    assert all(h.archived for h in archived_hits)
    assert [m.id for m in store.get_full_history(sid)] == ids


@pytest.mark.parametrize("value", [2, "yes", b"\x01"], ids=repr)
def test_pop_and_trim_never_take_a_foreign_archived_message(
    request, tmp_path, sid, value
):
    store = open_store(request, "sqlite", tmp_path)
    ids = _save(store, sid, "one", "two", "three")
    run_sql(store, "UPDATE messages SET archived = ? WHERE id = ?", (value, ids[2]))

    popped = [store.pop_message(sid), store.pop_message(sid), store.pop_message(sid)]
    left = store.get_archived(sid, after_id=None, through_id=ids[-1], limit=10)

    assert [m.id if m else None for m in popped] == [ids[1], ids[0], None]
    assert [m.id for m in left] == [ids[2]]
    assert store.trim_history(sid, 0) == 0


@pytest.mark.postgres
def test_postgres_refuses_an_archived_value_that_is_not_a_boolean(request, tmp_path):
    import psycopg

    store = open_store(request, "postgres", tmp_path)
    message = store.save_message("s-flag", Message("user", "hello"))

    with pytest.raises(psycopg.Error):
        run_sql(
            store, "UPDATE {t}messages SET archived = ? WHERE id = ?", (2, message.id)
        )
    with pytest.raises(psycopg.Error):
        run_sql(
            store,
            "UPDATE {t}messages SET archived = NULL WHERE id = ?",
            (message.id,),
        )


FLAGS = [(0, False), (False, False), (0.0, False), (1, True), (True, True), (2, True)]
FLAGS += [(-1, True), (None, True), ("0", True), (b"", True), (math.nan, True)]


@pytest.mark.parametrize(("value", "archived"), FLAGS, ids=repr)
def test_is_archived_takes_only_a_numeric_zero_as_active(value, archived):
    assert is_archived(value) is archived


# -- leases

DAY_S = 86_400
SQLITE_EXPIRIES = ["never", b"\x00\x01", math.inf, 1e300, None, math.nan]
POSTGRES_EXPIRIES = [math.inf, math.nan, 1e300]


def _write_lease(store, sid, expires_at):
    run_sql(store, "DELETE FROM {t}leases WHERE session_id = ?", (sid,))
    run_sql(
        store,
        "INSERT INTO {t}leases (session_id, owner, token, expires_at) "
        "VALUES (?, 'foreign', 'foreign-token', ?)",
        (sid, expires_at),
    )


def _assert_lease_counts_as_expired(store, sid):
    assert store.lease_owner(sid) is None
    token = store.acquire_lease(sid, owner="me", ttl_s=60)
    assert token is not None
    assert store.lease_owner(sid) == "me"
    assert store.renew_lease(sid, token, ttl_s=60)


@pytest.mark.parametrize("expires_at", SQLITE_EXPIRIES, ids=repr)
def test_a_sqlite_lease_of_no_finite_near_expiry_counts_as_expired(
    request, tmp_path, sid, expires_at
):
    store = open_store(request, "sqlite", tmp_path)
    loosen_sqlite_column(store, "leases", "expires_at REAL NOT NULL", "expires_at REAL")
    _write_lease(store, sid, expires_at)

    _assert_lease_counts_as_expired(store, sid)


@pytest.mark.postgres
@pytest.mark.parametrize("expires_at", POSTGRES_EXPIRIES, ids=repr)
def test_a_postgres_lease_of_no_finite_near_expiry_counts_as_expired(
    request, tmp_path, sid, expires_at
):
    store = open_store(request, "postgres", tmp_path)
    _write_lease(store, sid, expires_at)

    _assert_lease_counts_as_expired(store, sid)


def test_a_lease_beyond_the_horizon_counts_as_expired(sql_store, sid):
    far = time.time() + 2 * DAY_S
    _write_lease(sql_store, sid, far)

    _assert_lease_counts_as_expired(sql_store, sid)


def test_a_live_foreign_lease_still_holds(sql_store, sid):
    _write_lease(sql_store, sid, time.time() + 600)

    assert sql_store.lease_owner(sid) == "foreign"
    assert sql_store.acquire_lease(sid, owner="me", ttl_s=60) is None


@pytest.mark.redis
@pytest.mark.parametrize("expiry", ["persist", "far", "wrong-type"])
def test_a_redis_lease_of_no_near_expiry_counts_as_expired(
    request, tmp_path, sid, expiry
):
    store = open_store(request, "redis", tmp_path)
    key = f"{store.prefix}l:{sid}"
    with redis_client(store) as client:
        if expiry == "wrong-type":
            client.set(key, "not a hash")
        else:
            client.hset(key, mapping={"owner": "foreign", "token": "t"})
        if expiry == "far":
            client.pexpire(key, 2 * DAY_S * 1000)

    _assert_lease_counts_as_expired(store, sid)


@pytest.mark.redis
def test_a_live_redis_lease_key_of_another_type_holds_and_has_no_owner(
    request, tmp_path, sid
):
    """Another program's string at the lease key, expiring soon: held, by nobody
    this store can name; renewing or releasing it changes nothing."""
    store = open_store(request, "redis", tmp_path)
    key = f"{store.prefix}l:{sid}"
    with redis_client(store) as client:
        client.set(key, "not a hash", px=600_000)

        assert store.acquire_lease(sid, owner="me", ttl_s=60) is None
        assert store.lease_owner(sid) is None
        assert store.renew_lease(sid, "t", ttl_s=60) is False
        store.release_lease(sid, "t")
        assert client.get(key) == b"not a hash"


# -- metadata keys


@pytest.mark.redis
def test_a_redis_metadata_key_that_is_no_utf8_is_a_store_error(request, tmp_path):
    from memory_summary import StoreError, SummaryEngine

    store = open_store(request, "redis", tmp_path)
    store.save_metadata("summary", "alice", {"text": "about alice"})
    with redis_client(store) as client:
        client.zadd(f"{store.prefix}x:summary", {b"\xff\xfe": 0})
        client.set(f"{store.prefix}r:summary\x00".encode() + b"\xff\xfe", b"{}")

    with pytest.raises(StoreError, match="not UTF-8"):
        store.list_metadata("summary")
    with pytest.raises(StoreError, match="not UTF-8"):
        store.metadata_page("summary")
    with SummaryEngine(store) as engine:
        [result] = engine.clear("all")

    assert not result.success
    assert "nothing was cleared" in result.message
    assert store.get_metadata("summary", "alice") == {"text": "about alice"}


def test_sqlite_listings_skip_a_key_that_is_no_text(request, tmp_path, sid):
    """Another program's blob key or session id is no session: never shown as one.

    Before, a summary record under a blob key came back as the session ``"b'...'"``
    from ``metadata_page`` (so from ``usage_by_session`` and ``stats``), and a
    message under a blob session id as such a session from ``session_counts``.
    """
    from memory_summary import SummaryEngine

    store = open_store(request, "sqlite", tmp_path)
    record = '{"text": "about alice", "tokens": 3, "covered_through_id": null}'
    store.save_metadata("summary", "alice", {"text": "about alice", "tokens": 3})
    _save(store, "alice", "hello")
    run_sql(
        store,
        "INSERT INTO metadata (namespace, key, data) VALUES ('summary', ?, ?)",
        (b"\xff\x00bin", record),
    )
    [row] = run_sql(store, "SELECT * FROM messages WHERE session_id = 'alice'")
    run_sql(
        store,
        f"INSERT INTO messages VALUES ({', '.join('?' * len(row))})",
        (None, b"\xff\x00bin", *row[2:]),
    )

    assert [key for key, _ in store.metadata_page("summary")] == ["alice"]
    assert store.session_counts() == [("alice", 1, 0)]
    with SummaryEngine(store) as engine:
        assert list(engine.usage_by_session()) == ["alice"]
