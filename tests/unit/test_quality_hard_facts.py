"""The harder fact-retention generator (``summary_quality.hard_facts``)."""

from __future__ import annotations

import pytest
from summary_quality.facts import HARD_KINDS, KINDS, count_key, message_text
from summary_quality.hard_facts import HARD, generate_hard_conversation


@pytest.mark.parametrize("locale", ["en", "zh"])
@pytest.mark.parametrize("index", range(4))
def test_every_fact_is_stated_once_in_its_own_message(locale, index):
    conversation = generate_hard_conversation(7, locale, index)
    texts = [message_text(m) for m in conversation.messages]

    assert {f.kind for f in conversation.facts} == {*KINDS, *HARD_KINDS}
    for fact in conversation.facts:
        for forms in fact.keys:
            counts = [count_key(text, forms) for text in texts]
            assert counts[fact.message_index] == 1
            assert sum(counts) == 1


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_the_same_arguments_give_the_same_conversation(locale):
    assert HARD(7, locale, 1) == generate_hard_conversation(7, locale, 1)
    assert HARD(8, locale, 1) != generate_hard_conversation(7, locale, 1)


def test_each_hard_kind_is_where_it_claims_to_be():
    conversation = generate_hard_conversation(3, "en", 0)
    messages = conversation.messages
    by_kind = {f.kind: f for f in conversation.facts}

    assert messages[by_kind["assistant_fact"].message_index].role == "assistant"
    detail = messages[by_kind["tool_detail"].message_index]
    assert detail.role == "tool"
    assert by_kind["tool_detail"].label in detail.text.splitlines()[1]
    long = messages[by_kind["long_message"].message_index].text
    assert long.index(by_kind["long_message"].label) > 200
    corrected = [f for f in conversation.facts if f.kind == "corrected"]
    assert all(
        messages[f.message_index].text.startswith(("Correction", "Update"))
        for f in corrected
    )
