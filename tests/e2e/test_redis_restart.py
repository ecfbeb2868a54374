"""A Redis restart, on throw-away servers: with persistence and without.

With persistence (an append-only file synced on every write, or an RDB snapshot
written at shutdown) a lease is a key that outlives the server, the store's
connections are replaced instead of reused, and a commit prepared before the restart
is fenced when another process changed the record meanwhile. Without persistence the
server comes back empty: a compression in flight then commits nothing (its lease is
gone), and the store goes on working.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memory_summary import Message, StoreError
from memory_summary.testing.fencing_contract import commit
from tests.redisserver import RedisServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.redis]
WORKER = Path(__file__).with_name("store_worker.py")
NS, SID, PREFIX = "summary", "s1", "restart:"


def contend(url: str, expect: str, new: str) -> dict:
    """Run a second process that tries the lease, then commits NEW over EXPECT."""
    done = subprocess.run(
        [
            *(sys.executable, str(WORKER), "contend"),
            *(f"redis:{url}|{PREFIX}", SID, expect, new),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=WORKER.parent,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("persistence", "mode"),
    [("aof", "kill"), ("aof", "save"), ("rdb", "save")],
    ids=["aof-crash", "aof-restart", "rdb-restart"],
)
def test_a_lease_and_the_fence_survive_a_restart_with_persistence(persistence, mode):
    from memory_summary.adapters import RedisStore

    with RedisServer(persistence) as server:
        store = RedisStore(server.url, prefix=PREFIX)
        try:
            saved = [
                store.save_message(SID, Message("user", f"m{i}")) for i in range(4)
            ]
            first = commit(
                store, SID, record={"generation": "g1"}, expect_generation=None
            )
            token = store.acquire_lease(SID, owner="first", ttl_s=120)
            assert first.committed
            assert token is not None

            server.restart(mode)

            # A call on the old connections: the ones the restart closed are replaced.
            assert store.renew_lease(SID, token, ttl_s=120) is True
            assert store.lease_owner(SID) == "first"
            # Another process: the lease is taken; it changes the record, unleased.
            assert contend(server.url, expect="g1", new="g2") == {
                "event": "contended",
                "acquired": False,
                "commit": "committed",
            }
            # Our compression read g1 before the restart: its commit is fenced.
            stale = commit(
                store,
                SID,
                record={"generation": "g-stale"},
                expect_generation="g1",
                through_id=saved[1].id,
                expect_archived=2,
                lease=token,
            )
            assert stale.fenced == "generation"
            assert store.get_history(SID) == saved
            assert store.get_metadata(NS, SID) == {"generation": "g2"}
            # With what is stored now, the same lease still commits.
            fresh = commit(
                store,
                SID,
                record={"generation": "g3"},
                expect_generation="g2",
                through_id=saved[1].id,
                expect_archived=2,
                lease=token,
            )
            assert fresh.archived == 2
            later = store.save_message(SID, Message("user", "after"))
            assert later.id > saved[-1].id  # the id counter persisted too
        finally:
            store.close()


def test_without_persistence_a_restart_empties_the_store_and_fences_commits():
    from memory_summary.adapters import RedisStore

    with RedisServer("none") as server:
        store = RedisStore(server.url, prefix=PREFIX, timeout_s=2)
        try:
            saved = [
                store.save_message(SID, Message("user", f"m{i}")) for i in range(4)
            ]
            commit(store, SID, record={"generation": "g1"}, expect_generation=None)
            token = store.acquire_lease(SID, owner="first", ttl_s=120)
            assert token is not None

            server.stop("nosave")
            with pytest.raises(
                StoreError, match=r"save failed .*never reached: nothing was stored"
            ):
                store.save_message(SID, Message("user", "while down"))
            server.start()

            # Everything is gone: messages, the summary record and the lease.
            assert store.get_full_history(SID) == []
            assert store.get_metadata(NS, SID) is None
            assert store.lease_owner(SID) is None
            # A compression prepared before the restart commits nothing.
            leased = commit(
                store,
                SID,
                record={"generation": "g2"},
                expect_generation="g1",
                through_id=saved[1].id,
                expect_archived=0,
                lease=token,
            )
            unleased = commit(
                store, SID, record={"generation": "g2"}, expect_generation="g1"
            )
            assert (leased.fenced, unleased.fenced) == ("lease", "generation")
            assert store.renew_lease(SID, token, ttl_s=10) is False
            # The store works on (its scripts are loaded again): a new session starts.
            again = store.save_message(SID, Message("user", "hello again"))
            assert store.get_history(SID) == [again]
            assert store.acquire_lease(SID, owner="second", ttl_s=10) is not None
        finally:
            store.close()
