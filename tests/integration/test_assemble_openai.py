"""``assemble_openai``: the summary injected into OpenAI-format messages, as dicts."""

from __future__ import annotations

import asyncio

from openai.types.chat import ChatCompletionMessage

from memory_summary import SummaryEngine, messages_from_openai
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.domain.injection import HEADERS
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.integration.conversation import fill, transcript_of

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
REQUEST = [
    {"role": "developer", "content": "You are helpful."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Where do I live?"},
            {"type": "image_url", "image_url": {"url": "https://x/map.png"}},
        ],
    },
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "content": "Oslo", "tool_call_id": "c1"},
]
SUMMARY = {"role": "system", "content": HEADERS["en"] + "\nUser lives in Oslo."}


def test_the_summary_goes_after_the_developer_block_and_the_rest_is_unchanged(
    store, make_engine
):
    engine = make_engine(store, ScriptedSummarizer("User lives in Oslo."))
    fill(store, "s1", 30)
    engine.compress("s1").result(timeout=10)

    once = engine.assemble_openai(REQUEST, "s1")
    twice = engine.assemble_openai(once, "s1")

    assert once == [REQUEST[0], SUMMARY, *REQUEST[1:]]
    assert twice == once
    assert all(type(m) is dict for m in once)


def test_without_a_summary_the_messages_come_back_as_given(store, make_engine):
    engine = make_engine(store)

    assert engine.assemble_openai(REQUEST, "none") == REQUEST


def test_pydantic_messages_are_accepted(store, make_engine):
    engine = make_engine(store)
    reply = ChatCompletionMessage(role="assistant", content="Hello.")

    assert engine.assemble_openai([reply], "none") == [
        {"role": "assistant", "content": "Hello."}
    ]


def test_the_same_through_the_asyncio_face(store):
    fill(store, "s1", 30)

    async def main():
        engine = SummaryEngine(store, ScriptedSummarizer("User lives in Oslo."))
        async with AsyncSummaryEngine(engine) as aengine:
            await aengine.compress("s1")
            return await aengine.assemble_openai(REQUEST, "s1")

    assembled = asyncio.run(main())

    assert assembled == [REQUEST[0], SUMMARY, *REQUEST[1:]]
    assert messages_from_openai(assembled)[1].role == "system"


def test_a_compression_reads_text_parts_and_media_placeholders(store, make_engine):
    llm = ScriptedSummarizer("The user sent a receipt of 42.50 EUR.")
    engine = make_engine(store, llm)
    image = "data:image/png;base64," + "iVBORw0KGgo" * 2_000
    turns = messages_from_openai(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is the total on this receipt?"},
                    {"type": "image_url", "image_url": {"url": image}},
                    {"type": "file", "file": {"filename": "r.pdf", "file_data": "JVB"}},
                ],
            },
            {"role": "assistant", "content": None, "refusal": "I cannot read it."},
        ]
        * 15
    )
    for message in turns:
        store.save_message("s1", message)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "compressed"
    transcript = transcript_of(llm.calls[0])
    assert "User: What is the total on this receipt?\n[image]\n[file: r.pdf]" in (
        transcript
    )
    assert "Assistant: I cannot read it." in transcript
    assert "iVBORw0KGgo" not in transcript


def test_a_header_text_outside_the_leading_block_is_the_hosts_and_is_kept(
    store, make_engine
):
    engine = make_engine(store, ScriptedSummarizer("User lives in Oslo."))
    fill(store, "s1", 30)
    engine.compress("s1").result(timeout=10)
    quoted = {"role": "system", "content": HEADERS["en"] + "\nquoted by the host"}
    request = [REQUEST[0], {"role": "user", "content": "hi"}, quoted]

    assembled = engine.assemble_openai(request, "s1")

    assert assembled == [REQUEST[0], SUMMARY, *request[1:]]
