"""A blank ``system=`` given to ``prepare`` is no system prompt, in every format.

It was sent as given: a whitespace system message (OpenAI, Responses), a blank
``system`` that Anthropic refuses, or blank text before the summary merged into it.
"""

from __future__ import annotations

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.testing.fakes import InstrumentedSummarizer

BLANK = (" ", "\n\t ")


BLANKS = [
    *(
        (kind, blank)
        for kind in ("openai", "anthropic", "responses")
        for blank in BLANK
    ),
    ("anthropic", [{"type": "text", "text": " \n"}]),  # system blocks: Anthropic's
]


@pytest.mark.parametrize("summarized", [False, True])
@pytest.mark.parametrize(("kind", "blank"), BLANKS, ids=repr)
def test_a_blank_system_prompt_is_sent_as_none(kind, blank, summarized):
    config = SummaryConfig(threshold=4, keep_recent=2)
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=config) as e:
        chat = e.conversation("s")
        for i in range(3):
            chat.prepare(f"question {i}")
            chat.add(Message("assistant", f"answer {i}"))
        if summarized:
            assert e.compress("s").result(timeout=10).kind == "compressed"

        sent = chat.prepare(system=blank, format=kind)
        expected = chat.prepare(format=kind)

    assert sent == expected


def test_blank_anthropic_system_blocks_are_left_out():
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer()) as e:
        chat = e.conversation("s")
        system = [{"type": "text", "text": "  "}, {"type": "text", "text": "Be brief."}]

        request = chat.prepare("hi", system=system, format="anthropic")

    assert request["system"] == [{"type": "text", "text": "Be brief."}]
