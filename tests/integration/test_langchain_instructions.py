"""Instructions in a LangChain agent's input are context: never folded away.

A ``SystemMessage`` the host puts in the agent's messages (not the agent's
``system_prompt``) reaches the model on every call, however many compressions run.
"""

from __future__ import annotations

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from memory_summary import SummaryConfig
from tests.integration.test_langchain_middleware import (
    get_weather,
    thread,
    weather_turns,
)

INSTRUCTION = "Answer in French, and never name a brand."


def test_a_system_message_in_the_input_survives_every_compression(store, make_engine):
    config = SummaryConfig(threshold=6, keep_recent=2)
    engine = make_engine(store, config=config).start()
    cities = ["Paris", "Oslo", "Lima", "Kyiv"]
    model = weather_turns(cities)
    from memory_summary.integrations.langchain import SummaryMiddleware

    agent = create_agent(
        model,
        tools=[get_weather],
        middleware=[SummaryMiddleware(engine)],
        checkpointer=InMemorySaver(),
    )
    first = [SystemMessage(INSTRUCTION), HumanMessage("Paris?")]

    for n, city in enumerate(cities):
        turn = first if n == 0 else [HumanMessage(f"{city}?")]
        result = agent.invoke({"messages": turn}, thread("s-instr"))
        assert engine.wait_idle(timeout=10)

    assert engine.summary("s-instr") is not None  # compressions ran
    for call in model.seen:
        assert any(m.type == "system" and m.content == INSTRUCTION for m in call)
    assert result["messages"][0].content == INSTRUCTION
    assert all(m.role != "system" for m in store.get_full_history("s-instr"))
