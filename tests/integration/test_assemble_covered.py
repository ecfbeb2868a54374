"""``assemble`` drops what the injected summary already covers (a stale read)."""

from __future__ import annotations

from memory_summary import Message, SummaryConfig
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.integration.conversation import fill

SUMMARY = (
    "The user and the assistant exchanged eight numbered messages of session s1, "
    "message 0 through message 7, each one short and plain."
)
CONFIG = SummaryConfig(threshold=10, keep_recent=4)


def test_a_history_read_before_a_compression_is_not_sent_twice(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(SUMMARY), config=CONFIG)
    fill(store, "s1", 12)
    stale = store.get_history("s1")
    system = Message("system", "Be brief.")
    engine.compress("s1").result(timeout=10)
    record = engine.summary("s1")
    fresh = engine.assemble([system, *store.get_history("s1")], "s1")

    assembled = engine.assemble([system, *stale], "s1")

    assert record is not None
    assert record.covered_through_id is not None
    assert len(assembled) == len(fresh) == 6  # system, summary, the 4 kept
    assert assembled == fresh
    assert all(m.id is None or m.id > record.covered_through_id for m in assembled)


def test_messages_without_ids_and_instructions_are_never_dropped(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(SUMMARY), config=CONFIG)
    saved = fill(store, "s1", 12)
    engine.compress("s1").result(timeout=10)
    instruction = store.save_message("s2", Message("developer", "Use metric units."))
    unsaved = Message("user", "a new question")
    old = saved[0]

    assembled = engine.assemble([instruction, old, unsaved], "s1")

    assert instruction in assembled
    assert unsaved in assembled
    assert old not in assembled
