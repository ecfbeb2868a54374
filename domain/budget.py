"""Token budgets: how long a summary may be, how much one summarizer call reads."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs

from .content import content_tokens
from .model import Message

MIN_SUMMARY_TOKENS = 512
UNKNOWN_CONTEXT_TOKENS = 4096
MIN_INPUT_TOKENS = 256
FRAMING_TOKENS = 64
"""Allowance for the chat template and the section tags around the transcript."""


def context_tokens(context_length: int | None) -> int:
    """Return the summary model's context length, 4096 when unknown."""
    if context_length is None or context_length <= 0:
        return UNKNOWN_CONTEXT_TOKENS
    return context_length


def summary_budget_tokens(context_length: int | None, ratio: float) -> int:
    """Return the summary's token budget: context length x ratio, floor 512.

    >>> summary_budget_tokens(128_000, 0.05)
    6400
    >>> summary_budget_tokens(None, 0.05)
    512
    """
    return max(MIN_SUMMARY_TOKENS, math.floor(context_tokens(context_length) * ratio))


def input_limit_tokens(
    context_length: int | None, budget_tokens: int, overhead_tokens: int
) -> int:
    """Return how many transcript tokens one summarizer call may carry.

    The context must hold the prompt overhead (system prompt, previous summary, task
    state), the transcript and the answer (``budget_tokens``). Never below 256, so a
    tiny context still makes progress one message at a time.
    """
    room = (
        context_tokens(context_length)
        - budget_tokens
        - overhead_tokens
        - FRAMING_TOKENS
    )
    return max(MIN_INPUT_TOKENS, room)


@attrs.frozen
class Chunk:
    """A contiguous run ``[start, stop)`` of a backlog that one summarizer call folds.

    ``oversized`` marks a single message whose rendering alone exceeds the input limit:
    its text must be cut to the limit, never dropped.
    """

    start: int
    stop: int
    oversized: bool = False


def plan_chunks(costs: Sequence[int], max_count: int, limit_tokens: int) -> list[Chunk]:
    """Split a backlog with per-message token ``costs`` into ordered chunks.

    Each chunk holds at most ``max_count`` messages and at most ``limit_tokens`` tokens,
    except a lone message costing more than the limit, which gets a chunk of its own
    marked ``oversized``. Chunks cover every index exactly once, in order.

    >>> plan_chunks([5, 5, 5], max_count=10, limit_tokens=10)
    [Chunk(start=0, stop=2, oversized=False), Chunk(start=2, stop=3, oversized=False)]
    """
    max_count = max(max_count, 1)
    chunks: list[Chunk] = []
    start, used = 0, 0
    for index, cost in enumerate(costs):
        if index > start and (used + cost > limit_tokens or index - start >= max_count):
            chunks.append(Chunk(start, index))
            start, used = index, 0
        used += cost
        if index == start and cost > limit_tokens:
            chunks.append(Chunk(start, index + 1, oversized=True))
            start, used = index + 1, 0
    if start < len(costs):
        chunks.append(Chunk(start, len(costs)))
    return chunks


def message_tokens(message: Message, count_tokens: Callable[[str], int]) -> int:
    """Return the tokens a message costs a chat model, without per-message framing.

    Text (content, refusal, each tool call's name and arguments) is counted with
    ``count_tokens``; image, audio and file parts add their documented estimate
    (``content.IMAGE_TOKENS`` and its neighbours).

    >>> message_tokens(Message("user", [{"type": "text", "text": "hi"},
    ...     {"type": "image_url", "image_url": {"url": "u"}}]), len)
    767
    """
    tokens = content_tokens(message.content, count_tokens)
    if message.refusal:
        tokens += count_tokens(message.refusal)
    for call in message.tool_calls:
        tokens += count_tokens(call.name) + count_tokens(call.arguments)
    return tokens
