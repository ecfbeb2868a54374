"""Tool-call pairing a provider accepts: results after their call, calls answered.

OpenAI-compatible APIs (and Anthropic's and Gemini's, through their adapters) answer
400 to a request in which

- a tool message does not answer a call of the assistant message right before its
  block of tool messages (an orphan, or a result separated from its call);
- an assistant call has no result before the next non-tool message;
- one call has two results.

``repair_pairs`` rewrites a message list so that none of this happens, changing as
little as it can: results move next to their call, duplicates and orphans are dropped
(or orphans get a synthesized call), and unanswered calls get a synthetic
"result unavailable" (a real result that arrives later replaces it). A call in the
trailing group is the one the host is still executing and is left alone, and so is a
call without an id (nothing can answer it).

A result pairs with the nearest preceding call of its id: a reused id pairs with its
own call, never with the last one in the window.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from .model import Message, ToolCall

Repair = bool | Literal["placeholder"]
"""``True``: drop orphan results; ``"placeholder"``: synthesize their call; ``False``:
change nothing."""
REPAIR_KIND = "memory-summary-repair"
"""``Message.kind`` of the messages ``repair_pairs`` synthesizes."""
UNAVAILABLE = "[tool result unavailable]"
PLACEHOLDER_TOOL = "unknown_tool"


def owners(messages: Sequence[Message]) -> list[int | None]:
    """Return, for each message, the index of the call its result answers.

    A tool message answers the nearest preceding assistant call with its id; other
    messages, and orphans, map to None.
    """
    found: list[int | None] = [None] * len(messages)
    latest: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.role == "assistant":
            for call in message.tool_calls:
                latest[call.id] = index
        elif message.role == "tool" and message.tool_call_id is not None:
            found[index] = latest.get(message.tool_call_id)
    return found


def _trailing_caller(messages: Sequence[Message]) -> int | None:
    """Return the index of the last assistant message when only tool results follow."""
    index = len(messages) - 1
    while index >= 0 and messages[index].role == "tool":
        index -= 1
    if index >= 0 and messages[index].role == "assistant":
        return index if messages[index].tool_calls else None
    return None


def _unavailable(call: ToolCall) -> Message:
    return Message(
        "tool", UNAVAILABLE, tool_call_id=call.id, name=call.name, kind=REPAIR_KIND
    )


def _placeholder_call(orphans: Sequence[Message]) -> Message:
    calls = tuple(
        ToolCall(m.tool_call_id or "", m.name or PLACEHOLDER_TOOL, "{}")
        for m in orphans
    )
    return Message("assistant", "", tool_calls=calls, kind=REPAIR_KIND)


def repair_pairs(messages: Iterable[Message], repair: Repair = True) -> list[Message]:
    """Return ``messages`` with tool calls and results paired as providers require.

    Idempotent; ``repair=False`` returns the list unchanged.

    >>> calls = (ToolCall("c1", "search", "{}"),)
    >>> out = repair_pairs([Message("tool", "late", tool_call_id="c0"),
    ...     Message("assistant", "", tool_calls=calls), Message("user", "next")])
    >>> [(m.role, m.content) for m in out]
    [('assistant', ''), ('tool', '[tool result unavailable]'), ('user', 'next')]
    """
    if repair is not True and repair is not False and repair != "placeholder":
        raise ValueError(
            f"repair={repair!r} is invalid; allowed: True / False / 'placeholder'"
        )
    messages = list(messages)
    if repair is False:
        return messages
    return _pair(_settle_orphans(messages, placeholder=repair == "placeholder"))


def _settle_orphans(messages: Sequence[Message], *, placeholder: bool) -> list[Message]:
    """Drop every result no earlier call asks for, or give each run of them a call."""
    owner = owners(messages)
    out: list[Message] = []
    run: dict[str, Message] = {}

    def flush() -> None:
        if run:
            out.append(_placeholder_call(list(run.values())))
            out.extend(run.values())
            run.clear()

    for index, message in enumerate(messages):
        if message.role == "tool" and owner[index] is None:
            if placeholder and message.tool_call_id:
                run.setdefault(message.tool_call_id, message)
            continue
        flush()
        out.append(message)
    flush()
    return out


def _pair(messages: Sequence[Message]) -> list[Message]:
    """Put each call's first result right after it; answer the calls left unanswered."""
    owner = owners(messages)
    results: dict[int, dict[str, Message]] = {}
    for index, message in enumerate(messages):
        caller = owner[index]
        if caller is not None:
            answered = results.setdefault(caller, {})
            found = answered.get(message.tool_call_id or "")
            if found is None or (
                found.kind == REPAIR_KIND and message.kind != REPAIR_KIND
            ):  # the first result; a real one replaces a synthesized one
                answered[message.tool_call_id or ""] = message
    trailing = _trailing_caller(messages)
    out: list[Message] = []
    for index, message in enumerate(messages):
        if message.role == "tool":
            continue  # every result is placed with its call below
        out.append(message)
        if message.role != "assistant" or not message.tool_calls:
            continue
        answered = results.get(index, {})
        seen: set[str] = set()
        for call in message.tool_calls:
            if call.id in seen:
                continue
            seen.add(call.id)
            result = answered.get(call.id)
            if result is not None:
                out.append(result)
            elif index != trailing and call.id:  # an id-less call cannot be answered
                out.append(_unavailable(call))
    return out
