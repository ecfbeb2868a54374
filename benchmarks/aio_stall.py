"""How long the asyncio face stalls the event loop: a ticking task measures it.

A task on the loop sleeps 1 ms at a time and records the gap between its wake-ups;
a gap much longer than 1 ms is a stall, time in which the loop could serve nothing.
Each case runs in a fresh interpreter (its first start loads the tokenizer, as a
host's first start does):

- ``idle``: the loop does nothing else; the floor that the machine's load sets;
- ``start``: ``await AsyncSummaryEngine(SummaryEngine(InMemoryStore())).start()``,
  the process's first, which builds tiktoken's encoder on a worker thread;
- ``start_preloaded``: the same, with the encoder built before the loop started
  (``TiktokenCounter()``), which is what start() costs the loop apart from it;
- ``store_async``: saves, reads and pops on SQLite awaited through the async face;
- ``store_blocking``: the same calls made on the loop itself (the baseline).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

CASES = ("idle", "start", "start_preloaded", "store_async", "store_blocking")
TICK_S = 0.001


async def _ticked(work: Callable[[], Awaitable[object]]) -> dict[str, object]:
    """Run ``work`` while a task ticks every millisecond; return the gaps."""
    gaps: list[int] = []
    done = False

    async def tick() -> None:
        last = time.perf_counter_ns()
        while not done:
            await asyncio.sleep(TICK_S)
            now = time.perf_counter_ns()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.02)  # the ticker is running
    gaps.clear()
    started = time.perf_counter()
    await work()
    seconds = time.perf_counter() - started
    done = True
    await ticker
    ordered = sorted(gaps)
    return {
        "longest_gap_ms": round(ordered[-1] / 1e6, 2),
        "p99_gap_ms": round(
            ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] / 1e6, 2
        ),
        "ticks": len(gaps),
        "seconds": round(seconds, 3),
    }


def _child(case: str, operations: int) -> dict[str, object]:
    from memory_summary import Message, SummaryEngine
    from memory_summary.adapters import InMemoryStore, SqliteStore, TiktokenCounter
    from memory_summary.aio import AsyncSummaryEngine

    if case == "start_preloaded":
        TiktokenCounter()  # the encoder is built before the loop runs

    async def main() -> dict[str, object]:
        if case == "idle":
            return await _ticked(lambda: asyncio.sleep(0.5))
        if case in ("start", "start_preloaded"):
            engine = AsyncSummaryEngine(SummaryEngine(InMemoryStore()))
            result = await _ticked(engine.start)
            await engine.stop()
            return result
        with tempfile.TemporaryDirectory() as workdir:
            store = SqliteStore(Path(workdir) / "stall.sqlite3")
            engine = AsyncSummaryEngine(SummaryEngine(store))
            message = Message("user", "message text " * 20)

            async def awaited() -> None:
                for n in range(operations):
                    await engine.memory.save_message(f"s{n % 10}", message)
                    await engine.memory.get_history(f"s{n % 10}", limit=50)
                    if n % 5 == 0:
                        await engine.memory.pop_message(f"s{n % 10}")

            async def blocking() -> None:
                for n in range(operations):
                    store.save_message(f"s{n % 10}", message)
                    store.get_history(f"s{n % 10}", limit=50)
                    if n % 5 == 0:
                        store.pop_message(f"s{n % 10}")
                    await asyncio.sleep(0)  # a host's other awaits in between

            result = await _ticked(awaited if case == "store_async" else blocking)
            store.close()
            return result

    return asyncio.run(main())


def run(quick: bool) -> list[dict[str, object]]:
    """Run each case in a fresh interpreter (the first start loads the tokenizer)."""
    operations = 200 if quick else 2000
    results = []
    for case in CASES:
        done = subprocess.run(
            [sys.executable, __file__, case, str(operations)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        row = {"case": case, **json.loads(done.stdout.splitlines()[-1])}
        results.append(row)
        print(
            f"  {case}: longest gap {row['longest_gap_ms']} ms, p99 "
            f"{row['p99_gap_ms']} ms over {row['ticks']} ticks of 1 ms",
            flush=True,
        )
    return results


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], int(sys.argv[2]))))
