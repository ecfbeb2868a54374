from __future__ import annotations

import pytest

from memory_summary import LLMRef, Message, MessageError, ToolCall


def test_lone_surrogates_become_replacement_characters():
    message = Message("user", "a\ud800b\udfff")

    assert message.content == "a\ufffdb\ufffd"
    message.content.encode("utf-8")  # now encodable


def test_nul_bytes_are_removed_from_every_text_field():
    message = Message(
        "assistant",
        "x\x00y",
        tool_calls=[ToolCall("c\x001", "to\x00ol", '{"a":\x00 1}')],
        name="n\x00",
    )

    assert message.content == "xy"
    assert message.tool_calls[0] == ToolCall("c1", "tool", '{"a": 1}')
    assert message.name == "n"


def test_unknown_role_is_rejected_naming_the_field():
    with pytest.raises(MessageError) as info:
        Message("robot", "hi")  # type: ignore[arg-type]

    assert info.value.field == "role"
    assert "robot" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_tool_result_without_call_id_is_rejected():
    with pytest.raises(MessageError, match="tool_call_id"):
        Message("tool", "42")


def test_tool_call_arguments_must_be_text():
    with pytest.raises(MessageError) as info:
        ToolCall("c1", "search", {"q": "x"})  # type: ignore[arg-type]

    assert info.value.field == "tool_calls.arguments"


def test_mapping_tool_calls_are_converted_with_the_index_in_errors():
    message = Message(
        "assistant",
        "",
        tool_calls=[{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
    )
    assert message.tool_calls == (ToolCall("c1", "f", "{}"),)

    with pytest.raises(MessageError) as info:
        Message("assistant", "", tool_calls=[{"id": "c1", "name": "f", "arguments": 3}])
    assert info.value.field == "tool_calls[0]"


def test_only_assistants_call_tools():
    with pytest.raises(MessageError, match="only assistant"):
        Message("user", "", tool_calls=[ToolCall("c1", "f")])


def test_content_must_be_text():
    with pytest.raises(MessageError) as info:
        Message("user", b"bytes")  # type: ignore[arg-type]

    assert info.value.field == "content"


def test_messages_are_frozen_hashable_and_compare_by_value():
    a = Message("user", "hi", metadata={"k": 1})
    b = Message("user", "hi", metadata={"k": 1})

    assert a == b
    assert hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.content = "changed"  # type: ignore[misc]


def test_timestamp_must_be_a_number():
    assert Message("user", "x", timestamp=5).timestamp == 5.0
    with pytest.raises(MessageError, match="timestamp"):
        Message("user", "x", timestamp="yesterday")  # type: ignore[arg-type]
    with pytest.raises(MessageError, match="too large"):
        Message("user", "x", timestamp=2**1100)  # no float holds it


def test_llm_ref_holds_provider_and_model():
    assert LLMRef("openai", "gpt-4o-mini") == LLMRef("openai", "gpt-4o-mini")
