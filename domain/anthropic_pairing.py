"""Tool-use pairing by Anthropic's rules, on messages about to be written as turns.

Anthropic's Messages API answers 400 unless

- every ``tool_use`` of an assistant turn is answered by a ``tool_result`` in the very
  next user turn, and every ``tool_result`` answers a ``tool_use`` of the turn before;
- the results come first in that user turn, before any other block;
- roles alternate, starting with a user turn.

``anthropic_pairs`` gets a message list there: ``repair.repair_pairs`` puts each
result right after its call (dropping orphans and duplicates, answering unanswered
calls with "result unavailable", leaving the trailing group alone: the host is still
executing it), so, once ``messages_to_anthropic(..., alternate=True)`` merges
consecutive messages of one side into a turn, the results open the user turn after
their call. A history that starts with an assistant turn (its start was folded into
the summary) gets a short user turn before it. Idempotent.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Message
from .repair import REPAIR_KIND, Repair, repair_pairs

CONTINUED = "[The earlier conversation is summarized in the system prompt.]"
"""The user turn put before a history that starts with an assistant turn."""


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
    first = next((i for i, m in enumerate(paired) if not m.is_instruction), None)
    if first is not None and paired[first].role == "assistant":
        paired.insert(first, Message("user", CONTINUED, kind=REPAIR_KIND))
    return paired
