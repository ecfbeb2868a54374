"""What summarizing costs: tokens per call, per compression and per session.

A provider that streams its usage (OpenAI-compatible servers do when asked with
``stream_options={"include_usage": true}``) reports the tokens it billed; for any other
summarizer (the offline one, a provider that reports nothing) the engine counts the
request and the reply with its own tokenizer, and says so: ``SummarizerUsage.source``
is ``"provider"``, ``"counted"`` or ``"mixed"``.

Per-session totals live in the summary record (``SummaryRecord.usage``), stored as the
mapping ``SummarizerUsage.to_mapping`` returns. ``read_usage`` reads one back without
ever raising: a missing, foreign or malformed value reads as no usage, so usage never
makes a summary unreadable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

import attrs

from .content import content_tokens
from .model import Message

UsageSource = Literal["provider", "counted", "mixed"]
"""``provider``: every call's tokens were reported by the provider; ``counted``:
none was, the engine counted them with its tokenizer; ``mixed``: some of each."""

MAX_COUNT = 2**63 - 1
_FIELDS = ("input_tokens", "output_tokens", "calls", "counted_calls")


@attrs.frozen
class TokenUsage:
    """The tokens one summarizer call consumed, as its provider reported them.

    ``input_tokens`` counts every prompt token, those read from or written to a
    provider's prompt cache included; ``cache_read_tokens`` and
    ``cache_write_tokens`` say how many of them were (0 when not reported).
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = attrs.field(default=0, kw_only=True)
    cache_write_tokens: int = attrs.field(default=0, kw_only=True)


@attrs.frozen
class SummarizerUsage:
    """Summarizer tokens and time over some calls (one compression, or a session).

    Attributes:
        input_tokens: prompt tokens sent.
        output_tokens: reply tokens received.
        calls: summarizer calls that answered (a failed call reports no usage).
        counted_calls: of those, how many the engine counted itself.
        summarizer_s: seconds spent waiting for those calls, not counting a
            summarizer's one-time start-up (``StartingSummarizer``: the offline
            fold's worker process).
        estimated_calls: of the counted calls, how many were estimated
            (``estimate_tokens``: never fewer than the exact count) rather than
            counted exactly; exact when a budget depends on the figure
            (``context_window`` set).

    >>> one = SummarizerUsage().with_call(TokenUsage(120, 30), counted=False, seconds=1)
    >>> one.plus(one).input_tokens, one.source
    (240, 'provider')
    """

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    counted_calls: int = 0
    summarizer_s: float = 0.0
    estimated_calls: int = attrs.field(default=0, kw_only=True)

    @property
    def total_tokens(self) -> int:
        """Return input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def source(self) -> UsageSource | None:
        """Tell where the figures come from; None when no call answered."""
        if self.calls == 0:
            return None
        if self.counted_calls == 0:
            return "provider"
        return "counted" if self.counted_calls >= self.calls else "mixed"

    @property
    def is_estimate(self) -> bool:
        """Tell whether some figures are estimates (upper bounds), not exact counts."""
        return self.estimated_calls > 0

    def with_call(
        self,
        usage: TokenUsage,
        *,
        counted: bool,
        seconds: float,
        estimated: bool = False,
    ) -> SummarizerUsage:
        """Return these totals plus one answered call (``estimated``: counted so)."""
        return self.plus(
            SummarizerUsage(
                usage.input_tokens,
                usage.output_tokens,
                1,
                1 if counted else 0,
                max(seconds, 0.0),
                estimated_calls=1 if counted and estimated else 0,
            )
        )

    def plus(self, other: SummarizerUsage) -> SummarizerUsage:
        """Return the sum of two totals (counters saturate at ``MAX_COUNT``)."""
        return SummarizerUsage(
            min(self.input_tokens + other.input_tokens, MAX_COUNT),
            min(self.output_tokens + other.output_tokens, MAX_COUNT),
            min(self.calls + other.calls, MAX_COUNT),
            min(self.counted_calls + other.counted_calls, MAX_COUNT),
            self.summarizer_s + other.summarizer_s,
            estimated_calls=min(
                self.estimated_calls + other.estimated_calls, MAX_COUNT
            ),
        )

    def to_mapping(self) -> dict[str, object]:
        """Return the totals as JSON-compatible metadata (without 0 estimates)."""
        mapping = attrs.asdict(self)
        if not self.estimated_calls:
            del mapping["estimated_calls"]
        return mapping


NO_USAGE = SummarizerUsage()


def total_usage(usages: Iterable[SummarizerUsage]) -> SummarizerUsage:
    """Return the sum of ``usages``."""
    total = NO_USAGE
    for usage in usages:
        total = total.plus(usage)
    return total


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_COUNT else None


def read_usage(data: object) -> SummarizerUsage:
    """Return the usage stored as ``data``; anything malformed reads as no usage.

    >>> read_usage({"input_tokens": 5, "output_tokens": 2, "calls": 1}).total_tokens
    7
    >>> read_usage({"input_tokens": "lots"}) == NO_USAGE
    True
    """
    if not isinstance(data, Mapping):
        return NO_USAGE
    counts = [_count(data.get(name, 0)) for name in _FIELDS]
    seconds = data.get("summarizer_s", 0.0)
    if (
        any(count is None for count in counts)
        or isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or (isinstance(seconds, int) and not 0 <= seconds <= MAX_COUNT)
        or not math.isfinite(float(seconds))
        or seconds < 0
    ):
        return NO_USAGE
    input_tokens, output_tokens, calls, counted = (int(c or 0) for c in counts)
    estimated = _count(data.get("estimated_calls", 0)) or 0
    return SummarizerUsage(
        input_tokens,
        output_tokens,
        calls,
        min(counted, calls),
        float(seconds),
        estimated_calls=min(estimated, counted, calls),
    )


def text_tokens(message: Message, count_tokens: Callable[[str], int]) -> int:
    """Return the tokens of a message's text and tool calls (no per-message framing).

    ``measure.message_tokens`` adds the framing: what a message costs in a request.
    """
    tokens = content_tokens(message.content, count_tokens)
    if message.refusal:
        tokens += count_tokens(message.refusal)
    for call in message.tool_calls:
        tokens += count_tokens(call.name) + count_tokens(call.arguments)
    return tokens


def counted_usage(
    request: Iterable[Message], reply: str, count_tokens: Callable[[str], int]
) -> TokenUsage:
    """Return a call's usage counted with ``count_tokens`` (the provider gave none).

    Counts message texts only: a provider's chat framing adds a few tokens per message.
    """
    return TokenUsage(
        sum(text_tokens(m, count_tokens) for m in request), count_tokens(reply)
    )
