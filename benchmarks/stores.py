"""Store cost: each store against its bare driver, and against stored history.

For each store, in one run and interleaved round by round so drift hits both alike:

- ``save_message`` against a plain ``INSERT`` + ``COMMIT`` of the same row on a bare
  driver connection to the same database (same pragmas on SQLite);
- ``get_history(limit=200)`` against the same ``SELECT`` on a bare connection, its
  rows fetched but not decoded into messages;
- one fenced ``commit`` (archive 10 messages, replace the record).

Redis joins when a ``redis-server`` binary and the ``redis`` package are there: the
benchmark starts its own server on a free loopback port, persisting with an
append-only file synced every second (Redis's recommended durable setting), and its
baseline is one bare ``ZADD`` / ``ZREVRANGE`` of the same row. Without them the run
prints why and has no redis row.

``get_history`` and the commit should stay flat as a session's stored history grows:
every query is an index range scan on (session_id, archived, id).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from report import latency_summary

from memory_summary import Message, StoreError
from memory_summary.adapters import SqliteStore
from memory_summary.domain import CommitRequest

DSN = os.environ.get(
    "MEMORY_SUMMARY_PG_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres"
)
COLUMNS = (
    "session_id, role, content, tool_calls, tool_call_id, name, kind, timestamp, "
    "metadata"
)
INSERT = f"INSERT INTO {{t}}messages ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
SELECT = (
    f"SELECT id, {COLUMNS.split(', ', 1)[1]} FROM {{t}}messages "
    "WHERE session_id = ? AND archived = {false} ORDER BY id DESC LIMIT ?"
)
MESSAGE = Message("user", "message text " * 8)
ROW = ("user", MESSAGE.content, None, None, None, None, None, None)


class _BareRedis:
    """A bare Redis client: one ZADD of the row, one ZREVRANGE of the newest."""

    def __init__(self, store: object) -> None:
        import redis

        self.conn = redis.Redis.from_url(store.url)  # type: ignore[attr-defined]
        self.prefix = f"{store.prefix}bare:"  # type: ignore[attr-defined]
        self.row = json.dumps([None, *ROW, None, None])
        self.next_id = 0

    def insert_commit(self, sid: str) -> None:
        self.next_id += 1
        self.conn.zadd(self.prefix + sid, {f"{self.next_id}{self.row}": self.next_id})

    def history(self, sid: str, limit: int) -> list[bytes]:
        return self.conn.zrevrange(self.prefix + sid, 0, limit - 1)

    def close(self) -> None:
        self.conn.close()


class _Bare:
    """A bare driver connection to a store's database: the baseline."""

    def __init__(self, kind: str, store: object) -> None:
        if kind == "sqlite":
            self.conn = sqlite3.connect(store.path)  # type: ignore[attr-defined]
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            table, placeholder, false = "", "?", "0"
        else:
            import psycopg

            self.conn = psycopg.connect(DSN)
            table, placeholder, false = f'"{store.schema}".', "%s", "FALSE"  # type: ignore[attr-defined]
        self.insert = INSERT.format(t=table).replace("?", placeholder)
        self.select = SELECT.format(t=table, false=false).replace("?", placeholder)

    def insert_commit(self, sid: str) -> None:
        self.conn.execute(self.insert, (sid, *ROW))
        self.conn.commit()

    def history(self, sid: str, limit: int) -> list[tuple]:
        rows = self.conn.execute(self.select, (sid, limit)).fetchall()
        self.conn.commit()  # ends psycopg's implicit transaction; cheap on SQLite
        return rows

    def close(self) -> None:
        self.conn.close()


def _stores(workdir: Path) -> Iterator[tuple[str, object]]:
    yield "sqlite", SqliteStore(workdir / f"bench-{uuid.uuid4().hex[:6]}.sqlite3")
    try:
        from memory_summary.adapters import PostgresStore

        yield "postgres", PostgresStore(DSN, schema=f"bench_{uuid.uuid4().hex[:8]}")
    except (ImportError, StoreError) as exc:
        print(f"  postgres skipped: {exc}")
    yield from _redis(workdir)


def _redis(workdir: Path) -> Iterator[tuple[str, object]]:
    """Start a throw-away redis-server and yield a RedisStore on it, when possible."""
    binary = shutil.which("redis-server")
    try:
        from memory_summary.adapters import RedisStore
    except ImportError as exc:
        print(f"  redis skipped: {exc}")
        return
    if binary is None:
        print("  redis skipped: no redis-server binary (apt-get install redis-server)")
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    listen = ("--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir))
    persistence = ("--save", "", "--appendonly", "yes", "--appendfsync", "everysec")
    server = subprocess.Popen(
        [binary, *listen, *persistence],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        store = None
        pause = threading.Event()  # never set: spaces the connection attempts
        for _ in range(250):
            try:
                store = RedisStore(f"redis://127.0.0.1:{port}/0", prefix="bench:")
                break
            except StoreError:
                pause.wait(0.02)
        if store is None:
            print(f"  redis skipped: redis-server on port {port} did not answer")
            return
        yield "redis", store
    finally:
        server.kill()
        server.wait()


def _interleaved(
    calls: dict[str, Callable[[], object]], rounds: int, per_round: int
) -> dict[str, list[int]]:
    """Time each call ``rounds * per_round`` times, alternating call by round."""
    clock = time.perf_counter_ns
    samples: dict[str, list[int]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            times = samples[name]
            for _ in range(per_round):
                start = clock()
                call()
                times.append(clock() - start)
    return samples


def _ratio(ours: dict[str, float], bare: dict[str, float]) -> float:
    return round(ours["p50_us"] / bare["p50_us"], 2)


def _measure(
    kind: str, store, bare: _Bare | _BareRedis, stored: int, samples: int
) -> dict:
    sid = f"bench-{stored}"
    ids = [store.save_message(sid, MESSAGE).id for _ in range(stored)]
    for _ in range(50):  # warm both paths (statement caches, prepared statements)
        store.save_message("warm", MESSAGE)
        bare.insert_commit("warm-bare")
    writes = _interleaved(
        {
            "save_message": lambda: store.save_message("writes", MESSAGE),
            "insert_commit": lambda: bare.insert_commit("writes-bare"),
        },
        rounds=10,
        per_round=max(samples // 10, 5),
    )
    reads = _interleaved(
        {
            "get_history": lambda: store.get_history(sid, limit=200),
            "raw_query": lambda: bare.history(sid, 200),
        },
        rounds=10,
        per_round=max(samples // 10, 5),
    )
    commits = []
    generation = None
    for n in range(min(samples, len(ids) // 10)):
        through = ids[(n + 1) * 10 - 1]
        start = time.perf_counter_ns()
        result = store.commit(
            CommitRequest(
                session_id=sid,
                namespace="summary",
                record={"generation": f"g{n}", "text": f"summary {n}", "tokens": 2},
                expect_generation=generation,
                through_id=through,
                expect_archived=10,
            )
        )
        commits.append(time.perf_counter_ns() - start)
        assert result.committed, result
        generation = f"g{n}"
    result = {
        "stored": stored,
        "save_message": latency_summary(writes["save_message"]),
        "plain_insert_commit": latency_summary(writes["insert_commit"]),
        "get_history_200": latency_summary(reads["get_history"]),
        "raw_query_200": latency_summary(reads["raw_query"]),
        "commit": latency_summary(commits),
    }
    result["save_vs_plain_p50_ratio"] = _ratio(
        result["save_message"], result["plain_insert_commit"]
    )
    result["history_vs_raw_p50_ratio"] = _ratio(
        result["get_history_200"], result["raw_query_200"]
    )
    return result


def run(quick: bool) -> list[dict]:
    """Measure each store at 1k and 100k stored messages (1k and 10k in quick mode).

    Redis is measured only when a redis-server can be started (see the module).
    """
    sizes = [1_000, 10_000] if quick else [1_000, 100_000]
    samples = 50 if quick else 200
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, store in _stores(Path(workdir)):
            bare = _BareRedis(store) if name == "redis" else _Bare(name, store)
            try:
                for stored in sizes:
                    started = time.perf_counter()
                    result = {
                        "store": name,
                        **_measure(name, store, bare, stored, samples),
                    }
                    result["seconds"] = round(time.perf_counter() - started, 1)
                    results.append(result)
                    print(
                        f"  {name} at {stored}: save_message "
                        f"{result['save_message']['p50_us']} us vs plain INSERT+COMMIT "
                        f"{result['plain_insert_commit']['p50_us']} us "
                        f"(x{result['save_vs_plain_p50_ratio']}); get_history(200) "
                        f"{result['get_history_200']['p50_us']} us vs raw query "
                        f"{result['raw_query_200']['p50_us']} us "
                        f"(x{result['history_vs_raw_p50_ratio']})",
                        flush=True,
                    )
            finally:
                bare.close()
                if hasattr(store, "drop_schema"):
                    store.drop_schema()
                if name == "redis":
                    store.clear_all()
                store.close()
    base = {r["store"]: r for r in results if r["stored"] == sizes[0]}
    for result in results:
        first = base[result["store"]]
        result["get_history_p50_ratio"] = round(
            result["get_history_200"]["p50_us"] / first["get_history_200"]["p50_us"], 2
        )
        result["commit_p50_ratio"] = round(
            result["commit"]["p50_us"] / first["commit"]["p50_us"], 2
        )
    return results
