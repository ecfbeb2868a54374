"""The pieces of one streamed OpenAI-compatible answer, and the usage it reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

import openai

from memory_summary.adapters.summarizers.sdk.stream import SDKStream, cut_at_max_tokens
from memory_summary.domain import SummarizerContextError, SummarizerError, TokenUsage

from .errors import translated

if TYPE_CHECKING:
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk


class OpenAIChatStream(SDKStream["ChatCompletionChunk"]):
    """The pieces of one streamed answer, closable from any thread (``SDKStream``).

    Iterating sends the request (the first ``next()``), then yields text pieces. It
    raises ``SummarizerError`` when the stream breaks or was closed,
    ``SummarizerTimeout`` at its deadline and ``SummarizerContextError`` when the
    endpoint refuses the prompt as too long. A reply past ``max_chars`` ends early,
    cut to ``max_chars``, and its connection is closed. A reply the endpoint stopped
    at ``max_tokens`` (``finish_reason`` ``"length"``) raises ``SummarizerError`` at
    its end: a summary cut short is not kept.

    ``close()`` is idempotent and thread-safe: it shuts the connection down, so a
    ``next()`` blocked on another thread (say, on a server's keep-alive comments)
    fails at once, and the server sees the client leave and stops generating.

    Built by ``OpenAIChatLLM.stream()``; a host only iterates and closes it.

    Args:
        open_stream: sends the request and returns the SDK's stream (called on the
            first ``next()``).
        deadline: the ``time.monotonic()`` instant the whole answer must be read
            by, or None for no bound.
        max_chars: the longest reply read; the stream ends there, cut.

    Example:
        >>> from memory_summary.adapters import OpenAIChatLLM
        >>> pieces = OpenAIChatLLM("m", base_url="http://127.0.0.1:9/v1").stream(
        ...     [], max_tokens=10, temperature=0.3
        ... )
        >>> pieces.close()
        >>> try:
        ...     next(pieces)
        ... except SummarizerError as exc:
        ...     print(exc)
        the summary stream was closed before it finished
    """

    def _read(self, event: ChatCompletionChunk) -> str:
        usage = token_usage(event.usage)
        if usage is not None:  # the last chunk, with no choices (or each chunk)
            self._usage = usage
        self._finished = self._finished or any(
            choice.finish_reason is not None for choice in event.choices
        )
        if any(choice.finish_reason == "length" for choice in event.choices):
            self._unfinished = cut_at_max_tokens("length")
        return "".join(
            choice.delta.content
            for choice in event.choices
            if choice.delta and choice.delta.content
        )

    def _translate(self, exc: Exception) -> Exception | None:
        return translated(exc) if isinstance(exc, openai.OpenAIError) else None

    def _ended_early(self) -> SummarizerError:
        if self._chars == 0:
            return SummarizerContextError(
                "the summary stream ended with neither text nor a finish_reason; "
                "llama.cpp's server answers a prompt longer than its context so"
            )
        return SummarizerError("the summary stream ended before it finished")


def token_usage(usage: CompletionUsage | None) -> TokenUsage | None:
    """Return a reported usage as ours; None when absent or not sane counts."""
    if usage is None:
        return None
    prompt, completion = usage.prompt_tokens, usage.completion_tokens
    if not all(
        isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**63
        for n in (prompt, completion)
    ):
        return None
    return TokenUsage(prompt, completion)
