"""Tool-use pairing by Anthropic's rules, on messages about to be written as turns.

Anthropic's Messages API answers 400 unless

- every ``tool_use`` of an assistant turn is answered by a ``tool_result`` in the very
  next user turn, and every ``tool_result`` answers a ``tool_use`` of the turn before;
- the results come first in that user turn, before any other block;
- roles alternate, starting with a user turn.

``anthropic_pairs`` gets a message list there. ``repair.repair_pairs`` puts each
result right after its call, drops orphans and duplicates, and answers unanswered calls
with "result unavailable"; it leaves the trailing group alone while none of its results
has arrived (the host is still executing it), and, since the API takes no partial
answer, once one has arrived the others are answered "unavailable" too. Once
``messages_to_anthropic(..., alternate=True)`` merges consecutive messages of one side
into a turn, the results open the user turn after their call. A history that starts
with an assistant turn (its start was folded into the summary) gets a short user turn
before it. Idempotent.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Message
from .repair import REPAIR_KIND, UNAVAILABLE, Repair, repair_pairs

CONTINUED = "[The earlier conversation is summarized in the system prompt.]"
"""The user turn put before a history that starts with an assistant turn."""


def _answer_trailing_turn(messages: list[Message]) -> list[Message]:
    """Answer the trailing calls "unavailable" once one of them was answered.

    The API takes no partial answer: a user turn with some of the calls' results
    must hold them all. Calls none of whose results has arrived yet are left alone.
    Results stay in the order of the calls, as ``repair_pairs`` puts them.
    """
    index = len(messages)
    while index > 0 and messages[index - 1].role == "tool":
        index -= 1
    if index == len(messages) or index == 0:
        return messages
    caller = messages[index - 1]
    if caller.role != "assistant":
        return messages
    results: dict[str | None, Message | None] = {
        m.tool_call_id: m
        for m in reversed(messages[index:])  # the first one wins
    }
    ordered: list[Message] = []
    for call in caller.tool_calls:
        if not call.id or any(m.tool_call_id == call.id for m in ordered):
            continue
        ordered.append(
            results.pop(call.id, None)
            or Message(
                "tool",
                UNAVAILABLE,
                tool_call_id=call.id,
                name=call.name,
                kind=REPAIR_KIND,
            )
        )
    rest = [m for m in results.values() if m is not None]
    return [*messages[:index], *ordered, *rest]


def anthropic_pairs(
    messages: Iterable[Message], repair: Repair = True
) -> list[Message]:
    """Return ``messages`` paired by Anthropic's rules (``repair=False``: unchanged).

    >>> from memory_summary.domain import ToolCall
    >>> out = anthropic_pairs([Message("assistant", "", [ToolCall("t1", "f", "{}")]),
    ...     Message("user", "next")])
    >>> [m.role for m in out]
    ['user', 'assistant', 'tool', 'user']
    """
    paired = repair_pairs(messages, repair)
    if repair is False:
        return paired
    paired = _answer_trailing_turn(paired)
    first = next((i for i, m in enumerate(paired) if not m.is_instruction), None)
    if first is not None and paired[first].role == "assistant":
        paired.insert(first, Message("user", CONTINUED, kind=REPAIR_KIND))
    return paired
