"""An injected summary handed back kind-less is told by its exact text.

``is_injection_of`` says whether a text is a summary's injected text, whole or cut to
some budget; with such a test, ``holds_injection`` and ``assemble_messages`` find the
summary alone or merged into a system prompt, and leave a host's text that merely
holds the header alone.
"""

from __future__ import annotations

from memory_summary import Message
from memory_summary.domain import assemble_messages, injection_text, summary_message
from memory_summary.domain.injection import (
    HEADERS,
    MERGE_SEPARATOR,
    holds_injection,
    is_injection_of,
    without_merged_summary,
)

SUMMARY = "Alice likes tea. " * 20
INJECTED = injection_text(SUMMARY, locale="en", budget_tokens=4000, count_tokens=len)
NOTE = f"Notes\n\n{HEADERS['zh']} 笔记"


def exact(text: str) -> bool:
    return is_injection_of(text, SUMMARY, locale="en")


def test_an_injected_text_is_known_whole_or_cut_to_any_budget():
    cut = injection_text(SUMMARY, locale="en", budget_tokens=200, count_tokens=len)

    assert cut != INJECTED
    assert exact(INJECTED)
    assert exact(cut)
    assert not exact(HEADERS["en"] + " my own notes")
    assert not exact(INJECTED + " and more")
    assert not is_injection_of(INJECTED, "another summary", locale="en")


def test_the_summary_merged_into_a_system_prompt_is_found_in_every_shape():
    merged = Message("system", "Be brief." + MERGE_SEPARATOR + INJECTED)
    parts = [
        {"type": kind, "text": text}
        for kind in ("text", "input_text")
        for text in ("Be brief.", MERGE_SEPARATOR + INJECTED)
    ]
    as_parts = Message("system", parts[:2])
    as_items = Message("system", parts[2:])

    for message in (merged, as_parts, as_items, Message("system", INJECTED)):
        assert holds_injection(message, exact), message
    assert without_merged_summary(merged, exact).text == "Be brief."


def test_a_host_text_holding_the_header_is_no_injection():
    for text in (NOTE, HEADERS["en"] + " my own", "Rules.\n\n" + HEADERS["en"] + " x"):
        assert not holds_injection(Message("system", text), exact), text


def test_the_summary_merged_after_a_host_note_holding_the_header_leaves_the_note():
    prompt = Message("system", NOTE + MERGE_SEPARATOR + INJECTED)

    [kept] = assemble_messages([prompt], None, "merge", exact)
    [merged] = assemble_messages([prompt], summary_message(INJECTED), "merge", exact)

    assert kept.text == NOTE
    assert merged.text == NOTE + MERGE_SEPARATOR + INJECTED


def test_the_default_test_still_reads_the_header_alone():
    prompt = Message("system", NOTE)

    assert without_merged_summary(prompt).text == "Notes"
