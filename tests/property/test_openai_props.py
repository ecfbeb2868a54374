"""Round trips of the OpenAI converters over generated messages, hostile text too."""

from __future__ import annotations

import pydantic
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageParam

from memory_summary import Message, messages_from_openai, messages_to_openai
from memory_summary.domain import content_text, normalize_text, render_message
from memory_summary.domain.render import fenced_text
from memory_summary.testing.strategies import content_parts, normalized, openai_messages

PARAMS = pydantic.TypeAdapter(ChatCompletionMessageParam)


@given(data=openai_messages())
def test_a_generated_message_is_one_the_openai_sdk_accepts(data):
    PARAMS.validate_python(data)

    assert data["role"] in ("system", "developer", "user", "assistant", "tool")


@given(data=openai_messages())
def test_to_openai_gives_back_the_input_with_its_text_normalized(data):
    message = Message.from_openai(data)

    assert message.to_openai() == normalized(data)


@given(data=openai_messages())
def test_a_second_round_trip_changes_nothing(data):
    once = Message.from_openai(data).to_openai()

    again = Message.from_openai(once)

    assert again.to_openai() == once
    assert again == Message.from_openai(data)


@given(batch=st.lists(openai_messages(), max_size=6))
def test_the_sequence_converters_map_each_message(batch):
    messages = messages_from_openai(batch)

    assert messages_to_openai(messages) == [normalized(m) for m in batch]


@given(data=openai_messages().filter(lambda m: m["role"] == "assistant"))
def test_a_pydantic_response_message_converts_like_its_dict(data):
    if isinstance(data["content"], list):  # responses carry text content only
        data = {**data, "content": content_text(Message.from_openai(data).content)}
    response = ChatCompletionMessage.model_validate(data)

    message = Message.from_openai(response)

    assert message == Message.from_openai(data)


def expected_piece(part):
    kind = part["type"]
    if kind == "text":
        return normalize_text(part["text"])
    if kind in PLACEHOLDERS:
        return PLACEHOLDERS[kind]
    if kind == "file":
        name = normalize_text(part["file"].get("filename", ""))
        return f"[file: {name}]" if name else "[file]"
    return f"[{kind}]"


PLACEHOLDERS = {"image_url": "[image]", "input_audio": "[audio]"}


@given(parts=content_parts())
def test_parts_render_as_their_text_and_media_as_placeholders(parts):
    message = Message("user", parts)

    line = render_message(message, {})

    assert line == "User: " + fenced_text("\n".join(expected_piece(p) for p in parts))
