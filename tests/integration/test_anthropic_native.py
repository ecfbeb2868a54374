"""Anthropic's on-demand compaction: the real anthropic client against the loopback API.

The request's shape (the beta header, the top-level ``compaction``, the host's system
and tools), the block kept verbatim with the record and sent first on the next
request, and every fault falling back to the plain summary.
"""

from __future__ import annotations

import anthropic
import pytest

from memory_summary import Message, SummaryEngine
from memory_summary.adapters import AnthropicCompactingLLM
from memory_summary.adapters.summarizers.anthropic.native import COMPACTION_BETA
from memory_summary.domain import NAMESPACE, NativeArtifact, read_record
from tests.anthropic_server import AnthropicServer, Behaviour
from tests.contract.stores import every_store
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
BLOCK = {
    "type": "compaction",
    "content": SUMMARY,
    "signature": "c2lnbmF0dXJl",
    "tool_changes": [],
    "later_field": {"nested": [1, None, "x"]},  # unknown: sent back unchanged
}
TOOL = {
    "name": "lookup",
    "description": "Look a word up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
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


def compacted(server, store, llm, block=BLOCK, filled=False, **behaviour):
    """Compress session s1 (30 messages, unless ``filled``) once; return its record."""
    server.then(Behaviour(compaction=block, **behaviour))
    if not filled:
        fill(store, "s1", 30)
    with SummaryEngine(store, llm) as engine:
        engine.assemble_anthropic("Be brief.", [], "s1", tools=[TOOL])
        outcome = engine.compress("s1").result(timeout=20)
        return outcome, engine.summary("s1")


def test_the_compaction_request_carries_the_beta_the_field_system_and_tools(
    server, store, llm
):
    outcome, _ = compacted(server, store, llm)

    body, headers = server.requests[-1], server.headers[-1]
    assert outcome.kind == "compressed"
    assert COMPACTION_BETA in headers["anthropic-beta"]
    assert body["compaction"] == {"type": "summarize"}
    assert body["system"] == "Be brief."
    assert body["tools"] == [TOOL]
    assert body["messages"][0] == {"role": "user", "content": "message 0 of s1."}
    assert "stream" not in body


@every_store
def test_the_block_is_the_record_text_and_kept_verbatim(server, store, llm):
    _, record = compacted(server, store, llm)

    assert record.text == SUMMARY
    assert record.native == NativeArtifact("anthropic", MODEL, BLOCK, beside="")
    stored = store.get_metadata(NAMESPACE, "s1")
    assert stored["native"]["block"] == BLOCK


@every_store
def test_the_next_request_sends_the_block_first_in_place_of_the_text(
    server, store, llm
):
    compacted(server, store, llm)
    server.then(Behaviour(text="hello"))
    history = [{"role": "user", "content": "next question"}]

    with SummaryEngine(store, llm) as engine:
        system, messages = engine.assemble_anthropic(
            "Be brief.", history, "s1", model=MODEL
        )
        chat = engine.conversation("s1", model=MODEL)
        request = chat.prepare("And now?", format="anthropic")
    client = anthropic.Anthropic(base_url=server.base_url, api_key="k")
    client.beta.messages.create(
        model=MODEL, max_tokens=100, betas=[COMPACTION_BETA], **request
    )
    client.close()

    assert system == "Be brief."  # no summary text beside the block
    assert messages[0] == {"role": "assistant", "content": [BLOCK]}
    assert messages[1] == history[0]
    sent = server.requests[-1]
    assert sent["messages"][0] == {"role": "assistant", "content": [BLOCK]}
    assert "system" not in sent
    assert SUMMARY not in str(sent["messages"][1:])


def test_a_second_compaction_sends_the_previous_block_first(server, store, llm):
    compacted(server, store, llm)
    second = dict(BLOCK, content=SUMMARY + " Then ten more.", signature="c2Vjb25k")
    server.then(Behaviour(compaction=second))
    fill(store, "s1", 30, start=30)

    with SummaryEngine(store, llm) as engine:
        engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")

    body = server.requests[-1]
    assert body["messages"][0]["content"][0] == BLOCK
    assert SUMMARY not in str(body.get("system"))
    assert record.native.block == second


@pytest.mark.parametrize(
    ("fmt", "model"),
    [("openai", MODEL), ("responses", MODEL), ("anthropic", "claude-opus-4-6")],
)
def test_another_format_or_model_gets_the_plain_summary(server, store, llm, fmt, model):
    compacted(server, store, llm)

    with SummaryEngine(store, llm) as engine:
        request = engine.conversation("s1", model=model).prepare("Hi", format=fmt)

    assert "compaction" not in str(request)
    assert SUMMARY in str(request)


@pytest.mark.parametrize(
    "block",
    [
        {"type": "compaction", "content": None, "signature": "x"},  # failed
        {"type": "compaction", "content": "", "signature": "x"},
        {"type": "compaction", "signature": "x"},
        {"type": "compaction", "content": 5},
        {"type": "compaction", "content": SUMMARY, "signature": "a\ud800b"},
        {"type": "text", "text": "not a block"},
    ],
)
def test_a_null_or_corrupted_block_falls_back_to_the_text_path(
    server, store, llm, block
):
    server.then(Behaviour(compaction=block), Behaviour(text=TEXT_SUMMARY))
    fill(store, "s1", 30)

    with SummaryEngine(store, llm) as engine:
        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")

    assert outcome.kind == "compressed"
    assert record.text == TEXT_SUMMARY
    assert record.native is None
    first, second = server.requests[-2:]
    assert "compaction" in first
    assert "compaction" not in second  # the rendered text request


def test_a_400_that_names_the_block_is_retried_with_the_text(server, store, llm):
    compacted(server, store, llm)
    refused = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages.0.content.0: invalid compaction block signature",
        },
    }
    server.then(Behaviour(status=400, error=refused), Behaviour(compaction=BLOCK))
    fill(store, "s1", 30, start=30)

    with SummaryEngine(store, llm) as engine:
        outcome = engine.compress("s1").result(timeout=20)

    refused_body, retried = server.requests[-2:]
    assert outcome.kind == "compressed"
    assert refused_body["messages"][0]["content"][0] == BLOCK
    assert "compaction" not in str(retried["messages"][0]["content"])
    assert SUMMARY in retried["system"]  # the record's text took the block's place


@every_store
def test_drop_native_sends_the_text_next_and_is_counted(server, store, llm):
    compacted(server, store, llm)

    with SummaryEngine(store, llm) as engine:
        dropped = engine.drop_native("s1", "400 invalid signature")
        again = engine.drop_native("s1")
        system, messages = engine.assemble_anthropic(
            "Be brief.", [{"role": "user", "content": "Hi"}], "s1", model=MODEL
        )
        health = engine.health()
        record = engine.summary("s1")

    assert (dropped, again) == (True, False)
    assert health.native_dropped == 1
    assert record.text == SUMMARY
    assert record.native is None
    assert SUMMARY in system
    assert "compaction" not in str(messages)


def test_an_unreadable_stored_artifact_is_dropped_and_the_text_sent(server, store, llm):
    compacted(server, store, llm)
    stored = store.get_metadata(NAMESPACE, "s1")
    stored["native"]["block"]["content"] = None  # corrupted on disk
    store.save_metadata(NAMESPACE, "s1", stored)

    with SummaryEngine(store, llm) as engine:
        system, messages = engine.assemble_anthropic(
            "Be brief.", [{"role": "user", "content": "Hi"}], "s1", model=MODEL
        )

    assert read_record(stored).native is None
    assert SUMMARY in system
    assert "compaction" not in str(messages)


def test_the_compaction_is_accounted_by_its_iterations(server, store, llm):
    def step(kind, read, write, inputs, outputs):
        return {
            "type": kind,
            "input_tokens": inputs,
            "output_tokens": outputs,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }

    iterations = [step("compaction", 900, 100, 50, 300), step("message", 0, 0, 7, 1)]
    compacted(server, store, llm, iterations=iterations, input_tokens=7)

    with SummaryEngine(store, llm) as engine:
        usage = engine.usage("s1")

    # the compaction entry's tokens are not in the top-level fields: the sum is
    assert (usage.input_tokens, usage.output_tokens) == (1057, 301)
    assert (usage.calls, usage.counted_calls) == (1, 0)  # the provider's figures


def test_prepare_in_anthropic_format_gives_the_compaction_its_system(
    server, store, llm
):
    system = [
        {
            "type": "text",
            "text": "You are terse.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    server.then(Behaviour(compaction=BLOCK))
    fill(store, "s1", 30)

    with SummaryEngine(store, llm) as engine:
        engine.conversation("s1").prepare(system=system, format="anthropic")
        engine.compress("s1").result(timeout=20)

    body = server.requests[-1]
    assert body["system"] == system
    assert "tools" not in body


def test_pinned_facts_the_block_lost_go_with_it_as_text(server, store, llm):
    fill(store, "s1", 3)
    store.save_message("s1", Message("user", "My order is ORD-4711, please track it."))
    fill(store, "s1", 26, start=4)
    _, record = compacted(server, store, llm, filled=True)

    with SummaryEngine(store, llm) as engine:
        system, messages = engine.assemble_anthropic(
            "Be brief.", [{"role": "user", "content": "Hi"}], "s1", model=MODEL
        )

    assert record.text.startswith(SUMMARY)
    assert "ORD-4711" in record.text
    assert messages[0] == {"role": "assistant", "content": [BLOCK]}
    assert "ORD-4711" in system
    assert SUMMARY not in system


def test_a_refused_block_is_replaced_by_the_text_within_the_same_turn(
    server, store, llm
):
    compacted(server, store, llm)

    with SummaryEngine(store, llm) as engine:
        chat = engine.conversation("s1", model=MODEL)
        first = chat.prepare("Where were we?", system="Be brief.", format="anthropic")
        # the host's call fails: a 400 that names the block; it drops the artifact
        engine.drop_native("s1", "400: invalid compaction block")
        retried = chat.prepare(system="Be brief.", format="anthropic")

    assert first["messages"][0] == {"role": "assistant", "content": [BLOCK]}
    assert "compaction" not in str(retried["messages"])
    assert SUMMARY in retried["system"]
    assert retried["messages"][-1] == first["messages"][-1]  # saved once
    assert [m.text for m in store.get_history("s1")].count("Where were we?") == 1


def test_a_model_without_compaction_takes_the_text_path(server, store, llm):
    unsupported = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "compaction: not supported by this model",
        },
    }
    server.then(Behaviour(status=400, error=unsupported), Behaviour(text=TEXT_SUMMARY))
    fill(store, "s1", 30)

    with SummaryEngine(store, llm) as engine:
        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")

    assert outcome.kind == "compressed"
    assert (record.text, record.native) == (TEXT_SUMMARY, None)
    assert "compaction" not in server.requests[-1]
