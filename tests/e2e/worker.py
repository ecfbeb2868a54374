"""A chat-server process for the multi-process and crash tests (run as a script).

Usage: worker.py STORE TARGET NAME SESSIONS ROUNDS SEED
  STORE is ``sqlite`` (TARGET a file) or ``postgres`` (TARGET ``dsn|schema``).
Prints one line ``saved <id>`` per stored message, flushed, so a parent that kills
the process knows what was stored. Summarizer calls record their intervals in the
``intervals`` table of the store's database.
"""

from __future__ import annotations

import random
import re
import sys
import time

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import TiktokenCounter

_SESSION = re.compile(r"of (s\d+)\.")


class RecordingSummarizer:
    """Sleeps like a remote LLM and records when it worked on which session."""

    def __init__(self, record, rng: random.Random) -> None:
        self._record = record
        self._rng = rng

    def context_length(self, model=None):
        return 8192

    def complete(self, messages, **kwargs):
        session = _SESSION.search(messages[-1].content).group(1)
        started = time.time()
        time.sleep(self._rng.uniform(0.005, 0.04))
        self._record(session, started, time.time())
        return f"summary of {session} at {started:.6f}"


def open_store(kind: str, target: str):
    if kind == "sqlite":
        import sqlite3

        from memory_summary.adapters import SqliteStore

        store = SqliteStore(target)

        def record(session, start, end):
            with sqlite3.connect(target, timeout=10) as conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS intervals (session TEXT, pid INT, "
                    "start REAL, stop REAL)"
                )
                conn.execute(
                    "INSERT INTO intervals VALUES (?, ?, ?, ?)",
                    (session, 0, start, end),
                )

        return store, record
    from memory_summary.adapters import PostgresStore

    dsn, schema = target.split("|")
    store = PostgresStore(dsn, schema=schema)

    def record(session, start, end):
        with store._pool.connection() as conn:
            conn.execute(
                f"INSERT INTO {schema}.intervals VALUES (%s, pg_backend_pid(), %s, %s)",
                (session, start, end),
            )

    return store, record


def main() -> None:
    kind, target, name, sessions, rounds, seed = sys.argv[1:7]
    rng = random.Random(int(seed))
    TiktokenCounter("o200k_base").count(
        "warm up"
    )  # load the vocabulary before the turns
    store, record = open_store(kind, target)
    config = SummaryConfig(threshold=12, keep_recent=4, max_concurrent_summaries=3)
    ids = [f"s{i}" for i in range(int(sessions))]
    with SummaryEngine(
        store, RecordingSummarizer(record, rng), config=config
    ) as engine:
        for n in range(int(rounds)):
            sid = rng.choice(ids)
            saved = store.save_message(sid, Message("user", f"{name}-{n} of {sid}."))
            print(f"saved {saved.id}", flush=True)
            if rng.random() < 0.3:
                engine.compress(sid)
            else:
                engine.turn_after(sid)
        engine.wait_idle(timeout=120)
    print("done", flush=True)


if __name__ == "__main__":
    main()
