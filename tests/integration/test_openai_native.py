"""OpenAI's ``/responses/compact`` as a native backend: real SDK, loopback API.

A fold writes the text with the offline summarizer and keeps OpenAI's sealed item
with the record; a Responses request to the same model carries the item (after
the system items), any other format or model the text; the next compaction sends
the item first. Never bricked: a corrupted, rotated-key, cross-model or
cross-account item is refused by the server; the compaction retries with the text,
and a host's refused turn drops the artifact (``drop_native``, counted in
``health()``) and goes again with the text in the same turn.
"""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import openai
import pytest

from memory_summary import EngineClosed, Message, SummaryEngine
from memory_summary.adapters import InMemoryStore, OpenAICompactingLLM, SqliteStore
from memory_summary.adapters.summarizers.openai.native import refuses_native
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.domain import CommitRequest, ToolCall
from memory_summary.domain.summary import NAMESPACE
from tests.integration.conversation import fill
from tests.responses_server import INVALID_ENCRYPTED_CONTENT, Answer, ResponsesServer

MODEL = "gpt-5.4-mini"


@pytest.fixture
def server():
    with ResponsesServer() as running:
        yield running


def client_for(server, **options):
    return openai.OpenAI(
        api_key="k", base_url=server.base_url, max_retries=0, **options
    )


@pytest.fixture
def client(server):
    made = client_for(server)
    yield made
    made.close()


@pytest.fixture
def llm(client):
    return OpenAICompactingLLM(client, model=MODEL)


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    made = SqliteStore(tmp_path / "s.db") if request.param == "sqlite" else None
    yield made or InMemoryStore()
    if made is not None:
        made.close()


def compacted(store, llm, session_id="s1"):
    with SummaryEngine(store, llm) as engine:
        outcome = engine.compress(session_id).result(timeout=20)
        return outcome, engine.summary(session_id)


def test_a_fold_keeps_the_text_and_the_sealed_item(server, store, llm):
    fill(store, "s1", 30)

    outcome, record = compacted(store, llm)

    assert outcome.kind == "compressed"
    assert "message" in record.text  # the offline summarizer's readable text
    assert record.native is not None
    assert record.native.provider == "openai"
    assert record.native.model == MODEL
    assert record.native.block["type"] == "compaction"
    (request,) = server.compactions()
    assert request["model"] == MODEL
    assert [i["content"] for i in request["input"]][:2] == [
        "message 0 of s1.",
        "message 1 of s1.",
    ]
    assert record.usage.input_tokens > 0  # the compaction's usage, as reported


def test_the_next_fold_sends_the_item_first(server, store, llm):
    fill(store, "s1", 30)
    _, first = compacted(store, llm)
    fill(store, "s1", 30, start=30)

    _, second = compacted(store, llm)

    sent = server.compactions()[1]["input"]
    lead = len(first.native.lead)
    assert lead > 0  # OpenAI returns the user messages with the item
    assert sent[: lead + 1] == first.native.items  # the previous output, first
    assert sent[lead] == first.native.block
    assert second.native.block != first.native.block


def test_the_user_messages_returned_with_the_item_are_kept_and_sent_with_it(
    server, store, llm
):
    fill(store, "s1", 30)
    with SummaryEngine(store, llm) as engine:
        engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")
        items = engine.conversation("s1", model=MODEL).prepare(
            "next?", system="Be brief.", format="responses"
        )
    (request,) = server.compactions()
    folded_users = [
        i["content"]
        for i in request["input"]
        if i.get("role") == "user" and i.get("type") == "message"
    ]

    assert [m["content"] for m in record.native.lead] == folded_users
    assert all(m["role"] == "user" for m in record.native.lead)
    start = items.index(record.native.block) - len(record.native.lead)
    assert items[start : start + len(record.native.items)] == record.native.items


def test_a_responses_request_carries_the_item_and_others_the_text(
    server, store, llm, client
):
    fill(store, "s1", 30)
    with SummaryEngine(store, llm) as engine:
        engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")
        same = engine.conversation("s1", model=MODEL)
        items = same.prepare("next?", system="Be brief.", format="responses")
        other = engine.conversation("s1", model="gpt-4.1").prepare(
            system="Be brief.", format="responses"
        )
        chat = same.prepare(system="Be brief.", format="openai")
        claude = same.prepare(system="Be brief.", format="anthropic")
    answer = client.responses.create(model=MODEL, input=items)

    assert items[0]["role"] in ("system", "developer")
    assert items[1 : 1 + len(record.native.items)] == record.native.items
    assert answer.output_text == "ok"
    assert "compaction" not in json.dumps(other)
    assert "compaction" not in json.dumps(chat)
    assert "compaction" not in json.dumps(claude)
    assert record.text.splitlines()[1] in json.dumps(other)


MAKERS = {  # the key and account that sealed the item, by fault
    "corrupted": ("k1", "acct-1"),
    "rotated-key": ("k2", "acct-1"),
    "cross-account": ("k1", "acct-2"),
    "cross-model": ("k1", "acct-1"),
}


def corrupt(store, session_id):
    """Change the stored item's sealed bytes, as a damaged copy would."""
    with SummaryEngine(store) as engine:
        record = engine.summary(session_id)
    block = dict(record.native.block)
    block["encrypted_content"] = "A" + block["encrypted_content"][1:]
    native = {**record.native.to_mapping(), "block": block}
    result = store.commit(
        CommitRequest(
            session_id=session_id,
            namespace=NAMESPACE,
            record={**record.to_mapping(), "native": native, "generation": "g2"},
            expect_generation=record.generation,
        )
    )
    assert result.committed


@pytest.mark.parametrize("how", sorted(MAKERS))
def test_a_refused_item_never_bricks_the_session(server, store, how, caplog):
    """The server refuses the item; the same turn goes on with the text."""
    fill(store, "s1", 30)
    key, account = MAKERS[how]
    with ResponsesServer(key, account) as maker, client_for(maker) as elsewhere:
        compacted(store, OpenAICompactingLLM(elsewhere, model=MODEL))
    if how == "corrupted":
        corrupt(store, "s1")
    host_model = "gpt-4.1" if how == "cross-model" else MODEL

    with (
        client_for(server) as host,
        SummaryEngine(store, OpenAICompactingLLM(host, model=MODEL)) as engine,
    ):
        conversation = engine.conversation("s1")  # the model unnamed: the item goes
        items = conversation.prepare("go on", format="responses")
        with caplog.at_level(logging.WARNING):
            with pytest.raises(openai.BadRequestError) as refused:
                host.responses.create(model=host_model, input=items)
            dropped = engine.drop_native("s1", str(refused.value))
        again = conversation.prepare(format="responses")  # the same turn, again
        answer = host.responses.create(model=host_model, input=again)
        health, record = engine.health("s1"), engine.summary("s1")

    assert "compaction" in json.dumps(items)
    assert refuses_native(refused.value)
    assert dropped
    assert answer.output_text == "ok"
    assert "compaction" not in json.dumps(again)
    assert record.text.splitlines()[1] in json.dumps(again)
    assert again[-1]["content"] == "go on"
    assert health.native_dropped == 1
    assert record.native is None
    assert "native artifact dropped" in caplog.text


def test_a_compaction_refusing_the_previous_item_retries_with_the_text(
    server, store, llm, caplog
):
    fill(store, "s1", 30)
    _, first = compacted(store, llm)
    server.key = "k2"  # the key rotated: the stored item no longer opens
    fill(store, "s1", 30, start=30)

    with caplog.at_level(logging.WARNING):
        _, second = compacted(store, llm)

    sent = server.compactions()
    assert sent[1]["input"][: len(first.native.items)] == first.native.items
    assert sent[2]["input"][0]["role"] == "developer"
    assert first.text.splitlines()[1] in sent[2]["input"][0]["content"]
    assert second.native is not None
    assert second.native.block != first.native.block
    assert "sending the text instead" in caplog.text


@pytest.mark.parametrize(
    "answer",
    [
        Answer(status=500),
        Answer(status=400, error=INVALID_ENCRYPTED_CONTENT),
        Answer(output=[{"type": "compaction", "encrypted_content": ""}]),
        Answer(output=[]),
    ],
)
def test_a_failed_compaction_commits_the_text_alone(server, store, llm, answer):
    server.then(answer)
    fill(store, "s1", 30)

    outcome, record = compacted(store, llm)

    assert outcome.kind == "compressed"
    assert record.text
    assert record.native is None


def test_refuses_native_reads_only_item_refusals(server, client):
    server.then(Answer(status=400, error={"error": {"message": "max_tokens: bad"}}))
    with pytest.raises(openai.BadRequestError) as other:
        client.responses.create(model=MODEL, input="hi")

    assert not refuses_native(other.value)
    assert not refuses_native(None)


def test_a_range_with_tool_calls_goes_as_calls_and_outputs(server, store, llm):
    for i in range(8):
        call = ToolCall(f"c{i}", "lookup", '{"q": "x"}')
        store.save_message("s1", Message("user", f"question {i}."))
        store.save_message("s1", Message("assistant", "", tool_calls=[call]))
        store.save_message(
            "s1", Message("tool", f"result {i}.", tool_call_id=f"c{i}", name="lookup")
        )
        store.save_message("s1", Message("assistant", f"answer {i}."))

    _, record = compacted(store, llm)

    (request,) = server.compactions()
    items = request["input"]
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert calls
    assert calls == outputs
    assert {"type": "function_call_output", "call_id": "c0", "output": "result 0."} in (
        items
    )
    assert request["instructions"]
    assert record.native is not None


def test_an_unrelated_400_that_mentions_compaction_is_no_refusal(server, client):
    server.then(
        Answer(
            status=400,
            error={"error": {"message": "compaction is not supported for this model"}},
        )
    )
    with pytest.raises(openai.BadRequestError) as unrelated:
        client.responses.create(model=MODEL, input="hi")

    assert not refuses_native(unrelated.value)


def test_a_refusal_in_the_middle_of_a_stream_is_read_by_its_code():
    request = httpx.Request("POST", "http://127.0.0.1/v1/responses")
    mid_stream = openai.APIError(
        "The encrypted content could not be verified.",
        request,
        body={"code": "invalid_encrypted_content"},
    )

    assert mid_stream.code == "invalid_encrypted_content"
    assert refuses_native(mid_stream)


def test_a_client_without_a_synchronous_compact_is_refused_when_built(server):
    asynchronous = openai.AsyncOpenAI(api_key="k", base_url=server.base_url)
    with pytest.raises(TypeError, match="synchronous"):
        OpenAICompactingLLM(asynchronous, model=MODEL)

    class OldSdk:  # an openai SDK from before responses.compact
        responses = object()

    with pytest.raises(TypeError, match=r"responses\.compact"):
        OpenAICompactingLLM(OldSdk(), model=MODEL)  # type: ignore[arg-type]


def test_any_fault_of_the_compaction_call_keeps_the_text(store, client, monkeypatch):
    llm = OpenAICompactingLLM(client, model=MODEL)
    fill(store, "s1", 30)

    def broken(**_):
        raise AttributeError("'Responses' object has no attribute 'compact'")

    monkeypatch.setattr(client.responses, "compact", broken)
    outcome, record = compacted(store, llm)

    assert outcome.kind == "compressed"
    assert record.text
    assert record.native is None


def test_a_reasoning_items_refusal_is_not_the_compaction_items():
    request = httpx.Request("POST", "http://127.0.0.1/v1/responses")
    response = httpx.Response(400, request=request)
    reasoning = openai.BadRequestError(
        "The encrypted content for item rs_123 could not be verified.",
        response=response,
        body={"code": "invalid_encrypted_content"},
    )

    assert not refuses_native(reasoning)


def test_the_lead_stays_within_the_summary_budget_over_chained_folds(
    server, store, llm, monkeypatch
):
    budgets: list[int] = []
    real = llm.compact

    def spying(request, **options):
        budgets.append(options["max_tokens"])
        return real(request, **options)

    monkeypatch.setattr(llm, "compact", spying)
    sizes = []
    for round_ in range(5):
        fill(store, "s1", 30, start=30 * round_)
        _, record = compacted(store, llm)
        lead = record.native.lead
        sizes.append(sum(len(json.dumps(m, ensure_ascii=False).encode()) for m in lead))

    assert all(size <= budget for size, budget in zip(sizes, budgets, strict=True))
    assert sizes[-1] > 0  # still the newest user messages, not none


MALFORMED_USERS = {  # a compact output's user messages no request or store takes
    "lone-surrogate": {"type": "message", "role": "user", "content": "k\ud800"},
    "content-int": {"type": "message", "role": "user", "content": 5},
    "content-none": {"type": "message", "role": "user", "content": None},
    "parts-not-mappings": {"type": "message", "role": "user", "content": ["x"]},
}


@pytest.mark.parametrize("name", sorted(MALFORMED_USERS))
def test_a_malformed_user_message_of_the_output_is_dropped_and_the_item_kept(
    server, store, llm, name
):
    kept = {"type": "message", "role": "user", "content": "I live in Oslo."}
    item = {"id": "cmp_9", "type": "compaction", "encrypted_content": "sealed"}
    server.then(Answer(output=[MALFORMED_USERS[name], kept, item]))
    fill(store, "s1", 30)

    outcome, record = compacted(store, llm)

    assert outcome.kind == "compressed"
    assert record.native is not None
    assert record.native.items == [kept, item]
    with SummaryEngine(store, llm) as engine:
        items = engine.conversation("s1", model=MODEL).prepare(format="responses")
    assert [kept, item] == [i for i in items if i in (kept, item)]
    assert MALFORMED_USERS[name] not in items


def test_a_stored_lead_no_request_can_carry_reads_as_no_artifact(server, tmp_path):
    """A foreign writer's lead with content 5: requests carry the text instead."""
    store = SqliteStore(tmp_path / "s.db")
    client = client_for(server)
    try:
        fill(store, "s1", 30)
        outcome, record = compacted(store, OpenAICompactingLLM(client, model=MODEL))
        bad = {"type": "message", "role": "user", "content": 5}
        native = {**record.native.to_mapping(), "lead": [bad]}
        assert store.commit(
            CommitRequest(
                session_id="s1",
                namespace=NAMESPACE,
                record={**record.to_mapping(), "native": native, "generation": "g2"},
                expect_generation=record.generation,
            )
        ).committed
        with SummaryEngine(store) as engine:
            again = engine.summary("s1")
            items = engine.conversation("s1", model=MODEL).prepare(format="responses")
    finally:
        store.close()
        client.close()

    assert outcome.kind == "compressed"
    assert again.native is None
    assert again.text == record.text
    assert "compaction" not in json.dumps(items)
    assert record.text.splitlines()[1] in json.dumps(items)


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": True, "output_tokens": 40},
        {"input_tokens": 900, "output_tokens": False},
        {"input_tokens": 900.0, "output_tokens": 40},
    ],
    ids=["bool-input", "bool-output", "float-input"],
)
def test_a_compaction_usage_whose_counts_are_no_ints_is_counted_instead(
    server, store, llm, usage
):
    server.then(Answer(usage=usage))
    fill(store, "s1", 30)

    outcome, record = compacted(store, llm)

    assert outcome.kind == "compressed"
    assert record.native is not None
    assert outcome.usage.counted_calls == 1  # the engine counted: no reported usage
    assert outcome.usage.input_tokens > 1


def test_drop_native_after_stop_is_refused_and_the_artifact_stays(server, tmp_path):
    """Nothing commits after stop(): a late drop_native raises EngineClosed."""
    store = SqliteStore(tmp_path / "s.db")
    client = client_for(server)
    try:
        fill(store, "s1", 30)
        engine = SummaryEngine(store, OpenAICompactingLLM(client, model=MODEL))
        with engine:
            engine.compress("s1").result(timeout=20)
        async_engine = AsyncSummaryEngine(engine)

        with pytest.raises(EngineClosed):
            engine.drop_native("s1", "400: invalid_encrypted_content")
        with pytest.raises(EngineClosed):
            asyncio.run(async_engine.drop_native("s1"))
        with SummaryEngine(store) as reader:
            kept = reader.summary("s1")
    finally:
        store.close()
        client.close()

    assert kept.native is not None
