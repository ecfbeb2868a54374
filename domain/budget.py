"""Token budgets: how long a summary may be, how much one summarizer call reads."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import attrs

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

    ``oversized`` marks a message, or a tool-call group that cannot be split, whose
    rendering alone exceeds the input limit: its text must be cut to the limit, never
    dropped.
    """

    start: int
    stop: int
    oversized: bool = False


def plan_chunks(
    costs: Sequence[int],
    max_count: int,
    limit_tokens: int,
    cuttable: Sequence[bool] | None = None,
) -> list[Chunk]:
    """Split a backlog with per-message token ``costs`` into ordered chunks.

    A chunk may start only where ``cuttable`` allows (index 0 always; every index when
    ``cuttable`` is None): the runs between those points are never split. Each chunk
    holds at most ``max_count`` messages and at most ``limit_tokens`` tokens, except a
    lone run over either limit, which gets a chunk of its own, marked ``oversized``
    when over the tokens: its text must be cut to the limit, never dropped. Chunks
    cover every index exactly once, in order.

    >>> plan_chunks([5, 5, 5], max_count=10, limit_tokens=10)
    [Chunk(start=0, stop=2, oversized=False), Chunk(start=2, stop=3, oversized=False)]
    >>> plan_chunks([5, 5, 5], 10, 10, cuttable=[True, False, True])
    [Chunk(start=0, stop=2, oversized=False), Chunk(start=2, stop=3, oversized=False)]
    >>> plan_chunks([5, 5, 5], 10, 10, cuttable=[True, True, False])
    [Chunk(start=0, stop=1, oversized=False), Chunk(start=1, stop=3, oversized=False)]
    """
    if not costs:
        return []
    max_count = max(max_count, 1)
    points = [0, *(i for i in range(1, len(costs)) if cuttable is None or cuttable[i])]
    chunks: list[Chunk] = []
    start, used = 0, 0
    for low, high in itertools.pairwise([*points, len(costs)]):
        cost = sum(costs[low:high])
        if low > start and (used + cost > limit_tokens or high - start > max_count):
            chunks.append(Chunk(start, low))
            start, used = low, 0
        used += cost
        if low == start and cost > limit_tokens:
            chunks.append(Chunk(start, high, oversized=True))
            start, used = high, 0
    if start < len(costs):
        chunks.append(Chunk(start, len(costs)))
    return chunks


def fair_shares(costs: Sequence[int], limit_tokens: int) -> list[int]:
    """Share ``limit_tokens`` among items costing ``costs``: the cheap ones first.

    An item costing less than an equal share keeps its cost; the rest is split evenly
    among the others. The shares sum to at most ``limit_tokens`` when there are at
    most that many items (each gets at least 1).

    >>> fair_shares([2, 50, 50], 40)
    [2, 19, 19]
    """
    shares = [0] * len(costs)
    left, remaining = len(costs), limit_tokens
    for index in sorted(range(len(costs)), key=costs.__getitem__):
        shares[index] = max(min(costs[index], remaining // left), 1)
        remaining -= shares[index]
        left -= 1
    return shares
