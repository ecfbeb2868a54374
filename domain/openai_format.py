"""OpenAI's chat-message format: reading it into message fields and writing it back.

What the openai SDK's ``ChatCompletionMessageParam`` allows is read, and what its
responses return (``ChatCompletionMessage``, or any object with pydantic's
``model_dump``): roles ``system``, ``developer``, ``user``, ``assistant`` and ``tool``;
``content`` as text, as a list of parts, or None on an assistant message; nested
``function`` and ``custom`` tool calls; ``name``; ``refusal``; and an assistant's
``audio`` and ``function_call``, which ride along unchanged in the message's metadata
under ``OPENAI_EXTRAS``. Response-only keys (``annotations``) and unknown keys are
ignored.

Tool calls are ``function`` or ``custom`` ones (a custom call's ``input`` is kept as
its ``arguments``). Limits: the deprecated ``function`` role is refused with a
``MessageError``; an assistant message without ``content`` reads as ``content=None``;
an empty ``tool_calls`` list reads as no tool calls.

This module knows only the wire format; ``Message.from_openai``/``to_openai`` use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeAlias

import attrs

from .content import ContentPart, plain, plain_parts
from .errors import MessageError

OPENAI_EXTRAS = "openai_extras"
"""Metadata key holding an assistant's ``audio``/``function_call`` fields, as given."""
EXTRA_FIELDS = ("audio", "function_call")


class SupportsModelDump(Protocol):
    """A pydantic model, such as the openai SDK's ``ChatCompletionMessage``."""

    def model_dump(
        self, *, mode: str = ..., exclude_none: bool = ...
    ) -> Mapping[str, object]: ...


OpenAIMessage: TypeAlias = "Mapping[str, object] | SupportsModelDump"
"""A chat message in OpenAI's format: a dict (``ChatCompletionMessageParam``) or a
pydantic model (``ChatCompletionMessage``)."""


@attrs.frozen
class OpenAIFields:
    """The fields of one OpenAI-format message, not yet validated as a ``Message``."""

    role: object
    content: object
    tool_calls: tuple[Mapping[str, object], ...]
    tool_call_id: object
    name: object
    refusal: object
    extras: Mapping[str, object]


def openai_mapping(data: object) -> Mapping[str, object]:
    """Return ``data`` as a mapping: itself, or a pydantic model's ``model_dump``.

    Raises:
        MessageError: ``data`` is neither.
    """
    if isinstance(data, Mapping):
        return data
    dump = getattr(data, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="python", exclude_none=True)
        if isinstance(dumped, Mapping):
            return dumped
    raise MessageError(
        "message", f"must be a mapping or a pydantic model, got {type(data).__name__}"
    )


def _tool_call(data: object, index: int) -> Mapping[str, object]:
    where = f"tool_calls[{index}]"
    call = openai_mapping(data) if not isinstance(data, Mapping) else data
    kind = call.get("type", "function")
    if kind not in ("function", "custom"):
        raise MessageError(f"{where}.type", f"{kind!r} is not function or custom")
    if not isinstance(call.get(kind), Mapping):
        raise MessageError(f"{where}.{kind}", "must be a mapping with a name")
    return call


def openai_fields(data: object) -> OpenAIFields:
    """Return the fields of the OpenAI-format message ``data`` (mapping or pydantic).

    Raises:
        MessageError: the role is ``function`` or missing, content is missing on a
            message that is not an assistant's, or the tool calls are not a list of
            function calls.
    """
    message = openai_mapping(data)
    role = message.get("role")
    if role is None:
        raise MessageError(
            "role",
            "a message needs a role (system, developer, user, assistant or tool)",
        )
    if role == "function":
        raise MessageError("role", "the deprecated 'function' role is not supported")
    if "content" not in message and role != "assistant":
        raise MessageError("content", f"a {role!r} message needs content")
    raw_calls = message.get("tool_calls")
    if raw_calls is None:
        calls: tuple[Mapping[str, object], ...] = ()
    elif isinstance(raw_calls, Sequence) and not isinstance(raw_calls, str):
        calls = tuple(_tool_call(call, i) for i, call in enumerate(raw_calls))
    else:
        raise MessageError("tool_calls", "must be a list of tool calls")
    extras = {
        field: message[field]
        for field in EXTRA_FIELDS
        if role == "assistant" and message.get(field) is not None
    }
    return OpenAIFields(
        role=role,
        content=message.get("content"),
        tool_calls=calls,
        tool_call_id=message.get("tool_call_id"),
        name=message.get("name"),
        refusal=message.get("refusal"),
        extras=extras,
    )


def openai_tool_call(
    id: str, name: str, arguments: str, type: str = "function"
) -> dict[str, object]:
    """Return one tool call in OpenAI's nested form (a custom one's input: arguments).

    >>> openai_tool_call("c1", "f", "{}")["function"]
    {'name': 'f', 'arguments': '{}'}
    >>> openai_tool_call("c2", "grep", "TODO", "custom")["custom"]
    {'name': 'grep', 'input': 'TODO'}
    """
    if type == "custom":
        return {
            "id": id,
            "type": "custom",
            "custom": {"name": name, "input": arguments},
        }
    return {
        "id": id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def openai_content(
    content: str | Sequence[ContentPart] | None,
) -> str | list[dict[str, object]] | None:
    """Return content as the API takes it: text, a list of plain dicts, or None."""
    if content is None or isinstance(content, str):
        return content
    return plain_parts(content)


def openai_extras(metadata: Mapping[str, object]) -> dict[str, object]:
    """Return the assistant fields ``openai_fields`` kept in metadata, as plain data."""
    extras = metadata.get(OPENAI_EXTRAS)
    if not isinstance(extras, Mapping):
        return {}
    return {k: plain(v) for k, v in extras.items() if k in EXTRA_FIELDS}


def openai_message(
    *,
    role: str,
    content: str | Sequence[ContentPart] | None,
    name: str | None,
    tool_calls: Sequence[tuple[str, str, str, str]],
    tool_call_id: str | None,
    refusal: str | None,
    metadata: Mapping[str, object],
) -> dict[str, object]:
    """Return one message as the API takes it; ``tool_calls``: (id, name, args, type).

    Keys without a value (no name, no tool calls...) are left out; the assistant fields
    ``openai_fields`` kept in ``metadata`` come back.
    """
    result: dict[str, object] = {"role": role, "content": openai_content(content)}
    if name is not None:
        result["name"] = name
    if tool_calls:
        result["tool_calls"] = [openai_tool_call(*call) for call in tool_calls]
    if tool_call_id is not None:
        result["tool_call_id"] = tool_call_id
    if refusal is not None:
        result["refusal"] = refusal
    if metadata:  # most messages carry none
        result.update(openai_extras(metadata))
    return result
