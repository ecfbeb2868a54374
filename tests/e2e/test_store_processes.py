"""Real processes racing for one session's lease and fenced commits.

Two racers take the lease in turns and commit under it; a third process takes a
short lease first, lets it expire while the racers commit, and then tries to commit
with what it read before: its commit must be fenced.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from uuid import uuid4

import pytest

from tests.contract.stores import dispose, make_postgres, make_redis, postgres_dsn

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
WORKER = Path(__file__).with_name("store_worker.py")
ROUNDS = 15


def spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=WORKER.parent,  # keeps the repository's memory_summary/ off sys.path
    )


def first_line(process: subprocess.Popen, timeout_s: float = 30) -> dict:
    """Return the first JSON line a process prints, waiting at most ``timeout_s``."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: lines.put(process.stdout.readline()), daemon=True
    ).start()
    try:
        return json.loads(lines.get(timeout=timeout_s))
    except queue.Empty:
        process.kill()
        pytest.fail(f"no output within {timeout_s} s: {process.communicate()[1]}")


def finish(process: subprocess.Popen, timeout_s: float = 120) -> list[dict]:
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    assert process.returncode == 0, err
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("redis", marks=pytest.mark.redis),
    ]
)
def target(request, tmp_path):
    """Where the processes meet: a SQLite file, a PostgreSQL schema, a Redis prefix."""
    if request.param == "redis":
        request.getfixturevalue("redis_server")
        store = make_redis()
        yield f"redis:{store.url}|{store.prefix}"
        dispose(store)
        return
    if request.param == "sqlite":
        from memory_summary.adapters import SqliteStore

        path = tmp_path / "shared.sqlite3"
        SqliteStore(path).close()  # created and migrated before anyone races
        yield f"sqlite:{path}"
        return
    store = make_postgres()
    store.close()
    yield f"postgres:{postgres_dsn()}|{store.schema}"
    dispose(make_postgres(store.schema))


def test_one_lease_holder_at_a_time_and_a_stale_commit_is_fenced(target):
    sid = f"s-{uuid4().hex[:8]}"
    stale = spawn("stale", target, sid)
    assert first_line(stale) == {"event": "leased", "token": True}

    racers = [spawn("race", target, sid, name, str(ROUNDS)) for name in ("a", "b")]
    for racer in racers:
        assert first_line(racer)["event"] == "ready"
    for racer in racers:  # go
        racer.stdin.write("go\n")
        racer.stdin.flush()
    held = [event for racer in racers for event in finish(racer)]
    (verdict,) = finish(stale)

    assert len(held) == 2 * ROUNDS
    assert {event["result"] for event in held} == {"committed"}
    spans = sorted((event["start"], event["end"], event["name"]) for event in held)
    for (_, first_end, _), (second_start, _, _) in itertools.pairwise(spans):
        assert second_start >= first_end, "two processes held the lease at once"
    holders = "".join(name for _, _, name in spans)
    switches = sum(a != b for a, b in itertools.pairwise(holders))
    assert switches >= 2, f"the racers never contended: {holders}"
    assert verdict == {
        "event": "stale",
        "with_lease": "lease",
        "without_lease": "generation",
        "renewed": False,
    }
