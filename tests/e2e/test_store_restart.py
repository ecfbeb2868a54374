"""A PostgreSQL restart, on a throw-away cluster: leases and fences survive it.

A lease is a row, so it outlives the server; the store's pool drops the connections
the restart killed instead of sending a write down one; and a commit prepared before
the restart is fenced when another process changed the record meanwhile.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memory_summary import Message
from memory_summary.testing.fencing_contract import commit
from tests.pgcluster import pg_cluster  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.postgres]
WORKER = Path(__file__).with_name("store_worker.py")
NS, SID, SCHEMA = "summary", "s1", "restart"


def contend(dsn: str, expect: str, new: str) -> dict:
    """Run a second process that tries the lease, then commits NEW over EXPECT."""
    done = subprocess.run(
        [
            sys.executable,
            str(WORKER),
            "contend",
            f"postgres:{dsn}|{SCHEMA}",
            SID,
            *(expect, new),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=WORKER.parent,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def raw_leases(dsn: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            f"SELECT session_id, owner FROM {SCHEMA}.leases ORDER BY session_id"
        ).fetchall()


@pytest.mark.parametrize("mode", ["fast", "immediate"], ids=["restart", "crash"])
def test_a_lease_and_the_fence_survive_a_server_restart(pg_cluster, mode):  # noqa: F811
    from memory_summary.adapters import PostgresStore

    store = PostgresStore(pg_cluster.dsn, schema=SCHEMA, timeout_s=10)
    try:
        saved = [store.save_message(SID, Message("user", f"m{i}")) for i in range(4)]
        first = commit(store, SID, record={"generation": "g1"}, expect_generation=None)
        token = store.acquire_lease(SID, owner="first", ttl_s=120)
        assert first.committed
        assert token is not None

        pg_cluster.restart(mode)

        # A write on the old pool: connections the restart ended are not reused.
        assert store.renew_lease(SID, token, ttl_s=120) is True
        assert raw_leases(pg_cluster.dsn) == [(SID, "first")]
        # Another process: the lease is taken; it changes the record, unleased.
        assert contend(pg_cluster.dsn, expect="g1", new="g2") == {
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
    finally:
        store.close()


def _wait_until_the_pool_reconnects(store, timeout_s: float = 60.0) -> None:
    """Wait until the store answers again after a restart.

    psycopg_pool reconnects with a doubling delay (1, 2, 4 s...) while the server is
    down, so its first connection after a restart may come several seconds later,
    more on a loaded machine: longer than the store's 3 s ``timeout_s``.
    """
    import threading
    import time

    from memory_summary import StoreError

    def answers() -> bool:
        try:
            store.count_history(SID)
        except StoreError:
            return False
        return True

    pause = threading.Event()  # never set: spaces the attempts
    deadline = time.monotonic() + timeout_s
    while not answers():
        assert time.monotonic() < deadline, "the store never answered again"
        pause.wait(0.2)


def test_an_engine_reclaims_its_own_lease_after_a_restart_mid_compression(pg_cluster):  # noqa: F811
    import threading

    from memory_summary import SummaryEngine
    from memory_summary.adapters import PostgresStore
    from memory_summary.testing.fakes import InstrumentedSummarizer

    store = PostgresStore(pg_cluster.dsn, schema="reclaim", timeout_s=3)
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    for i in range(25):
        store.save_message(SID, Message("user" if i % 2 == 0 else "assistant", f"m{i}"))
    try:
        with SummaryEngine(store, llm) as engine:
            running = engine.compress(SID)
            assert llm.entered.wait(30)  # the compression holds the lease
            pg_cluster.stop("immediate")
            gate.set()  # its commit and its release now fail
            first = running.result(timeout=60)
            pg_cluster.start()
            orphaned = [owner for _, owner in raw_leases_in(pg_cluster.dsn, "reclaim")]
            _wait_until_the_pool_reconnects(store)

            second = engine.compress(SID).result(timeout=60)

        assert first.kind == "failed"
        assert first.code == "store_failed"
        assert len(orphaned) == 1  # this engine's own lease outlived the restart
        assert second.kind == "compressed", second.detail
        assert len(store.get_history(SID)) == 20
        assert raw_leases_in(pg_cluster.dsn, "reclaim") == []
    finally:
        store.close()


def raw_leases_in(dsn: str, schema: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            f"SELECT session_id, owner FROM {schema}.leases ORDER BY session_id"
        ).fetchall()
