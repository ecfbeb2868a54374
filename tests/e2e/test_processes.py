"""Several processes on one database, and processes killed during compressions."""

from __future__ import annotations

import itertools
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from uuid import uuid4

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.domain import NAMESPACE, SummaryRecord
from tests.contract.stores import dispose, make_postgres, postgres_dsn

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
WORKER = Path(__file__).with_name("worker.py")
SESSIONS = 20


def spawn(kind, target, name, rounds, seed):
    return subprocess.Popen(
        [
            sys.executable,
            str(WORKER),
            kind,
            target,
            name,
            str(SESSIONS),
            str(rounds),
            str(seed),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=WORKER.parent,
    )


def saved_ids(output: str) -> set[int]:
    return {
        int(line.split()[1])
        for line in output.splitlines()
        if line.startswith("saved ")
    }


def check_invariants(store, reported: set[int]) -> None:
    """No message lost, active is a suffix, every archived message is summarized."""
    stored: set[int] = set()
    for index in range(SESSIONS):
        sid = f"s{index}"
        full, active = store.get_full_history(sid), store.get_history(sid)
        assert full[len(full) - len(active) :] == active, sid
        stored |= {m.id for m in full}
        archived = [m.id for m in full[: len(full) - len(active)]]
        if archived:
            record = SummaryRecord.from_mapping(store.get_metadata(NAMESPACE, sid))
            assert record.covered_through_id >= max(archived), sid
    assert reported <= stored


def assert_no_overlap(intervals) -> None:
    by_session: dict[str, list[tuple[float, float]]] = {}
    for session, start, stop in intervals:
        by_session.setdefault(session, []).append((start, stop))
    for session, spans in by_session.items():
        spans.sort()
        for (_, first_end), (second_start, _) in itertools.pairwise(spans):
            assert second_start >= first_end, (
                f"two compressions of {session} overlapped"
            )


@pytest.fixture
def pg_store():
    store = make_postgres()
    with store._pool.connection() as conn:
        conn.execute(
            f"CREATE TABLE {store.schema}.intervals "
            "(session TEXT, pid INT, start DOUBLE PRECISION, stop DOUBLE PRECISION)"
        )
    yield store
    dispose(store)


def test_three_processes_on_one_postgres_never_overlap_or_lose_messages(pg_store):
    target = f"{postgres_dsn()}|{pg_store.schema}"
    workers = [spawn("postgres", target, f"w{i}", 150, seed=i) for i in range(3)]
    outputs = [w.communicate(timeout=300) for w in workers]

    for worker, (out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
        assert out.rstrip().endswith("done")
    reported = set().union(*(saved_ids(out) for out, _ in outputs))
    assert len(reported) == 450
    with pg_store._pool.connection() as conn:
        intervals = conn.execute(
            f"SELECT session, start, stop FROM {pg_store.schema}.intervals"
        ).fetchall()
        pids = conn.execute(
            f"SELECT count(DISTINCT pid) FROM {pg_store.schema}.intervals"
        ).fetchone()[0]
    assert len(intervals) > 20
    assert pids >= 3  # every process compressed something
    assert_no_overlap(intervals)
    check_invariants(pg_store, reported)


def kill_during_compressions(kind, target, store, rounds=20):
    rng = random.Random(7)
    reported: set[int] = set()
    for attempt in range(rounds):
        worker = spawn(kind, target, f"k{attempt}", 400, seed=attempt)
        first = worker.stdout.readline()  # the process is in its turn loop now
        time.sleep(rng.uniform(0.02, 0.4))  # compressions run from the first turns on
        worker.send_signal(signal.SIGKILL)
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == -signal.SIGKILL
        reported |= saved_ids(first + out)
        check_invariants(store, reported)
    archived = sum(
        len(store.get_full_history(f"s{i}")) - store.count_history(f"s{i}")
        for i in range(SESSIONS)
    )
    assert archived > 0  # the kills did land among compressions
    # the next compression after the last crash proceeds normally
    with SummaryEngine(
        store, config=SummaryConfig(threshold=12, keep_recent=4)
    ) as engine:
        store.save_message("s0", Message("user", "after the crashes of s0."))
        outcome = engine.compress("s0").result(timeout=60)
    assert outcome.kind in ("compressed", "skipped")
    assert store.count_history("s0") <= 5 or outcome.kind == "skipped"
    check_invariants(store, reported)
    return reported


def test_sigkill_during_compressions_on_sqlite_leaves_consistent_state(tmp_path):
    from memory_summary.adapters import SqliteStore

    path = tmp_path / f"crash-{uuid4().hex[:6]}.sqlite3"
    store = SqliteStore(path)
    reported = kill_during_compressions("sqlite", str(path), store)
    assert len(reported) > 20
    store.close()


def test_sigkill_during_compressions_on_postgres_leaves_consistent_state(pg_store):
    target = f"{postgres_dsn()}|{pg_store.schema}"
    reported = kill_during_compressions("postgres", target, pg_store)
    assert len(reported) > 20
