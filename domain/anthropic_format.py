"""Anthropic's Messages format: ``(system, messages)`` read into messages and back.

Anthropic keeps the system prompt outside the messages and puts tool calls and results
in content blocks. ``messages_from_anthropic`` reads a request into ``Message``s:

- ``system`` (text or a list of text blocks) becomes one leading system message (its
  blocks as content parts, ``cache_control`` marks and all);
- a user turn becomes a user message (text, or its blocks as parts: text, ``image``,
  ``document``...), except that each ``tool_result`` block becomes a tool message of
  its own, in order (``tool_call_id`` = ``tool_use_id``, content as given, its other
  keys such as ``is_error`` and ``cache_control`` in the metadata);
- an assistant turn becomes one assistant message: its ``tool_use`` blocks become
  ``tool_calls`` (``input`` as JSON text), every other block (``text``, ``thinking``,
  ``redacted_thinking``, server tool blocks, ``compaction``...) stays a content part,
  verbatim. A turn's thinking therefore lives in the same message as its tool calls,
  and a cut, which only falls between messages, never separates them.

``messages_to_anthropic`` (``anthropic_turns``) writes them back: instruction messages
(system, developer) become the ``system`` value, and the other messages turns,
consecutive tool and user messages forming one user turn. What is needed to give a
turn back exactly (where its ``tool_use`` blocks stood among the other blocks, their
extra keys, a tool result without content, where one of two consecutive turns of one
role began) rides in the message's metadata under ``ANTHROPIC``, only when it differs
from the default. A request read and written back is equal to the one given (text
normalized as every message text is); a store keeps all of it.

A ``compaction`` block (Anthropic's server-side compaction: a summary of every message
before it) is a content part like the others; the engine reads it as a boundary (see
``content.carries_compaction``): what it replaced is not summarized again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, TypeAlias

from .errors import MessageError
from .model import Message, ToolCall
from .openai_format import openai_mapping
from .text import normalize_text

ANTHROPIC = "anthropic"
"""Metadata key holding what a message needs to be written back exactly."""

AnthropicSystem: TypeAlias = "str | Sequence[Mapping[str, object]] | None"
"""The ``system`` of a Messages request: text, a list of text blocks, or None."""
AnthropicContent: TypeAlias = "str | list[dict[str, object]]"
Side = Literal["user", "assistant"]

TOOL_USE_KEYS = frozenset({"type", "id", "name", "input"})
TOOL_RESULT_KEYS = frozenset({"type", "tool_use_id", "content"})


def _normalized(value: object) -> object:
    """Return plain JSON data with every text and key normalized (``normalize_text``).

    Before encoding: JSON escapes a NUL, which normalizing the encoded text would miss.
    """
    if isinstance(value, str):
        return normalize_text(value)
    if isinstance(value, Mapping):
        return {
            normalize_text(k) if isinstance(k, str) else k: _normalized(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_normalized(item) for item in value]
    return value


def _json_text(value: object, where: str) -> str:
    """Return ``value`` as JSON text, its text normalized; raise if it is not JSON."""
    try:
        return json.dumps(_normalized(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MessageError(where, f"is not JSON: {exc}") from exc


def _json_copy(value: object, where: str) -> object:
    """Return a plain JSON copy of ``value``, its text normalized; raise if not JSON."""
    copied: object = json.loads(_json_text(value, where))
    return copied


def _block(data: object, where: str) -> Mapping[str, object]:
    """Return one content block as a mapping (a dict, or an SDK block's dump)."""
    try:
        block = openai_mapping(data)
    except MessageError as exc:
        raise MessageError(where, exc.problem) from exc
    if not isinstance(block.get("type"), str):
        raise MessageError(f"{where}.type", "must be text naming the block's type")
    return block


def _text_field(block: Mapping[str, object], key: str, where: str) -> str:
    value = block.get(key)
    if not isinstance(value, str) or not value:
        raise MessageError(f"{where}.{key}", "must be non-empty text")
    return value


def _tool_call(block: Mapping[str, object], where: str) -> ToolCall:
    if "input" not in block:
        raise MessageError(f"{where}.input", "a tool_use block needs its input")
    arguments = _json_text(block["input"], f"{where}.input")
    return ToolCall(
        _text_field(block, "id", where), _text_field(block, "name", where), arguments
    )


def _tool_message(block: Mapping[str, object], where: str, first: bool) -> Message:
    meta: dict[str, object] = {"turn": True} if first else {}
    extra = {k: v for k, v in block.items() if k not in TOOL_RESULT_KEYS}
    if extra:
        meta["result_extra"] = _json_copy(extra, where)
    content = block.get("content")
    if content is None:
        meta["no_content"] = True
        content = ""
    elif not isinstance(content, str):
        if not isinstance(content, Sequence):
            raise MessageError(f"{where}.content", "must be text or a list of blocks")
        content = [_block(b, f"{where}.content[{i}]") for i, b in enumerate(content)]
    return Message(
        "tool",
        content,
        tool_call_id=_text_field(block, "tool_use_id", where),
        metadata={ANTHROPIC: meta} if meta else None,
    )


def _user_turn(blocks: Sequence[Mapping[str, object]], first: bool) -> list[Message]:
    """Return a user turn's messages: runs of blocks, and each tool result alone."""
    out: list[Message] = []
    parts: list[Mapping[str, object]] = []

    def flush(force: bool) -> None:
        if parts or force:
            marked = first and not out
            out.append(Message("user", list(parts), metadata=_turn_meta(marked)))
            parts.clear()

    for index, block in enumerate(blocks):
        where = f"content[{index}]"
        if block["type"] == "tool_use":
            raise MessageError(f"{where}.type", "tool_use belongs in an assistant turn")
        if block["type"] == "tool_result":
            flush(False)
            out.append(_tool_message(block, where, first and not out))
        else:
            parts.append(block)
    flush(not out)
    return out


def _assistant_turn(blocks: Sequence[Mapping[str, object]], first: bool) -> Message:
    """Return an assistant turn as one message: tool uses as calls, the rest parts."""
    parts: list[Mapping[str, object]] = []
    calls: list[ToolCall] = []
    at: list[int] = []
    extras: list[object] = []
    for index, block in enumerate(blocks):
        where = f"content[{index}]"
        if block["type"] == "tool_result":
            raise MessageError(f"{where}.type", "tool_result belongs in a user turn")
        if block["type"] != "tool_use":
            parts.append(block)
            continue
        calls.append(_tool_call(block, where))
        at.append(index)
        extra = {k: v for k, v in block.items() if k not in TOOL_USE_KEYS}
        extras.append(_json_copy(extra, where) if extra else None)
    meta: dict[str, object] = {"turn": True} if first else {}
    if at != list(range(len(parts), len(blocks))):  # not all after the other blocks
        meta["tool_use_at"] = at
    if any(extra is not None for extra in extras):
        meta["tool_use_extra"] = extras
    return Message(
        "assistant",
        parts,
        calls,
        metadata={ANTHROPIC: meta} if meta else None,
    )


def _turn_meta(first: bool) -> Mapping[str, object] | None:
    return {ANTHROPIC: {"turn": True}} if first else None


def _turn(data: object, repeated: bool) -> tuple[Side, list[Message]]:
    """Return one API message as ``Message``s; ``repeated``: same role before."""
    message = openai_mapping(data)
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise MessageError("role", f"{role!r} is not user or assistant")
    content = message.get("content")
    if isinstance(content, str):
        return role, [Message(role, content, metadata=_turn_meta(repeated))]
    if not isinstance(content, Sequence):
        raise MessageError("content", "must be text or a list of content blocks")
    blocks = [_block(b, f"content[{i}]") for i, b in enumerate(content)]
    if role == "user":
        return role, _user_turn(blocks, repeated)
    return role, [_assistant_turn(blocks, repeated)]


def _system_message(system: object) -> Message:
    if isinstance(system, str):
        return Message("system", system)
    if not isinstance(system, Sequence):
        raise MessageError("system", "must be text or a list of text blocks")
    try:
        return Message("system", [_block(b, f"[{i}]") for i, b in enumerate(system)])
    except MessageError as exc:
        raise MessageError(
            f"system{exc.field.removeprefix('content')}", exc.problem
        ) from exc


def messages_from_anthropic(
    system: AnthropicSystem, messages: Iterable[Mapping[str, object] | object]
) -> list[Message]:
    """Return a Messages-API request (``system``, ``messages``) as ``Message``s.

    ``messages`` are dicts or the anthropic SDK's pydantic objects (a response's
    ``content`` blocks included). See the module docstring for the mapping;
    ``messages_to_anthropic`` gives the request back.

    Raises:
        MessageError: a message or block is malformed; the field names where.

    >>> got = messages_from_anthropic("Be brief.", [
    ...     {"role": "assistant", "content": [
    ...         {"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"},
    ...         {"type": "tool_use", "id": "t1", "name": "find", "input": {"q": "x"}}]},
    ...     {"role": "user", "content": [
    ...         {"type": "tool_result", "tool_use_id": "t1", "content": "found"}]}])
    >>> [(m.role, m.tool_call_id) for m in got]
    [('system', None), ('assistant', None), ('tool', 't1')]
    >>> got[1].tool_calls[0].arguments, got[1].content[0]["type"]
    ('{"q": "x"}', 'thinking')
    """
    result: list[Message] = [] if system is None else [_system_message(system)]
    previous: str | None = None
    for index, data in enumerate(messages):
        try:
            role = openai_mapping(data).get("role")
            side, turn = _turn(data, repeated=role == previous)
        except MessageError as exc:
            raise MessageError(f"messages[{index}].{exc.field}", exc.problem) from exc
        result.extend(turn)
        previous = side
    return result
