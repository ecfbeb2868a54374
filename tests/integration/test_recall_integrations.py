"""The recall tools end to end in the Agents SDK's ``Runner`` and LangChain's agent.

Scripted models (no network) call ``search_history`` and ``read_history``; the SDK's
and LangChain's own tool execution runs them against the engine, on every store.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memory_summary import Message, SummaryConfig
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.testing.fakes import ScriptedSummarizer

REPLY = "Summary: the user chatted about the weekend."


def archived_locker_code(store, engine, session_id: str) -> int:
    """Store and fold a conversation whose first turn holds the locker code."""
    first = store.save_message(session_id, Message("user", "My locker code is 4417."))
    for i in range(14):
        role = "assistant" if i % 2 else "user"
        store.save_message(session_id, Message(role, f"Weekend chat {i}."))
    assert engine.compress(session_id).result(timeout=30).kind == "compressed"
    return first.id


@pytest.fixture
def engine_on(store, make_engine):
    config = SummaryConfig(threshold=10, keep_recent=4, recall_hint=True)
    return make_engine(store, ScriptedSummarizer(REPLY), config=config).start()


# -- the OpenAI Agents SDK ------------------------------------------------------------


def agents_call(name: str, arguments: str, n: int) -> list[Any]:
    from openai.types.responses import ResponseFunctionToolCall

    return [
        ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{n}",
            name=name,
            arguments=arguments,
            id=f"fc_{n}",
            status="completed",
        )
    ]


def outputs_of(model_input: list[Any]) -> list[str]:
    return [
        item["output"]
        for item in model_input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def test_the_agents_sdk_runs_the_recall_tools_bound_to_its_session(store, engine_on):
    pytest.importorskip("agents")
    from agents import Agent, FunctionTool, Runner

    from memory_summary.integrations.openai_agents import SummarySession
    from tests.integration.test_openai_agents_session import (
        NO_TRACING,
        ScriptedModel,
        reply,
    )

    first_id = archived_locker_code(store, engine_on, "alice")
    archived_locker_code(store, engine_on, "bob")  # never found for alice
    session = SummarySession("alice", AsyncSummaryEngine(engine_on))
    model = ScriptedModel(
        agents_call("search_history", '{"query": "locker code"}', 1),
        agents_call("read_history", f'{{"around_id": {first_id}, "after": 1}}', 2),
        agents_call("search_history", '{"query": 7}', 3),
        reply("Your locker code is 4417.", "msg_1"),
    )
    tools = session.recall_tools()
    agent = Agent(name="a", instructions="Be brief.", model=model, tools=tools)

    result = asyncio.run(
        Runner.run(agent, "My locker code?", session=session, run_config=NO_TRACING)
    )

    assert all(isinstance(tool, FunctionTool) for tool in tools)
    assert result.final_output == "Your locker code is 4417."
    found, read, bad = outputs_of(model.inputs[-1])
    assert f"[id {first_id}, archived, summary v" in found
    assert "4417" in found
    assert "Weekend chat" not in found.splitlines()[1]
    assert read.splitlines()[1] == (
        f"[id {first_id}, archived, summary v1] User: My locker code is 4417."
    )
    assert bad.startswith('Error: search_history: "query" is required')
    assert model.inputs[0][0]["content"].splitlines()[1].startswith("Older turns")
    bob_ids = {m.id for m in store.get_full_history("bob")}
    assert not any(f"[id {i}," in found for i in bob_ids)


# -- LangChain ------------------------------------------------------------------------


def test_langchain_runs_the_recall_tools_for_the_threads_session(store, engine_on):
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from memory_summary.integrations.langchain import SummaryMiddleware, recall_tools
    from tests.integration.test_langchain_middleware import ScriptedChatModel, thread

    first_id = archived_locker_code(store, engine_on, "alice")
    calls = [
        {"id": "c1", "name": "search_history", "args": {"query": "locker"}},
        {"id": "c2", "name": "read_history", "args": {"around_id": "x"}},
    ]
    model = ScriptedChatModel(
        replies=[
            AIMessage(content="", tool_calls=calls),
            AIMessage(content="Your locker code is 4417."),
        ]
    )
    tools = recall_tools(engine_on)
    agent = create_agent(model, tools=tools, middleware=[SummaryMiddleware(engine_on)])

    result = agent.invoke({"messages": [HumanMessage("Locker code?")]}, thread("alice"))

    answers = {
        m.tool_call_id: m.content for m in model.seen[1] if isinstance(m, ToolMessage)
    }
    hit = next(
        line
        for line in answers["c1"].splitlines()
        if line.startswith(f"[id {first_id}, ")
    )
    assert hit.startswith(f"[id {first_id}, archived, summary v1, score ")
    assert hit.endswith("] User: My locker code is 4417.")
    assert answers["c2"].startswith("Error: read_history: around_id must be an integer")
    assert result["messages"][-1].content == "Your locker code is 4417."


def test_langchain_tools_bound_to_a_session_and_async(store, engine_on):
    pytest.importorskip("langchain.agents")
    from memory_summary.integrations.langchain import recall_tools

    archived_locker_code(store, engine_on, "bob")
    search, read, compact = recall_tools(
        AsyncSummaryEngine(engine_on), session_id="bob"
    )

    found = asyncio.run(search.ainvoke({"query": "locker"}))
    schema = search.tool_call_schema
    requested = asyncio.run(compact.ainvoke({"focus": "the locker"}))

    assert "My locker code is 4417." in found
    assert read.name == "read_history"
    assert compact.name == "compact_context"
    assert requested.startswith("Compaction requested")
    assert engine_on.wait_idle(30)
    assert schema["properties"]["query"]["type"] == "string"


def test_langchain_sends_old_tool_results_masked_and_keeps_them(store, make_engine):
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool

    from memory_summary.integrations.langchain import SummaryMiddleware
    from tests.integration.test_langchain_middleware import ScriptedChatModel, thread

    @tool
    def disk_report(host: str) -> str:
        """Return a long disk report for a host."""
        return "\n".join(f"{host} /dev/sd{i}: 71% used" for i in range(200))

    replies = []
    for n, host in enumerate(["db1", "db2"]):
        call = {"id": f"call_{n}", "name": "disk_report", "args": {"host": host}}
        replies += [AIMessage(content="", tool_calls=[call]), AIMessage(content="Ok.")]
    model = ScriptedChatModel(replies=replies)
    config = SummaryConfig(mask_tool_results_after=1)
    engine = make_engine(store, config=config).start()
    agent = create_agent(
        model, tools=[disk_report], middleware=[SummaryMiddleware(engine)]
    )

    agent.invoke({"messages": [HumanMessage("db1?")]}, thread("alice"))
    result = agent.invoke({"messages": [HumanMessage("db2?")]}, thread("alice"))

    sent = [m for m in model.seen[-1] if isinstance(m, ToolMessage)]
    first_result = store.get_history("alice")[2]
    assert first_result.tool_call_id == "call_0"
    assert sent[0].content == (
        f"[tool result masked: disk_report, {len(first_result.text)} chars; "
        f"read_history(around_id={first_result.id}) shows it]"
    )
    assert sent[1].content.startswith("db2 /dev/sd0: 71% used")  # this turn's
    kept = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in kept] == [disk_report.invoke({"host": "db2"})]
    assert first_result.text == disk_report.invoke({"host": "db1"})  # stored whole


def test_agents_sdk_gets_old_tool_outputs_masked_and_the_store_keeps_them(
    store, make_engine
):
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool

    from memory_summary.integrations.openai_agents import SummarySession
    from tests.integration.test_openai_agents_session import (
        NO_TRACING,
        ScriptedModel,
        reply,
    )

    def report(host: str) -> str:
        return "\n".join(f"{host} /dev/sd{i}: 71% used" for i in range(200))

    @function_tool
    def disk_report(host: str) -> str:
        """Return a long disk report for a host."""
        return report(host)

    engine = make_engine(store, config=SummaryConfig(mask_tool_results_after=1))
    session = SummarySession("alice", engine.start())
    model = ScriptedModel(
        agents_call("disk_report", '{"host": "db1"}', 1),
        reply("Ok.", "msg_1"),
        agents_call("disk_report", '{"host": "db2"}', 2),
        reply("Ok.", "msg_2"),
    )
    agent = Agent(name="a", instructions="Be brief.", model=model, tools=[disk_report])

    for question in ("db1?", "db2?"):
        asyncio.run(Runner.run(agent, question, session=session, run_config=NO_TRACING))

    stored = store.get_history("alice")
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"] * 2
    assert [m.text for m in stored if m.role == "tool"] == [
        report("db1"),
        report("db2"),
    ]
    sent = outputs_of(model.inputs[-1])
    assert sent[0] == (
        f"[tool result masked: disk_report, {len(report('db1'))} chars; "
        f"read_history(around_id={stored[2].id}) shows it]"
    )
    assert sent[1] == report("db2")  # this turn's output
