"""The recall tools through the public API, on every store."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from openai.types.responses import ResponseFunctionToolCall

from memory_summary import (
    Message,
    MessageError,
    SummaryConfig,
    SummaryEngine,
    ToolCall,
    messages_to_openai,
)
from memory_summary.adapters import TiktokenCounter
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.testing.fakes import ScriptedSummarizer
from memory_summary.testing.strategies import HOSTILE_PIECES, texts
from tests.contract.stores import every_store

REPLY = "Summary: the user talked about their travel plans."
O200K = TiktokenCounter("o200k_base").count


def call(name: str, arguments: object, call_id: str = "call_r1") -> dict[str, object]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": text},
    }


def archived_session(store, engine, session_id: str = "alice") -> None:
    """Fold a conversation whose first turn names the locker code."""
    store.save_message(session_id, Message("user", "My locker code is 4417, Lisbon."))
    for i in range(14):
        role = "assistant" if i % 2 else "user"
        store.save_message(session_id, Message(role, f"Small talk number {i}."))
    outcome = engine.compress(session_id).result(timeout=30)
    assert outcome.kind == "compressed"


@pytest.fixture
def engine_on(store, make_engine):
    config = SummaryConfig(threshold=10, keep_recent=4, recall_hint=True)
    return make_engine(store, ScriptedSummarizer(REPLY), config=config).start()


@every_store
def test_search_finds_an_archived_turn_with_its_id_and_lineage(store, engine_on):
    archived_session(store, engine_on)
    first = store.get_full_history("alice")[0]

    message = engine_on.call_recall_tool(
        "alice", call("search_history", {"query": "locker code"})
    )

    assert (message.role, message.tool_call_id) == ("tool", "call_r1")
    assert message.name == "search_history"
    lines = message.text.splitlines()
    assert lines[1].startswith(f"[id {first.id}, archived, summary v")
    assert "My locker code is 4417" in lines[1]


@every_store
def test_read_returns_the_turns_around_an_id_in_order(store, engine_on):
    archived_session(store, engine_on)
    ids = [m.id for m in store.get_full_history("alice")]

    message = engine_on.call_recall_tool(
        "alice", call("read_history", {"around_id": ids[3], "before": 1, "after": 1})
    )

    lines = message.text.splitlines()
    assert lines[0] == f"Messages {ids[2]} to {ids[4]} of this conversation, in order:"
    assert [line.split(",")[0] for line in lines[1:]] == [f"[id {i}" for i in ids[2:5]]


def test_an_id_of_another_session_is_a_tool_message_not_an_error(store, engine_on):
    archived_session(store, engine_on, "bob")
    bobs = store.get_full_history("bob")[0].id
    store.save_message("alice", Message("user", "hello"))

    message = engine_on.call_recall_tool(
        "alice", call("read_history", {"around_id": bobs})
    )

    assert message.text.startswith("Error: read_history: ")
    assert str(bobs) in message.text
    assert "4417" not in message.text


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("search_history", "{oops", "not valid JSON"),
        ("search_history", {"query": ["a"]}, '"query" is required'),
        ("search_history", {"query": "+ - ( ) * \" ' ; --"}, "Error: search_history"),
        ("read_history", {"around_id": "12"}, "must be an integer"),
        ("delete_history", {}, "unknown tool"),
    ],
)
def test_bad_calls_answer_with_what_was_wrong(store, engine_on, name, arguments, says):
    store.save_message("alice", Message("user", "hello"))

    message = engine_on.call_recall_tool("alice", call(name, arguments))

    assert message.role == "tool"
    assert message.tool_call_id == "call_r1"
    assert says in message.text


def test_a_masked_result_is_read_back_by_its_tool_call_id(store, make_engine):
    config = SummaryConfig(mask_tool_results_after=1)
    engine = make_engine(store, config=config).start()
    tool_call = ToolCall("call_logs", "read_logs", '{"path": "/var/log/app.log"}')
    store.save_message("s", Message("user", "Why did it crash?"))
    store.save_message("s", Message("assistant", None, tool_calls=[tool_call]))
    body = "disk full on /dev/sda1\n" * 100
    store.save_message("s", Message("tool", body, tool_call_id="call_logs"))
    store.save_message("s", Message("assistant", "The disk is full."))
    store.save_message("s", Message("user", "And now?"))
    request = engine.assemble_openai(messages_to_openai(store.get_history("s")), "s")
    stub = request[2]["content"]
    assert 'read_history(tool_call_id="call_logs")' in stub

    message = engine.call_recall_tool(
        "s", call("read_history", {"tool_call_id": "call_logs", "before": 0})
    )

    assert "Tool result(read_logs): disk full on /dev/sda1" in message.text


def test_the_result_never_exceeds_the_cap(store, make_engine):
    config = SummaryConfig(recall_result_max_tokens=300)
    engine = make_engine(store, config=config).start()
    for i in range(12):
        store.save_message("s", Message("user", f"quota report {i}: " + "ok " * 3000))

    searched = engine.call_recall_tool("s", call("search_history", {"query": "quota"}))
    read = engine.call_recall_tool("s", call("read_history", {"around_id": 1}))

    assert O200K(searched.text) <= 300
    assert O200K(read.text) <= 300
    assert "quota report" in searched.text


@every_store
def test_the_asked_message_is_shown_when_every_turn_must_be_cut(store, make_engine):
    engine = make_engine(store).start()
    for i in range(40):
        store.save_message("s", Message("user", f"quota report {i}: " + "ok " * 3000))
    ids = [m.id for m in store.get_history("s")]

    read = engine.call_recall_tool(
        "s", call("read_history", {"around_id": ids[-1], "before": 3, "after": 0})
    )
    searched = engine.call_recall_tool(
        "s", call("search_history", {"query": "quota report", "limit": 5})
    )

    assert [line.split(",")[0] for line in read.text.splitlines()[1:]] == [
        f"[id {i}" for i in ids[-4:]
    ]
    assert O200K(read.text) <= 1500
    assert len(re.findall(r"^\[id \d+, ", searched.text, re.MULTILINE)) == 5
    assert "cut to fit" not in searched.text
    assert O200K(searched.text) <= 1500


def test_an_unknown_tool_call_id_is_answered_within_the_cap(store, engine_on):
    wanted = "call_" + "x7" * 30_000

    message = engine_on.call_recall_tool(
        "alice", call("read_history", {"tool_call_id": wanted})
    )

    assert message.text.startswith("Error: read_history: no tool result")
    assert O200K(message.text) <= 1500


huge = st.tuples(
    st.sampled_from(["x", "ab ", "漢", "👩‍👩‍👧", "\ud800", "{", '"']),
    st.integers(1, 20_000),
).map(lambda pair: pair[0] * pair[1])
values = st.one_of(
    huge, texts(100), st.integers(-(2**70), 2**70), st.booleans(), st.none()
)
keys = st.one_of(
    st.sampled_from(
        ["query", "limit", "archived_only", "around_id", "tool_call_id", "before"]
    ),
    huge,
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.one_of(st.sampled_from(["search_history", "read_history"]), huge),
    arguments=st.one_of(
        st.dictionaries(keys, values, max_size=4).map(json.dumps), huge
    ),
    call_id=st.one_of(st.just("c1"), huge),
)
def test_every_tool_message_error_or_not_fits_the_cap(
    store, make_engine, name, arguments, call_id
):
    engine = make_engine(store, config=SummaryConfig(recall_result_max_tokens=100))
    store.save_message("s", Message("user", "quota " * 2000))

    message = engine.call_recall_tool("s", call(name, arguments, call_id))

    assert message.role == "tool"
    assert O200K(message.text) <= 100


def test_tool_call_shapes_the_host_may_pass(store, engine_on):
    store.save_message("alice", Message("user", "The parcel number is PX-99."))
    arguments = '{"query": "parcel"}'
    shapes = [
        ToolCall("c1", "search_history", arguments),
        call("search_history", arguments, "c1"),
        {"id": "c1", "name": "search_history", "arguments": {"query": "parcel"}},
        ChatCompletionMessageFunctionToolCall.model_validate(
            call("search_history", arguments, "c1")
        ),
        ResponseFunctionToolCall(
            type="function_call",
            id="fc_1",
            call_id="c1",
            name="search_history",
            arguments=arguments,
        ),
    ]

    answers = [engine_on.call_recall_tool("alice", shape) for shape in shapes]

    assert {a.text for a in answers} == {answers[0].text}
    assert "PX-99" in answers[0].text
    assert {a.tool_call_id for a in answers} == {"c1"}


def test_a_call_without_an_id_is_the_hosts_mistake(engine_on):
    with pytest.raises(MessageError, match="id"):
        engine_on.call_recall_tool("alice", {"function": {"name": "search_history"}})


def test_a_malformed_call_with_an_id_is_answered(store, engine_on):
    message = engine_on.call_recall_tool("alice", {"id": "c9", "function": {}})

    assert message.tool_call_id == "c9"
    assert message.text.startswith("Error: the tool call is malformed")


def test_the_hint_is_in_the_injected_summary(store, engine_on):
    archived_session(store, engine_on)

    prompt = engine_on.build_prompt("alice")

    assert prompt.splitlines()[1].startswith("Older turns are archived, not lost")


def test_the_async_engine_runs_the_tools(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(REPLY)).start()
    store.save_message("s", Message("user", "Meet at gate B12."))

    async def main():
        aengine = AsyncSummaryEngine(engine)
        names = [t["function"]["name"] for t in aengine.recall_tools()]
        answer = await aengine.call_recall_tool(
            "s", call("search_history", {"query": "gate"})
        )
        return names, answer

    names, answer = asyncio.run(main())

    assert names == ["search_history", "read_history", "compact_context"]
    assert "gate B12" in answer.text


def test_recall_tools_returns_the_definitions(store):
    with SummaryEngine(store) as engine:
        tools = engine.recall_tools()
        reading = engine.recall_tools(compaction=False)

    assert [t["function"]["name"] for t in tools] == [
        "search_history",
        "read_history",
        "compact_context",
    ]
    assert [t["function"]["name"] for t in reading] == [
        "search_history",
        "read_history",
    ]


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.one_of(texts(200), st.sampled_from(HOSTILE_PIECES)),
    limit=st.one_of(st.integers(-3, 30), st.text(max_size=3), st.none()),
)
@every_store
def test_any_query_from_a_model_gets_a_tool_message_within_the_cap(
    store, engine_on, query, limit
):
    store.save_message("alice", Message("user", "Meet at gate B12 " + "ok " * 900))
    arguments = {"query": query} if limit is None else {"query": query, "limit": limit}

    message = engine_on.call_recall_tool("alice", call("search_history", arguments))

    assert message.role == "tool"
    assert O200K(message.text) <= 1500
    assert "Traceback" not in message.text
