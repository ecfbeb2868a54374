"""Masking old tool results: the cheap tier before a summary.

Old tool outputs are most of an agent's context and the model rarely needs them
verbatim once it has acted on them. ``mask_tool_results`` replaces each tool result
older than a number of user turns by a one-line stub that names the tool, the size and
how to get the result back (the recall tool ``read_history``). Only the request is
changed: the stored history stays as it is.

Invariants (``tests/property/test_masking_props.py``): a masked message keeps its
role, ``tool_call_id``, name and id, so tool-call pairing is exactly as before; the
list keeps its length and order; masking is idempotent, also after a round trip
through the OpenAI format (a stub is recognized by its text); a stub is shorter than
the text it replaces (or replaces media: an image costs hundreds of tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .config import Locale
from .model import Message, is_marked
from .recall_tools import READ_TOOL
from .render import result_names

MASKED_KIND = "memory-summary-masked"
"""``Message.kind`` of a tool result replaced by its stub."""

MASK_PREFIXES: dict[Locale, str] = {
    "en": "[tool result masked: ",
    "zh": "[工具结果已隐藏：",
}
_UNKNOWN = {"en": "unknown tool", "zh": "未知工具"}


def is_masked(message: Message) -> bool:
    """Tell whether ``message`` is a stub already (by kind, or by its text)."""
    return is_marked(message, MASKED_KIND, "tool", tuple(MASK_PREFIXES.values()))


def mask_stub(message: Message, tool: str, locale: Locale = "en") -> str:
    """Return the one-line stub that stands for the tool result ``message``.

    It names the tool, the result's size in characters and what to pass to
    ``read_history``: the stored id when the message has one, else its
    ``tool_call_id``.

    >>> mask_stub(Message("tool", "x" * 5000, tool_call_id="c1", id=42), "search")
    '[tool result masked: search, 5000 chars; read_history(around_id=42) shows it]'
    """
    size = _size(message, locale)
    if message.id is not None:
        where = f"around_id={message.id}"
    else:
        where = f"tool_call_id={_quoted(message.tool_call_id or '')}"
    if locale == "zh":
        return (
            f"{MASK_PREFIXES['zh']}{tool}，{size}；调用 {READ_TOOL}({where}) 查看原文]"
        )
    return f"{MASK_PREFIXES['en']}{tool}, {size}; {READ_TOOL}({where}) shows it]"


def _size(message: Message, locale: Locale) -> str:
    """Return the result's size: characters of text, and attachments if any."""
    content = message.content
    if isinstance(content, str) or content is None:
        chars, media = len(content or ""), 0
    else:
        texts = [p.get("text") for p in content if p.get("type") == "text"]
        chars = sum(len(t) for t in texts if isinstance(t, str))
        media = sum(p.get("type") not in ("text", "refusal") for p in content)
    if locale == "zh":
        return f"{chars} 个字符" + (f"，{media} 个附件" if media else "")
    return f"{chars} chars" + (f", {media} attachment(s)" if media else "")


def _quoted(text: str) -> str:
    """Return ``text`` as a one-line double-quoted literal (no newline can leak)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + " ".join(escaped.split()) + '"'


def _has_media(message: Message) -> bool:
    content = message.content
    return not isinstance(content, str) and any(
        part.get("type") not in ("text", "refusal") for part in content or ()
    )


def old_tool_results(messages: Sequence[Message], after_user_turns: int) -> list[int]:
    """Return the indexes of tool results ``after_user_turns`` user turns old or more.

    A user turn is what the user side sends between two replies of the model: a run
    of messages without an assistant message that holds a user message (however
    many, with the tool results beside them). A tool result belongs to the run it
    stands in, so user text beside it (Anthropic's ``[tool_result, text]`` turn, in
    either order) or stored before the model replied to it (a result that arrived
    after the user's latest message) is of its own turn: the model has not answered
    it yet. It is old once ``after_user_turns`` later runs hold a user message. The
    age is read from ``messages`` as given: judge it before pair repair moves a
    result next to its call.

    >>> from memory_summary.domain import ToolCall
    >>> call = Message("assistant", None, [ToolCall("c1", "grep", "{}")])
    >>> result = Message("tool", "found", tool_call_id="c1")
    >>> old_tool_results([call, result, Message("user", "also this")], 1)
    []
    >>> old_tool_results([call, result, Message("assistant", "ok"),
    ...     Message("user", "next")], 1)
    [1]
    """
    found: list[int] = []
    turns_after = 0
    run_has_user = False
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            turns_after += run_has_user
            run_has_user = False
        elif message.role == "user":
            run_has_user = True
        elif message.role == "tool" and turns_after >= after_user_turns:
            found.append(index)
    found.reverse()
    return found


def mask_tool_results(
    messages: Sequence[Message],
    after_user_turns: int | None,
    *,
    locale: Locale = "en",
) -> list[Message]:
    """Return ``messages`` with old tool results replaced by one-line stubs.

    ``after_user_turns=None`` masks nothing. A result is masked when it is at least
    ``after_user_turns`` user turns old (``old_tool_results``: counted from the
    model's first reply after it) and the stub is shorter than its
    text (or it holds media: an image costs hundreds of tokens); a stub keeps the
    message's role, ``tool_call_id``, name, id and metadata, so pairing holds.

    >>> history = [Message("user", "find it"),
    ...     Message("tool", "x" * 500, tool_call_id="c1", name="grep", id=3),
    ...     Message("assistant", "found it"), Message("user", "thanks")]
    >>> mask_tool_results(history, 1)[1].content
    '[tool result masked: grep, 500 chars; read_history(around_id=3) shows it]'
    """
    out = list(messages)
    if after_user_turns is None:
        return out
    old = old_tool_results(out, after_user_turns)
    if not old:
        return out
    names = result_names(out)
    unknown = _UNKNOWN[locale]
    for index in old:
        message = out[index]
        if is_masked(message):
            continue
        tool = names[index].get(message.tool_call_id or "") or message.name or unknown
        stub = mask_stub(message, " ".join(tool.split()) or unknown, locale)
        if len(stub) < len(message.text) or _has_media(message):
            out[index] = attrs.evolve(message, content=stub, kind=MASKED_KIND)
    return out
