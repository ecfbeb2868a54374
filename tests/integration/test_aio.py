from __future__ import annotations

import asyncio
import threading

from memory_summary import SummaryEngine
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.integration.conversation import fill


class GateWitness(InstrumentedSummarizer):
    """Records whether its gate was open when its call ended (not timed out)."""

    def complete(self, messages, **kwargs):
        reply = super().complete(messages, **kwargs)
        self.released = self.gate.is_set()
        return reply


def test_awaiting_a_slow_compression_never_blocks_the_event_loop(store):
    gate = threading.Event()
    llm = GateWitness(gate=gate)
    fill(store, "s1", 40)

    async def main():
        async with AsyncSummaryEngine(SummaryEngine(store, llm)) as engine:

            async def release_once_called():
                # Runs on the loop while compress() is awaited: a blocked loop would
                # leave the gate shut until the fake's own 30 s wait ran out.
                assert await asyncio.to_thread(llm.entered.wait, 10)
                gate.set()

            outcome, _ = await asyncio.gather(
                engine.compress("s1"), release_once_called()
            )
            return outcome, await engine.build_prompt("s1")

    outcome, prompt = asyncio.run(main())

    assert outcome.kind == "compressed"
    assert llm.released  # the loop opened the gate while the call was held
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


def test_start_loads_the_tokenizer_off_the_event_loop(store):
    loaded_on: list[int] = []

    def counter_for(model: str | None):
        loaded_on.append(threading.get_ident())
        return len

    async def main() -> int:
        engine = AsyncSummaryEngine(SummaryEngine(store, count_tokens_for=counter_for))
        assert await engine.start() is engine
        await engine.stop()
        return threading.get_ident()

    loop_thread = asyncio.run(main())

    assert loaded_on  # start() asked for the default summarizer's counter
    assert loop_thread not in loaded_on


def test_async_usage_and_typed_events(store):
    from memory_summary import Compressing

    fill(store, "s1", 30)
    seen = []

    async def main():
        async with AsyncSummaryEngine(
            SummaryEngine(store, InstrumentedSummarizer())
        ) as engine:
            engine.subscribe(seen.append)
            outcome = await engine.compress("s1")
            return outcome, await engine.usage("s1"), await engine.usage()

    outcome, session, total = asyncio.run(main())

    assert outcome.usage.calls == 1
    assert session == total == outcome.usage
    assert [e.outcome for e in seen if isinstance(e, Compressing)] == [None, outcome]


def test_the_async_assemble_takes_repair_placement_and_model(tmp_path):
    import asyncio

    from memory_summary import Message, SummaryEngine, ToolCall
    from memory_summary.adapters import SqliteStore
    from memory_summary.aio import AsyncSummaryEngine
    from memory_summary.domain import NAMESPACE, SummaryRecord

    store = SqliteStore(tmp_path / "a.sqlite3")
    record = SummaryRecord("The user likes tea.", covered_through_id=None, tokens=5)
    store.save_metadata(NAMESPACE, "s", record.to_mapping())
    call = ToolCall("c1", "search", "{}")
    messages = [
        Message("system", "Be brief."),
        Message("assistant", "", tool_calls=[call]),
        Message("user", "and?"),
    ]

    async def main():
        async with AsyncSummaryEngine(SummaryEngine(store)) as engine:
            merged = await engine.assemble(messages, "s", placement="merge")
            kept = await engine.assemble(messages, "s", repair=False, model="gpt-4")
            prompt = await engine.build_prompt("s", "gpt-4o")
            return merged, kept, prompt

    merged, kept, prompt = asyncio.run(main())
    store.close()

    assert merged[0].content.startswith("Be brief.\n\n")
    assert merged[0].content.endswith("The user likes tea.")
    assert [m.role for m in merged] == ["system", "assistant", "tool", "user"]
    assert [m.role for m in kept] == ["system", "system", "assistant", "user"]
    assert prompt.endswith("The user likes tea.")
