"""How folded messages are written out for the summarizer.

seed: an assistant tool call renders as ``Call <tool>(<arguments>)``; a tool result as
``Tool result(<tool>): <body>``, the tool name found by ``tool_call_id`` among the
assistant calls of the same window (the message's own ``name`` only as fallback);
arguments and bodies are each hard-cut to 200 characters. ``zh`` uses the seed's labels.
Content given as parts renders as its text, with a placeholder for each image, audio or
file part (``content.content_text``); an assistant's refusal renders as its text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from .config import Locale
from .model import Message
from .text import cut_chars

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


def tool_names_by_call_id(window: Iterable[Message]) -> dict[str, str]:
    """Return the tool name of every assistant tool call in ``window``, by call id."""
    return {
        call.id: call.name
        for message in window
        if message.role == "assistant"
        for call in message.tool_calls
    }


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
        return f"{labels.tool_result}({tool}): {cut_chars(message.text, cut)}"
    if message.role == "assistant":
        text = message.text or message.refusal or ""
        lines = [f"{labels.assistant}: {text}"] if text else []
        lines.extend(
            f"{labels.call} {call.name}({cut_chars(call.arguments, cut)})"
            for call in message.tool_calls
        )
        return "\n".join(lines) or f"{labels.assistant}: "
    label = labels.system if message.is_instruction else labels.user
    return f"{label}: {message.text}"


def render_transcript(
    messages: Sequence[Message],
    *,
    window: Sequence[Message] | None = None,
    locale: Locale = "en",
    cut: int = 200,
) -> list[str]:
    """Render each message; tool names come from ``window`` (default ``messages``)."""
    names = tool_names_by_call_id(messages if window is None else window)
    return [render_message(m, names, locale=locale, cut=cut) for m in messages]
