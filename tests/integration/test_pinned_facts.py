"""Pinned facts through the engine: a forgetful summarizer still keeps identifiers."""

from __future__ import annotations

from memory_summary import Message, SummaryConfig
from memory_summary.testing.fakes import ScriptedSummarizer

GENERIC = "The user and the assistant had a long and friendly conversation."
FACTS = [
    "My name is Ada Lovelace and my order ORD-2041 weighs 12 kg.",
    "Please ship it to the address in /srv/shop/addresses.yaml by 2026-03-03.",
    "Questions go to ada@example.org; the tracking page is https://example.com/t/77.",
]


def test_a_summarizer_that_drops_everything_still_leaves_every_pin(store, make_engine):
    config = SummaryConfig(threshold=10, keep_recent=2)
    engine = make_engine(store, ScriptedSummarizer(GENERIC), config=config)
    for fact in FACTS:
        store.save_message("s1", Message("user", fact))
        store.save_message("s1", Message("assistant", "Noted, thank you."))
    for round_ in range(5):  # later compressions see none of the facts again
        for i in range(10):
            store.save_message("s1", Message("user", f"Chatter {round_}.{i}, nice."))
        engine.compress("s1").result(timeout=10)

    injected = engine.build_prompt("s1")

    for pin in (
        "Ada Lovelace",
        "ORD-2041",
        "12 kg",
        "/srv/shop/addresses.yaml",
        "2026-03-03",
        "ada@example.org",
        "https://example.com/t/77",
    ):
        assert pin in injected
    assert engine.summary("s1").text.startswith(GENERIC)


def test_pin_facts_can_be_turned_off(store, make_engine):
    config = SummaryConfig(threshold=10, keep_recent=2, pin_facts=False)
    engine = make_engine(store, ScriptedSummarizer(GENERIC), config=config)
    for fact in FACTS:
        store.save_message("s1", Message("user", fact))
    for i in range(10):
        store.save_message("s1", Message("user", f"Chatter {i}, nice."))

    engine.compress("s1").result(timeout=10)

    assert "ORD-2041" not in engine.build_prompt("s1")
