"""Messages written as Anthropic's ``(system, messages)``: the other half of the format.

``messages_from_anthropic`` (``anthropic_format``) reads a request; this module writes
one back, using what the reader kept in ``metadata["anthropic"]`` to give each turn
back exactly (see ``anthropic_format`` for the mapping).

Anthropic has no refusal: an OpenAI assistant's ``refusal`` (the field, or a content
part of type ``refusal``) goes as a text block holding its text, once (a field that a
refusal part already says adds nothing). Anthropic refuses a
turn with no content unless it is the last one: a request (``alternate=True``) gives
every earlier turn that would be empty (a reply of an OpenAI audio part alone, a host's
empty message) the text ``EMPTY_TURN``, and leaves out such a turn's blank text blocks.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence

from .anthropic_format import (
    ANTHROPIC,
    TOOL_RESULT_KEYS,
    TOOL_USE_KEYS,
    AnthropicContent,
    AnthropicSystem,
    Side,
)
from .content import ContentPart, plain, plain_parts
from .model import Message, ToolCall

EMPTY_TURN = "[empty message]"
"""The text of a request's turn that has no content and is not the last one."""


def anthropic_meta(message: Message) -> Mapping[str, object]:
    """Return what ``messages_from_anthropic`` kept of a message's blocks, or ``{}``."""
    meta = message.metadata.get(ANTHROPIC)
    return meta if isinstance(meta, Mapping) else {}


def _text_blocks(
    content: str | Sequence[ContentPart] | None,
) -> list[dict[str, object]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return plain_parts(content)


def _no_constant(name: str) -> object:
    """Refuse ``NaN`` and ``Infinity``: Python reads them, JSON (the API) does not."""
    raise ValueError(f"{name} is not JSON")


def _tool_use(call: ToolCall, extra: object) -> dict[str, object]:
    try:
        arguments: object = json.loads(call.arguments, parse_constant=_no_constant)
    except ValueError:  # a model's malformed JSON: sent as text, never dropped
        arguments = None
    if not isinstance(arguments, dict):  # the API takes an object alone as input
        arguments = {"arguments": call.arguments}
    block: dict[str, object] = {
        "type": "tool_use",
        "id": call.id,
        "name": call.name,
        "input": arguments,
    }
    if isinstance(extra, Mapping):
        block.update({k: plain(v) for k, v in extra.items() if k not in TOOL_USE_KEYS})
    return block


def _assistant_text(message: Message) -> list[dict[str, object]]:
    """Return an assistant's blocks but its tool uses: refusals as text blocks.

    The ``refusal`` field goes after the content, unless a refusal part already
    says it (a reply may carry its refusal both ways): each refusal goes once.
    """
    base: list[dict[str, object]] = []
    refused: set[str] = set()
    for block in _text_blocks(message.content):
        if block.get("type") != "refusal":
            base.append(block)
        elif isinstance(text := block.get("refusal"), str) and text:
            base.append({"type": "text", "text": text})
            refused.add(text.strip())
    if message.refusal and message.refusal.strip() not in refused:
        base.append({"type": "text", "text": message.refusal})
    return base


def _assistant_blocks(message: Message) -> list[dict[str, object]]:
    base = _assistant_text(message)
    meta = anthropic_meta(message)
    extras = meta.get("tool_use_extra")
    uses = [
        _tool_use(
            call, extras[i] if isinstance(extras, list) and i < len(extras) else None
        )
        for i, call in enumerate(message.tool_calls)
    ]
    at = meta.get("tool_use_at")
    total = len(base) + len(uses)
    if not (
        isinstance(at, list)
        and len(at) == len(uses)
        and all(isinstance(i, int) and 0 <= i < total for i in at)
        and all(a < b for a, b in itertools.pairwise(at))
    ):
        return base + uses
    slots = set(at)
    base_left, uses_left = iter(base), iter(uses)
    return [next(uses_left) if i in slots else next(base_left) for i in range(total)]


def _tool_result(message: Message) -> dict[str, object]:
    meta = anthropic_meta(message)
    block: dict[str, object] = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
    }
    if not (meta.get("no_content") is True and message.content == ""):
        content = message.content
        block["content"] = (
            content if isinstance(content, str) else _text_blocks(content)
        )
    extra = meta.get("result_extra")
    if isinstance(extra, Mapping):
        block.update(
            {k: plain(v) for k, v in extra.items() if k not in TOOL_RESULT_KEYS}
        )
    return block


def _blocks(message: Message) -> list[dict[str, object]]:
    if message.role == "tool":
        return [_tool_result(message)]
    if message.role == "assistant":
        return _assistant_blocks(message)
    return _text_blocks(message.content)


def turn_content(group: Sequence[Message], *, fill: bool = False) -> AnthropicContent:
    """Return the content of one turn: the consecutive messages of one side.

    A lone plain text message stays text; anything else becomes its blocks.
    ``fill``: blank text is left out, and a turn with no content becomes
    ``EMPTY_TURN`` (a request's turn that is not the last one: Anthropic refuses it
    empty, and refuses a blank text block anywhere).
    """
    only = group[0]
    content: AnthropicContent
    if (
        len(group) == 1
        and only.role != "tool"
        and isinstance(only.content, str)
        and not only.tool_calls
        and not only.refusal
    ):
        content = only.content
    else:
        content = [block for message in group for block in _blocks(message)]
    if fill:
        content = _without_blank_text(content)
        if not content:
            return [{"type": "text", "text": EMPTY_TURN}]
    return content


def _without_blank_text(content: AnthropicContent) -> AnthropicContent:
    """Return ``content`` without its blank text (Anthropic refuses a blank text block).

    >>> _without_blank_text(" "), _without_blank_text([{"type": "text", "text": ""}])
    ('', [])
    """
    if isinstance(content, str):
        return content if content.strip() else ""
    return [
        block
        for block in content
        if block.get("type") != "text"
        or not isinstance(block.get("text"), str)
        or str(block["text"]).strip()
    ]


def _system_value(instructions: Sequence[Message]) -> AnthropicSystem:
    if not instructions:
        return None
    if len(instructions) == 1:
        content = instructions[0].content
        return content if isinstance(content, str) else _text_blocks(content)
    if all(isinstance(m.content, str) for m in instructions):
        return "\n\n".join(m.text for m in instructions)
    return [block for m in instructions for block in _text_blocks(m.content)]


def messages_to_anthropic(
    messages: Iterable[Message], *, alternate: bool = False
) -> tuple[AnthropicSystem, list[dict[str, object]]]:
    """Return ``(system, messages)`` as Anthropic's Messages API takes them.

    System and developer messages, wherever they are, become ``system`` (one: its
    content as given; several: joined, text with blank lines, else as text blocks; none:
    None, so pass ``system`` only when it is not None). Tool messages become
    ``tool_result`` blocks of the user turn they fall in. Consecutive messages of one
    side form one turn, unless ``messages_from_anthropic`` marked a turn that began
    there; ``alternate=True`` merges those too (the API requires alternating roles)
    and gives every turn but the last that has no content the text ``EMPTY_TURN``.

    >>> messages_to_anthropic([Message("system", "Be brief."), Message("user", "hi")])
    ('Be brief.', [{'role': 'user', 'content': 'hi'}])
    """
    instructions: list[Message] = []
    turns: list[tuple[Side, list[Message]]] = []
    for message in messages:
        if message.is_instruction:
            instructions.append(message)
            continue
        side: Side = "assistant" if message.role == "assistant" else "user"
        starts = anthropic_meta(message).get("turn") is True and not alternate
        if turns and turns[-1][0] == side and not starts:
            turns[-1][1].append(message)
        else:
            turns.append((side, [message]))
    last = len(turns) - 1
    return _system_value(instructions), [
        {"role": side, "content": turn_content(group, fill=alternate and i < last)}
        for i, (side, group) in enumerate(turns)
    ]
