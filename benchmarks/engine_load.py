"""Throughput, engine overhead, scale (threads, memory) and growth with history."""

from __future__ import annotations

import gc
import tempfile
import threading
import time
from pathlib import Path

from fakes import LatencySummarizer
from report import latency_summary

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore, SqliteStore


def _fill(store, sid: str, count: int) -> None:
    for i in range(count):
        store.save_message(
            sid,
            Message(
                "user" if i % 2 == 0 else "assistant",
                f"turn {i}: a sentence of ordinary chat text.",
            ),
        )


def throughput(quick: bool) -> list[dict]:
    """Compressions per second against summarizer latency and the global limit."""
    latencies = [0.0, 0.05] if quick else [0.0, 0.05, 0.2]
    limits = [1, 4] if quick else [1, 4, 8]
    sessions = 16 if quick else 48
    rows = []
    for delay in latencies:
        for limit in limits:
            store = InMemoryStore()
            for s in range(sessions):
                _fill(store, f"s{s}", 60)
            llm = LatencySummarizer(delay)
            config = SummaryConfig(max_concurrent_summaries=limit)
            with SummaryEngine(store, llm, config=config) as engine:
                started = time.perf_counter()
                futures = [engine.compress(f"s{s}") for s in range(sessions)]
                outcomes = [f.result(timeout=600) for f in futures]
                elapsed = time.perf_counter() - started
            done = sum(o.kind == "compressed" for o in outcomes)
            rows.append(
                {
                    "summarizer_ms": delay * 1000,
                    "limit": limit,
                    "compressions": done,
                    "per_second": round(done / elapsed, 1),
                    "ideal_per_second": round(limit / delay, 1) if delay else None,
                }
            )
    return rows


def overhead(quick: bool) -> dict:
    """Engine time per compression of a 200-message window, excluding the summarizer."""
    samples = 20 if quick else 100
    with tempfile.TemporaryDirectory() as workdir:
        store = SqliteStore(Path(workdir) / "overhead.sqlite3")
        llm = LatencySummarizer(0.0)
        config = SummaryConfig(threshold=200, keep_recent=20)
        times = []
        with SummaryEngine(store, llm, config=config) as engine:
            engine.compress("warm").result(timeout=60)  # load the vocabulary
            for n in range(samples):
                sid = f"s{n}"
                _fill(store, sid, 200)
                inside = llm.inside_ns
                started = time.perf_counter_ns()
                engine.compress(sid).result(timeout=60)
                times.append(
                    time.perf_counter_ns() - started - (llm.inside_ns - inside)
                )
        store.close()
    return {"window": 200, **latency_summary(times)}


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def scale(quick: bool) -> list[dict]:
    """Live threads and resident memory after touching many sessions, reaping or not."""
    sessions = 2_000 if quick else 10_000
    active_window = 200
    rows = []
    for reaping, idle_s in (("on", 0.5), ("off", 86_400.0)):
        gc.collect()
        threads_before, rss_before = threading.active_count(), _rss_mib()
        store = InMemoryStore()
        config = SummaryConfig(actor_idle_s=idle_s)
        with SummaryEngine(store, LatencySummarizer(0.0), config=config) as engine:
            for s in range(sessions):
                sid = f"s{s}"
                store.save_message(sid, Message("user", "hello"))
                engine.turn_after(sid)
                if s % active_window == active_window - 1:
                    engine.wait_idle(timeout=60)
            engine.wait_idle(timeout=60)
            time.sleep(idle_s * 3 if reaping == "on" else 0)  # let reaping rounds pass
            for s in range(sessions - active_window, sessions):  # the recently active
                engine.turn_after(f"s{s}")
            engine.wait_idle(timeout=60)
            rows.append(
                {
                    "reaping": reaping,
                    "sessions": sessions,
                    "recently_active": active_window,
                    "live_actors": engine.stats().live_actors,
                    "threads_added": threading.active_count() - threads_before,
                    "rss_added_mib": round(_rss_mib() - rss_before, 1),
                }
            )
    return rows


def growth(quick: bool) -> list[dict]:
    """Cost of one compression as stored history grows (all but new turns archived)."""
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        store = SqliteStore(Path(workdir) / "growth.sqlite3")
        llm = LatencySummarizer(0.0)
        with SummaryEngine(store, llm) as engine:
            engine.compress("warm").result(timeout=60)
            for size in sizes:
                sid = f"g{size}"
                _fill(store, sid, size)
                store.trim_history(sid, 0)  # history stored, none of it active
                times = []
                for _ in range(10 if quick else 30):
                    _fill(store, sid, 40)
                    started = time.perf_counter_ns()
                    engine.compress(sid).result(timeout=60)
                    times.append(time.perf_counter_ns() - started)
                rows.append({"stored": size, **latency_summary(times)})
        store.close()
    first = rows[0]["p50_us"]
    for row in rows:
        row["p50_ratio"] = round(row["p50_us"] / first, 2)
    return rows
