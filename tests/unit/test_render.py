from __future__ import annotations

from memory_summary import Message, ToolCall
from memory_summary.domain import render_transcript


def conversation():
    return [
        Message("user", "Find the weather"),
        Message(
            "assistant",
            "Looking it up.",
            tool_calls=[ToolCall("c1", "weather", '{"city": "Oslo"}')],
        ),
        Message("tool", "Sunny, 21°C", tool_call_id="c1", name="wrong_name"),
        Message("assistant", "It is sunny."),
    ]


def test_english_rendering_follows_the_seed_format():
    assert render_transcript(conversation()) == [
        "User: Find the weather",
        'Assistant: Looking it up.\nCall weather({"city": "Oslo"})',
        "Tool result(weather): Sunny, 21°C",
        "Assistant: It is sunny.",
    ]


def test_chinese_rendering_uses_the_seeds_exact_labels():
    assert render_transcript(conversation(), locale="zh") == [
        "用户: Find the weather",
        '助手: Looking it up.\n调用 weather({"city": "Oslo"})',
        "工具结果(weather): Sunny, 21°C",
        "助手: It is sunny.",
    ]


def test_tool_name_prefers_the_call_id_and_falls_back_to_the_message_name():
    orphan = Message("tool", "late", tool_call_id="c9", name="fallback_tool")
    nameless = Message("tool", "late", tool_call_id="c10")

    lines = render_transcript([orphan, nameless])

    assert lines == ["Tool result(fallback_tool): late", "Tool result(?): late"]


def test_lookup_window_can_be_wider_than_the_rendered_messages():
    history = conversation()

    lines = render_transcript(history[2:3], window=history)

    assert lines == ["Tool result(weather): Sunny, 21°C"]


def test_arguments_and_bodies_are_cut_to_200_characters_but_chat_text_is_not():
    long = "z" * 500
    messages = [
        Message("user", long),
        Message("assistant", "", tool_calls=[ToolCall("c1", "f", long)]),
        Message("tool", long, tool_call_id="c1"),
    ]

    user, call, result = render_transcript(messages)

    assert user == f"User: {long}"
    assert call == f"Call f({'z' * 199}…)"
    assert result == f"Tool result(f): {'z' * 199}…"


def test_assistant_with_only_tool_calls_renders_just_the_calls():
    message = Message(
        "assistant", "", tool_calls=[ToolCall("a", "x", "1"), ToolCall("b", "y", "2")]
    )

    assert render_transcript([message]) == ["Call x(1)\nCall y(2)"]
