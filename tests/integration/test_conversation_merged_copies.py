"""The summary merged into the host's system prompt, handed back, is refused.

``prepare(..., system=...)`` returns one system message holding the host's prompt and
then the summary; ``add`` stored it as the host's, and every request after sent the
old summary beside the current one. It is told apart by its exact text (the session's
summaries, whole or cut), in every format, while a host's prompt or note that merely
holds the summary header is stored and sent as given, by ``prepare`` and by
``assemble_openai`` / ``assemble_anthropic``.
"""

from __future__ import annotations

import pytest

from memory_summary import Message, MessageError, SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.domain.injection import HEADERS, MERGE_SEPARATOR
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.integration.test_conversation import CONFIG
from tests.integration.test_conversation_summary_copies import _compressed

BLOCKS = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
SYSTEMS = [
    ("openai", "Be brief."),
    ("openai", [{"type": "text", "text": "Be brief."}]),
    ("responses", "Be brief."),
    ("responses", [{"type": "text", "text": "Be brief."}]),
    ("anthropic", "Be brief."),
    ("anthropic", BLOCKS),
]
NOTES = [
    f"Notes\n\n{HEADERS['zh']} 笔记",
    f"{HEADERS['en']} my own notes",
    f"Rules.\n\n{HEADERS['en']}\nthe host's own summary",
]


def _handed_back(format, request):
    """The forms a host may hand the merged system prompt back in."""
    if format == "anthropic":
        system = request["system"]
        return [{"role": "system", "content": system}, Message("system", system)]
    return [request[0], Message.from_openai(request[0])]


def test_the_summary_merged_into_the_system_prompt_is_refused_in_every_format():
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("s")
        _compressed(engine, chat)
        before = len(store.get_history("s"))
        for format, system in SYSTEMS:
            request = chat.prepare(format=format, system=system)
            for handed in _handed_back(format, request):
                with pytest.raises(MessageError, match="summary the engine injected"):
                    chat.add(handed)
                with pytest.raises(MessageError, match="summary the engine injected"):
                    chat.add(Message("tool", "r", tool_call_id="x"), handed)

        assert len(store.get_history("s")) == before


def test_a_copy_made_before_the_latest_compression_is_refused_and_replaced():
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("s")
        _compressed(engine, chat)
        old = chat.prepare(system="Be brief.")
        assembled = engine.assemble_openai(old, "s", placement="merge")
        _compressed(engine, chat)
        before = len(store.get_history("s"))

        with pytest.raises(MessageError, match="summary the engine injected"):
            chat.add(old[0])
        again = engine.assemble_openai(assembled, "s", placement="merge")
        request = chat.prepare(system=old[0]["content"])

        assert len(store.get_history("s")) == before
        current = engine.build_prompt("s")
        assert current is not None
        assert current not in old[0]["content"]
        assert again[0]["content"] == "Be brief." + MERGE_SEPARATOR + current
        assert request[0]["content"] == "Be brief." + MERGE_SEPARATOR + current


@pytest.mark.parametrize("note", NOTES)
def test_a_host_note_holding_the_header_is_stored_and_sent_whole(note):
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("s")
        _compressed(engine, chat)
        injected = engine.build_prompt("s")
        [stored] = chat.add({"role": "system", "content": note})
        [prompt, *_] = chat.prepare(system=note)
        openai = engine.assemble_openai(
            [{"role": "system", "content": note}, {"role": "user", "content": "hi"}],
            "s",
        )
        system, _ = engine.assemble_anthropic(
            note, [{"role": "user", "content": "hi"}], "s"
        )

    assert stored.id is not None
    assert prompt["content"] == note + MERGE_SEPARATOR + injected
    assert [m["content"] for m in openai[:2]] == [note, injected]
    assert system == note + MERGE_SEPARATOR + injected
