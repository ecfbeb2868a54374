"""Store cost against stored history: ``get_history(limit=200)`` and one commit.

Both should stay flat as a session's stored history grows, because every query is an
index range scan on (session_id, archived, id).
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path

from report import latency_summary

from memory_summary import Message, StoreError
from memory_summary.adapters import SqliteStore

DSN = os.environ.get(
    "MEMORY_SUMMARY_PG_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres"
)


def _stores(workdir: Path):
    yield "sqlite", SqliteStore(workdir / f"bench-{uuid.uuid4().hex[:6]}.sqlite3")
    try:
        from memory_summary.adapters import PostgresStore

        yield "postgres", PostgresStore(DSN, schema=f"bench_{uuid.uuid4().hex[:8]}")
    except (ImportError, StoreError) as exc:
        print(f"  postgres skipped: {exc}")


def _measure(store, stored: int, samples: int) -> dict:
    sid = f"bench-{stored}"
    ids = [
        store.save_message(sid, Message("user", f"message {i} " * 8)).id
        for i in range(stored)
    ]
    clock = time.perf_counter_ns
    reads = []
    for _ in range(samples):
        start = clock()
        store.get_history(sid, limit=200)
        reads.append(clock() - start)
    commits = []
    for n in range(min(samples, len(ids) // 10)):
        through = ids[(n + 1) * 10 - 1]
        start = clock()
        store.commit_compaction(
            sid,
            through_id=through,
            summary={
                "text": f"summary {n}",
                "tokens": 2,
                "covered_through_id": through,
            },
            namespace="summary",
        )
        commits.append(clock() - start)
    return {
        "stored": stored,
        "get_history_200": latency_summary(reads),
        "commit": latency_summary(commits),
    }


def run(quick: bool) -> list[dict]:
    """Measure each store at 1k and 100k stored messages (1k and 10k in quick mode)."""
    sizes = [1_000, 10_000] if quick else [1_000, 100_000]
    samples = 50 if quick else 200
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, store in _stores(Path(workdir)):
            for stored in sizes:
                started = time.perf_counter()
                result = {"store": name, **_measure(store, stored, samples)}
                result["seconds"] = round(time.perf_counter() - started, 1)
                results.append(result)
                print(f"  {name} at {stored}: done", flush=True)
            if hasattr(store, "drop_schema"):
                store.drop_schema()
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
