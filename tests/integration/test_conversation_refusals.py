"""A refused or empty assistant turn, sent in every request format as the API takes it.

A reply that refuses (``refusal``, no content) went to Anthropic as an empty content
list, which the API refuses for a turn that is not the last (every later request of
the session failed), and vanished from Responses input (two user turns in a row).
"""

from __future__ import annotations

import pytest

from memory_summary import Message, SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.domain.anthropic_turns import EMPTY_TURN
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.integration.test_conversation import CONFIG

REFUSED = {"role": "assistant", "content": None, "refusal": "I can't."}


def _turn(chat, reply, *, plain):
    """A user turn answered by ``reply``, then the next user turn.

    ``plain=False`` stores a system message first, so requests go through
    ``assemble`` rather than the transcript's cached turns.
    """
    if not plain:
        chat.add(Message("system", "Stored note."))
    chat.prepare("hi")
    chat.record({"choices": [{"message": reply}]})
    chat.prepare("ok?")


@pytest.mark.parametrize("plain", [True, False])
def test_a_refusal_reaches_anthropic_as_a_text_block(plain):
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=CONFIG) as e:
        chat = e.conversation("r")
        _turn(chat, REFUSED, plain=plain)
        turns = chat.prepare(format="anthropic")["messages"]
    assert turns == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "I can't."}]},
        {"role": "user", "content": "ok?"},
    ]


@pytest.mark.parametrize("plain", [True, False])
def test_a_refusal_reaches_responses_as_the_assistants_refusal_item(plain):
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=CONFIG) as e:
        chat = e.conversation("r")
        _turn(chat, {**REFUSED, "content": "Well."}, plain=plain)
        items = chat.prepare(format="responses")
    talk = [item for item in items if item.get("role") != "system"]
    assert talk == [
        {"role": "user", "content": "hi"},
        {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "Well.", "annotations": []},
                {"type": "refusal", "refusal": "I can't."},
            ],
        },
        {"role": "user", "content": "ok?"},
    ]


BOTH_WAYS = {**REFUSED, "content": [{"type": "refusal", "refusal": "I can't."}]}
AS_A_PART = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Well."},
        {"type": "refusal", "refusal": "I can't."},
    ],
}


@pytest.mark.parametrize("plain", [True, False])
def test_a_refusal_given_both_ways_reaches_anthropic_once(plain):
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=CONFIG) as e:
        chat = e.conversation("r")
        _turn(chat, BOTH_WAYS, plain=plain)
        turns = chat.prepare(format="anthropic")["messages"]
    assert turns[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "I can't."}],
    }


@pytest.mark.parametrize("plain", [True, False])
@pytest.mark.parametrize(
    ("reply", "content"),
    [
        (BOTH_WAYS, [{"type": "refusal", "refusal": "I can't."}]),
        (
            AS_A_PART,
            [
                {"type": "output_text", "text": "Well.", "annotations": []},
                {"type": "refusal", "refusal": "I can't."},
            ],
        ),
    ],
    ids=["both ways", "as a part"],
)
def test_a_refusal_reaches_responses_once_as_a_refusal_item(plain, reply, content):
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=CONFIG) as e:
        chat = e.conversation("r")
        _turn(chat, reply, plain=plain)
        items = chat.prepare(format="responses")
    talk = [item for item in items if item.get("role") == "assistant"]
    assert talk == [
        {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": content,
        }
    ]


def test_a_refusal_stays_a_refusal_in_openai_requests():
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=CONFIG) as e:
        chat = e.conversation("r")
        _turn(chat, REFUSED, plain=True)
        request = chat.prepare()
    assert request[1] == REFUSED


@pytest.mark.parametrize("plain", [True, False])
@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (Message("assistant", ""), [{"type": "text", "text": EMPTY_TURN}]),
        (Message("assistant", []), [{"type": "text", "text": EMPTY_TURN}]),
        (Message("assistant", " \n"), [{"type": "text", "text": EMPTY_TURN}]),
        (
            Message("assistant", [{"type": "text", "text": ""}]),
            [{"type": "text", "text": EMPTY_TURN}],
        ),
        (
            Message(
                "assistant",
                [{"type": "text", "text": " "}, {"type": "text", "text": "Yes."}],
            ),
            [{"type": "text", "text": "Yes."}],
        ),
        (
            Message("assistant", [{"type": "refusal", "refusal": "No."}]),
            [{"type": "text", "text": "No."}],
        ),
        (
            Message("assistant", None, refusal="No.", metadata=None),
            [{"type": "text", "text": "No."}],
        ),
    ],
)
def test_no_earlier_anthropic_turn_is_sent_empty(plain, stored, expected):
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=CONFIG) as e:
        chat = e.conversation("r")
        if not plain:
            chat.add(Message("system", "Stored note."))
        chat.prepare("hi")
        chat.add(stored)
        last = chat.prepare(format="anthropic")["messages"]
        chat.prepare("ok?")
        turns = chat.prepare(format="anthropic")["messages"]
    assert turns[1] == {"role": "assistant", "content": expected}
    assert turns[2] == {"role": "user", "content": "ok?"}
    if not stored.refusal and stored.content in ("", ()):  # the last turn as it is
        assert last[-1]["content"] in ("", [])
