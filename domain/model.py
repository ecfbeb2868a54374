"""The values the library trades in: messages, tool calls and model references.

Every text field is normalized on construction (see ``text.normalize_text``): lone
surrogates become U+FFFD and NUL bytes are removed. Structural mistakes raise
``MessageError`` (a ``ValueError``) naming the field. Content given as a list of parts
is checked and frozen by ``content.content_parts``; the OpenAI chat format is read and
written by ``Message.from_openai``/``to_openai`` (see ``openai_format``).

Why about 420 lines: ``Message`` is one value with its checking constructor and its
trusted ones (``from_row`` for stored rows, ``of_text`` for a turn's text) side by side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, get_args

import attrs

from .content import Content, ContentPart, content_parts, content_text
from .errors import MessageError
from .openai_format import (
    OPENAI_EXTRAS,
    OpenAIMessage,
    openai_fields,
    openai_message,
)
from .text import normalize_text
from .tool_call import ToolCall as ToolCall  # re-exported: model is its old home
from .tool_call import optional_text, slot_setter

Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = get_args(Role)
TextRole = Literal["system", "developer", "user", "assistant"]
"""The roles a message of text alone may have (a tool result names its call)."""
_TEXT_ROLES: frozenset[str] = frozenset(get_args(TextRole))
INSTRUCTION_ROLES: frozenset[str] = frozenset({"system", "developer"})
"""Roles that instruct the model: the leading block of them is the context anchor."""

EVENT_MARKER = "event-marker"
"""``Message.kind`` of the separator message written at each compression."""

SUMMARY_KIND = "memory-summary"
"""``Message.kind`` of the injected summary system message."""


# Named converters: the attrs mypy plugin only types named functions.
def _content(value: str | Sequence[ContentPart] | None) -> Content:
    if value is None:
        return None
    if isinstance(value, str):
        return normalize_text(value)
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(
        value, Sequence
    ):
        raise MessageError(
            "content",
            f"must be text, a list of parts or None, got {type(value).__name__}",
        )
    return content_parts(value)


def _refusal(value: str | None) -> str | None:
    return optional_text("refusal", value)


def _tool_call_id(value: str | None) -> str | None:
    return optional_text("tool_call_id", value)


def _name(value: str | None) -> str | None:
    return optional_text("name", value)


def _kind(value: str | None) -> str | None:
    return optional_text("kind", value)


def _tool_calls(
    value: Iterable[ToolCall | Mapping[str, object]] | None,
) -> tuple[ToolCall, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise MessageError("tool_calls", "must be a sequence of ToolCall")
    calls: list[ToolCall] = []
    for index, item in enumerate(value):
        if isinstance(item, ToolCall):
            calls.append(item)
        elif isinstance(item, Mapping):
            try:
                calls.append(ToolCall.from_mapping(item))
            except MessageError as exc:
                raise MessageError(f"tool_calls[{index}]", str(exc)) from exc
        else:
            raise MessageError(
                f"tool_calls[{index}]", f"must be a ToolCall, got {type(item).__name__}"
            )
    return tuple(calls)


def _metadata(value: Mapping[str, object] | None) -> Mapping[str, object]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MessageError("metadata", "must be a mapping")
    return dict(value)


def _timestamp(value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MessageError("timestamp", "must be seconds since the epoch (a number)")
    try:
        return float(value)
    except OverflowError:  # an int too large for a float: no time there is
        raise MessageError(
            "timestamp", "is too large for seconds since the epoch"
        ) from None


def _role(instance: object, attribute: object, value: object) -> None:
    if value not in ROLES:
        raise MessageError("role", f"{value!r} is not one of {', '.join(ROLES)}")


def may_lack_content(
    role: str,
    tool_calls: Sequence[object],
    refusal: str | None,
    metadata: Mapping[str, object],
) -> bool:
    """Tell whether a message with these fields may have ``content=None``.

    Only an assistant's reply that says something other than text may: one that
    calls tools, refuses, or carries an OpenAI ``audio`` or legacy ``function_call``
    reply (kept in ``metadata[OPENAI_EXTRAS]``).
    """
    if role != "assistant":
        return False
    extras = metadata.get(OPENAI_EXTRAS)
    return bool(tool_calls) or refusal is not None or bool(extras)


@attrs.frozen
class Message:
    """One chat message as the memory store keeps it.

    Stores assign ``id`` (increasing within a session); a new message has ``id=None``.
    ``content`` is text, a tuple of parts (given as any sequence of part mappings, see
    ``content``), or None: None only on an assistant message that calls tools or
    refuses (``refusal``); anywhere else it raises ``MessageError``. ``developer``
    messages are kept as such and count as system messages for the context anchor.

    >>> Message("user", "hello").role
    'user'
    >>> Message("tool", "42", tool_call_id="call_1").tool_call_id
    'call_1'
    >>> Message("assistant", None, [ToolCall("c1", "f", "{}")]).content is None
    True
    """

    role: Role = attrs.field(validator=_role)
    # hash=False: parts are read-only mappings, which do not hash
    content: Content = attrs.field(default="", converter=_content, hash=False)
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tool_calls)
    tool_call_id: str | None = attrs.field(
        default=None,
        converter=_tool_call_id,
    )
    name: str | None = attrs.field(
        default=None,
        converter=_name,
    )
    kind: str | None = attrs.field(
        default=None,
        converter=_kind,
    )
    timestamp: float | None = attrs.field(default=None, converter=_timestamp)
    metadata: Mapping[str, object] = attrs.field(
        factory=dict, converter=_metadata, hash=False
    )
    refusal: str | None = attrs.field(default=None, converter=_refusal, kw_only=True)
    id: int | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.content is None and not may_lack_content(
            self.role, self.tool_calls, self.refusal, self.metadata
        ):
            raise MessageError(
                "content",
                "None is allowed only on an assistant message with tool_calls, a "
                "refusal, or an OpenAI audio or function_call reply; use text or a "
                "list of parts",
            )
        if self.role == "tool" and not self.tool_call_id:
            raise MessageError("tool_call_id", "a tool result needs the id it answers")
        if self.tool_calls and self.role != "assistant":
            raise MessageError(
                "tool_calls", f"only assistant messages call tools, not {self.role}"
            )
        if self.id is not None and (
            isinstance(self.id, bool) or not isinstance(self.id, int)
        ):
            raise MessageError("id", "must be an int assigned by the store")

    @classmethod
    def from_row(
        cls,
        role: Role,
        content: Content,
        tool_calls: tuple[ToolCall, ...],
        tool_call_id: str | None,
        name: str | None,
        kind: str | None,
        timestamp: float | None,
        metadata: dict[str, object],
        id: int,
        refusal: str | None = None,
    ) -> Message:
        """Rebuild a message the library validated on its way into a store; trusted.

        Skips every converter and validator (a tenth of the constructor's cost), so
        pass only values read back from rows this library wrote, or the fields of an
        existing ``Message``; never input from users or models. ``metadata`` is kept,
        not copied.

        >>> Message.from_row("user", "hi", (), None, None, None, None, {}, 7).id
        7
        """
        message = object.__new__(cls)
        _SET_ROLE(message, role)
        _SET_CONTENT(message, content)
        _SET_TOOL_CALLS(message, tool_calls)
        _SET_TOOL_CALL_ID(message, tool_call_id)
        _SET_NAME(message, name)
        _SET_KIND(message, kind)
        _SET_TIMESTAMP(message, timestamp)
        _SET_METADATA(message, metadata)
        _SET_REFUSAL(message, refusal)
        _SET_ID(message, id)
        return message

    @classmethod
    def of_text(cls, role: TextRole, text: str) -> Message:
        r"""Return ``Message(role, text)`` for text content, built for a turn's cost.

        The text is normalized as the constructor normalizes it; a message of text
        and no other field passes every check the constructor makes, so none is
        run (a fifth of its cost). Anything else (a role that is not ``TextRole``'s,
        text that is no exact ``str``) goes through the constructor, which checks it.

        >>> Message.of_text("user", "hi\x00") == Message("user", "hi")
        True
        """
        if role not in _TEXT_ROLES or type(text) is not str:
            return cls(role, text)
        message = object.__new__(cls)
        _SET_ROLE(message, role)
        _SET_CONTENT(message, normalize_text(text))
        _SET_TOOL_CALLS(message, ())
        _SET_TOOL_CALL_ID(message, None)
        _SET_NAME(message, None)
        _SET_KIND(message, None)
        _SET_TIMESTAMP(message, None)
        _SET_METADATA(message, {})
        _SET_REFUSAL(message, None)
        _SET_ID(message, None)
        return message

    @classmethod
    def from_openai(cls, data: OpenAIMessage) -> Message:
        """Build a message from OpenAI's chat format: a dict or a pydantic response.

        Accepts what the openai SDK's ``ChatCompletionMessageParam`` allows and what
        its responses return (``ChatCompletionMessage``); see ``openai_format`` for
        the details and limits. ``to_openai`` gives the input back.

        Raises:
            MessageError: the message is malformed; names the field.

        >>> Message.from_openai({"role": "developer", "content": "Be brief."}).role
        'developer'
        """
        fields = openai_fields(data)
        metadata = {OPENAI_EXTRAS: dict(fields.extras)} if fields.extras else None
        return cls(
            fields.role,  # type: ignore[arg-type]  # checked by the validator
            fields.content,  # type: ignore[arg-type]  # checked by the converter
            fields.tool_calls,
            fields.tool_call_id,  # type: ignore[arg-type]
            fields.name,  # type: ignore[arg-type]
            metadata=metadata,
            refusal=fields.refusal,  # type: ignore[arg-type]
        )

    def to_openai(self) -> dict[str, object]:
        """Return this message in OpenAI's chat format, ready for a request.

        Content round-trips as given (text, a list of parts, or None); ``kind``,
        ``timestamp``, ``id`` and other metadata are not part of the format.

        >>> Message("assistant", "hi", name="bot").to_openai()
        {'role': 'assistant', 'content': 'hi', 'name': 'bot'}
        """
        return openai_message(
            role=self.role,
            content=self.content,
            name=self.name,
            tool_calls=[(c.id, c.name, c.arguments, c.type) for c in self.tool_calls],
            tool_call_id=self.tool_call_id,
            refusal=self.refusal,
            metadata=self.metadata,
        )

    @property
    def text(self) -> str:
        """Return the content as plain text (parts as ``content.content_text``)."""
        return content_text(self.content)

    @property
    def is_instruction(self) -> bool:
        """Tell whether this is a system or developer message."""
        return self.role in INSTRUCTION_ROLES

    @property
    def is_event_marker(self) -> bool:
        """Tell whether this is a compression separator (never summarized)."""
        return self.kind == EVENT_MARKER


_SET_ROLE = slot_setter(Message, "role")
_SET_CONTENT = slot_setter(Message, "content")
_SET_TOOL_CALLS = slot_setter(Message, "tool_calls")
_SET_TOOL_CALL_ID = slot_setter(Message, "tool_call_id")
_SET_NAME = slot_setter(Message, "name")
_SET_KIND = slot_setter(Message, "kind")
_SET_TIMESTAMP = slot_setter(Message, "timestamp")
_SET_METADATA = slot_setter(Message, "metadata")
_SET_REFUSAL = slot_setter(Message, "refusal")
_SET_ID = slot_setter(Message, "id")


@attrs.frozen
class LLMRef:
    """A model of a provider the host registered (``summary_model_mode="custom"``).

    >>> LLMRef("openai", "gpt-4o-mini").model
    'gpt-4o-mini'
    """

    provider: str
    model: str


def is_host_instruction(message: Message) -> bool:
    """Tell whether ``message`` is one of the host's instructions: context, not history.

    A system or developer message of no ``kind``: what a host (or an integration on
    its behalf) saved. A compression never archives one nor sends it to the
    summarizer; it stays active in its id order. The engine's own system messages
    (event markers, the injected summary) and the ones integrations write for other
    items carry a ``kind`` and are history like any other.

    >>> is_host_instruction(Message("developer", "Be brief."))
    True
    >>> is_host_instruction(Message("system", "[compressed]", kind=EVENT_MARKER))
    False
    """
    return message.role in INSTRUCTION_ROLES and message.kind is None


def is_marked(
    message: Message, kind: str, role: Role, prefixes: tuple[str, ...]
) -> bool:
    """Tell whether ``message`` is one the engine wrote with ``kind``, even kind-less.

    A host's own format (OpenAI dicts, say) keeps only a message's role and text, so
    such a message is also recognised as a ``role`` message whose text starts with
    one of ``prefixes`` (a locale's header or stub opening).

    >>> stub = Message("tool", "[stub] ls", tool_call_id="c1")
    >>> is_marked(stub, "masked", "tool", ("[stub]",))
    True
    >>> is_marked(Message("user", "[stub] ls"), "masked", "tool", ("[stub]",))
    False
    """
    if message.kind == kind:
        return True
    content = message.content
    return (
        message.role == role
        and isinstance(content, str)
        and content.startswith(prefixes)
    )


def messages_from_openai(messages: Iterable[OpenAIMessage]) -> list[Message]:
    """Return OpenAI-format messages (dicts or pydantic models) as ``Message``s.

    Raises:
        MessageError: a message is malformed; the field names its index.

    >>> [m.role for m in messages_from_openai([{"role": "user", "content": "hi"}])]
    ['user']
    """
    result: list[Message] = []
    try:
        result.extend(Message.from_openai(data) for data in messages)
    except MessageError as exc:
        where = f"messages[{len(result)}].{exc.field}"  # extend appends as it goes
        raise MessageError(where, exc.problem) from exc
    return result


def messages_to_openai(messages: Iterable[Message]) -> list[dict[str, object]]:
    """Return messages in OpenAI's chat format (see ``Message.to_openai``).

    >>> messages_to_openai([Message("user", "hi")])
    [{'role': 'user', 'content': 'hi'}]
    """
    return [message.to_openai() for message in messages]
