"""``SummaryMiddleware`` in a real LangChain v1 agent (``create_agent``).

The chat model is a scripted ``BaseChatModel`` (canned replies, no network) that
records what it was sent; the agent loop, tool node, state reducers and checkpointer
are LangChain's and LangGraph's own.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from memory_summary import SummaryConfig
from memory_summary.adapters import InMemoryStore
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.integrations.langchain import LANGCHAIN_ID, SummaryMiddleware
from tests.contract.stores import every_store


class ScriptedChatModel(BaseChatModel):
    """Answers from a script; records the messages of each call."""

    replies: list[AIMessage]
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.replies.pop(0))])

    def bind_tools(self, tools, **kwargs):
        return self


@tool
def get_weather(city: str) -> str:
    """Return the weather in a city."""
    return f"Sunny in {city}, 21 C, forecast code WX-{len(city)}."


def weather_turns(cities: list[str]) -> ScriptedChatModel:
    replies: list[AIMessage] = []
    for n, city in enumerate(cities):
        call = {"id": f"call_{n}", "name": "get_weather", "args": {"city": city}}
        replies.append(AIMessage(content="", tool_calls=[call]))
        replies.append(AIMessage(content=f"It is sunny in {city}."))
    return ScriptedChatModel(replies=replies)


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def assert_tool_pairs_complete(messages: list[BaseMessage]) -> None:
    called: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            called.update(call["id"] for call in message.tool_calls)
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in called, message


def test_a_tool_round_is_stored_with_its_pairs_and_ids(make_engine):
    engine = make_engine(InMemoryStore()).start()
    model = weather_turns(["Paris"])
    agent = create_agent(
        model, tools=[get_weather], middleware=[SummaryMiddleware(engine)]
    )

    result = agent.invoke({"messages": [HumanMessage("Paris?")]}, thread("alice"))

    history = engine.memory.get_history("alice")
    assert result["messages"][-1].content == "It is sunny in Paris."
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[1].tool_calls[0].name == "get_weather"
    assert history[2].tool_call_id == "call_0"
    assert "WX-5" in history[2].content
    assert [m.metadata[LANGCHAIN_ID] for m in history] == [
        m.id for m in result["messages"]
    ]


@every_store
def test_every_store_keeps_the_conversation(store, make_engine):
    engine = make_engine(store).start()
    model = weather_turns(["Paris", "Oslo"])
    middleware = [SummaryMiddleware(engine, session_id="s-lc")]
    agent = create_agent(model, tools=[get_weather], middleware=middleware)

    agent.invoke({"messages": [HumanMessage("Paris?")]})
    agent.invoke({"messages": [HumanMessage("Oslo?")]})

    history = store.get_history("s-lc")
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"] * 2
    assert [m.type for m in model.seen[-1]][:4] == ["human", "ai", "tool", "ai"]
    assert model.seen[-1][2].tool_call_id == "call_0"


def test_without_a_checkpointer_the_model_still_sees_earlier_turns(make_engine):
    engine = make_engine(InMemoryStore()).start()
    model = weather_turns(["Paris", "Oslo"])
    agent = create_agent(
        model, tools=[get_weather], middleware=[SummaryMiddleware(engine)]
    )

    agent.invoke({"messages": [HumanMessage("Paris?")]}, thread("bob"))
    agent.invoke({"messages": [HumanMessage("Oslo?")]}, thread("bob"))

    first_call_of_second_turn = model.seen[2]
    assert [m.type for m in first_call_of_second_turn] == [
        "human",
        "ai",
        "tool",
        "ai",
        "human",
    ]
    assert first_call_of_second_turn[0].content == "Paris?"
    assert len(engine.memory.get_history("bob")) == 8


def test_old_turns_fold_into_a_summary_in_the_system_message(make_engine):
    config = SummaryConfig(threshold=8, keep_recent=3)
    engine = make_engine(InMemoryStore(), config=config).start()
    cities = ["Paris", "Oslo", "Lima", "Kyiv", "Rome"]
    model = weather_turns(cities)
    agent = create_agent(
        model,
        tools=[get_weather],
        system_prompt="Be brief.",
        middleware=[SummaryMiddleware(engine, session_id="carol")],
    )

    for city in cities:
        agent.invoke({"messages": [HumanMessage(f"{city}?")]})
        assert engine.wait_idle(timeout=10)

    last_call = model.seen[-1]
    system, rest = last_call[0], last_call[1:]
    assert system.type == "system"
    assert system.content.startswith("Be brief.\n\n")
    assert "WX-5" in system.content  # the first turn's tool outcome, summarized
    assert sum(m.type == "system" for m in last_call) == 1
    assert not isinstance(rest[0], ToolMessage)
    assert_tool_pairs_complete(rest)
    assert len(rest) < 4 * len(cities)


def test_a_checkpointed_state_drops_what_was_archived(make_engine):
    config = SummaryConfig(threshold=8, keep_recent=3)
    engine = make_engine(InMemoryStore(), config=config).start()
    cities = ["Paris", "Oslo", "Lima"]
    model = weather_turns(cities)
    agent = create_agent(
        model,
        tools=[get_weather],
        middleware=[SummaryMiddleware(engine)],
        checkpointer=InMemorySaver(),
    )

    for city in cities:
        result = agent.invoke({"messages": [HumanMessage(f"{city}?")]}, thread("dave"))
        assert engine.wait_idle(timeout=10)

    state_ids = [m.id for m in result["messages"]]
    active = engine.memory.get_history("dave")
    assert engine.summary("dave") is not None
    assert len(engine.memory.get_full_history("dave")) == 4 * len(cities)
    assert len(state_ids) < 4 * len(cities)
    assert set(state_ids) <= {m.metadata[LANGCHAIN_ID] for m in active}
    assert len(set(state_ids)) == len(state_ids)  # nothing stored twice


def test_the_async_hooks_run_the_same_way(make_engine):
    engine = make_engine(InMemoryStore()).start()
    model = weather_turns(["Paris", "Oslo"])
    agent = create_agent(
        model,
        tools=[get_weather],
        middleware=[SummaryMiddleware(AsyncSummaryEngine(engine))],
    )

    async def two_turns():
        await agent.ainvoke({"messages": [HumanMessage("Paris?")]}, thread("erin"))
        return await agent.ainvoke(
            {"messages": [HumanMessage("Oslo?")]}, thread("erin")
        )

    result = asyncio.run(two_turns())

    assert result["messages"][-1].content == "It is sunny in Oslo."
    assert [m.content for m in model.seen[2][:1]] == ["Paris?"]
    assert len(engine.memory.get_history("erin")) == 8


def test_a_run_without_a_session_is_refused(make_engine):
    engine = make_engine(InMemoryStore()).start()
    agent = create_agent(
        weather_turns(["Paris"]),
        tools=[get_weather],
        middleware=[SummaryMiddleware(engine)],
    )

    with pytest.raises(ValueError, match="thread_id"):
        agent.invoke({"messages": [HumanMessage("Paris?")]})


def test_a_missing_langchain_raises_an_import_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)
    monkeypatch.delitem(sys.modules, "memory_summary.integrations.langchain")

    with pytest.raises(ImportError, match=r"memory-summary\[langchain\]"):
        importlib.import_module("memory_summary.integrations.langchain")


def test_outside_a_run_there_is_no_thread_id():
    from memory_summary.integrations.langchain import _thread_id

    assert _thread_id(None) is None
