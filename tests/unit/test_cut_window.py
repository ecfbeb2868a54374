from __future__ import annotations

import pytest

from memory_summary import Message, SummaryConfig, ToolCall
from memory_summary.domain import (
    MODEL_RESPONSE,
    ConfigError,
    find_safe_cut,
    probe_limit,
    should_compress,
    split_window,
)


def ids(history):
    return [
        Message(m.role, m.content, m.tool_calls, m.tool_call_id, kind=m.kind, id=i + 1)
        for i, m in enumerate(history)
    ]


def group(call_id="c1"):
    return [
        Message("assistant", "", tool_calls=[ToolCall(call_id, "search", "{}")]),
        Message("tool", "result", tool_call_id=call_id),
    ]


def test_cut_keeps_exactly_keep_recent_plain_messages():
    history = [Message("user", str(i)) for i in range(10)]

    assert find_safe_cut(history, 3) == 7


def test_cut_moves_back_to_keep_a_whole_tool_group():
    history = [Message("user", "a"), *group(), Message("user", "b")]

    # keep_recent=2 would start the kept tail at the tool result
    assert find_safe_cut(history, 2) == 1


def test_cut_keeps_at_least_one_message_when_keep_recent_is_zero():
    history = [Message("user", str(i)) for i in range(5)]

    assert find_safe_cut(history, 0) == 4


def test_cut_of_a_short_history_keeps_everything():
    assert find_safe_cut([Message("user", "a")], 20) == 0
    assert find_safe_cut([], 20) == 0


def test_kept_tail_never_starts_with_an_orphan_tool_result():
    history = [
        Message("user", "a"),
        Message("tool", "x", tool_call_id="gone"),
        Message("user", "b"),
    ]

    assert find_safe_cut(history, 2) == 0


def test_probe_limit_is_the_largest_of_threshold_keep_and_floor():
    assert probe_limit(SummaryConfig()) == 200
    assert probe_limit(SummaryConfig(threshold=500)) == 500
    assert probe_limit(SummaryConfig(threshold=301, keep_recent=300)) == 301
    assert probe_limit(SummaryConfig(probe_floor=10, threshold=5, keep_recent=2)) == 10


def test_split_sends_only_user_assistant_tool_to_the_summarizer():
    window = ids(
        [
            Message("system", "rules"),
            Message("system", "[compressed]", kind="event-marker"),
            Message("user", "a"),
            *group(),
            Message("user", "kept"),
        ]
    )

    split = split_window(window, 1)

    assert [m.content for m in split.keep] == ["kept"]
    assert [m.role for m in split.for_summarizer] == ["user", "assistant", "tool"]
    assert len(split.fold) == 4  # the marker rides along; the instruction stays
    assert [m.content for m in split.instructions] == ["rules"]


def test_turns_compress_at_the_threshold():
    config = SummaryConfig()

    assert not should_compress(29, config)
    assert should_compress(30, config)


def test_a_threshold_not_above_keep_recent_is_refused_naming_both_fields():
    with pytest.raises(ConfigError, match=r"threshold=5 .*keep_recent=20"):
        SummaryConfig(threshold=5, keep_recent=20)
    with pytest.raises(ConfigError, match=r"threshold=20 .*keep_recent=20"):
        SummaryConfig.from_mapping({"threshold": 20, "keepRecent": 20})


def test_a_reasoning_item_is_kept_with_the_calls_of_its_response():
    response = {MODEL_RESPONSE: "resp_1"}
    call = ToolCall("call_1", "get_weather", "{}")
    history = [
        Message("user", "Paris?", id=1),
        Message("system", "[reasoning]", kind="item", metadata=response, id=2),
        Message("assistant", None, tool_calls=[call], metadata=response, id=3),
        Message("tool", "Sunny", tool_call_id="call_1", id=4),
        Message("assistant", "It is sunny.", id=5),
    ]

    assert find_safe_cut(history, 3) == 1
