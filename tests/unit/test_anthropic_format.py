"""Anthropic's Messages format: edge cases, errors, the SDK's own objects."""

from __future__ import annotations

import pytest
from anthropic.types import TextBlock, ThinkingBlock, ToolUseBlock

from memory_summary import Message, MessageError, ToolCall
from memory_summary.domain import (
    anthropic_pairs,
    messages_from_anthropic,
    messages_to_anthropic,
)
from memory_summary.domain.folding import compacted

USE = {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}


def test_an_sdk_responses_content_blocks_are_read():
    content = [
        ThinkingBlock(type="thinking", thinking="Plan.", signature="c2ln"),
        TextBlock(type="text", text="Checking."),
        ToolUseBlock(type="tool_use", id="t1", name="f", input={"a": 1}),
    ]

    (message,) = messages_from_anthropic(
        None, [{"role": "assistant", "content": content}]
    )

    assert message.tool_calls == (ToolCall("t1", "f", '{"a": 1}'),)
    assert [part["type"] for part in message.content] == ["thinking", "text"]
    _, (turn,) = messages_to_anthropic([message])
    assert turn["content"] == [block.model_dump(exclude_none=True) for block in content]


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([{"role": "system", "content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": [USE]}], "messages[0].content[0].type"),
        (
            [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_result", "tool_use_id": "t1"}],
                }
            ],
            "messages[0].content[0].type",
        ),
        ([{"role": "user", "content": 7}], "messages[0].content"),
        (
            [{"role": "user", "content": [{"text": "no type"}]}],
            "messages[0].content[0].type",
        ),
        (
            [{"role": "assistant", "content": [{**USE, "input": float("nan")}]}],
            "messages[0].content[0].input",
        ),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": ""}]}],
            "messages[0].content[0].tool_use_id",
        ),
    ],
)
def test_malformed_requests_raise_message_error_naming_the_field(messages, field):
    with pytest.raises(MessageError) as caught:
        messages_from_anthropic(None, messages)

    assert caught.value.field == field


def test_a_malformed_system_names_the_system():
    with pytest.raises(MessageError) as caught:
        messages_from_anthropic([{"type": "text"}], [])

    assert caught.value.field.startswith("system[0]")


def test_arguments_that_are_not_json_are_sent_as_text_never_dropped():
    message = Message("assistant", None, [ToolCall("c1", "f", "{not json")])

    _, (turn,) = messages_to_anthropic([message])

    assert turn["content"] == [
        {
            "type": "tool_use",
            "id": "c1",
            "name": "f",
            "input": {"arguments": "{not json"},
        }
    ]


def test_a_compaction_block_marks_what_it_replaced():
    compaction = {"type": "compaction", "content": "Earlier: Oslo."}
    history = messages_from_anthropic(
        None,
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [compaction]},
            {"role": "user", "content": "b"},
        ],
    )
    stored = [
        Message.from_row(m.role, m.content, m.tool_calls, None, None, None, None, {}, i)
        for i, m in enumerate(history, start=10)
    ]

    assert compacted(history, history) == [True, False, False]
    assert compacted(stored[:2], [*stored[:2], *stored]) == [True, False]
    assert compacted(stored[2:], stored) == [False]


def test_text_inside_tool_input_and_extra_keys_is_normalized_like_all_text():
    use = {
        **USE,
        "input": {"k\x00": {"": "a\x00\ud800"}},
        "cache_control": {"x": "\x00"},
    }
    result = {"type": "tool_result", "tool_use_id": "t1", "is_error": "\x00"}
    request = [
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]

    _, back = messages_to_anthropic(messages_from_anthropic(None, request))

    assert back[0]["content"][0]["input"] == {"k": {"": "a\ufffd"}}
    assert back[0]["content"][0]["cache_control"] == {"x": ""}
    assert back[1]["content"][0]["is_error"] == ""


def test_arguments_python_reads_but_json_does_not_are_sent_as_text():
    message = Message("assistant", None, [ToolCall("c1", "f", '{"x": NaN}')])

    _, (turn,) = messages_to_anthropic([message])

    assert turn["content"][0]["input"] == {"arguments": '{"x": NaN}'}
    assert messages_from_anthropic(None, [turn])[0].tool_calls[0].arguments == (
        '{"arguments": "{\\"x\\": NaN}"}'
    )


def test_a_partly_answered_trailing_turn_is_answered_whole_in_call_order():
    calls = (ToolCall("a", "f", "{}"), ToolCall("b", "g", "{}"))
    history = [
        Message("user", "go"),
        Message("assistant", None, calls),
        Message("tool", "B", tool_call_id="b"),
    ]

    paired = anthropic_pairs(history)

    assert [(m.tool_call_id, m.text) for m in paired[2:]] == [
        ("a", "[tool result unavailable]"),
        ("b", "B"),
    ]
    assert anthropic_pairs(paired) == paired
    assert anthropic_pairs(history[:2]) == history[:2]  # none arrived: still running
