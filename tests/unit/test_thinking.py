"""Clearing old thinking: the cases Anthropic's rules name, and the config field."""

from __future__ import annotations

import pytest

from memory_summary import ConfigError, SummaryConfig
from memory_summary.domain import clear_old_thinking

THINK = {"type": "thinking", "thinking": "Hm.", "signature": "c2ln"}
REDACTED = {"type": "redacted_thinking", "data": "ZW5j"}
ASK = {"role": "user", "content": "Rain tomorrow?"}


def use(n):
    return {"type": "tool_use", "id": f"toolu_{n}", "name": "forecast", "input": {}}


def result(n):
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "."}
        ],
    }


def said(*blocks):
    return {"role": "assistant", "content": list(blocks)}


TEXT = {"type": "text", "text": "Rain."}


def test_thinking_older_than_the_last_turns_is_dropped_both_kinds():
    request = [
        ASK,
        said(THINK, TEXT),
        ASK,
        said(REDACTED, TEXT),
        ASK,
        said(THINK, TEXT),
    ]

    cleared = clear_old_thinking(request, 1)

    assert cleared == [ASK, said(TEXT), ASK, said(TEXT), ASK, said(THINK, TEXT)]
    assert clear_old_thinking(request, 2)[3:] == request[3:]
    assert clear_old_thinking(request, 2)[1] == said(TEXT)


def test_none_keeps_everything_and_the_input_is_not_changed():
    request = [ASK, said(THINK, TEXT), ASK, said(THINK, TEXT)]

    assert clear_old_thinking(request, None) == request
    clear_old_thinking(request, 0)
    assert request[1] == said(THINK, TEXT)


def test_the_open_tool_loop_keeps_its_thinking_even_with_zero_turns():
    request = [
        ASK,
        said(THINK, TEXT),  # an older turn
        ASK,
        said(THINK, use(1)),  # the loop begins
        result(1),
        said(REDACTED, use(2)),
        result(2),
    ]

    cleared = clear_old_thinking(request, 0)

    assert cleared[1] == said(TEXT)
    assert cleared[2:] == request[2:]


def test_the_latest_answered_tool_use_keeps_its_thinking_after_the_loop_closed():
    request = [ASK, said(THINK, use(1)), result(1), said(THINK, TEXT), ASK]

    cleared = clear_old_thinking(request, 0)

    assert cleared[1] == request[1]  # carries the latest tool_use with its result
    assert cleared[3] == said(TEXT)


def test_a_turn_of_nothing_but_thinking_keeps_it():
    request = [ASK, said(THINK), ASK, said(REDACTED, THINK), ASK, said(TEXT)]

    assert clear_old_thinking(request, 0) == request


def test_text_content_and_user_turns_are_left_alone():
    request = [ASK, {"role": "assistant", "content": "Sure."}, ASK]

    assert clear_old_thinking(request, 0) == request


def test_the_config_field_is_off_by_default_and_reads_camel_case():
    assert SummaryConfig().anthropic_keep_thinking_turns is None
    config = SummaryConfig.from_mapping({"anthropicKeepThinkingTurns": 0})

    assert config.anthropic_keep_thinking_turns == 0
    assert (
        SummaryConfig(anthropic_keep_thinking_turns=3).to_mapping()[
            "anthropic_keep_thinking_turns"
        ]
        == 3
    )


@pytest.mark.parametrize("value", [-1, True, "2", 1.5])
def test_a_bad_keep_names_the_field_and_what_is_allowed(value):
    with pytest.raises(
        ConfigError, match=r"anthropic_keep_thinking_turns=.*int >= 0, or None"
    ):
        SummaryConfig(anthropic_keep_thinking_turns=value)
