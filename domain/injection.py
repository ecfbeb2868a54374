"""The summary as the model sees it: one system message at the context anchor.

seed: the summary is injected before every LLM call as one system message at the end
of the leading system block, before the history, cut to its token budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .config import Locale
from .model import SUMMARY_KIND, Message
from .truncate import truncate_to_tokens

HEADERS: dict[Locale, str] = {
    "en": "Summary of the earlier conversation (older messages were archived):",
    "zh": "此前对话的摘要（较早的消息已归档）：",
}

TRUNCATION_SUFFIXES: dict[Locale, str] = {
    "en": "\n[… summary truncated to fit its token budget]",
    "zh": "\n[……摘要已按 token 预算截断]",
}


def injection_text(
    summary: str,
    *,
    locale: Locale,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    summary_tokens: int | None = None,
) -> str:
    """Return the injected system text: header plus summary, within ``budget_tokens``.

    ``summary_tokens`` (the summary's count, when the caller already has it) lets a
    summary that clearly fits skip counting. The header is kept; the summary is cut on a
    character boundary and marked with the locale's truncation suffix.
    """
    header = HEADERS[locale] + "\n"
    full = header + summary
    if (
        summary_tokens is not None
        and summary_tokens + count_tokens(header) <= budget_tokens
    ):
        return full
    return truncate_to_tokens(
        full, budget_tokens, count_tokens, TRUNCATION_SUFFIXES[locale]
    )


def summary_message(text: str) -> Message:
    """Return the system message that carries the injected summary."""
    return Message("system", text, kind=SUMMARY_KIND)


def anchor_index(messages: Sequence[Message]) -> int:
    """Return the index right after the leading block of system/developer messages."""
    index = 0
    while index < len(messages) and messages[index].is_instruction:
        index += 1
    return index


def assemble_messages(
    messages: Sequence[Message], injected: Message | None
) -> list[Message]:
    """Return ``messages`` with ``injected`` placed at the context anchor.

    Any summary message already present (``kind == SUMMARY_KIND``) is removed first, so
    assembling twice leaves exactly one. With ``injected=None`` stale ones are removed.
    """
    rest = [m for m in messages if m.kind != SUMMARY_KIND]
    if injected is None:
        return rest
    at = anchor_index(rest)
    return [*rest[:at], injected, *rest[at:]]
