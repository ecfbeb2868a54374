from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import (
    MASKED_KIND,
    Message,
    ToolCall,
    is_masked,
    mask_tool_results,
    messages_from_openai,
    messages_to_openai,
    repair_pairs,
)
from memory_summary.domain.masking import old_tool_results
from memory_summary.domain.repair import owners
from memory_summary.testing.strategies import histories

afters = st.one_of(st.none(), st.integers(1, 5))
locales = st.sampled_from(["en", "zh"])


def without_ids(messages):
    return [attrs.evolve(m, id=None) for m in messages]


@given(history=histories(), after=afters, locale=locales)
def test_masking_keeps_every_message_and_its_pairing(history, after, locale):
    masked = mask_tool_results(history, after, locale=locale)

    assert len(masked) == len(history)
    for before, now in zip(history, masked, strict=True):
        assert (now.role, now.tool_call_id, now.name, now.id, now.tool_calls) == (
            before.role,
            before.tool_call_id,
            before.name,
            before.id,
            before.tool_calls,
        )
        if now is not before:
            assert before.role == "tool"
            assert now.kind == MASKED_KIND
            assert "\n" not in now.text
            assert len(now.text) < len(before.text)
    assert owners(masked) == owners(history)


@given(history=histories(), after=afters, locale=locales)
def test_a_repaired_request_stays_valid_after_masking(history, after, locale):
    repaired = repair_pairs(history, True)

    masked = mask_tool_results(repaired, after, locale=locale)

    assert repair_pairs(masked, True) == masked


@given(history=histories(), after=st.integers(1, 5), locale=locales)
def test_only_results_old_enough_are_masked_and_stubs_name_the_way_back(
    history, after, locale
):
    old = set(old_tool_results(history, after))

    masked = mask_tool_results(history, after, locale=locale)

    for index, (before, now) in enumerate(zip(history, masked, strict=True)):
        if now is not before:
            assert index in old
            assert f"around_id={before.id}" in now.text
            assert str(len(before.text)) in now.text
            users_after = sum(m.role == "user" for m in history[index + 1 :])
            assert users_after >= after


@given(history=histories(), after=afters, locale=locales)
def test_masking_is_idempotent_also_through_the_openai_format(history, after, locale):
    once = mask_tool_results(history, after, locale=locale)

    assert mask_tool_results(once, after, locale=locale) == once
    as_dicts = messages_from_openai(messages_to_openai(once))
    assert mask_tool_results(as_dicts, after, locale=locale) == as_dicts


@given(history=histories(), after=afters)
def test_masking_never_changes_the_messages_it_is_given(history, after):
    snapshot = [attrs.evolve(m) for m in history]

    mask_tool_results(history, after)

    assert history == snapshot


def test_a_result_without_id_points_to_its_tool_call_id():
    history = [
        Message("user", "look"),
        Message("tool", "y" * 400, tool_call_id='c"1\nx', name="ls"),
        Message("assistant", "done"),
        Message("user", "next"),
    ]

    masked = mask_tool_results(history, 1)

    assert masked[1].text == (
        '[tool result masked: ls, 400 chars; read_history(tool_call_id="c\\"1 x") '
        "shows it]"
    )
    assert is_masked(Message("tool", masked[1].text, tool_call_id="c"))


def test_results_of_the_current_turn_and_short_ones_stay():
    calls = [ToolCall("a", "ls", "{}"), ToolCall("b", "cat", "{}")]
    history = [
        Message("user", "first", id=1),
        Message("assistant", None, calls, id=2),
        Message("tool", "short", tool_call_id="a", id=3),
        Message("tool", "z" * 300, tool_call_id="b", id=4),
        Message("assistant", "read both", id=5),
        Message("user", "second", id=6),
        Message("assistant", None, [ToolCall("c", "cat", "{}")], id=7),
        Message("tool", "w" * 300, tool_call_id="c", id=8),
    ]

    masked = mask_tool_results(history, 1)

    assert [m.text[:5] for m in masked[2:4]] == ["short", "[tool"]
    assert masked[7] == history[7]
    assert mask_tool_results(history, 2) == history
    assert without_ids(mask_tool_results(history, None)) == without_ids(history)


def test_a_result_holding_an_image_is_masked_though_its_text_is_short():
    image = {"type": "image_url", "image_url": {"url": "https://x/plot.png"}}
    history = [
        Message("user", "plot it", id=1),
        Message("tool", [image], tool_call_id="c1", name="plot", id=2),
        Message("assistant", "Here it is.", id=3),
        Message("user", "thanks", id=4),
    ]

    masked = mask_tool_results(history, 1)

    assert masked[1].content == (
        "[tool result masked: plot, 0 chars, 1 attachment(s); "
        "read_history(around_id=2) shows it]"
    )
