"""The testing kit's scripted chat model, in process and under the real SDKs.

``ChatModelServer`` serves ``ScriptedChatModel`` on loopback; the openai and
anthropic SDKs talk to it as to their APIs: replies, tool calls, streams with usage,
errors; and a conversation handle's turn goes through it end to end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary import SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.testing import (
    ChatModelError,
    ChatModelServer,
    Failure,
    Reply,
    ScriptedChatModel,
    chat_models,
    count_tokens,
)
from memory_summary.testing.fakes import ScriptedSummarizer

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

HELLO = [{"role": "user", "content": "Hello there"}]


@pytest.fixture
def server():
    with ChatModelServer() as served:
        yield served


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=server.base_url, api_key="none") as made:
        yield made


@pytest.fixture
def claude(server):
    with anthropic.Anthropic(base_url=server.base_url, api_key="none") as made:
        yield made


def test_the_default_reply_echoes_the_last_message_and_counts_the_request(client):
    completion = client.chat.completions.create(model="m", messages=HELLO)

    assert completion.choices[0].message.content == "echo: Hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "m"
    assert completion.usage.prompt_tokens == count_tokens({"messages": HELLO}) == 3
    assert completion.usage.completion_tokens == 3


def test_scripted_replies_come_in_order_and_the_last_repeats(server, client):
    server.model.then("One.", Reply("Two.", prompt_tokens=7000))

    texts = [
        client.chat.completions.create(model="m", messages=HELLO) for _ in range(3)
    ]

    assert [c.choices[0].message.content for c in texts] == ["One.", "Two.", "Two."]
    assert [c.usage.prompt_tokens for c in texts] == [3, 7000, 7000]
    assert [r["messages"] for r in server.model.requests] == [HELLO] * 3


def test_a_scripted_tool_call_reaches_the_openai_sdk(server, client):
    server.model.then(Reply(tool_calls=[("get_weather", {"city": "Oslo"})]))

    completion = client.chat.completions.create(model="m", messages=HELLO)

    (call,) = completion.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Oslo"}
    assert completion.choices[0].finish_reason == "tool_calls"


def test_a_scripted_failure_is_the_openai_sdks_error(server, client):
    server.model.then(Failure(429, "slow down"), "Fine.")

    with pytest.raises(openai.RateLimitError, match="slow down"):
        client.with_options(max_retries=0).chat.completions.create(
            model="m", messages=HELLO
        )
    again = client.chat.completions.create(model="m", messages=HELLO)

    assert again.choices[0].message.content == "Fine."


def test_an_openai_stream_ends_with_the_usage_it_was_asked_for(server, client):
    server.model.then(
        Reply("It is sunny today.", tool_calls=[("note", {"text": "sun"})])
    )

    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=HELLO,
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "It is sunny today."
    calls = [c.choices[0].delta.tool_calls for c in chunks if c.choices]
    assert [call[0].function.name for call in calls if call] == ["note"]
    assert chunks[-1].choices == []
    assert chunks[-1].usage.prompt_tokens == 3
    assert all(c.usage is None for c in chunks[:-1])


def test_an_openai_stream_without_include_usage_reports_none(client):
    chunks = list(
        client.chat.completions.create(model="m", messages=HELLO, stream=True)
    )

    assert all(c.usage is None for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == (
        "echo: Hello there"
    )


def test_the_anthropic_sdk_gets_messages_tool_uses_and_usage(server, claude):
    server.model.then("Hi.", Reply("Let me look.", tool_calls=[("lookup", {"q": 1})]))

    first = claude.messages.create(
        model="claude-x", max_tokens=100, system="Be brief.", messages=HELLO
    )
    second = claude.messages.create(model="claude-x", max_tokens=100, messages=HELLO)

    assert first.content[0].text == "Hi."
    assert first.stop_reason == "end_turn"
    assert first.usage.input_tokens == 5  # "Be brief." and the message
    assert second.stop_reason == "tool_use"
    assert second.content[1].name == "lookup"
    assert second.content[1].input == {"q": 1}
    assert server.model.requests[0]["system"] == "Be brief."


def test_an_anthropic_stream_assembles_into_the_same_message(server, claude):
    server.model.then(Reply("Sunny.", tool_calls=[("note", {"text": "sun"})]))

    with claude.messages.stream(
        model="claude-x", max_tokens=100, messages=HELLO
    ) as stream:
        message = stream.get_final_message()

    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "Sunny."
    assert message.content[1].input == {"text": "sun"}
    assert message.usage.input_tokens == 3
    assert message.usage.output_tokens == 3


def test_an_anthropic_failure_is_the_anthropic_sdks_error(server, claude):
    server.model.then(Failure(529, "Overloaded"))

    with pytest.raises(anthropic.APIStatusError, match="Overloaded") as raised:
        claude.with_options(max_retries=0).messages.create(
            model="claude-x", max_tokens=100, messages=HELLO
        )

    assert raised.value.status_code == 529


def test_a_model_server_waits_delay_s_before_each_answer(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(chat_models, "time", SimpleNamespace(sleep=slept.append))

    with (
        ChatModelServer(delay_s=0.02) as served,
        openai.OpenAI(base_url=served.base_url, api_key="none") as client,
    ):
        client.chat.completions.create(model="m", messages=HELLO)
        client.chat.completions.create(model="m", messages=HELLO)

    assert slept == [0.02, 0.02]


def test_in_process_calls_answer_like_the_sdk_and_raise_scripted_failures():
    model = ScriptedChatModel("Hi.", Failure(400, "bad"))

    reply = model(model="m", messages=HELLO)

    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "Hi."}
    assert reply["usage"] == {
        "prompt_tokens": 3,
        "completion_tokens": 1,
        "total_tokens": 4,
    }
    with pytest.raises(ChatModelError) as raised:
        model.message({"model": "m", "messages": HELLO})
    assert raised.value.status == 400
    assert raised.value.body["error"]["type"] == "invalid_request_error"


def test_a_script_refuses_what_is_not_a_reply():
    with pytest.raises(TypeError, match="str, Reply or Failure"):
        ScriptedChatModel(42)  # type: ignore[arg-type]


@given(st.lists(st.text(max_size=40), min_size=1, max_size=6), st.text(max_size=40))
def test_a_longer_request_never_counts_fewer_tokens(texts, more):
    messages = [{"role": "user", "content": text} for text in texts]
    longer = [*messages, {"role": "assistant", "content": more}]

    assert count_tokens({"messages": longer}) >= count_tokens({"messages": messages})
    assert count_tokens({"messages": messages}) >= len(messages)


def test_a_conversation_turn_runs_through_the_openai_sdk(client, server):
    engine = SummaryEngine(InMemoryStore(), llm=ScriptedSummarizer("a summary"))
    chat = engine.conversation("alice", model="gpt-4o")
    try:
        request = chat.prepare("Remember K-7.", system="Be brief.")
        recorded = chat.record(
            client.chat.completions.create(model="gpt-4o", messages=request)
        )
        second = chat.prepare("Which code?", system="Be brief.")
    finally:
        engine.stop()

    assert recorded.reply.content == "echo: Remember K-7."
    assert server.model.requests[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Remember K-7."},
    ]
    assert second[-2:] == [
        {"role": "assistant", "content": "echo: Remember K-7."},
        {"role": "user", "content": "Which code?"},
    ]


def test_a_conversation_turn_runs_through_the_anthropic_sdk(claude):
    engine = SummaryEngine(InMemoryStore(), llm=ScriptedSummarizer("a summary"))
    chat = engine.conversation("bob", model="claude-x")
    try:
        request = chat.prepare("Hi!", system="Be brief.", format="anthropic")
        message = claude.messages.create(model="claude-x", max_tokens=64, **request)
        recorded = chat.record(message)
        history = engine.memory.get_history("bob")
    finally:
        engine.stop()

    assert recorded.reply.text == "echo: Hi!"
    assert [(m.role, m.text) for m in history] == [
        ("user", "Hi!"),
        ("assistant", "echo: Hi!"),
    ]


def test_the_chat_model_imports_neither_pytest_nor_any_sdk():
    probe = (
        "import sys\n"
        "from memory_summary.testing import ChatModelServer, ScriptedChatModel\n"
        "heavy = ('pytest', 'hypothesis', 'openai', 'anthropic', 'fastapi')\n"
        "print([name for name in heavy if name in sys.modules])\n"
    )

    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )

    assert done.stdout.strip() == "[]"
