"""Anthropic's on-demand compaction when something goes wrong: real SDK, loopback API.

Any invalid request takes the text path in the same call (a context-length one
folds a smaller chunk); a range with tool calls and no known tools is never sent
natively; a stop the text path refuses is refused; a block over the summary budget
or cut is not kept; pinned facts always go beside the block; a request sent back
carries one block, or none after ``drop_native``; the remembered system and tools
are clean, private copies.
"""

from __future__ import annotations

import json
import logging

import pytest

from memory_summary import Message, SummaryEngine
from memory_summary.adapters import AnthropicCompactingLLM, InMemoryStore
from memory_summary.domain import ToolCall
from tests.anthropic_server import AnthropicServer, Behaviour
from tests.integration.conversation import fill

MODEL = "claude-haiku-4-5"
SUMMARY = (
    "The user sent thirty numbered messages, from message zero to message "
    "twenty-nine, each stating one fact; the assistant acknowledged every one."
)
TEXT_SUMMARY = (
    "Thirty numbered messages were exchanged, from message zero to message "
    "twenty-nine, one fact in each; every one was acknowledged by the assistant."
)
BLOCK = {"type": "compaction", "content": SUMMARY, "signature": "c2lnbmF0dXJl"}
TOOL = {
    "name": "lookup",
    "description": "Look a word up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
}


def invalid(message):
    return {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
    }


@pytest.fixture
def server():
    with AnthropicServer() as running:
        yield running


@pytest.fixture
def llm(server):
    made = AnthropicCompactingLLM(
        MODEL, base_url=server.base_url, api_key="k", max_retries=0
    )
    yield made
    made.close()


@pytest.fixture
def store():
    return InMemoryStore()


def fill_with_tools(store, session_id="s1", rounds=8):
    for i in range(rounds):
        call = ToolCall(f"c{i}", "lookup", '{"q": "x"}')
        store.save_message(session_id, Message("user", f"question {i}."))
        store.save_message(session_id, Message("assistant", "", tool_calls=[call]))
        store.save_message(
            session_id,
            Message("tool", f"result {i}.", tool_call_id=f"c{i}", name="lookup"),
        )
        store.save_message(session_id, Message("assistant", f"answer {i}."))


def compress(store, llm, **engine_options):
    with SummaryEngine(store, llm, **engine_options) as engine:
        outcome = engine.compress("s1").result(timeout=20)
        return outcome, engine.summary("s1")


# -- any invalid request takes the text path ---------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "Requests which include tool_use or tool_result blocks must define tools.",
        "Unexpected value(s) `compact-2026-09-04` for the `anthropic-beta` header.",
        "max_tokens: too big",
    ],
)
def test_any_invalid_compaction_request_takes_the_text_path_once(
    server, store, llm, message, caplog
):
    server.then(Behaviour(status=400, error=invalid(message)), Behaviour(text=SUMMARY))
    fill(store, "s1", 30)

    with caplog.at_level(logging.WARNING):
        outcome, record = compress(store, llm)

    assert outcome.kind == "compressed"
    assert (record.text, record.native, record.unsummarized) == (SUMMARY, None, ())
    first, second = server.requests
    assert "compaction" in first
    assert "compaction" not in second  # the rendered text request
    assert "using the text path" in caplog.text


def test_an_invalid_text_request_too_fails_after_one_fallback(server, store, llm):
    server.then(Behaviour(status=400, error=invalid("max_tokens: too big")))
    fill(store, "s1", 30)

    outcome, _ = compress(store, llm)

    assert outcome.kind == "trimmed"  # a failed summary, as with any summarizer
    assert ["compaction" in body for body in server.requests] == [True, False]


def test_a_context_length_400_folds_a_smaller_chunk_natively(server, store, llm):
    too_long = invalid("prompt is too long: 300000 tokens > 200000 maximum")
    server.then(Behaviour(status=400, error=too_long), Behaviour(compaction=BLOCK))
    fill(store, "s1", 30)

    outcome, record = compress(store, llm)

    assert outcome.kind == "compressed"
    assert record.native is not None
    first, second = server.requests[:2]
    assert "compaction" in second  # no text path: a smaller native fold
    assert len(second["messages"]) < len(first["messages"])


def test_a_range_with_tool_calls_and_no_known_tools_takes_the_text_path(
    server, store, llm
):
    server.then(Behaviour(text=SUMMARY))
    fill_with_tools(store)

    outcome, record = compress(store, llm)

    assert outcome.kind == "compressed"
    assert (record.text, record.native) == (SUMMARY, None)
    assert all("compaction" not in body for body in server.requests)


def test_prepare_keeps_the_tools_an_earlier_request_named(server, store, llm):
    server.then(Behaviour(compaction=BLOCK))
    fill_with_tools(store)

    with SummaryEngine(store, llm) as engine:
        engine.assemble_anthropic("Be brief.", [], "s1", tools=[TOOL])
        engine.conversation("s1", model=MODEL).prepare(
            system="Be terse.", format="anthropic"
        )
        outcome = engine.compress("s1").result(timeout=20)

    body = server.requests[-1]
    assert outcome.kind == "compressed"
    assert "compaction" in body
    assert body["tools"] == [TOOL]
    assert body["system"] == "Be terse."  # the system is the latest one


# -- the text path's stop checks ---------------------------------------------------


@pytest.mark.parametrize("stop", ["max_tokens", "refusal"])
def test_a_compaction_stopped_short_is_refused(server, store, llm, stop):
    server.then(Behaviour(compaction=BLOCK, stop_reason=stop))
    fill(store, "s1", 30)

    outcome, record = compress(store, llm)

    assert outcome.kind == "trimmed"  # the summary failed; nothing cut is kept
    assert record.native is None
    assert SUMMARY not in record.text
    assert len(server.requests) == 1


def test_a_compaction_at_the_context_window_folds_a_smaller_chunk(server, store, llm):
    server.then(
        Behaviour(compaction=BLOCK, stop_reason="model_context_window_exceeded"),
        Behaviour(compaction=BLOCK),
    )
    fill(store, "s1", 30)

    outcome, record = compress(store, llm)

    assert outcome.kind == "compressed"
    assert record.native is not None
    first, second = server.requests[:2]
    assert len(second["messages"]) < len(first["messages"])


# -- the summary budget ------------------------------------------------------------


def test_a_block_over_the_summary_budget_is_not_kept(server, store, llm):
    huge = dict(BLOCK, content=SUMMARY + " More." * 20_000)
    server.then(Behaviour(compaction=huge), Behaviour(text="hello"))
    fill(store, "s1", 30)

    with SummaryEngine(store, llm) as engine:
        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")
        system, messages = engine.assemble_anthropic(
            "Be brief.", [{"role": "user", "content": "Hi"}], "s1", model=MODEL
        )

    assert outcome.kind == "compressed"
    assert record.native is None
    assert record.text.startswith(SUMMARY)
    assert record.tokens <= server.requests[0]["max_tokens"]  # the budget
    assert "compaction" not in json.dumps(messages)
    assert SUMMARY in system


# -- pinned facts beside the block -------------------------------------------------


def fill_with_pins(store, count=30):
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        text = (
            f"message {i}: my order is ORD-{i}00 at /srv/app/file{i}.py"
            if role == "user"
            else "Noted."
        )
        store.save_message("s1", Message(role, text))


@pytest.mark.parametrize("content", [SUMMARY + "\n\n", " " + SUMMARY, SUMMARY + "  \n"])
def test_pins_go_beside_the_block_whatever_the_cleanup_did(server, store, llm, content):
    server.then(Behaviour(compaction=dict(BLOCK, content=content)))
    fill_with_pins(store)

    with SummaryEngine(store, llm) as engine:
        engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")
        system, messages = engine.assemble_anthropic(
            "Be brief.", [{"role": "user", "content": "Hi"}], "s1", model=MODEL
        )

    assert record.native is not None
    assert record.native.beside.startswith("Pinned facts: ")
    assert "ORD-800" in record.native.beside  # the last folded one
    assert messages[0]["content"][0]["content"] == content  # verbatim
    assert record.native.beside in system
    assert SUMMARY not in system


def test_a_block_whose_body_the_pins_would_cut_goes_as_text(server, store):
    small = AnthropicCompactingLLM(
        MODEL, base_url=server.base_url, api_key="k", max_retries=0, context_tokens=8192
    )
    sentence = "The user discussed a series of orders and files in thirty messages. "
    body = (sentence * 100)[: 499 * 4].strip()  # about the budget: pins cut it
    server.then(Behaviour(compaction=dict(BLOCK, content=body)))
    fill_with_pins(store)

    with SummaryEngine(store, small) as engine:
        engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")
        system, messages = engine.assemble_anthropic(
            "Be brief.", [{"role": "user", "content": "Hi"}], "s1", model=MODEL
        )
    small.close()

    assert server.requests[0]["max_tokens"] == 499
    assert record.native is None
    assert "Pinned facts: " in record.text
    assert not record.text.startswith(body)  # the body was cut for the pins
    assert "compaction" not in json.dumps(messages)
    assert "ORD-800" in system


# -- a request sent back carries one block -----------------------------------------


def test_a_request_sent_back_carries_one_block_and_none_after_a_drop(
    server, store, llm
):
    server.then(Behaviour(compaction=BLOCK))
    fill(store, "s1", 30)

    with SummaryEngine(store, llm) as engine:
        engine.compress("s1").result(timeout=20)
        system, messages = "Be brief.", [{"role": "user", "content": "hi"}]
        counts = []
        for turn in range(3):
            system, messages = engine.assemble_anthropic(
                system, messages, "s1", model=MODEL
            )
            counts.append(json.dumps(messages).count('"compaction"'))
            messages = [
                *messages,
                {"role": "assistant", "content": f"reply {turn}"},
                {"role": "user", "content": f"question {turn}"},
            ]
        engine.drop_native("s1", "400: invalid compaction block")
        system, dropped = engine.assemble_anthropic(system, messages, "s1", model=MODEL)

    assert counts == [1, 1, 1]
    assert messages[0]["content"] == [BLOCK]
    assert "compaction" not in json.dumps(dropped)
    assert system.count(SUMMARY) == 1
    assert dropped[-1] == {"role": "user", "content": "question 2"}
    assert [m["content"] for m in dropped].count("reply 1") == 1


def test_a_new_block_replaces_the_one_sent_back(server, store, llm):
    second = dict(BLOCK, content=SUMMARY + " Then ten more.", signature="c2Vjb25k")
    server.then(Behaviour(compaction=BLOCK), Behaviour(compaction=second))
    fill(store, "s1", 30)

    with SummaryEngine(store, llm) as engine:
        engine.compress("s1").result(timeout=20)
        system, messages = engine.assemble_anthropic(
            "Be brief.", [{"role": "user", "content": "hi"}], "s1", model=MODEL
        )
        fill(store, "s1", 30, start=30)
        engine.compress("s1").result(timeout=20)
        _, again = engine.assemble_anthropic(system, messages, "s1", model=MODEL)

    assert again[0]["content"] == [second]
    assert "c2lnbmF0dXJl" not in json.dumps(again)


def test_a_host_block_later_in_the_request_is_kept(server, store, llm):
    server.then(Behaviour(compaction=BLOCK))
    fill(store, "s1", 30)
    own = {"type": "compaction", "content": "The host's own.", "signature": "aG9zdA=="}
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [own, {"type": "text", "text": "ok"}]},
        {"role": "user", "content": "next"},
    ]

    with SummaryEngine(store, llm) as engine:
        engine.compress("s1").result(timeout=20)
        _, messages = engine.assemble_anthropic("Be brief.", history, "s1", model=MODEL)

    assert messages[0]["content"] == [BLOCK]
    assert own in messages[2]["content"]


# -- the remembered system and tools -----------------------------------------------


def test_a_host_changing_its_tool_dicts_changes_nothing_sent(server, store, llm):
    server.then(Behaviour(compaction=BLOCK))
    fill(store, "s1", 30)
    tool = json.loads(json.dumps(TOOL))

    with SummaryEngine(store, llm) as engine:
        engine.assemble_anthropic("Be brief.", [], "s1", tools=[tool])
        tool["input_schema"]["properties"]["q"] = object()  # not JSON any more
        tool["name"] = "changed"
        engine.compress("s1").result(timeout=20)

    assert server.requests[-1]["tools"] == [TOOL]


def test_a_system_and_tools_over_the_cap_are_not_sent(server, store, llm):
    server.then(Behaviour(compaction=BLOCK))
    fill(store, "s1", 30)
    large = "Be brief. " + "x" * (300 * 1024)

    with SummaryEngine(store, llm) as engine:
        engine.assemble_anthropic("Be brief.", [], "s1", tools=[TOOL])
        engine.assemble_anthropic(large, [], "s1", tools=[TOOL])
        outcome = engine.compress("s1").result(timeout=20)

    body = server.requests[-1]
    assert outcome.kind == "compressed"
    assert "system" not in body  # none, not a stale one
    assert "tools" not in body
