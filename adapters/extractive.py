"""An offline, deterministic summarizer that extracts instead of writing: not an LLM.

It is the embedded default when no endpoint is configured, so the library works with no
key and no network. It reads the tagged request ``memory_summary.domain.prompt`` builds,
keeps the previous summary's lines, adds one shortened line per new transcript line, and
cuts the result to ``max_tokens`` by dropping the oldest lines first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memory_summary.domain import Message, cut_chars
from memory_summary.domain.prompt import CONVERSATION_TAG, PREVIOUS_TAG

LABEL = "extractive (offline, not an LLM)"
LINE_CHARS = 160
# A sentence ends at . ! ? after a non-digit ("1." numbers a list), or at CJK 。！？.
_SENTENCE_END = re.compile(r"(?<=[^\d\s][.!?])\s|(?<=[\u3002\uff01\uff1f])")
# Transcript entries start with a label; other lines continue the entry before them.
_ENTRY_START = re.compile(
    r"^(User|Assistant|System|Call |Tool result\(|\u7528\u6237|\u52a9\u624b|"
    r"\u7cfb\u7edf|\u8c03\u7528 |\u5de5\u5177\u7ed3\u679c\()"
)


def utf8_bytes(text: str) -> int:
    """Return the UTF-8 length: never less than the token count, so a safe default."""
    return len(text.encode("utf-8"))


def _section(text: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, flags=re.DOTALL)
    return match.group(1) if match else None


def _shorten(line: str) -> str:
    """Return the first sentence of ``line``, at most LINE_CHARS characters."""
    line = " ".join(line.split())
    first = _SENTENCE_END.split(line, maxsplit=1)[0]
    return cut_chars(first, LINE_CHARS)


def _entries(conversation: str) -> list[str]:
    """Return the transcript's entries, multi-line bodies joined to their label."""
    entries: list[str] = []
    for raw in conversation.splitlines():
        if not raw.strip():
            continue
        if entries and not _ENTRY_START.match(raw):
            entries[-1] += " " + raw.strip()
        else:
            entries.append(raw)
    return entries


class ExtractiveSummarizer:
    r"""A summarizer that keeps one shortened line per message, within ``max_tokens``.

    Args:
        count_tokens: the counter ``max_tokens`` is measured with; the default, UTF-8
            length, is an upper bound of every tokenizer's count.
        context_tokens: the input size it reports as its context length.

    >>> summarizer = ExtractiveSummarizer()
    >>> text = "<conversation>\\nUser: I live in Oslo. Hi!\\n</conversation>"
    >>> request = Message("user", text)
    >>> summarizer.complete([request], max_tokens=100, temperature=0.3)
    '- User: I live in Oslo.'
    """

    label = LABEL

    def __init__(
        self,
        count_tokens: Callable[[str], int] = utf8_bytes,
        *,
        context_tokens: int = 16384,
    ) -> None:
        self._count_tokens = count_tokens
        self._context_tokens = context_tokens

    def context_length(self, model: str | None = None) -> int | None:
        return self._context_tokens

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> str:
        request = next((m.content for m in reversed(messages) if m.role == "user"), "")
        previous = _section(request, PREVIOUS_TAG) or ""
        conversation = _section(request, CONVERSATION_TAG)
        if conversation is None:  # not our request format: extract from all of it
            conversation = request
        lines = [line for line in previous.splitlines() if line.strip()]
        seen = set(lines)
        for entry in _entries(conversation):
            line = "- " + _shorten(entry)
            if line not in seen:
                seen.add(line)
                lines.append(line)
        return self._fit(lines, max_tokens)

    def _fit(self, lines: list[str], max_tokens: int) -> str:
        """Join ``lines``, dropping the oldest until the text fits ``max_tokens``."""
        costs = [self._count_tokens(line + "\n") for line in lines]
        total, start = sum(costs), 0
        while start < len(lines) and total > max_tokens:
            total -= costs[start]
            start += 1
        text = "\n".join(lines[start:])
        while text and self._count_tokens(text) > max_tokens:  # joins can merge tokens
            text = text.partition("\n")[2]
        return text
