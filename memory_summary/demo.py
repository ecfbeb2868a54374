"""``memory-summary demo``: a simulated multi-session chat server on the real engine.

N sessions of generated conversations are driven from a thread pool through one
``SummaryEngine`` on a SQLite file, reporting token usage as a host would.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

from memory_summary.adapters import SqliteArchive, SqliteStore, TiktokenCounter
from memory_summary.domain import Compressing, Message, Summarizer, SummaryConfig

from .conversations import session_turns
from .engine import SummaryEngine

HOST_CONTEXT_TOKENS = 8192  # the simulated chat model's window, for usage ratios


@attrs.define
class DemoStats:
    """Counters the progress display and the report read (guarded by ``lock``)."""

    sessions: int
    turns_planned: int
    sessions_done: int = 0
    turns: int = 0
    running: int = 0
    compressed: int = 0
    degraded: int = 0
    lock: threading.Lock = attrs.Factory(threading.Lock)
    turn_after_ns: list[int] = attrs.Factory(list)

    def on_event(self, event: object) -> None:
        if not isinstance(event, Compressing):
            return
        with self.lock:
            if event.status == "start":
                self.running += 1
            else:
                self.running -= 1
                if event.status == "error":
                    self.degraded += 1
                elif event.detail != "nothing to compress":
                    self.compressed += 1

    def line(self) -> str:
        with self.lock:
            return (
                f"sessions {self.sessions_done}/{self.sessions} | turns "
                f"{self.turns}/{self.turns_planned} | compressions running "
                f"{self.running}, "
                f"done {self.compressed}, degraded {self.degraded}"
            )


@attrs.frozen
class DemoReport:
    """What the demo measured."""

    db: Path
    sessions: int
    turns: int
    compressions: int
    degraded: int
    tokens_without: int
    tokens_with: int
    turn_after_p50_us: float
    turn_after_p99_us: float
    seconds: float
    summarizer: str

    @property
    def saved_ratio(self) -> float:
        """Return the share of context tokens the summaries saved."""
        return (
            1 - self.tokens_with / self.tokens_without if self.tokens_without else 0.0
        )

    def render(self) -> str:
        return "\n".join(
            [
                "",
                "memory-summary demo: done",
                f"  summarizer        {self.summarizer}",
                f"  sessions          {self.sessions}",
                f"  turns             {self.turns} in {self.seconds:.1f} s",
                f"  compressions      {self.compressions} "
                f"({self.degraded} degraded to trim-only)",
                f"  context tokens    {self.tokens_without:,} without summaries -> "
                f"{self.tokens_with:,} with them ({self.saved_ratio:.0%} saved)",
                f"  turn_after        p50 {self.turn_after_p50_us:.1f} us, "
                f"p99 {self.turn_after_p99_us:.1f} us",
                f"  database          {self.db}",
                "",
                "Look inside:",
                f"  memory-summary inspect s0 --db {self.db}",
                f"  sqlite3 {self.db} "
                "'SELECT session_id, count(*) FROM messages GROUP BY 1'",
            ]
        )


def _percentile_us(samples: list[int], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] / 1000


def _drive_session(
    engine: SummaryEngine,
    store: SqliteStore,
    stats: DemoStats,
    index: int,
    turns: int,
    seed: int,
    count: Callable[[str], int],
) -> None:
    sid = f"s{index}"
    for turn in session_turns(index, turns, seed):
        for message in turn.messages:
            store.save_message(sid, message)
        started = time.perf_counter_ns()
        engine.turn_after(sid)
        elapsed = time.perf_counter_ns() - started
        context = engine.assemble(store.get_history(sid), sid)
        used = sum(count(m.text) + 4 for m in context)
        engine.token_usage(sid, used / HOST_CONTEXT_TOKENS)
        with stats.lock:
            stats.turns += 1
            stats.turn_after_ns.append(elapsed)
    with stats.lock:
        stats.sessions_done += 1


def _progress(stats: DemoStats, stop: threading.Event) -> None:
    tty = sys.stderr.isatty()
    interval = 0.2 if tty else 2.0
    while not stop.wait(interval):
        print(
            ("\r" if tty else "") + stats.line(),
            end="" if tty else "\n",
            file=sys.stderr,
            flush=True,
        )
    print(("\r" if tty else "") + stats.line(), file=sys.stderr, flush=True)


def run_demo(
    db: Path,
    *,
    sessions: int = 50,
    turns: int = 40,
    seed: int = 7,
    workers: int = 8,
    llm: Summarizer | None = None,
    config: SummaryConfig | None = None,
    progress: bool = True,
) -> DemoReport:
    """Run the demo against a fresh SQLite database at ``db`` and return its report."""
    db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    store = SqliteStore(db, pool_size=workers + 4)
    count = TiktokenCounter("o200k_base").count
    stats = DemoStats(sessions, sessions * turns)
    stop = threading.Event()
    display = threading.Thread(target=_progress, args=(stats, stop), daemon=True)
    started = time.perf_counter()
    engine = SummaryEngine(store, llm, config=config, archive=SqliteArchive(store))
    engine.subscribe(stats.on_event)
    try:
        with engine:
            if progress:
                display.start()
            with ThreadPoolExecutor(workers, thread_name_prefix="demo-host") as pool:
                futures = [
                    pool.submit(
                        _drive_session, engine, store, stats, i, turns, seed, count
                    )
                    for i in range(sessions)
                ]
                for future in futures:
                    future.result()
            engine.wait_idle(timeout=300)
            tokens_with = 0
            tokens_without = 0
            for index in range(sessions):
                sid = f"s{index}"
                tokens_without += sum(
                    count(m.text) + 4 for m in store.get_full_history(sid)
                )
                context = engine.assemble(store.get_history(sid), sid)
                tokens_with += sum(count(m.text) + 4 for m in context)
            label = engine.summarizer_label()
    finally:
        stop.set()
        if display.is_alive():
            display.join(timeout=5)
        store.close()
    samples = stats.turn_after_ns or [0]
    return DemoReport(
        db=db.resolve(),
        sessions=sessions,
        turns=stats.turns,
        compressions=stats.compressed,
        degraded=stats.degraded,
        tokens_without=tokens_without,
        tokens_with=tokens_with,
        turn_after_p50_us=statistics.median(samples) / 1000,
        turn_after_p99_us=_percentile_us(samples, 0.99),
        seconds=time.perf_counter() - started,
        summarizer=label,
    )


def message_row(message: Message) -> str:
    """Return one line describing a message, for ``inspect``."""
    text = " ".join(message.text.split())
    if message.tool_calls:
        text = ", ".join(f"{c.name}({c.arguments[:40]})" for c in message.tool_calls)
    return f"{message.id:>7}  {message.role:<9}  {text[:90]}"
