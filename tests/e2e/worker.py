"""A chat-server process for the multi-process and crash tests (run as a script).

Usage: worker.py STORE TARGET NAME PREFIX SESSIONS ROUNDS SEED
  STORE is ``sqlite`` (TARGET a file), ``postgres`` (TARGET ``dsn|schema``) or
  ``redis`` (TARGET ``url|prefix``); the
  session ids are PREFIX0, PREFIX1... (a random PREFIX per test keeps runs that share
  a PostgreSQL server apart: its compaction locks are cluster-wide).
Prints one line per fact, flushed, so a parent that kills the process knows what
happened before the kill:

  ``saved <id>``        a message is stored (its commit returned)
  ``start <session>``   a compression of the session started
  ``done <session>``    it ended well (``error <session>``: it degraded or failed)
  ``finished``          every round ran and the engine went idle

Summarizer calls record (session, worker name, start, stop) in the ``intervals``
table of the store's database (on Redis: the list ``<prefix>intervals``, JSON). On
PostgreSQL the parent finds this process's connections by their application name,
which it passes as ``$PGAPPNAME``.
"""

from __future__ import annotations

import contextlib
import random
import re
import sys
import threading
import time

from memory_summary import Compressing, Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import TiktokenCounter

_OUTPUT = threading.Lock()


def say(line: str) -> None:
    """Write one whole line and flush it; engine threads print too."""
    with _OUTPUT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def report(event: object) -> None:
    if isinstance(event, Compressing):
        say(f"{event.status} {event.session_id}")


class RecordingSummarizer:
    """Sleeps like a remote LLM and records when it worked on which session."""

    def __init__(self, record, rng: random.Random, prefix: str) -> None:
        self._record = record
        self._rng = rng
        self._session = re.compile(rf"of ({re.escape(prefix)}\d+)\.")

    def context_length(self, model=None):
        return 8192

    def complete(self, messages, **kwargs):
        session = self._session.search(messages[-1].content).group(1)
        started = time.time()
        time.sleep(self._rng.uniform(0.005, 0.04))  # the remote model's latency
        self._record(session, started, time.time())
        return f"summary of {session} at {started:.6f}"


def open_store(kind: str, target: str, name: str):
    if kind == "sqlite":
        import sqlite3

        from memory_summary.adapters import SqliteStore

        store = SqliteStore(target)

        def record(session, start, end):
            with contextlib.closing(sqlite3.connect(target, timeout=10)) as conn, conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS intervals (session TEXT, worker TEXT, "
                    "start REAL, stop REAL)"
                )
                conn.execute(
                    "INSERT INTO intervals VALUES (?, ?, ?, ?)",
                    (session, name, start, end),
                )

        return store, record
    if kind == "redis":
        return open_redis(target, name)
    import psycopg

    from memory_summary.adapters import PostgresStore

    dsn, schema = target.split("|")
    store = PostgresStore(dsn, schema=schema)
    conn = psycopg.connect(dsn, autocommit=True)
    lock = threading.Lock()  # one connection, shared by the summarizer threads

    def record(session, start, end):
        with lock:
            conn.execute(
                f"INSERT INTO {schema}.intervals VALUES (%s, %s, %s, %s)",
                (session, name, start, end),
            )

    return store, record


def open_redis(target: str, name: str):
    import json

    import redis

    from memory_summary.adapters import RedisStore

    url, prefix = target.split("|")
    store = RedisStore(url, prefix=prefix)
    client = redis.Redis.from_url(url)  # thread-safe: a pool of connections

    def record(session, start, end):
        client.rpush(f"{prefix}intervals", json.dumps([session, name, start, end]))

    return store, record


def main() -> int:
    kind, target, name, prefix, sessions, rounds, seed = sys.argv[1:8]
    rng = random.Random(int(seed))
    TiktokenCounter("o200k_base").count("warm up")  # load the vocabulary first
    store, record = open_store(kind, target, name)
    config = SummaryConfig(threshold=12, keep_recent=4, max_concurrent_summaries=3)
    ids = [f"{prefix}{i}" for i in range(int(sessions))]
    with SummaryEngine(
        store, RecordingSummarizer(record, rng, prefix), config=config
    ) as engine:
        engine.subscribe(report)
        for n in range(int(rounds)):
            sid = rng.choice(ids)
            saved = store.save_message(sid, Message("user", f"{name}-{n} of {sid}."))
            say(f"saved {saved.id}")
            if rng.random() < 0.3:
                engine.compress(sid)
            else:
                engine.turn_after(sid)
        if not engine.wait_idle(timeout=120):
            print("the engine did not go idle within 120 s", file=sys.stderr)
            return 2
    say("finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
