"""Several processes on one database, and processes killed during compressions.

The kills are placed by what the worker reports (a compression started, messages
saved), not by wall-clock sleeps, and the checks run only once the killed process
can change nothing more: it is reaped and, on PostgreSQL, its server backends are
gone (a commit it sent just before dying may still be landing until then).
"""

from __future__ import annotations

import itertools
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from uuid import uuid4

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine, SummaryRecord
from memory_summary.domain import NAMESPACE
from tests.contract.stores import dispose, make_postgres, make_redis, postgres_dsn

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
WORKER = Path(__file__).with_name("worker.py")
SESSIONS = 20
WAIT_S = 60.0  # the bound of every wait on a worker or on the server


def new_prefix() -> str:
    """Return a random session-id prefix: runs sharing a server never collide."""
    return f"p{uuid4().hex[:8]}-s"


def session_ids(prefix: str) -> list[str]:
    return [f"{prefix}{i}" for i in range(SESSIONS)]


def spawn(kind, target, name, prefix, rounds, seed, stderr, app_name=None):
    env = dict(os.environ)
    if app_name is not None:
        env["PGAPPNAME"] = app_name  # libpq tags the worker's connections with it
    return subprocess.Popen(
        [
            sys.executable,
            str(WORKER),
            kind,
            target,
            name,
            prefix,
            str(SESSIONS),
            str(rounds),
            str(seed),
        ],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        cwd=WORKER.parent,
        env=env,
    )


def saved_ids(lines) -> set[int]:
    return {int(line.split()[1]) for line in lines if line.startswith("saved ")}


def poll_until(predicate: Callable[[], bool], what: str, timeout_s=WAIT_S) -> None:
    """Check ``predicate`` every 20 ms until it holds; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout_s} s")
        tick.wait(0.02)


def check_invariants(store, prefix: str, reported: set[int]) -> None:
    """No message lost, active is a suffix, every archived message is summarized."""
    stored: set[int] = set()
    for sid in session_ids(prefix):
        full, active = store.get_full_history(sid), store.get_history(sid)
        assert full[len(full) - len(active) :] == active, sid
        stored |= {m.id for m in full}
        archived = [m.id for m in full[: len(full) - len(active)]]
        if archived:
            record = SummaryRecord.from_mapping(store.get_metadata(NAMESPACE, sid))
            assert record.covered_through_id >= max(archived), sid
    assert reported <= stored


def archived_count(store, prefix: str) -> int:
    return sum(
        len(store.get_full_history(sid)) - store.count_history(sid)
        for sid in session_ids(prefix)
    )


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


def postgres_connection():
    import psycopg

    return psycopg.connect(postgres_dsn(), autocommit=True)


@pytest.fixture
def pg_store():
    store = make_postgres()  # skips (or fails under CI) without a server
    with postgres_connection() as conn:
        conn.execute(
            f"CREATE TABLE {store.schema}.intervals "
            "(session TEXT, worker TEXT, start DOUBLE PRECISION, stop DOUBLE PRECISION)"
        )
    yield store
    dispose(store)


def test_three_processes_on_one_postgres_never_overlap_or_lose_messages(
    pg_store, tmp_path
):
    target, prefix = f"{postgres_dsn()}|{pg_store.schema}", new_prefix()
    logs = [(tmp_path / f"w{i}.err").open("w+") for i in range(3)]
    workers = [
        spawn("postgres", target, f"w{i}", prefix, 150, seed=i, stderr=logs[i])
        for i in range(3)
    ]

    outputs = [w.communicate(timeout=300)[0] for w in workers]

    for worker, out, log in zip(workers, outputs, logs, strict=True):
        log.seek(0)
        assert worker.returncode == 0, log.read()
        assert out.rstrip().endswith("finished")
        log.close()
    reported = set().union(*(saved_ids(out.splitlines()) for out in outputs))
    assert len(reported) == 450
    with postgres_connection() as conn:
        intervals = conn.execute(
            f"SELECT session, start, stop FROM {pg_store.schema}.intervals"
        ).fetchall()
        names = conn.execute(
            f"SELECT DISTINCT worker FROM {pg_store.schema}.intervals"
        ).fetchall()
    assert len(intervals) > 20
    assert {name for (name,) in names} == {"w0", "w1", "w2"}  # each one compressed
    assert_no_overlap(intervals)
    check_invariants(pg_store, prefix, reported)


class LineReader:
    """Reads a worker's stdout on a thread, so every wait on it can have a deadline."""

    def __init__(self, stream) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream) -> None:
        with stream:
            for line in stream:
                self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def next_line(self) -> str | None:
        """Return the next line, or None at the end of the output."""
        try:
            line = self._lines.get(timeout=WAIT_S)
        except queue.Empty:
            pytest.fail(f"the worker printed nothing for {WAIT_S} s")
        if line is not None:
            self.seen.append(line)
        return line

    def drain(self) -> list[str]:
        """Read to the end of the output (the process is dead); return every line."""
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive(), "the worker's output never closed"
        while (line := self._lines.get_nowait()) is not None:
            self.seen.append(line)
        return self.seen


def run_until_killed(worker, reader, rng, archived: Callable[[], bool]) -> None:
    """Kill ``worker`` among its compressions: after some starts, dones and saves.

    ``archived`` tells whether the kill may land yet; the first kill waits for a
    commit that archived something, so the run certainly crosses commits. The
    others land at random points after a compression started.
    """
    starts, dones, saves = rng.randint(1, 4), rng.randint(0, 2), rng.randint(0, 3)
    ready = archived()
    while True:
        line = reader.next_line()
        if line is None:
            code = worker.wait(timeout=WAIT_S)
            pytest.fail(
                f"the worker ended (exit {code}) before it could be killed; "
                f"its last lines: {reader.seen[-5:]}"
            )
        if line.startswith("start "):
            starts -= 1
        elif line.startswith("done "):
            dones -= 1
            ready = ready or archived()
        elif line.startswith("saved ") and starts <= 0 and dones <= 0 and ready:
            saves -= 1
        if ready and starts <= 0 and dones <= 0 and saves <= 0:
            worker.send_signal(signal.SIGKILL)
            return


def kill_during_compressions(kind, target, store, tmp_path, attempts=20):
    rng = random.Random(7)
    prefix = new_prefix()
    reported: set[int] = set()

    def archived() -> bool:
        return archived_count(store, prefix) > 0

    def always() -> bool:
        return True

    for attempt in range(attempts):
        app_name = f"ms-crash-{uuid4().hex[:8]}" if kind == "postgres" else None
        with (tmp_path / f"k{attempt}.err").open("w+") as log:
            # Rounds without end in practice: the worker is alive when it is killed.
            worker = spawn(
                kind, target, f"k{attempt}", prefix, 10**6, attempt, log, app_name
            )
            reader = LineReader(worker.stdout)
            run_until_killed(worker, reader, rng, archived if attempt == 0 else always)

            worker.wait(timeout=WAIT_S)  # reaped: its SQLite handles are closed
            lines = reader.drain()
            log.seek(0)
            assert worker.returncode == -signal.SIGKILL, log.read()
        if app_name is not None:
            wait_for_backends_to_end(app_name)
        reported |= saved_ids(lines)
        check_invariants(store, prefix, reported)
    assert archived()  # the kills did land among compressions
    # the next compression after the last crash proceeds normally
    with SummaryEngine(
        store, config=SummaryConfig(threshold=12, keep_recent=4)
    ) as engine:
        first = f"{prefix}0"
        store.save_message(first, Message("user", f"after the crashes of {first}."))
        outcome = engine.compress(first).result(timeout=WAIT_S)
    assert outcome.kind in ("compressed", "skipped")
    assert store.count_history(first) <= 5 or outcome.kind == "skipped"
    check_invariants(store, prefix, reported)
    return reported


def wait_for_backends_to_end(app_name: str) -> None:
    """Wait until no server backend of the killed worker remains.

    A backend finishes the statement it is running (a COMMIT the worker sent just
    before it died) before it notices the closed connection and exits.
    """
    with postgres_connection() as conn:

        def backends() -> int:
            query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            return conn.execute(query, (app_name,)).fetchone()[0]

        poll_until(lambda: backends() == 0, f"the end of {app_name}'s backends")


def test_sigkill_during_compressions_on_sqlite_leaves_consistent_state(tmp_path):
    from memory_summary.adapters import SqliteStore

    path = tmp_path / f"crash-{uuid4().hex[:6]}.sqlite3"
    store = SqliteStore(path)
    try:
        reported = kill_during_compressions("sqlite", str(path), store, tmp_path)
    finally:
        store.close()

    assert len(reported) > 20


def test_sigkill_during_compressions_on_postgres_leaves_consistent_state(
    pg_store, tmp_path
):
    target = f"{postgres_dsn()}|{pg_store.schema}"

    reported = kill_during_compressions("postgres", target, pg_store, tmp_path)

    assert len(reported) > 20


@pytest.mark.redis
def test_three_processes_on_one_redis_never_overlap_or_lose_messages(
    redis_server, tmp_path
):
    import json

    import redis

    store, prefix = make_redis(), new_prefix()
    logs = [(tmp_path / f"w{i}.err").open("w+") for i in range(3)]
    try:
        target = f"{store.url}|{store.prefix}"
        workers = [
            spawn("redis", target, f"w{i}", prefix, 150, seed=i, stderr=logs[i])
            for i in range(3)
        ]

        outputs = [w.communicate(timeout=300)[0] for w in workers]

        for worker, out, log in zip(workers, outputs, logs, strict=True):
            log.seek(0)
            assert worker.returncode == 0, log.read()
            assert out.rstrip().endswith("finished")
        reported = set().union(*(saved_ids(out.splitlines()) for out in outputs))
        assert len(reported) == 450
        with redis.Redis.from_url(store.url) as client:
            raw = client.lrange(f"{store.prefix}intervals", 0, -1)
        intervals = [json.loads(item) for item in raw]
        assert len(intervals) > 20
        assert {worker for _, worker, _, _ in intervals} == {"w0", "w1", "w2"}
        assert_no_overlap((s, start, stop) for s, _, start, stop in intervals)
        check_invariants(store, prefix, reported)
    finally:
        for log in logs:
            log.close()
        dispose(store)


@pytest.mark.redis
def test_sigkill_during_compressions_on_redis_leaves_consistent_state(
    redis_server, tmp_path
):
    store = make_redis()
    try:
        target = f"{store.url}|{store.prefix}"
        reported = kill_during_compressions("redis", target, store, tmp_path)
    finally:
        dispose(store)

    assert len(reported) > 20
