"""A tool call an assistant message asks for: a function call or a custom tool call.

Its text fields are normalized on construction like every message text
(``text.normalize_text``); a malformed one raises ``MessageError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, get_args

import attrs

from .errors import MessageError
from .text import normalize_text

ToolType = Literal["function", "custom"]
TOOL_TYPES: tuple[ToolType, ...] = get_args(ToolType)


def require_text(field: str, value: object) -> str:
    """Return ``value`` normalized, or raise ``MessageError`` naming ``field``."""
    if not isinstance(value, str):
        raise MessageError(field, f"must be text (str), got {type(value).__name__}")
    return normalize_text(value)


def optional_text(field: str, value: object) -> str | None:
    """Return ``value`` normalized, or None for None (see ``require_text``)."""
    return None if value is None else require_text(field, value)


# Named converters: the attrs mypy plugin only types named functions.
def _call_id(value: str) -> str:
    return require_text("tool_calls.id", value)


def _call_name(value: str) -> str:
    return require_text("tool_calls.name", value)


def _call_arguments(value: str) -> str:
    return require_text("tool_calls.arguments", value)


def _tool_type(instance: object, attribute: object, value: object) -> None:
    if value not in TOOL_TYPES:
        raise MessageError(
            "tool_calls.type", f"{value!r} is not one of {', '.join(TOOL_TYPES)}"
        )


@attrs.frozen
class ToolCall:
    """One tool call an assistant message asks for.

    ``arguments`` is the JSON text the model produced; it is kept as text, never parsed,
    because models emit malformed JSON and the summary must still show what was asked.

    ``type`` is ``"function"`` (``arguments``: JSON text) or ``"custom"`` (OpenAI's
    custom tools, whose free-form ``input`` is kept in ``arguments``).

    >>> ToolCall("call_1", "search", '{"q": "weather"}').name
    'search'
    """

    id: str = attrs.field(converter=_call_id)
    name: str = attrs.field(converter=_call_name)
    arguments: str = attrs.field(default="", converter=_call_arguments)
    type: ToolType = attrs.field(default="function", kw_only=True, validator=_tool_type)

    @classmethod
    def from_row(
        cls, id: str, name: str, arguments: str, type: ToolType = "function"
    ) -> ToolCall:
        """Rebuild a tool call the library validated on its way into a store; trusted.

        Skips the converters: pass only values read back from rows this library wrote
        (or taken from an existing ``ToolCall``), never input from users or models.
        """
        call = object.__new__(cls)
        _SET_CALL_ID(call, id)
        _SET_CALL_NAME(call, name)
        _SET_CALL_ARGUMENTS(call, arguments)
        _SET_CALL_TYPE(call, type)
        return call

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> ToolCall:
        """Build a tool call from ``{id, name, arguments[, type]}`` or OpenAI's forms.

        OpenAI's are ``{id, type: "function", function: {name, arguments}}`` and
        ``{id, type: "custom", custom: {name, input}}``.
        """
        custom = data.get("custom")
        if data.get("type") == "custom" and isinstance(custom, Mapping):
            return cls(
                require_text("tool_calls.id", data.get("id")),
                require_text("tool_calls.name", custom.get("name")),
                require_text("tool_calls.arguments", custom.get("input", "")),
                type="custom",
            )
        function = data.get("function")
        fields = function if isinstance(function, Mapping) else data
        kind = data.get("type", "function")
        return cls(
            require_text("tool_calls.id", data.get("id")),
            require_text("tool_calls.name", fields.get("name")),
            require_text("tool_calls.arguments", fields.get("arguments", "")),
            type="custom" if kind == "custom" else "function",
        )


def slot_setter(cls: type, field: str) -> Callable[[object, object], None]:
    """Return the setter of the slot ``field`` of ``cls``.

    Frozen classes refuse ``setattr``; the trusted ``from_row`` constructors write
    the slots directly, which is the cheapest way to fill a slotted instance.
    """
    setter: Callable[[object, object], None] = cls.__dict__[field].__set__
    return setter


_SET_CALL_ID = slot_setter(ToolCall, "id")
_SET_CALL_NAME = slot_setter(ToolCall, "name")
_SET_CALL_ARGUMENTS = slot_setter(ToolCall, "arguments")
_SET_CALL_TYPE = slot_setter(ToolCall, "type")
