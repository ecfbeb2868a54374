"""Messages in OpenAI's chat format, both ways, and content given as parts."""

from __future__ import annotations

from datetime import datetime

import pydantic
import pytest
from openai.types.chat import ChatCompletionMessage
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)

from memory_summary import (
    Message,
    MessageError,
    ToolCall,
    messages_from_openai,
    messages_to_openai,
)
from memory_summary.domain import (
    IMAGE_LOW_DETAIL_TOKENS,
    IMAGE_TOKENS,
    OPENAI_EXTRAS,
    assemble_messages,
    message_tokens,
    render_message,
    summary_message,
)
from memory_summary.domain.measure import MESSAGE_OVERHEAD_TOKENS

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
CUSTOM = {"id": "c3", "type": "custom", "custom": {"name": "grep", "input": "TODO"}}
PARTS = [
    {"type": "text", "text": "What is in this picture?"},
    {"type": "image_url", "image_url": {"url": "https://x/cat.png", "detail": "low"}},
    {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    {"type": "file", "file": {"filename": "report.pdf", "file_data": "JVBER"}},
]


@pytest.mark.parametrize(
    "data",
    [
        {"role": "system", "content": "Be brief.", "name": "ops"},
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": PARTS, "name": "ann"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [CALL, {**CALL, "id": "c2"}],
        },
        {"role": "assistant", "content": None, "tool_calls": [CALL, CUSTOM]},
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
        {
            "role": "tool",
            "content": [{"type": "text", "text": "42"}],
            "tool_call_id": "c1",
        },
        {
            "role": "assistant",
            "content": None,
            "audio": {"id": "audio_1"},
            "refusal": "",
        },
    ],
)
def test_an_openai_message_round_trips_unchanged(data):
    message = Message.from_openai(data)

    assert message.to_openai() == data


def test_a_response_message_object_converts_like_its_dict():
    response = ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id="c1", type="function", function=Function(name="f", arguments="{}")
            )
        ],
    )

    message = Message.from_openai(response)

    assert message.content is None
    assert message.tool_calls == (ToolCall("c1", "f", "{}"),)
    assert message.to_openai() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [CALL],
    }


def test_content_none_is_refused_where_it_means_nothing():
    with pytest.raises(MessageError, match="None is allowed only") as caught:
        Message("assistant", None)  # type: ignore[arg-type]

    assert caught.value.field == "content"
    with pytest.raises(MessageError, match="None is allowed only"):
        Message("user", None)  # type: ignore[arg-type]
    with pytest.raises(MessageError, match="needs content"):
        Message.from_openai({"role": "user"})


def test_the_failing_message_and_part_are_named():
    with pytest.raises(MessageError) as caught:
        messages_from_openai(
            [{"role": "user", "content": "ok"}, {"role": "user", "content": [{}]}]
        )

    assert caught.value.field == "messages[1].content[0].type"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"role": "function", "content": "x", "name": "f"}, "role"),
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": "user", "content": 42}, "content"),
        ({"role": "user", "content": [{"type": "text"}]}, "content[0].text"),
        ({"role": "user", "content": [{"type": "image_url"}]}, "content[0].image_url"),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
            "content[0].image_url.url",
        ),
        (
            {"role": "user", "content": [{"type": "x", "v": float("nan")}]},
            "content[0].v",
        ),
        ({"role": "user", "content": [{"type": "x", "v": {1, 2}}]}, "content[0].v"),
        (
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "custom"}]},
            "tool_calls[0].custom",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "mcp"}]},
            "tool_calls[0].type",
        ),
        ({"role": "assistant", "content": "", "tool_calls": "f"}, "tool_calls"),
        ("not a message", "message"),
    ],
)
def test_malformed_openai_messages_raise_naming_the_field(data, field):
    with pytest.raises(MessageError) as caught:
        Message.from_openai(data)

    assert caught.value.field == field


def test_parts_are_frozen_copies_with_normalized_text():
    given = [{"type": "text", "text": "a\x00b\ud800"}, {"type": "x", "list": [1, 2]}]

    message = Message("user", given)
    given[0]["text"] = "changed"

    assert message.content[0]["text"] == "ab\ufffd"
    with pytest.raises(TypeError):
        message.content[0]["text"] = "x"  # type: ignore[index]
    assert message.to_openai()["content"][1] == {"type": "x", "list": [1, 2]}
    assert message == Message("user", [{"type": "text", "text": "ab\ufffd"}, given[1]])
    assert hash(message) == hash(Message("user", message.content))


def test_parts_render_as_text_with_placeholders_for_media():
    message = Message("user", PARTS)

    line = render_message(message, {})

    assert line == (
        "User: What is in this picture?\n[image]\n[audio]\n[file: report.pdf]"
    )


def test_a_refusal_renders_as_the_assistant_text():
    message = Message("assistant", None, refusal="I can't.")

    assert render_message(message, {}) == "Assistant: I can't."


def test_media_parts_count_their_documented_estimate():
    image = {"type": "image_url", "image_url": {"url": "u"}}
    low = {"type": "image_url", "image_url": {"url": "u", "detail": "low"}}

    text_only = message_tokens(Message("user", [{"type": "text", "text": "abcd"}]), len)
    with_images = message_tokens(
        Message("user", [{"type": "text", "text": "abcd"}, image, low]), len
    )

    framing = MESSAGE_OVERHEAD_TOKENS
    assert text_only == 4 + framing
    assert with_images == 4 + framing + IMAGE_TOKENS + IMAGE_LOW_DETAIL_TOKENS


def test_developer_messages_belong_to_the_context_anchor():
    history = messages_from_openai(
        [
            {"role": "system", "content": "rules"},
            {"role": "developer", "content": "more rules"},
            {"role": "user", "content": "hi"},
        ]
    )

    assembled = assemble_messages(history, summary_message("S"))

    assert [m.role for m in assembled] == ["system", "developer", "system", "user"]
    assert assembled[2].content == "S"


def test_extras_ride_in_metadata_and_come_back():
    data = {"role": "assistant", "content": "hi", "function_call": {"name": "f"}}

    message = Message.from_openai(data)

    assert message.metadata == {OPENAI_EXTRAS: {"function_call": {"name": "f"}}}
    assert message.to_openai() == data


def test_messages_to_openai_leaves_out_what_the_format_lacks():
    message = Message("user", "hi", kind="chat", timestamp=1.0, metadata={"a": 1}, id=3)

    assert messages_to_openai([message]) == [{"role": "user", "content": "hi"}]


def test_response_only_keys_are_ignored():
    message = Message.from_openai(
        {"role": "assistant", "content": "hi", "annotations": [], "extra": 1}
    )

    assert message.to_openai() == {"role": "assistant", "content": "hi"}


class CustomMessage(pydantic.BaseModel):
    role: str
    content: list[dict[str, object]]


def test_any_pydantic_model_is_read_and_its_values_checked():
    good = CustomMessage(role="user", content=[{"type": "text", "text": "hi"}])
    bad = CustomMessage(role="user", content=[{"type": "x", "when": datetime.now()}])

    assert Message.from_openai(good).to_openai() == good.model_dump()
    with pytest.raises(MessageError, match="not JSON-compatible") as caught:
        Message.from_openai(bad)
    assert caught.value.field == "content[0].when"


def test_a_custom_tool_call_keeps_its_input_as_arguments():
    message = Message.from_openai(
        {"role": "assistant", "content": None, "tool_calls": [CUSTOM]}
    )

    assert message.tool_calls == (ToolCall("c3", "grep", "TODO", type="custom"),)
    assert render_message(message, {}) == "Call grep(TODO)"


@pytest.mark.parametrize(
    "reply",
    [
        ChatCompletionMessage(
            role="assistant",
            content=None,
            audio={
                "id": "au_1",
                "data": "UklGRg==",
                "expires_at": 9,
                "transcript": "Hi",
            },
        ),
        ChatCompletionMessage(
            role="assistant",
            content=None,
            function_call={"name": "lookup", "arguments": '{"q": "Oslo"}'},
        ),
    ],
    ids=["audio", "function_call"],
)
def test_an_sdk_audio_or_function_call_reply_rides_in_metadata(reply):
    message = Message.from_openai(reply)

    assert message.content is None
    assert set(message.metadata[OPENAI_EXTRAS]) <= {"audio", "function_call"}
    assert message.to_openai() == reply.model_dump(exclude_none=True) | {
        "content": None
    }
