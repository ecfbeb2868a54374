"""How many tokens a session's context holds, and when compressing again is pointless.

The engine measures a session itself when ``context_window`` is configured: the
injected summary plus the active history, in the chat model's encoding. The loop guard
keeps a session whose kept part alone is over its trigger from calling the summarizer
on every turn.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import attrs

from .content import content_tokens
from .model import Message
from .usage import MAX_COUNT

MESSAGE_OVERHEAD_TOKENS = 4
"""What a chat template adds around each message (role, separators)."""
CALL_OVERHEAD_TOKENS = 3
"""What one tool call adds beyond its name and arguments."""
GUARD_SHARE = 4
"""A guarded session compresses again once new messages hold 1/GUARD_SHARE of what the
guarded compression kept."""
MIN_GUARD_TOKENS = 256


KNOWN_CONTEXT_TOKENS: tuple[tuple[str, int], ...] = (
    # Context windows of well-known chat models, matched by the longest prefix of
    # the name; tokens. Every Claude model since Claude 3 has a 200k window.
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 400_000),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
    ("deepseek", 128_000),
    ("qwen2.5", 32_768),
    ("llama-3.1", 131_072),
    ("llama3.1", 131_072),
)


@functools.lru_cache(maxsize=256)  # a turn asks it of the same few names
def known_context_tokens(model: str) -> int | None:
    """Return the context window of a well-known model, matched by name prefix.

    Used when neither the configuration (``context_window``) nor an endpoint says.

    >>> known_context_tokens("gpt-4o-2024-08-06"), known_context_tokens("mystery")
    (128000, None)
    """
    name = model.lower().rsplit("/", 1)[-1]
    for prefix, tokens in _LONGEST_FIRST:
        if name.startswith(prefix):
            return tokens
    return None


_LONGEST_FIRST = sorted(KNOWN_CONTEXT_TOKENS, key=lambda p: -len(p[0]))


def message_tokens(message: Message, count: Callable[[str], int]) -> int:
    """Return what ``message`` costs in a request: its text, its calls, the template.

    Text (content, refusal, each call's name and arguments) is counted with
    ``count``; image, audio and file parts add their documented estimates
    (``content.IMAGE_TOKENS`` and its neighbours).

    >>> message_tokens(Message("user", "hello"), len)
    9
    """
    tokens = MESSAGE_OVERHEAD_TOKENS + content_tokens(message.content, count)
    if message.refusal:
        tokens += count(message.refusal)
    for call in message.tool_calls:
        tokens += CALL_OVERHEAD_TOKENS + count(call.name) + count(call.arguments)
    return tokens


def usage_ratio(used_tokens: int, window_tokens: int) -> float:
    """Return ``used_tokens`` as a share of the window (the seed's usage ratio).

    A count no float holds (a foreign server's ``10**400``) reads as ``MAX_COUNT``:
    a full window, never an ``OverflowError`` after the reply was saved.

    >>> usage_ratio(10**400, 128_000) > 1
    True
    """
    return min(used_tokens, MAX_COUNT) / max(window_tokens, 1)


@attrs.frozen
class LoopGuard:
    """Set after a pressed compression that left the session at or over its trigger.

    Attributes:
        tip_id: the newest message the guarded compression saw.
        kept_tokens: what it kept (summary included).
    """

    tip_id: int
    kept_tokens: int

    @property
    def enough_tokens(self) -> int:
        """Return how many new tokens make compressing worthwhile again."""
        return max(self.kept_tokens // GUARD_SHARE, MIN_GUARD_TOKENS)

    def holds(self, arrived: Iterable[tuple[int, int]], kept_tokens: int) -> bool:
        """Tell whether the guard still blocks a pressed compression.

        ``arrived`` gives ``(id, tokens)`` of the active messages (only those newer
        than ``tip_id`` count as new); ``kept_tokens`` is what a compression would
        keep now. It blocks until enough new tokens arrived, or until the kept part
        shrank to half of what it was (its bulk was folded by a count trigger).
        """
        new = sum(tokens for message_id, tokens in arrived if message_id > self.tip_id)
        return new < self.enough_tokens and kept_tokens * 2 > self.kept_tokens


def guard_after(
    *, tip_id: int, kept_tokens: int, trigger_tokens: int | None
) -> LoopGuard | None:
    """Return the guard a pressed compression leaves, or None when none is needed.

    With the trigger known (``context_window``), the guard is set only when the kept
    part alone is at or over it. Without it (a host-reported ratio) the engine cannot
    tell, so it is always set: a new report before enough new tokens arrive means the
    compression did not bring the session under its trigger.
    """
    if trigger_tokens is not None and kept_tokens < trigger_tokens:
        return None
    return LoopGuard(tip_id, kept_tokens)
