"""The conversation handle given hostile input: refused whole, or sent as APIs take it.

What a hunt over odd replies, users and usages found: an Anthropic user turn of
tool results and text whose results ``prepare`` dropped, a tool call whose arguments
are JSON but no object sent to Anthropic as a ``tool_use`` input the API refuses (so
every later request failed), a blank refusal stored as a reply, a usage entry that
is no mapping refused under another field's name, an injected summary stored where
no request would ever send it.
"""

from __future__ import annotations

import asyncio
import json

import attrs
import pytest

from memory_summary import Message, MessageError, SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.domain import summary_message
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.integration.test_conversation import CONFIG, completion

RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"}
TEXT = {"type": "text", "text": "and then?"}


@pytest.mark.parametrize(
    "blocks", [[TEXT, RESULT], [RESULT, TEXT], [RESULT, {**RESULT, "tool_use_id": "t"}]]
)
def test_a_user_turn_holding_tool_results_is_refused_whole(blocks):
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("jo")
        chat.prepare("hi")
        with pytest.raises(MessageError) as raised:
            chat.prepare({"role": "user", "content": blocks})
        assert raised.value.field == "user"
        assert [m.content for m in store.get_history("jo")] == ["hi"]


def test_an_async_user_turn_holding_tool_results_is_refused_whole():
    store = InMemoryStore()

    async def main():
        engine = SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG)
        async with AsyncSummaryEngine(engine) as engine:
            chat = engine.conversation("ko")
            with pytest.raises(MessageError, match="add"):
                await chat.prepare({"role": "user", "content": [TEXT, RESULT]})

    asyncio.run(main())
    assert store.get_history("ko") == []


@pytest.mark.parametrize("arguments", ["null", "[1, 2]", "5", '"text"', "true"])
def test_arguments_that_are_json_but_no_object_reach_anthropic_as_an_object(
    arguments,
):
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer()) as engine:
        chat = engine.conversation("lu")
        chat.prepare("look it up")
        reply = completion(calls=[("c1", "lookup", {})])
        reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = (
            arguments
        )
        chat.record(reply)
        chat.add({"role": "tool", "tool_call_id": "c1", "content": "found"})
        turns = chat.prepare(format="anthropic")["messages"]
        sent = chat.prepare()[1]["tool_calls"][0]["function"]["arguments"]
    (use,) = turns[1]["content"]
    assert use["input"] == {"arguments": arguments}  # the text kept, as an object
    assert json.loads(sent) == json.loads(arguments)  # OpenAI's: the model's own


def test_an_anthropic_tool_use_whose_input_is_no_object_is_sent_back_as_one():
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer()) as engine:
        chat = engine.conversation("mo")
        chat.prepare("go")
        use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": [1, 2]}
        chat.record({"type": "message", "role": "assistant", "content": [use]})
        chat.add({"role": "user", "content": [RESULT]})
        turns = chat.prepare(format="anthropic")["messages"]
    assert turns[1]["content"][0]["input"] == {"arguments": "[1, 2]"}


@pytest.mark.parametrize("content", [None, "", " \n"])
def test_a_blank_refusal_is_no_reply(content):
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("nu")
        chat.prepare("hi")
        blank = {"role": "assistant", "content": content, "refusal": " \t"}
        with pytest.raises(MessageError, match="empty"):
            chat.record({"choices": [{"message": blank}]})
        said = {"role": "assistant", "content": content, "refusal": "I can't."}
        assert chat.record({"choices": [{"message": said}]}).reply.refusal == "I can't."
    assert [m.role for m in store.get_history("nu")] == ["user", "assistant"]


@pytest.mark.parametrize("entry", [1, "compaction", [{"input_tokens": 3}]])
def test_a_usage_entry_that_is_no_mapping_is_refused_under_its_own_name(entry):
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("ox")
        chat.prepare("hi")
        usage = {"input_tokens": 5, "iterations": [{"input_tokens": 4}, entry]}
        with pytest.raises(MessageError) as raised:
            chat.record(completion("hello"), usage=usage)
        assert raised.value.field == "usage.iterations[1]"
        # the reply's own usage, read leniently, never costs the reply
        reply = completion("hello")
        reply["usage"] = usage
        assert chat.record(reply).reply.content == "hello"
    assert [m.content for m in store.get_history("ox")] == ["hi", "hello"]


def test_a_summary_the_engine_injected_is_never_stored_as_history():
    # assemble's summary message, handed back: stored, no request would carry it
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("pi")
        chat.prepare("hi")
        injected = summary_message("We agreed on Casa Azul.")
        calls = (
            lambda: chat.prepare(attrs.evolve(injected, role="user")),
            lambda: chat.add(Message("tool", "r", tool_call_id="x"), injected),
            lambda: chat.record(attrs.evolve(injected, role="assistant")),
        )
        for call in calls:
            with pytest.raises(MessageError, match="summary"):
                call()
        assert chat.prepare() == [{"role": "user", "content": "hi"}]
    assert [m.content for m in store.get_history("pi")] == ["hi"]
