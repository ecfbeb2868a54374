from __future__ import annotations

import pytest

from memory_summary import Message, StoreError
from memory_summary.domain import (
    SUMMARY_KIND,
    Busy,
    Idle,
    SummaryRecord,
    assemble_messages,
    injection_text,
    on_finished,
    on_trigger,
    summary_message,
)
from memory_summary.domain.injection import HEADERS, TRUNCATION_SUFFIXES


def test_injection_has_the_locale_header_and_fits_untouched_when_short():
    text = injection_text("facts", locale="zh", budget_tokens=512, count_tokens=len)

    assert text == HEADERS["zh"] + "\nfacts"


def test_injection_is_cut_to_the_budget_with_the_visible_suffix():
    text = injection_text("x" * 5000, locale="en", budget_tokens=600, count_tokens=len)

    assert len(text) <= 600
    assert text.startswith(HEADERS["en"])
    assert text.endswith(TRUNCATION_SUFFIXES["en"])


def test_the_injected_summary_is_always_counted_in_the_given_encoding():
    calls = []

    def counting(text):
        calls.append(text)
        return len(text)

    injection_text("facts", locale="en", budget_tokens=512, count_tokens=counting)

    assert any("facts" in c for c in calls)


def test_assemble_places_the_summary_after_the_leading_system_block():
    messages = [
        Message("system", "a"),
        Message("system", "b"),
        Message("user", "hi"),
        Message("system", "late"),
    ]

    out = assemble_messages(messages, summary_message("S"))

    assert [m.content for m in out] == ["a", "b", "S", "hi", "late"]
    assert out[2].kind == SUMMARY_KIND


def test_assemble_is_idempotent_and_removes_stale_summaries():
    messages = [Message("system", "a"), Message("user", "hi")]

    once = assemble_messages(messages, summary_message("S1"))
    twice = assemble_messages(once, summary_message("S2"))

    assert [m.content for m in twice] == ["a", "S2", "hi"]
    assert assemble_messages(twice, None) == messages


def test_assemble_without_system_messages_puts_the_summary_first():
    out = assemble_messages([Message("user", "hi")], summary_message("S"))

    assert [m.content for m in out] == ["S", "hi"]


@pytest.mark.parametrize("placement", ["separate", "merge"])
def test_a_stored_item_of_a_kind_is_history_and_the_summary_goes_before_it(
    placement,
):
    reasoning = Message("system", "[reasoning]", kind="openai-agents-item", id=5)
    call = Message("assistant", "ok", id=6)
    host = Message("system", "rules")

    bare = assemble_messages([reasoning, call], summary_message("S"), placement)
    hosted = assemble_messages([host, reasoning, call], summary_message("S"))

    assert [m.content for m in bare] == ["S", "[reasoning]", "ok"]
    assert [m.content for m in hosted] == ["rules", "S", "[reasoning]", "ok"]


def test_triggers_coalesce_into_one_follow_up_with_the_strongest_reason():
    state, start = on_trigger(Idle(), "turn")
    assert (state, start) == (Busy(running="turn"), True)

    state, start = on_trigger(state, "turn")
    state, again = on_trigger(state, "manual")
    state, third = on_trigger(state, "auto")
    assert not start
    assert not again
    assert not third
    assert state == Busy(running="turn", follow_up="manual")

    state, follow = on_finished(state)
    assert (state, follow) == (Busy(running="manual"), "manual")
    assert on_finished(state) == (Idle(), None)


def test_summary_record_round_trips_and_rejects_malformed_data():
    record = SummaryRecord(
        text="t", covered_through_id=9, tokens=1, model="m", updated_at=2.0
    )

    assert SummaryRecord.from_mapping(record.to_mapping()) == record
    with pytest.raises(StoreError):
        SummaryRecord.from_mapping({"text": 3, "tokens": 1})
    with pytest.raises(StoreError):
        SummaryRecord.from_mapping({"text": "t", "tokens": True})


def test_host_text_with_the_header_outside_the_leading_block_is_kept():
    from memory_summary.domain.injection import HEADERS

    note = Message("system", "Note from ops.\n\n" + HEADERS["en"] + " is a phrase")
    quoted = Message("system", HEADERS["en"] + " (a host note)")
    messages = [Message("system", "rules"), Message("user", "hi"), note, quoted]

    out = assemble_messages(messages, summary_message("S"))

    assert out[2:] == [Message("user", "hi"), note, quoted]
    assert assemble_messages(out, None) == messages
