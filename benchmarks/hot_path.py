"""Hot-path cost of ``turn_after``, ``token_usage``, ``build_prompt`` under load.

Every session gets enough history that turns keep triggering compressions against a
slow fake summarizer, so the measured calls compete with real background work.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from report import latency_summary

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import SqliteStore


class SlowSummarizer:
    """A summarizer that takes ``delay_s`` per call, as a remote LLM would."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.calls = 0
        self._lock = threading.Lock()

    def context_length(self, model: str | None = None) -> int:
        return 128_000

    def complete(self, messages: Sequence[Message], **_: object) -> str:
        time.sleep(self.delay_s)
        with self._lock:
            self.calls += 1
        return "Summary: the user asked about several things; the assistant answered."


def measure(sessions: int, calls: int, delay_s: float) -> dict:
    """Return latency summaries of the three hot-path calls, on a warm SQLite store."""
    workdir = tempfile.TemporaryDirectory()
    memory = SqliteStore(Path(workdir.name) / "hot.sqlite3")
    llm = SlowSummarizer(delay_s)
    config = SummaryConfig(threshold=30, keep_recent=20)
    engine = SummaryEngine(memory, llm, config=config)
    ids = [f"s{i}" for i in range(sessions)]
    for sid in ids:
        for i in range(29):  # one more message reaches the threshold of 30
            memory.save_message(
                sid, Message("user" if i % 2 else "assistant", f"turn {i}")
            )
    engine.start()
    samples: dict[str, list[int]] = {
        "turn_after": [],
        "token_usage": [],
        "build_prompt": [],
    }
    clock = time.perf_counter_ns
    # Seed summaries so build_prompt has something to render.
    for sid in ids[: min(sessions, 200)]:
        engine.compress(sid)
    engine.wait_idle(timeout=600)
    started: list[object] = []
    unsubscribe = engine.subscribe(
        lambda event: (
            started.append(event) if getattr(event, "status", "") == "start" else None
        )
    )
    for n in range(calls):
        sid = ids[n % sessions]
        memory.save_message(sid, Message("user", f"new message {n}"))
        start = clock()
        engine.turn_after(sid)
        samples["turn_after"].append(clock() - start)
        start = clock()
        engine.token_usage(sid, 0.5)  # below the threshold: the common case
        samples["token_usage"].append(clock() - start)
        start = clock()
        engine.build_prompt(sid)
        samples["build_prompt"].append(clock() - start)
    unsubscribe()
    busy_compressions = len(started)
    engine.stop(timeout=30)
    memory.close()
    workdir.cleanup()
    return {
        "sessions": sessions,
        "calls": calls,
        "summarizer_delay_ms": delay_s * 1000,
        "compressions_started_during_run": busy_compressions,
        **{name: latency_summary(values) for name, values in samples.items()},
    }


def run(quick: bool) -> list[dict]:
    """Run the hot-path benchmark at 1k and 10k sessions (fewer in quick mode)."""
    sizes = [(100, 2_000)] if quick else [(1_000, 20_000), (10_000, 20_000)]
    return [measure(sessions, calls, 0.2) for sessions, calls in sizes]
