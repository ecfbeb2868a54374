"""``SummarySession`` driven by the real OpenAI Agents SDK's ``Runner``.

The model is a scripted ``agents.Model`` (canned responses, no network); everything
else is the SDK itself: its runner, tool execution and session protocol.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse
from agents.memory import Session, SessionSettings
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from memory_summary import Message, SummaryConfig
from memory_summary.adapters import InMemoryStore
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.integrations.openai_agents import (
    ITEM_KIND,
    SummarySession,
)
from memory_summary.testing.fakes import InstrumentedSummarizer, ScriptedSummarizer
from tests.contract.stores import every_store

NO_TRACING = RunConfig(tracing_disabled=True)


MIXED_ITEMS: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What does this chart show?"},
            {
                "type": "input_image",
                "image_url": "https://x/c.png",
                "detail": "low",
            },
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "private chain of thought"}],
        "encrypted_content": "opaque",
    },
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "chart"},
    },
    {
        "type": "custom_tool_call",
        "call_id": "ct_1",
        "name": "grep",
        "input": "pattern",
    },
    {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "3 matches"},
    {
        "type": "function_call_output",
        "call_id": "ct_0",
        "output": [{"type": "input_image", "image_url": "https://x/d.png"}],
    },
    {"role": "assistant", "content": "Sales rose."},
]


class ScriptedModel(Model):
    """An Agents SDK model answering from a script; records the input of each call."""

    def __init__(self, *outputs: list[Any]) -> None:
        self.outputs = list(outputs)
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions, input, *args, **kwargs):
        self.inputs.append(input)
        return ModelResponse(
            output=self.outputs.pop(0), usage=Usage(), response_id=None
        )

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the tests run without streaming")


def reply(text: str, item_id: str) -> list[Any]:
    content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
    return [
        ResponseOutputMessage(
            id=item_id,
            type="message",
            role="assistant",
            status="completed",
            content=content,
        )
    ]


def weather_call(city: str, n: int) -> list[Any]:
    return [
        ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{n}",
            name="get_weather",
            arguments=f'{{"city": "{city}"}}',
            id=f"fc_{n}",
            status="completed",
        )
    ]


@function_tool
def get_weather(city: str) -> str:
    """Return the weather in a city."""
    return f"Sunny in {city}, 21 C, forecast code WX-{len(city)}."


def weather_turns(cities: list[str]) -> ScriptedModel:
    """A model that calls the tool once and then answers, for each city in turn."""
    outputs: list[list[Any]] = []
    for n, city in enumerate(cities):
        outputs.append(weather_call(city, n))
        outputs.append(reply(f"It is sunny in {city}.", f"msg_{n}"))
    return ScriptedModel(*outputs)


def agent_with(model: Model) -> Agent:
    return Agent(
        name="weather", instructions="Be brief.", model=model, tools=[get_weather]
    )


def run(coroutine):
    return asyncio.run(coroutine)


def assert_tool_pairs_complete(items: list[dict[str, Any]]) -> None:
    """Every function_call_output follows its function_call in ``items``."""
    called: set[str] = set()
    for item in items:
        if item.get("type") == "function_call":
            called.add(item["call_id"])
        elif item.get("type") == "function_call_output":
            assert item["call_id"] in called, item


def test_the_session_satisfies_the_sdk_protocol(make_engine):
    session = SummarySession("s", make_engine(InMemoryStore()))

    assert isinstance(session, Session)
    assert session.session_id == "s"
    assert session.session_settings is None


def test_a_run_with_a_tool_call_stores_every_item_and_reads_them_back(make_engine):
    engine = make_engine(InMemoryStore()).start()
    session = SummarySession("alice", engine)
    model = weather_turns(["Paris", "Oslo"])

    first = run(
        Runner.run(agent_with(model), "Paris?", session=session, run_config=NO_TRACING)
    )
    stored = run(session.get_items())
    run(Runner.run(agent_with(model), "Oslo?", session=session, run_config=NO_TRACING))

    assert first.final_output == "It is sunny in Paris."
    assert stored == first.to_input_list()
    assert [item.get("type") for item in stored] == [
        None,
        "function_call",
        "function_call_output",
        "message",
    ]
    assert stored[2]["output"] == "Sunny in Paris, 21 C, forecast code WX-5."
    assert model.inputs[2][:4] == stored  # the second run's model saw the first
    history = engine.memory.get_history("alice")
    assert [m.role for m in history[:4]] == ["user", "assistant", "tool", "assistant"]
    assert history[1].tool_calls[0].name == "get_weather"
    assert history[2].tool_call_id == history[1].tool_calls[0].id == "call_0"


def test_old_turns_fold_into_a_summary_the_model_receives(make_engine):
    config = SummaryConfig(threshold=8, keep_recent=3)
    engine = make_engine(InMemoryStore(), config=config).start()
    session = SummarySession("bob", engine)
    cities = ["Paris", "Oslo", "Lima", "Kyiv"]
    model = weather_turns([*cities, "Rome"])

    for city in cities:
        run(
            Runner.run(
                agent_with(model), f"{city}?", session=session, run_config=NO_TRACING
            )
        )
        assert engine.wait_idle(timeout=10)
    items = run(session.get_items())
    run(Runner.run(agent_with(model), "Rome?", session=session, run_config=NO_TRACING))

    summary, active = items[0], items[1:]
    assert summary["role"] == "system"
    assert "WX-5" in summary["content"]  # the first turn's tool outcome survives
    assert len(active) < 4 * len(cities)
    assert active[0].get("type") != "function_call_output"
    assert_tool_pairs_complete(active)
    assert model.inputs[-2][0] == summary  # the next run starts from the summary
    assert engine.summary("bob") is not None


def test_pop_item_takes_back_only_the_newest_item(make_engine):
    engine = make_engine(InMemoryStore()).start()
    session = SummarySession("carol", engine)
    model = weather_turns(["Paris"])
    run(Runner.run(agent_with(model), "Paris?", session=session, run_config=NO_TRACING))
    before = run(session.get_items())

    popped = run(session.pop_item())
    after = run(session.get_items())

    assert popped == before[-1]
    assert popped["type"] == "message"
    assert after == before[:-1]


def test_pop_item_on_an_empty_session_returns_none(make_engine):
    session = SummarySession("empty", make_engine(InMemoryStore()))

    assert run(session.pop_item()) is None


def test_clear_session_forgets_items_and_summary(make_engine):
    config = SummaryConfig(threshold=4, keep_recent=1)
    engine = make_engine(InMemoryStore(), config=config).start()
    session = SummarySession("dave", engine)
    model = weather_turns(["Paris", "Oslo"])
    for city in ("Paris", "Oslo"):
        run(
            Runner.run(
                agent_with(model), f"{city}?", session=session, run_config=NO_TRACING
            )
        )
    assert engine.wait_idle(timeout=10)
    assert engine.summary("dave") is not None

    run(session.clear_session())

    assert run(session.get_items()) == []
    assert engine.summary("dave") is None
    assert engine.memory.get_full_history("dave") == []


def test_items_that_are_not_chat_messages_round_trip_and_are_not_summarized(
    make_engine,
):
    summarizer = ScriptedSummarizer("The user looked at a chart.")
    config = SummaryConfig(threshold=30, keep_recent=1, pin_facts=False)
    engine = make_engine(InMemoryStore(), summarizer, config=config).start()
    session = SummarySession("erin", engine)
    items = MIXED_ITEMS

    run(session.add_items(items))
    stored = run(session.get_items())
    outcome = engine.compress("erin").result(timeout=10)

    assert stored == items
    assert outcome.kind == "compressed"
    (sent,) = summarizer.calls
    transcript = "\n".join(str(m.content) for m in sent)
    assert "What does this chart show?" in transcript
    assert "[image]" in transcript
    assert "Call grep(pattern)" in transcript
    assert "3 matches" in transcript
    assert "private chain of thought" not in transcript
    history = engine.memory.get_full_history("erin")
    assert [m.kind for m in history[1:3]] == [ITEM_KIND, ITEM_KIND]
    assert run(session.get_items())[-1] == items[-1]


@every_store
def test_items_round_trip_through_every_store(store, make_engine):
    session = SummarySession("s-items", make_engine(store))

    run(session.add_items(MIXED_ITEMS))
    popped = run(session.pop_item())
    stored = run(session.get_items())

    assert popped == MIXED_ITEMS[-1]
    assert stored == MIXED_ITEMS[:-1]


def test_chat_messages_the_host_saved_read_back_as_items(make_engine):
    store = InMemoryStore()
    session = SummarySession("frank", make_engine(store))
    chat = [
        {"role": "developer", "content": "Answer in French."},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    for message in chat:
        store.save_message("frank", Message.from_openai(message))

    items = run(session.get_items())

    assert items == [
        {"role": "developer", "content": "Answer in French."},
        {"role": "assistant", "content": "Checking."},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ]


def test_get_items_with_a_limit_returns_the_newest_items_without_the_summary(
    make_engine,
):
    config = SummaryConfig(threshold=4, keep_recent=2)
    engine = make_engine(InMemoryStore(), config=config).start()
    session = SummarySession("gina", engine)
    items = [
        {"role": "user", "content": f"Fact number {i} is {i * 7}."} for i in range(6)
    ]
    run(session.add_items(items))
    assert engine.wait_idle(timeout=10)

    newest = run(session.get_items(limit=2))
    everything = run(session.get_items())

    assert newest == items[-2:]
    assert everything[0]["role"] == "system"
    assert everything[1:] == items[-2:]
    assert run(session.get_items(limit=0)) == []


def test_an_async_engine_is_accepted(make_engine):
    engine = make_engine(InMemoryStore())
    session = SummarySession("hal", AsyncSummaryEngine(engine))

    run(session.add_items([{"role": "user", "content": "hi"}]))

    assert session.engine is engine
    assert [m.content for m in engine.memory.get_history("hal")] == ["hi"]


def test_a_store_without_pop_message_is_refused(make_engine):
    class OldStore(InMemoryStore):
        pop_message = None

    with pytest.raises(TypeError, match="pop_message"):
        SummarySession("s", make_engine(OldStore()))


def test_a_missing_sdk_raises_an_import_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "agents", None)
    monkeypatch.setitem(sys.modules, "agents.memory", None)
    monkeypatch.delitem(sys.modules, "memory_summary.integrations.openai_agents")

    with pytest.raises(ImportError, match=r"memory-summary\[openai-agents\]"):
        importlib.import_module("memory_summary.integrations.openai_agents")


def test_session_settings_limit_the_items_like_an_explicit_limit(make_engine):
    engine = make_engine(InMemoryStore())
    session = SummarySession("ivy", engine, session_settings=SessionSettings(limit=2))
    items = [{"role": "user", "content": f"m{i}"} for i in range(3)]

    run(session.add_items(items))

    assert run(session.get_items()) == items[-2:]
    assert run(session.get_items(limit=3)) == items


def test_popping_what_a_running_compression_read_fences_its_commit(make_engine):
    gate = threading.Event()
    summarizer = InstrumentedSummarizer(gate=gate)
    config = SummaryConfig(threshold=30, keep_recent=1)
    engine = make_engine(InMemoryStore(), summarizer, config=config).start()
    session = SummarySession("jan", engine)
    items = [
        {"role": "user", "content": "My order number is A-1001."},
        {"role": "assistant", "content": "Order A-1001 ships on Monday."},
        {"role": "user", "content": "Thanks, that is all."},
    ]
    run(session.add_items(items))
    compression = engine.compress("jan")
    assert summarizer.entered.wait(timeout=10)  # it has read items 0 and 1 to fold

    popped = [run(session.pop_item()), run(session.pop_item())]
    gate.set()
    outcome = compression.result(timeout=10)

    assert popped == [items[2], items[1]]
    assert outcome.kind == "fenced"
    assert engine.summary("jan") is None
    assert run(session.get_items()) == items[:1]
    assert engine.memory.get_full_history("jan") == engine.memory.get_history("jan")
