from __future__ import annotations

import asyncio
import threading
import time

from memory_summary import SummaryEngine
from memory_summary.aio import AsyncSummaryEngine
from tests.fakes import InstrumentedSummarizer
from tests.integration.helpers import fill


def test_awaiting_a_slow_compression_never_blocks_the_event_loop(store):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    fill(store, "s1", 40)

    async def main():
        async with AsyncSummaryEngine(SummaryEngine(store, llm)) as engine:
            ticks = 0

            async def ticker():
                nonlocal ticks
                while not gate.is_set():
                    ticks += 1
                    await asyncio.sleep(0.005)

            async def release_later():
                await asyncio.sleep(0.2)
                gate.set()

            started = time.perf_counter()
            outcome, _, _ = await asyncio.gather(
                engine.compress("s1"), ticker(), release_later()
            )
            return (
                outcome,
                ticks,
                time.perf_counter() - started,
                await engine.build_prompt("s1"),
            )

    outcome, ticks, elapsed, prompt = asyncio.run(main())

    assert outcome.kind == "compressed"
    assert ticks >= 10  # the loop kept running while the summarizer was blocked
    assert elapsed >= 0.2
    assert prompt is not None


def test_async_clear_wait_idle_and_assemble(store):
    fill(store, "s1", 30)

    async def main():
        async with AsyncSummaryEngine(
            SummaryEngine(store, InstrumentedSummarizer())
        ) as engine:
            engine.turn_after("s1")
            idle = await engine.wait_idle(timeout=10)
            assembled = await engine.assemble([], "s1")
            cleared = await engine.clear("session", "s1")
            return idle, assembled, cleared, await engine.build_prompt("s1")

    idle, assembled, cleared, after = asyncio.run(main())

    assert idle
    assert len(assembled) == 1
    assert cleared[0].success
    assert after is None
