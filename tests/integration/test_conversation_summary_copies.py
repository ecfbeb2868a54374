"""The injected summary handed back in the form ``prepare`` returned it is refused.

``prepare`` returns OpenAI dicts (or Responses items), where the summary's kind is
lost; ``add`` stored such a dict, and every request after sent it beside the current
summary. It is now known by its text (a system message opening with the header), as
``assemble`` knows its own injection; a host's system message that names the header
anywhere else is still stored and sent.
"""

from __future__ import annotations

import pytest

from memory_summary import Message, MessageError, SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.domain.injection import HEADERS
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.integration.test_conversation import CONFIG, completion

GUARD_S = 30


def _compressed(engine, chat):
    for i in range(14):
        chat.prepare(f"q{i}")
        chat.record(completion(f"a{i}"))
    engine.compress(chat.session_id).result(GUARD_S)
    assert engine.wait_idle(GUARD_S)


def _headed(request):
    return [
        m
        for m in request
        if m.get("role") == "system" and str(m.get("content")).startswith(HEADERS["en"])
    ]


@pytest.mark.parametrize("format", ["openai", "responses"])
def test_the_summary_prepare_returned_is_refused_and_never_stored(format):
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("s")
        _compressed(engine, chat)
        before = store.get_history("s")
        [injected] = _headed(chat.prepare("next", format=format))
        text = injected["content"]
        calls = (
            lambda: chat.add(injected),
            lambda: chat.add(Message("tool", "r", tool_call_id="x"), dict(injected)),
            lambda: chat.add(Message("system", text)),
        )
        for call in calls:
            with pytest.raises(MessageError, match="summary the engine injected"):
                call()
        for call in (  # refused as no user's message, no reply: a system message
            lambda: chat.prepare(Message("system", text)),
            lambda: chat.record(Message("system", text)),
        ):
            with pytest.raises(MessageError):
                call()
        assert len(store.get_history("s")) == len(before) + 1  # "next" alone
        assert len(_headed(chat.prepare(format=format))) == 1


@pytest.mark.parametrize(
    "note",
    [
        f"House rules. {HEADERS['en']} is what the library writes.",
        f"Notes\n\n{HEADERS['zh']} 笔记",
        f" {HEADERS['en']} (a leading space: not the engine's)",
    ],
)
def test_a_host_system_message_naming_the_header_elsewhere_is_stored_and_sent(note):
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("s")
        _compressed(engine, chat)
        [stored] = chat.add({"role": "system", "content": note})
        user = chat.add(Message("user", HEADERS["en"] + " is a user's text too"))
        request = chat.prepare()
    assert stored.id is not None
    assert user[0].id is not None
    assert [m["content"] for m in request].count(note) == 1
    assert len(_headed(request)) == 1
