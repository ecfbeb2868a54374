"""``SummarySession.add_items`` batches: atomic, contiguous, and model responses whole.

The items are the real Agents SDK's input items; the stores are the real ones (the
``store`` fixture) and a store without ``save_messages``, which takes the fallback.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

pytest.importorskip("agents")

import contextlib

from memory_summary import StoreError, SummaryConfig
from memory_summary.adapters import InMemoryStore
from memory_summary.integrations.openai_agents import SummarySession
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.contract.stores import every_store


class PlainStore:
    """A store as an outside author writes it: the contract, no ``save_messages``.

    With ``lockstep``, every ``save_message`` waits for a second writer, so two
    batches saved at once alternate unless something keeps them apart (the wait
    gives up after a second, once it is clear that no second writer is coming).
    """

    def __init__(self, lockstep: bool = False) -> None:
        self._store = InMemoryStore()
        self._step = threading.Barrier(2, timeout=1) if lockstep else None

    def save_message(self, session_id, message):
        if self._step is not None:
            with contextlib.suppress(threading.BrokenBarrierError):
                self._step.wait()
        return self._store.save_message(session_id, message)

    def __getattr__(self, name: str) -> Any:
        if name == "save_messages":
            raise AttributeError(name)
        return getattr(self._store, name)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


BAD_PART = {
    "role": "user",
    "content": [{"type": "input_text", "text": "fine"}, {"type": "x", "v": "\ud800"}],
}


def _batch_with_a_refused_item() -> list[dict[str, Any]]:
    return [user("one"), {"role": "assistant", "content": "two"}, BAD_PART, user("4")]


@every_store
def test_an_item_the_store_refuses_leaves_nothing_of_the_batch(store, make_engine):
    session = SummarySession("s-atomic", make_engine(store))
    asyncio.run(session.add_items([user("before")]))

    with pytest.raises(StoreError):
        asyncio.run(session.add_items(_batch_with_a_refused_item()))

    assert asyncio.run(session.get_items()) == [user("before")]


def test_a_store_without_batches_is_checked_before_anything_is_saved(make_engine):
    store = PlainStore()
    session = SummarySession("s-plain", make_engine(store))

    with pytest.raises(StoreError):
        asyncio.run(session.add_items(_batch_with_a_refused_item()))

    assert store.get_full_history("s-plain") == []


@pytest.mark.parametrize("kind", ["batching", "plain"])
def test_concurrent_add_items_keep_each_batch_contiguous(kind, make_engine):
    store = InMemoryStore() if kind == "batching" else PlainStore(lockstep=True)
    session = SummarySession("s-two", make_engine(store))
    first = [user(f"a{i}") for i in range(6)]
    second = [user(f"b{i}") for i in range(6)]

    async def both():
        await asyncio.gather(session.add_items(first), session.add_items(second))

    asyncio.run(both())

    items = asyncio.run(session.get_items())
    assert items in (first + second, second + first)


def _response_items(n: int) -> list[dict[str, Any]]:
    """A user turn and one model response: reasoning, two calls; then outputs."""
    return [
        user(f"Weather in Paris and Oslo? ({n})"),
        {
            "type": "reasoning",
            "id": f"rs_{n}",
            "summary": [{"type": "summary_text", "text": "two cities"}],
        },
        {
            "type": "function_call",
            "id": f"fc_{n}a",
            "call_id": f"call_{n}a",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {
            "type": "function_call",
            "id": f"fc_{n}b",
            "call_id": f"call_{n}b",
            "name": "get_weather",
            "arguments": '{"city": "Oslo"}',
        },
        {"type": "function_call_output", "call_id": f"call_{n}a", "output": "Sunny"},
        {"type": "function_call_output", "call_id": f"call_{n}b", "output": "Rain"},
        {"role": "assistant", "content": f"Sunny in Paris, rain in Oslo ({n})."},
    ]


@pytest.mark.parametrize("keep_recent", range(1, 7))
def test_a_compression_never_separates_calls_from_their_reasoning_item(
    store, make_engine, keep_recent
):
    summary = "The user asked about the weather in Paris and Oslo; sunny and rain."
    config = SummaryConfig(threshold=30, keep_recent=keep_recent, pin_facts=False)
    engine = make_engine(store, ScriptedSummarizer(summary), config=config).start()
    session = SummarySession(f"s-rs-{keep_recent}", engine)
    asyncio.run(session.add_items(_response_items(1)[:1]))
    asyncio.run(session.add_items(_response_items(1)[1:]))

    engine.compress(session.session_id).result(timeout=10)
    items = asyncio.run(session.get_items())

    types = [item.get("type") for item in items]
    assert ("reasoning" in types) == ("function_call" in types)
    if "function_call" in types:
        assert types.index("reasoning") < types.index("function_call")


def test_a_runner_turn_with_reasoning_keeps_its_response_whole(make_engine):
    from agents import Runner
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseReasoningItem,
    )
    from openai.types.responses.response_reasoning_item import Summary

    from tests.integration.test_openai_agents_session import (
        NO_TRACING,
        ScriptedModel,
        agent_with,
        reply,
    )

    calls = [
        ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{city}",
            name="get_weather",
            arguments=f'{{"city": "{city}"}}',
            id=f"fc_{city}",
            status="completed",
        )
        for city in ("Paris", "Oslo")
    ]
    thought = ResponseReasoningItem(
        id="rs_1",
        type="reasoning",
        summary=[Summary(type="summary_text", text="check both cities")],
    )
    model = ScriptedModel([thought, *calls], reply("Sunny and sunny.", "msg_1"))
    summary = "The user asked for the weather in Paris and Oslo; both were sunny."
    config = SummaryConfig(threshold=30, keep_recent=4, pin_facts=False)
    engine = make_engine(
        InMemoryStore(), ScriptedSummarizer(summary), config=config
    ).start()
    session = SummarySession("s-runner", engine)
    asyncio.run(
        Runner.run(
            agent_with(model), "Paris and Oslo?", session=session, run_config=NO_TRACING
        )
    )
    stored = [item.get("type") for item in asyncio.run(session.get_items())]

    engine.compress("s-runner").result(timeout=10)
    items = asyncio.run(session.get_items())

    assert stored[1:4] == ["reasoning", "function_call", "function_call"]
    types = [item.get("type") for item in items]
    assert ("reasoning" in types) == ("function_call" in types)
