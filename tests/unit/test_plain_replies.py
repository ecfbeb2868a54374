"""The turn's shortcuts read exactly what the general paths read."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary import Message, MessageError
from memory_summary.domain import replies
from memory_summary.domain.replies import read_reply, system_message, user_message

TEXT = st.text(alphabet=st.characters(codec=None), max_size=30) | st.sampled_from(
    ["", " ", "\x00", "a\x00b", "\ud800x", "\t\n", "hi"]
)


@given(role=st.sampled_from(["system", "developer", "user", "assistant"]), text=TEXT)
def test_a_text_message_is_the_constructors(role, text):
    made = Message.of_text(role, text)
    assert made == Message(role, text)
    assert made.metadata == {}
    assert made.metadata is not Message.of_text(role, text).metadata


@given(text=TEXT)
def test_the_users_and_the_systems_text_read_as_messages_of_it(text):
    expected = Message("user", text)
    if expected.content.strip():
        assert user_message(text) == expected
    else:
        with pytest.raises(MessageError):
            user_message(text)
    said = Message("system", text)  # a blank prompt is no prompt
    assert system_message(text) == (said if said.content.strip() else None)


def general(reply):
    """``read_reply``'s general path for a ChatCompletion."""
    return replies._openai_reply(reply)


PLAIN = {"role": "assistant", "content": "It was 17."}
REPLIES = [
    {"model": "gpt-4o", "choices": [{"message": PLAIN}]},
    {"choices": [{"message": PLAIN}], "usage": {"prompt_tokens": 42}},
    {"choices": [{"message": PLAIN}], "usage": {"total_tokens": 5}},
    {"choices": [{"message": PLAIN}], "usage": "odd", "model": ""},
    {"choices": [{"message": {**PLAIN, "refusal": None, "annotations": []}}]},
    {"choices": [{"message": {**PLAIN, "tool_calls": None, "audio": None}}]},
    {"choices": [{"message": {**PLAIN, "content": "a\x00b\ud800"}}]},
    {"choices": [{"message": {**PLAIN, "name": "bot"}}]},
    {"choices": [{"message": {**PLAIN, "refusal": "no"}}]},
    {"choices": [{"message": {**PLAIN, "audio": {"id": "a1"}}}]},
    {"choices": [{"message": {**PLAIN, "tool_calls": []}}]},
    {"choices": [{"message": {**PLAIN, "content": [{"type": "text", "text": "x"}]}}]},
    {"choices": ({"message": PLAIN},)},
]


@pytest.mark.parametrize("reply", REPLIES)
def test_a_plain_completion_reads_as_the_general_path_reads_it(reply):
    assert read_reply(reply) == general(reply)


@pytest.mark.parametrize(
    "message",
    [
        {**PLAIN, "content": "  "},
        {**PLAIN, "content": "\x00"},
        {"role": "user", "content": "hi"},
        {**PLAIN, "role": "tool"},
    ],
)
def test_a_plain_completion_refused_is_refused_as_the_general_path_refuses(message):
    reply = {"choices": [{"message": message}]}
    with pytest.raises(MessageError) as general_error:
        general(reply)
    with pytest.raises(MessageError) as error:
        read_reply(reply)
    assert str(error.value) == str(general_error.value)


def sdk_replies():
    chat = pytest.importorskip("openai.types.chat")
    pydantic = pytest.importorskip("pydantic")

    class Named(pydantic.BaseModel):  # a compatible SDK's message, one field more
        role: str
        content: str | None = None
        name: str | None = None

    class Choice(pydantic.BaseModel):
        message: Named

    class Completion(pydantic.BaseModel):
        choices: list[Choice]
        model: str = "m"

    def sdk(message, **fields):
        return chat.ChatCompletion.model_validate(
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                **fields,
            }
        )

    usage = {"prompt_tokens": 42, "completion_tokens": 5, "total_tokens": 47}
    return [
        sdk(PLAIN),
        sdk(PLAIN, usage=usage),
        sdk({**PLAIN, "content": "a\x00b"}, usage=usage),
        sdk({**PLAIN, "refusal": "no"}),
        sdk({**PLAIN, "reasoning_content": "hm", "name": "bot"}),  # extras
        sdk(
            {
                **PLAIN,
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            }
        ),
        Completion(choices=[Choice(message=Named(**PLAIN, name="bot"))]),
        Completion(choices=[Choice(message=Named(**PLAIN))]),
    ]


def test_a_plain_sdk_completion_reads_as_its_dump_reads():
    for reply in sdk_replies():
        dumped = reply.model_dump(mode="python", exclude_none=True)
        assert read_reply(reply) == general(dumped), reply


def test_an_empty_sdk_completion_is_refused_as_its_dump_is():
    reply = sdk_replies()[0]
    reply.choices[0].message.content = "   "
    dumped = reply.model_dump(mode="python", exclude_none=True)
    with pytest.raises(MessageError) as general_error:
        general(dumped)
    with pytest.raises(MessageError) as error:
        read_reply(reply)
    assert str(error.value) == str(general_error.value)


@pytest.mark.parametrize(
    ("role", "text"), [("tool", "result"), ("robot", "hi"), ("user", 42)]
)
def test_of_text_checks_what_is_no_plain_text_message_as_the_constructor_does(
    role, text
):
    with pytest.raises(MessageError) as made:
        Message(role, text)
    with pytest.raises(MessageError) as given:
        Message.of_text(role, text)
    assert str(given.value) == str(made.value)


def test_of_text_of_a_str_subclass_is_the_constructors_message():
    class Text(str):
        pass

    message = Message.of_text("user", Text("hi"))
    assert message == Message("user", "hi")
    assert type(message.content) is type(Message("user", Text("hi")).content)
