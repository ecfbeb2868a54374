"""The host's thread under contention: 8 host threads on one engine, per store.

The engine_cpu chat (seed 7), its sessions dealt to ``HOST_THREADS`` threads that
start together (a barrier) and drive their sessions turn by turn without pause, as
``memory-summary demo`` does: save the user's message, ``build_prompt``, save the
rest of the turn, ``turn_after``. Compressions run meanwhile on the engine's own
threads, with a zero-latency summarizer, so the host's calls compete with them for
the GIL, the store's locks and its connections.

Reported per store: wall-clock p50 / p99 / max of ``turn_after`` and ``build_prompt``
(the engine's calls on the host's thread) and of one ``save_message`` (the store's
own cost, for scale), and the compressions the run made. Stores: in memory, SQLite
(a pool of ``HOST_THREADS + 4`` connections, as the demo), PostgreSQL when its DSN
answers (``MEMORY_SUMMARY_PG_DSN``), Redis when a ``redis-server`` binary is there
(a throw-away server, see ``stores``).
"""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from engine_cpu import Turn, workload
from fakes import FixedSummarizer
from report import latency_summary
from stores import DSN, _redis

from memory_summary import StoreError, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore, SqliteStore

HOST_THREADS = 8
IDLE_TIMEOUT_S = 600.0
CONFIG = SummaryConfig(threshold=20, keep_recent=8)


def _drive(
    engine: SummaryEngine, store: Any, turns: list[Turn], start: threading.Barrier
) -> dict[str, list[int]]:
    """Run one thread's turns; return its wall-clock samples per call (ns)."""
    wall = time.perf_counter_ns
    save = store.save_message
    samples: dict[str, list[int]] = {"turn_after": [], "build_prompt": [], "save": []}
    start.wait()
    for sid, user, rest, _ in turns:
        w0 = wall()
        save(sid, user)
        w1 = wall()
        engine.build_prompt(sid)
        w2 = wall()
        for message in rest:
            save(sid, message)
        w3 = wall()
        engine.turn_after(sid)
        w4 = wall()
        samples["save"].append(w1 - w0)
        samples["build_prompt"].append(w2 - w1)
        samples["turn_after"].append(w4 - w3)
    return samples


def measure(label: str, store: Any, sessions: int, turns: int) -> dict[str, Any]:
    """Drive ``sessions`` x ``turns`` turns from HOST_THREADS threads on ``store``."""
    chat = workload(sessions, turns, prefix=f"c{uuid.uuid4().hex[:6]}-")
    share: list[list[Turn]] = [[] for _ in range(HOST_THREADS)]
    sessions_of: dict[str, int] = {}
    for turn in chat:  # a session stays on one thread, its turns in order
        share[sessions_of.setdefault(turn[0], len(sessions_of) % HOST_THREADS)].append(
            turn
        )
    llm = FixedSummarizer()
    engine = SummaryEngine(store, llm, config=CONFIG)
    start = threading.Barrier(HOST_THREADS + 1)
    results: list[dict[str, list[int]]] = []
    lock = threading.Lock()

    def host(turns_of_thread: list[Turn]) -> None:
        samples = _drive(engine, store, turns_of_thread, start)
        with lock:
            results.append(samples)

    with engine:
        threads = [
            threading.Thread(target=host, args=(mine,), name=f"host-{i}")
            for i, mine in enumerate(share)
        ]
        for thread in threads:
            thread.start()
        start.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        driven_s = time.perf_counter() - began
        if not engine.wait_idle(timeout=IDLE_TIMEOUT_S):
            raise RuntimeError("the engine never went idle")
        records = [engine.summary(sid) for sid in {turn[0] for turn in chat}]
        compressions = sum(r.compressions for r in records if r is not None)
    merged = {
        call: [ns for samples in results for ns in samples[call]]
        for call in ("turn_after", "build_prompt", "save")
    }
    return {
        "store": label,
        "host_threads": HOST_THREADS,
        "sessions": sessions,
        "turns": len(chat),
        "driven_s": round(driven_s, 3),
        "compressions": compressions,
        "summarizer_calls": llm.calls,
        "turn_after": latency_summary(merged["turn_after"]),
        "build_prompt": latency_summary(merged["build_prompt"]),
        "save_message": latency_summary(merged["save"]),
    }


def _stores(workdir: Path, stack: ExitStack) -> Iterator[tuple[str, Any]]:
    yield "InMemoryStore", InMemoryStore()
    sqlite = SqliteStore(workdir / "contention.sqlite3", pool_size=HOST_THREADS + 4)
    stack.callback(sqlite.close)
    yield "SqliteStore", sqlite
    try:
        from memory_summary.adapters import PostgresStore

        postgres = PostgresStore(
            DSN, schema=f"bench_{uuid.uuid4().hex[:8]}", max_size=HOST_THREADS + 4
        )
    except (ImportError, StoreError) as exc:
        print(f"  postgres skipped: {exc}")
    else:
        stack.callback(postgres.close)
        yield "PostgresStore", postgres
    for _, redis in _redis(workdir):
        yield "RedisStore", redis


def run(quick: bool) -> list[dict[str, Any]]:
    """``turn_after`` under 8 host threads per store (16 x 10 turns when quick)."""
    sessions, turns = (16, 10) if quick else (48, 40)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        for label, store in _stores(Path(tmp), stack):
            rows.append(measure(label, store, sessions, turns))
    return rows


def rows(results: list[dict[str, Any]]) -> list[dict[str, object]]:
    """Return the printed table's rows for ``results``."""

    def cell(stats: dict[str, float]) -> str:
        return f"{stats['p50_us']}/{stats['p99_us']}/{stats['max_us']}"

    return [
        {
            "store": r["store"],
            "threads": r["host_threads"],
            "turns": r["turns"],
            "compressions": r["compressions"],
            "turn_after_p50/p99/max_us": cell(r["turn_after"]),
            "build_prompt_p50/p99/max_us": cell(r["build_prompt"]),
            "save_p50/p99/max_us": cell(r["save_message"]),
        }
        for r in results
    ]
