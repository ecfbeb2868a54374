"""How folded messages are written out for the summarizer.

seed: an assistant tool call renders as ``Call <tool>(<arguments>)``; a tool result as
``Tool result(<tool>): <body>``, the tool name found by ``tool_call_id`` among the
assistant calls of the same window (the message's own ``name`` only as fallback);
arguments and bodies are each hard-cut to 200 characters. ``zh`` uses the seed's labels.

Content given as parts renders as its text, with a placeholder for each image, audio or
file part (``content.content_text``); an assistant's refusal renders as its text.
A result takes the name of the nearest call before it with its id, so a reused id
names its own call. A later line of a message that begins like an entry ("User: ...",
in any locale or case) is indented, so text inside a message can never pass for a new
transcript entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import attrs

from .config import Locale
from .model import Message
from .text import INVISIBLE, cut_chars

UNKNOWN_TOOL = "?"


@attrs.frozen
class Labels:
    """The words a rendered transcript uses."""

    system: str
    user: str
    assistant: str
    call: str
    tool_result: str


LABELS: Mapping[Locale, Labels] = {
    "en": Labels(
        system="System",
        user="User",
        assistant="Assistant",
        call="Call",
        tool_result="Tool result",
    ),
    "zh": Labels(
        system="系统",
        user="用户",
        assistant="助手",
        call="调用",
        tool_result="工具结果",
    ),
}


CONTINUATION = "  "
"""The indent of every line of a message after its first."""


def tool_names_by_call_id(window: Iterable[Message]) -> dict[str, str]:
    """Return the tool name of every assistant tool call in ``window``, by call id."""
    return {
        call.id: call.name
        for message in window
        if message.role == "assistant"
        for call in message.tool_calls
    }


def result_names(window: Sequence[Message]) -> list[dict[str, str]]:
    """Return, per message, the name of the call a tool result answers (by its id).

    The nearest earlier call with the result's id names it; other messages get ``{}``.
    """
    latest: dict[str, str] = {}
    names: list[dict[str, str]] = []
    for message in window:
        if message.role == "assistant":
            latest.update((call.id, call.name) for call in message.tool_calls)
        call_id = message.tool_call_id
        if message.role == "tool" and call_id is not None and call_id in latest:
            names.append({call_id: latest[call_id]})
        else:
            names.append({})
    return names


def _alternation(labels: Iterable[str]) -> str:
    return "|".join(re.escape(label) for label in labels)


_SPEAKERS = _alternation(
    label
    for labels in LABELS.values()
    for label in (labels.user, labels.assistant, labels.system)
)
_CALLS = _alternation(labels.call for labels in LABELS.values())
_RESULTS = _alternation(labels.tool_result for labels in LABELS.values())
ENTRY_LABEL = re.compile(
    rf"^(?:(?P<speaker>{_SPEAKERS}): ?|(?P<call>{_CALLS}) (?P<name>[^\s(]{{0,80}})\("
    rf"|(?P<result>{_RESULTS})\((?P<tool>[^\n]{{0,80}}?)\): ?)"
)
"""The label that opens a transcript entry, exactly as ``render_message`` writes it:
``speaker``, or ``call`` and the tool ``name``, or ``result`` and its ``tool``."""
Speaker = Literal["user", "assistant", "system"]


def _label_roles() -> dict[str, Speaker]:
    roles: dict[str, Speaker] = {}
    for labels in LABELS.values():
        roles[labels.user] = "user"
        roles[labels.assistant] = "assistant"
        roles[labels.system] = "system"
    return roles


LABEL_ROLES: Mapping[str, Speaker] = _label_roles()
"""The role each speaker label of ``ENTRY_LABEL`` stands for."""
# What begins a transcript entry in any locale, however cased or spaced.
_ENTRY_START = re.compile(
    rf"[\s{INVISIBLE}]*(?:(?:{_SPEAKERS})[\s{INVISIBLE}]*[:：]"
    rf"|(?:{_CALLS})\s|(?:{_RESULTS})[\s{INVISIBLE}]*\()",
    re.IGNORECASE,
)


def fenced_text(text: str) -> str:
    r"""Return ``text`` with every later line that could pass for an entry indented.

    A line of a message (after its first, for any line break ``str.splitlines``
    knows) that begins like ``User:``, ``Call x(`` or ``Tool result(`` in any locale
    is indented by ``CONTINUATION``; every other line is left as it is.

    >>> fenced_text("ok\nAssistant: yes\nfine")
    'ok\n  Assistant: yes\nfine'
    """
    lines = text.splitlines(keepends=True)
    if len(lines) <= 1:
        return text
    return lines[0] + "".join(
        CONTINUATION + line if _ENTRY_START.match(line) else line for line in lines[1:]
    )


def render_message(
    message: Message,
    names: Mapping[str, str],
    *,
    locale: Locale = "en",
    cut: int = 200,
) -> str:
    """Return one message as transcript text (one or more lines)."""
    labels = LABELS[locale]
    if message.role == "tool":
        tool = names.get(message.tool_call_id or "") or message.name or UNKNOWN_TOOL
        body = fenced_text(cut_chars(message.text, cut))
        return f"{labels.tool_result}({_one_line(tool)}): {body}"
    if message.role == "assistant":
        text = message.text or message.refusal or ""
        lines = [f"{labels.assistant}: {fenced_text(text)}"] if text else []
        lines.extend(
            f"{labels.call} {_one_line(call.name)}"
            f"({fenced_text(cut_chars(call.arguments, cut))})"
            for call in message.tool_calls
        )
        return "\n".join(lines) or f"{labels.assistant}: "
    label = labels.system if message.is_instruction else labels.user
    return f"{label}: {fenced_text(message.text)}"


def _one_line(name: str) -> str:
    return name if name.splitlines() in ([name], []) else " ".join(name.split())


def render_transcript(
    messages: Sequence[Message],
    *,
    window: Sequence[Message] | None = None,
    locale: Locale = "en",
    cut: int = 200,
) -> list[str]:
    """Render each message; tool names come from ``window`` (default ``messages``).

    A message of ``window`` takes the name of the nearest call before it; one that
    is not in ``window`` takes any call of the window with its id.
    """
    if window is None:
        window = messages
    names = result_names(window)
    at = {id(m): i for i, m in enumerate(window)}
    fallback = tool_names_by_call_id(window)
    return [
        render_message(
            m, names[at[id(m)]] if id(m) in at else fallback, locale=locale, cut=cut
        )
        for m in messages
    ]
