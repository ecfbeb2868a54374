"""The summary as the model sees it: one system message at the context anchor.

seed: the summary is injected before every LLM call as one system message at the end
of the leading system block, before the history, cut to its token budget.

A summary injected earlier and handed back in the host's own format (OpenAI dicts,
Anthropic system blocks, Responses items) has lost its ``kind``: it is known by its
text. ``InjectedTest`` says which texts are the engine's: by default any text that
opens with a locale's header; the engine passes an exact one (``is_injection_of``
against the session's summaries), so a host's note that merely holds the header is
the host's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal, get_args

import attrs

from .config import Locale
from .model import SUMMARY_KIND, Message, is_host_instruction
from .recall_tools import READ_TOOL, SEARCH_TOOL
from .truncate import truncate_to_tokens

HEADERS: dict[Locale, str] = {
    "en": "Summary of the earlier conversation (older messages were archived):",
    "zh": "此前对话的摘要（较早的消息已归档）：",
}

RECALL_HINTS: dict[Locale, str] = {
    "en": (
        f"Older turns are archived, not lost: call {SEARCH_TOOL} to find them and "
        f"{READ_TOOL} to read the turns around a hit."
    ),
    "zh": f"较早的对话已归档而非丢失：可调用 {SEARCH_TOOL} 搜索，再用 {READ_TOOL} "
    "查看命中消息前后的对话。",
}
"""Said after the header when the host offers the recall tools (``recall_hint``)."""

READ_HINTS: dict[Locale, str] = {
    "en": (
        f"Older turns are archived, not lost: call {READ_TOOL} to read the turns "
        "around a message a tool result names."
    ),
    "zh": f"较早的对话已归档而非丢失：可调用 {READ_TOOL} 查看某条消息前后的对话。",
}
"""The hint when search is off (``recall_index="off"``): only ``read_history`` is
offered."""

TRUNCATION_SUFFIXES: dict[Locale, str] = {
    "en": "\n[… summary truncated to fit its token budget]",
    "zh": "\n[……摘要已按 token 预算截断]",
}


def _full_text(summary: str, locale: Locale, recall_hint: bool, search: bool) -> str:
    hints = RECALL_HINTS if search else READ_HINTS
    hint = hints[locale] + "\n" if recall_hint else ""
    return HEADERS[locale] + "\n" + hint + summary


def injection_text(
    summary: str,
    *,
    locale: Locale,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    recall_hint: bool = False,
    ceiling: Callable[[str], int] | None = None,
    search: bool = True,
) -> str:
    """Return the injected system text: header plus summary, within ``budget_tokens``.

    Always counted with ``count_tokens``, the encoding of the model the text is sent
    to: a count stored in another encoding never lets a summary skip the cut. The
    header is kept; the summary is cut on a character boundary and marked with the
    locale's truncation suffix. With ``recall_hint`` the line after the header tells
    the model that older turns can be looked up with the recall tools (with
    ``search=False``, ``read_history`` alone: the host keeps no search). ``ceiling``:
    a cheap count that ``count_tokens`` never exceeds (UTF-8 bytes, for a byte-level
    BPE): a text whose ceiling fits is injected whole without running the tokenizer,
    as it would be.

    >>> injection_text("Alice likes tea.", locale="en", budget_tokens=512,
    ...     count_tokens=len, recall_hint=True).splitlines()[1][:30]
    'Older turns are archived, not '
    """
    full = _full_text(summary, locale, recall_hint, search)
    if ceiling is not None and ceiling(full) <= budget_tokens:
        return full
    return truncate_to_tokens(
        full, budget_tokens, count_tokens, TRUNCATION_SUFFIXES[locale]
    )


def is_injection_of(
    text: str,
    summary: str,
    *,
    locale: Locale,
    recall_hint: bool = False,
    search: bool = True,
) -> bool:
    """Tell whether ``text`` is ``injection_text`` of ``summary``, whole or cut.

    Whatever the budget and encoding it was cut to: the whole text, or a prefix of
    it longer than the header followed by the locale's truncation suffix.

    >>> made = injection_text("word " * 60, locale="en", budget_tokens=160,
    ...     count_tokens=len)
    >>> is_injection_of(made, "word " * 60, locale="en"), made.endswith("budget]")
    (True, True)
    >>> is_injection_of(HEADERS["en"] + " my notes", "a b c", locale="en")
    False
    """
    full = _full_text(summary, locale, recall_hint, search)
    if text == full:
        return True
    suffix = TRUNCATION_SUFFIXES[locale]
    kept = text[: -len(suffix)]
    return (
        text.endswith(suffix)
        and len(kept) > len(HEADERS[locale])
        and full.startswith(kept)
    )


InjectedTest = Callable[[str], bool]
"""Tells whether a text is a whole summary text the engine injected."""

_HEADS = tuple(HEADERS.values())


def opens_with_header(text: str) -> bool:
    """The default ``InjectedTest``: a text opening with a locale's header.

    For a caller that knows no session: it takes a host's text that opens with the
    header for an injection too.
    """
    return text.startswith(_HEADS)


def summary_message(text: str) -> Message:
    """Return the system message that carries the injected summary."""
    return Message("system", text, kind=SUMMARY_KIND)


Placement = Literal["separate", "merge"]
"""``separate``: the summary is its own system message at the end of the leading
system block (OpenAI, most local servers); ``merge``: it is appended to the first
system message, for APIs that take one system block (Anthropic, Gemini)."""
PLACEMENTS: tuple[Placement, ...] = get_args(Placement)
MERGE_SEPARATOR = "\n\n"
_MERGED_MARKS = tuple(MERGE_SEPARATOR + header for header in HEADERS.values())


def anchor_index(messages: Sequence[Message]) -> int:
    """Return the index right after the leading block of system/developer messages.

    The block holds the host's instructions (no ``kind``) and a summary: a system
    message of another ``kind`` (an item an integration stored, such as a Responses
    ``reasoning`` item) is history and ends it, so the summary goes before it and
    never between a reasoning item and the output that follows it.

    >>> anchor_index([Message("system", "Be brief."),
    ...     Message("system", "[reasoning]", kind="item"), Message("user", "hi")])
    1
    """
    index = 0
    while index < len(messages) and _leads(messages[index]):
        index += 1
    return index


def _leads(message: Message) -> bool:
    """Tell whether ``message`` belongs in the leading system block."""
    return message.is_instruction and message.kind in (None, SUMMARY_KIND)


def is_summary_message(
    message: Message, injected: InjectedTest = opens_with_header
) -> bool:
    """Tell whether ``message`` is an injected summary, even one that lost its kind.

    A summary that went through a host's own format (OpenAI dicts, say) keeps only
    its text: a system message whose text ``injected`` says is the engine's;
    ``assemble_messages`` only reads a text that way in the leading system block,
    where the summary goes. A message read from a store (it has an
    ``id``) is never one: the library injects its summary into requests and never
    saves it, so a stored message that looks like one (a host's copy, its own notes
    under the same header) is the host's.

    >>> is_summary_message(summary_message(HEADERS["en"] + " x"))
    True
    >>> is_summary_message(Message("system", HEADERS["en"] + " x", id=7))
    False
    """
    if message.id is not None:
        return False
    if message.kind == SUMMARY_KIND:
        return True
    if message.role != "system":
        return False
    return isinstance(message.content, str) and injected(message.content)


def _part_text(part: Mapping[str, object]) -> str | None:
    """Return a text part's text (chat ``text``, Responses ``input_text``)."""
    text = part.get("text")
    if part.get("type") in _TEXT_PARTS and isinstance(text, str):
        return text
    return None


_TEXT_PARTS = ("text", "input_text")


def _merged_cut(content: str, injected: InjectedTest) -> int | None:
    """Return where the summary merged into ``content`` starts, or None.

    Each separator followed by a header is tried, first to last: a host's own text
    may hold one too, before the summary the merge appended at the end.
    """
    marks = sorted(at for mark in _MERGED_MARKS for at in _occurrences(content, mark))
    for at in marks:
        if injected(content[at + len(MERGE_SEPARATOR) :]):
            return at
    return None


def _occurrences(text: str, mark: str) -> Iterable[int]:
    at = text.find(mark)
    while at >= 0:
        yield at
        at = text.find(mark, at + 1)


def without_merged_summary(
    message: Message, injected: InjectedTest = opens_with_header
) -> Message:
    r"""Return a system message without the summary a ``merge`` appended to it.

    In text content the summary is the text after a separator that ``injected``
    says is the engine's (by default: from the first separator and header on); in
    content given as parts it is the last text part, the separator and such a text.
    A stored message (it has an ``id``) is returned whole: the summary is never
    merged into one.

    >>> host = Message("system", "Rules.\n\n" + HEADERS["en"] + " house notes")
    >>> without_merged_summary(host).text
    'Rules.'
    >>> without_merged_summary(host, lambda text: False) is host
    True
    """
    if not message.is_instruction or message.id is not None:
        return message
    content = message.content
    if isinstance(content, str):
        cut = _merged_cut(content, injected)
        if cut is None:
            return message
        return attrs.evolve(message, content=content[:cut])
    if not content:
        return message
    text = _part_text(content[-1])
    if (
        text is not None
        and text.startswith(_MERGED_MARKS)
        and injected(text[len(MERGE_SEPARATOR) :])
    ):
        return attrs.evolve(message, content=content[:-1])
    return message


def holds_injection(message: Message, injected: InjectedTest) -> bool:
    """Tell whether ``message`` carries a summary the engine injected, kind-less.

    Alone (``is_summary_message``) or merged into a system prompt
    (``without_merged_summary``): ``Conversation`` refuses to store either, whatever
    the message's place.
    """
    return is_summary_message(message, injected) or (
        without_merged_summary(message, injected) is not message
    )


def _merged(host: Message, summary: str) -> Message:
    """Return ``host`` with ``summary`` appended: to its text, or as a text part."""
    content = host.content
    if isinstance(content, str):
        return attrs.evolve(host, content=content.rstrip() + MERGE_SEPARATOR + summary)
    part = {"type": "text", "text": MERGE_SEPARATOR + summary}
    return attrs.evolve(host, content=[*(content or ()), part])


def _without_summaries(
    messages: Sequence[Message], injected: InjectedTest
) -> list[Message]:
    """Return ``messages`` without an injected summary, separate or merged.

    A summary message (``kind``) is removed anywhere; a text read as a summary by its
    header only in the leading system block, and a merged one only from the first
    message of that block, so a host's own text elsewhere is never touched. A
    message read from a store (it has an ``id``) is never removed nor cut, whatever
    its kind or text: only what the library injected goes.
    """
    lead = anchor_index(messages)
    rest: list[Message] = []
    for index, message in enumerate(messages):
        if message.id is None and (
            message.kind == SUMMARY_KIND
            or (index < lead and is_summary_message(message, injected))
        ):
            continue
        if index == 0 and index < lead:
            message = without_merged_summary(message, injected)
        rest.append(message)
    return rest


def without_covered(
    messages: Iterable[Message], covered_through_id: int | None
) -> list[Message]:
    """Return ``messages`` without the stored ones a summary covers.

    A message whose ``id`` is at or below ``covered_through_id`` was folded into the
    summary (a history read before the compression committed); sending it beside
    the summary would give the model the same turns twice. Messages without an
    ``id`` (not read from the store) and the host's instructions (system or
    developer messages of no ``kind``: context, not history) are always kept.

    >>> old, new = Message("user", "a", id=3), Message("user", "b", id=9)
    >>> [m.content for m in without_covered([old, new], 5)]
    ['b']
    """
    if covered_through_id is None:
        return list(messages)
    return [
        m
        for m in messages
        if m.id is None or m.id > covered_through_id or is_host_instruction(m)
    ]


def assemble_messages(
    messages: Sequence[Message],
    injected: Message | None,
    placement: Placement = "separate",
    earlier: InjectedTest = opens_with_header,
) -> list[Message]:
    """Return ``messages`` with ``injected`` placed at the context anchor.

    Any summary already present (a summary message, or one merged into a system
    message) is removed first, so assembling twice leaves exactly one. Without a
    ``kind`` it is known by its text, as ``earlier`` tells (default: a text that
    opens with a locale's header). With
    ``injected=None`` stale ones are removed. ``placement="merge"`` appends it to the
    first system message (after the static prompt, so prompt caches keep their
    prefix), or makes it the system message when there is none. A message read from
    a store (it has an ``id``) is sent as stored, whatever its kind or text: never
    removed, cut or merged into (a stored first system message gets the summary
    after the leading block, as ``separate`` places it; one system block for a
    provider that takes one, since those gather the block's messages in order).
    """
    if placement not in PLACEMENTS:
        raise ValueError(
            f"placement={placement!r} is invalid; allowed: 'separate' / 'merge'"
        )
    rest = _without_summaries(messages, earlier)
    if injected is None:
        return rest
    if placement == "merge":
        if anchor_index(rest) == 0:
            return [injected, *rest]
        if rest[0].id is None:  # the first message of the leading block
            return [_merged(rest[0], injected.text), *rest[1:]]
        # a stored message is sent as stored: the summary goes after the block
    at = anchor_index(rest)
    return [*rest[:at], injected, *rest[at:]]
