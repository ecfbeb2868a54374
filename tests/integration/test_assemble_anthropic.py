"""``assemble_anthropic``: the summary merged into ``system``, tool use repaired.

And an Anthropic conversation stored and compressed: thinking stays with its tool use,
a ``compaction`` block is a boundary the engine does not summarize again.
"""

from __future__ import annotations

import asyncio

import pytest

from memory_summary import SummaryConfig, SummaryEngine
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.domain import messages_from_anthropic, messages_to_anthropic
from memory_summary.domain.anthropic_pairing import CONTINUED
from memory_summary.domain.injection import HEADERS
from memory_summary.domain.repair import UNAVAILABLE
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.contract.stores import every_store
from tests.integration.conversation import fill, transcript_of

SUMMARY_TEXT = "User lives in Oslo."
MERGED = "\n\n" + HEADERS["en"] + "\n" + SUMMARY_TEXT
THINKING = {"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"}
USE = {"type": "tool_use", "id": "toolu_1", "name": "find", "input": {"q": "home"}}
REQUEST = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Where do I live?"},
            {
                "type": "image",
                "source": {"type": "url", "url": "https://x/map.png"},
                "cache_control": {"type": "ephemeral"},
            },
        ],
    },
    {"role": "assistant", "content": [THINKING, USE]},
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Oslo"}
        ],
    },
]
CACHED_SYSTEM = [
    {"type": "text", "text": "You are helpful.", "cache_control": {"type": "ephemeral"}}
]


@pytest.fixture
def summarized(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(SUMMARY_TEXT))
    fill(store, "s1", 30)
    assert engine.compress("s1").result(timeout=10).kind == "compressed"
    return engine


def test_the_summary_is_appended_to_a_text_system(summarized):
    system, messages = summarized.assemble_anthropic("Be brief.", REQUEST, "s1")

    assert system == "Be brief." + MERGED
    assert messages == REQUEST
    assert summarized.assemble_anthropic(system, messages, "s1") == (system, messages)


def test_a_cached_system_prefix_keeps_its_blocks_and_marks(summarized):
    system, messages = summarized.assemble_anthropic(CACHED_SYSTEM, REQUEST, "s1")

    assert system == [*CACHED_SYSTEM, {"type": "text", "text": MERGED}]
    assert messages == REQUEST
    assert summarized.assemble_anthropic(system, messages, "s1") == (system, messages)


def test_without_a_system_the_summary_is_the_system(summarized):
    system, _ = summarized.assemble_anthropic(None, REQUEST, "s1")

    assert system == HEADERS["en"] + "\n" + SUMMARY_TEXT
    assert summarized.assemble_anthropic(system, REQUEST, "s1")[0] == system


def test_without_a_summary_the_request_comes_back_as_given(store, make_engine):
    engine = make_engine(store)

    assert engine.assemble_anthropic(CACHED_SYSTEM, REQUEST, "none") == (
        CACHED_SYSTEM,
        REQUEST,
    )


def test_pairing_is_repaired_by_anthropics_rules(store, make_engine):
    engine = make_engine(store)
    broken = [
        {"role": "assistant", "content": [USE]},  # its start was folded away
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "never mind"},
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "orphan"},
            ],
        },
        {"role": "user", "content": "and?"},
    ]

    _, messages = engine.assemble_anthropic("Be brief.", broken, "none")

    assert messages == [
        {"role": "user", "content": CONTINUED},
        {"role": "assistant", "content": [USE]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": UNAVAILABLE,
                },
                {"type": "text", "text": "never mind"},
                {"type": "text", "text": "and?"},
            ],
        },
    ]
    assert engine.assemble_anthropic("Be brief.", messages, "none")[1] == messages


def test_repair_false_leaves_the_turns_alone(store, make_engine):
    engine = make_engine(store)
    turns = [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "x"}]

    assert engine.assemble_anthropic(None, turns, "none", repair=False) == (
        None,
        turns,
    )


def test_a_separate_placement_is_refused(store, make_engine):
    engine = make_engine(store)

    with pytest.raises(ValueError, match="placement='separate' is invalid"):
        engine.assemble_anthropic(None, REQUEST, "s1", placement="separate")


def test_the_same_through_the_asyncio_face(store):
    fill(store, "s1", 30)

    async def main():
        engine = SummaryEngine(store, ScriptedSummarizer(SUMMARY_TEXT))
        async with AsyncSummaryEngine(engine) as aengine:
            await aengine.compress("s1")
            return await aengine.assemble_anthropic(CACHED_SYSTEM, REQUEST, "s1")

    system, messages = asyncio.run(main())

    assert system == [*CACHED_SYSTEM, {"type": "text", "text": MERGED}]
    assert messages == REQUEST


def save_anthropic(store, sid, messages):
    for message in messages_from_anthropic(None, messages):
        store.save_message(sid, message)


def exchange(number):
    """One user question, a thinking tool call, its result and an answer."""
    use = {**USE, "id": f"toolu_{number}", "input": {"n": number}}
    return [
        {"role": "user", "content": f"question {number}"},
        {"role": "assistant", "content": [THINKING, use]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": use["id"],
                    "content": f"r{number}",
                }
            ],
        },
        {"role": "assistant", "content": f"answer {number}"},
    ]


@every_store
def test_a_stored_anthropic_conversation_compresses_and_comes_back(store, make_engine):
    llm = ScriptedSummarizer("The user asked eight numbered questions.")
    engine = make_engine(store, llm)
    conversation = [turn for n in range(8) for turn in exchange(n)]
    save_anthropic(store, "s1", conversation)

    outcome = engine.compress("s1").result(timeout=10)
    _, kept = engine.assemble_anthropic(None, [], "s1")  # a request from scratch
    system, request = engine.assemble_anthropic(
        None, _as_anthropic(store.get_history("s1")), "s1"
    )

    assert outcome.kind == "compressed"
    assert kept == []
    transcript = transcript_of(llm.calls[0])
    assert "Call find(" in transcript
    assert "Look it up." not in transcript  # reasoning is not summarized
    assert system.startswith(HEADERS["en"])
    for turn in request:  # every kept tool use still has its thinking
        blocks = turn["content"] if isinstance(turn["content"], list) else []
        if any(b["type"] == "tool_use" for b in blocks):
            assert blocks[0] == THINKING


def _as_anthropic(history):
    return messages_to_anthropic(history)[1]


def test_what_a_compaction_block_replaced_is_not_summarized_again(store, make_engine):
    llm = ScriptedSummarizer("The user kept asking numbered questions.")
    engine = make_engine(store, llm)
    compaction = {"type": "compaction", "content": "Earlier: the user lives in Oslo."}
    conversation = [
        *exchange(0),
        *exchange(1),
        {"role": "user", "content": "go on"},
        {"role": "assistant", "content": [compaction, {"type": "text", "text": "ok"}]},
        *[turn for n in range(2, 8) for turn in exchange(n)],
    ]
    save_anthropic(store, "s1", conversation)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "compressed"
    transcript = "\n".join(transcript_of(call) for call in llm.calls)
    assert "question 0" not in transcript
    assert "question 1" not in transcript
    assert "go on" not in transcript
    assert "[compacted: Earlier: the user lives in Oslo.]" in transcript
    assert "question 2" in transcript


def forecast_days(days):
    """Each day: a question, a thought tool use, its result, a thought reply."""
    turns = []
    for day in range(days):
        use = {"type": "tool_use", "id": f"toolu_{day}", "name": "find", "input": {}}
        result = {"type": "tool_result", "tool_use_id": use["id"], "content": "Rain."}
        turns += [
            {"role": "user", "content": f"Rain on day {day}?"},
            {"role": "assistant", "content": [THINKING, use]},
            {"role": "user", "content": [result]},
            {"role": "assistant", "content": [THINKING, {"type": "text", "text": "Y"}]},
        ]
    return turns


def thought(messages):
    return [
        i
        for i, m in enumerate(messages)
        if isinstance(m["content"], list)
        and any(b["type"] in ("thinking", "redacted_thinking") for b in m["content"])
    ]


def without_thinking(messages):
    return [
        {**m, "content": [b for b in m["content"] if b["type"] != "thinking"]}
        if isinstance(m["content"], list)
        else m
        for m in messages
    ]


@every_store
def test_old_thinking_leaves_the_request_and_stays_in_the_store(store, make_engine):
    config = SummaryConfig(anthropic_keep_thinking_turns=1)
    engine = make_engine(store, config=config)
    turns = [*forecast_days(3), {"role": "user", "content": "And day 3?"}]
    for message in messages_from_anthropic(None, turns):
        store.save_message("t", message)
    stored = store.get_history("t")

    system, messages = engine.assemble_anthropic("Be brief.", turns, "t")

    # the latest assistant turn (11) and the latest answered tool use (9) keep it
    assert (system, thought(messages)) == ("Be brief.", [9, 11])
    assert without_thinking(messages) == without_thinking(turns)
    assert engine.assemble_anthropic(system, messages, "t") == (system, messages)
    assert store.get_history("t") == stored
    assert messages_to_anthropic(stored)[1] == turns


def test_the_conversation_handle_clears_only_its_request(store, make_engine):
    config = SummaryConfig(anthropic_keep_thinking_turns=0)
    engine = make_engine(store, config=config)
    turns = forecast_days(2)
    for message in messages_from_anthropic(None, turns):
        store.save_message("t", message)
    chat = engine.conversation("t")

    request = chat.prepare("And day 2?", system="Be brief.", format="anthropic")

    assert thought(request["messages"]) == [5]  # the latest answered tool use
    asked = [*turns, {"role": "user", "content": "And day 2?"}]
    assert without_thinking(request["messages"]) == without_thinking(asked)
    assert messages_to_anthropic(store.get_history("t"))[1] == asked
    assert thought(asked) == [1, 3, 5, 7]


def test_thinking_clearing_is_off_by_default(store, make_engine):
    engine = make_engine(store)
    turns = [*forecast_days(3), {"role": "user", "content": "And day 3?"}]

    assert engine.assemble_anthropic(None, turns, "t")[1] == turns
