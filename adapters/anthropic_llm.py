"""A summarizer on Anthropic's Messages API, through the official ``anthropic`` SDK.

Configuration comes from the arguments or, as the SDK does, from
``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``; the model from ``ANTHROPIC_MODEL``.

Every call is bounded as ``OpenAIChatLLM``'s are (one stream core, ``SDKStream``):
``timeout_s`` caps the whole call, retries included; the stream's deadline closes its
socket, which also stops the server generating. Retries (429, 529 overloaded, 5xx,
408/409, connection errors; ``retry-after`` honoured) happen here, only while they fit
in the deadline. ``max_tokens`` is the summary budget the engine passes. Usage comes
from the message's ``usage`` (``message_start``, then ``message_delta``): input tokens
include the tokens read from and written to the prompt cache. Thinking is never
requested: summaries are mechanical. ``temperature`` is not sent: the SDK (2.x) no
longer takes it and current Claude models fix their sampling; a model that accepts it
gets it through ``extra_body={"temperature": ...}``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anthropic

from memory_summary.domain import (
    Message,
    SummarizerError,
    SummaryReply,
    TokenUsage,
)
from memory_summary.domain.measure import KNOWN_CONTEXT_TOKENS as KNOWN_CONTEXT_TOKENS
from memory_summary.domain.measure import known_context_tokens

from .anthropic_errors import retry_pause_s, translated
from .sdk_stream import SDKStream, deadline_at
from .sdk_summarizer import CONNECT_TIMEOUT_S, SDKRetry, SDKSummarizer
from .sdk_summarizer import MIN_REPLY_CHARS as MIN_REPLY_CHARS
from .sdk_summarizer import REPLY_CHARS_PER_TOKEN as REPLY_CHARS_PER_TOKEN

if TYPE_CHECKING:
    from anthropic.types import RawMessageStreamEvent

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-haiku-4-5"


def request_payload(
    messages: Sequence[Message],
) -> tuple[str | None, list[dict[str, object]]]:
    """Return a summarizer request as (system, messages) in the Messages API's shape.

    Instruction messages join the system prompt; the rest become text turns, tool
    results as user text, consecutive turns of one role merged (roles alternate).
    """
    system = "\n\n".join(m.text for m in messages if m.is_instruction) or None
    turns: list[dict[str, object]] = []
    for message in messages:
        if message.is_instruction:
            continue
        role = "assistant" if message.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] = f"{turns[-1]['content']}\n\n{message.text}"
        else:
            turns.append({"role": role, "content": message.text})
    if not turns:  # the API needs a user turn
        turns.append({"role": "user", "content": "(nothing to summarize)"})
    return system, turns


class AnthropicLLM(SDKSummarizer[anthropic.Timeout]):
    """Summarizes with Claude through the Messages API.

    Args:
        model: the default model (``$ANTHROPIC_MODEL``, else ``DEFAULT_MODEL``:
            ``"claude-haiku-4-5"``).
        api_key: the key (``$ANTHROPIC_API_KEY``).
        base_url: the endpoint (``$ANTHROPIC_BASE_URL``, else Anthropic's).
        timeout_s: the timeout of one request (a call's ``timeout_s`` lowers it).
        max_retries: retries on 429, 529, 5xx, 408/409 and connection errors, with
            backoff; all of them fit in a call's ``timeout_s``.
        connect_timeout_s: the timeout of opening a connection (default 5 s).
        context_tokens: the context window, per model (a mapping) or for all (an
            int); else the known Claude windows (``KNOWN_CONTEXT_TOKENS``).
        max_reply_chars: the longest reply read, in characters (default
            ``REPLY_CHARS_PER_TOKEN`` x ``max_tokens``, at least ``MIN_REPLY_CHARS``:
            8 x ``max_tokens``, at least 4096).
        extra_body: more request fields, sent as given.

    Example:
        >>> llm = AnthropicLLM("claude-haiku-4-5", api_key="sk-ant-...")
        >>> llm.context_length()
        200000
    """

    _retry = SDKRetry(
        anthropic.Timeout,
        anthropic.AnthropicError,
        retry_pause_s,
        translated,
        "Anthropic API",
    )

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        context_tokens: int | Mapping[str, int] | None = None,
        max_reply_chars: int | None = None,
        extra_body: Mapping[str, object] | None = None,
    ) -> None:
        self.model = model or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if api_key is None:
            raise SummarizerError(
                "AnthropicLLM needs an API key (api_key= or $ANTHROPIC_API_KEY)"
            )
        self._set_limits(
            timeout_s=timeout_s,
            connect_timeout_s=connect_timeout_s,
            max_retries=max_retries,
            max_reply_chars=max_reply_chars,
            context_tokens=context_tokens,
        )
        self._extra_body = dict(extra_body or {})
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"),
            timeout=self._request_timeout(None),
            max_retries=0,  # retried here, within the call's deadline
        )

    def close(self) -> None:
        """Close the adapter's idle connections; do not use it afterwards."""
        self._client.close()

    def _default_context(self, name: str) -> int | None:
        return known_context_tokens(name)

    def _arguments(
        self,
        messages: Sequence[Message],
        model: str | None,
        max_tokens: int,
        temperature: float,
    ) -> dict[str, Any]:
        system, turns = request_payload(messages)
        arguments: dict[str, Any] = {
            "model": model or self.model,
            "messages": turns,
            "max_tokens": max_tokens,
        }
        if system is not None:
            arguments["system"] = system
        if self._extra_body:
            arguments["extra_body"] = self._extra_body
        return arguments

    def complete_with_usage(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
        timeout_s: float | None = None,
    ) -> SummaryReply:
        """Return the answer with the usage Anthropic reported."""
        arguments = self._arguments(messages, model, max_tokens, temperature)
        response = self._retried(
            lambda timeout: self._client.messages.create(**arguments, timeout=timeout),
            deadline_at(timeout_s),
        )
        text = "".join(block.text for block in response.content if block.type == "text")
        return SummaryReply(self._capped(text, max_tokens), token_usage(response.usage))

    def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
        timeout_s: float | None = None,
    ) -> AnthropicStream:
        """Return the answer's pieces as they arrive; nothing is sent before iterating.

        ``timeout_s`` bounds the whole stream: at the deadline it is closed and raises
        ``SummarizerTimeout``. ``close()`` may be called from any thread.
        """
        deadline = deadline_at(timeout_s)
        arguments = self._arguments(messages, model, max_tokens, temperature)

        def open_stream() -> anthropic.Stream[RawMessageStreamEvent]:
            return self._retried(
                lambda timeout: self._client.messages.create(
                    **arguments,
                    stream=True,
                    # never pooled: close() may shut the socket down at any time
                    extra_headers={"Connection": "close"},
                    timeout=timeout,
                ),
                deadline,
            )

        return AnthropicStream(
            open_stream,
            deadline=deadline,
            max_chars=self._reply_cap_chars(max_tokens),
        )


class AnthropicStream(SDKStream["RawMessageStreamEvent"]):
    """The text pieces of one streamed Claude answer (see ``SDKStream``).

    Reads ``content_block_delta`` text deltas; ``message_start`` and
    ``message_delta`` carry the usage, ``message_stop`` ends the answer. An ``error``
    event raises: ``SummarizerContextError`` for a prompt too long, else
    ``SummarizerError`` (overloaded included). A stream that ends without
    ``message_stop`` raises ``SummarizerError``.

    Built by ``AnthropicLLM.stream()``; a host only iterates and closes it.

    Args:
        open_stream: sends the request and returns the SDK's stream (called on the
            first ``next()``).
        deadline: the ``time.monotonic()`` instant the whole answer must be read
            by, or None for no bound.
        max_chars: the longest reply read; the stream ends there, cut.
    """

    _input_tokens = 0
    _cache_read = 0
    _cache_write = 0

    def _read(self, event: RawMessageStreamEvent) -> str:
        if event.type == "message_start":
            start = event.message.usage
            self._input_tokens = _count(start.input_tokens)
            self._cache_read = _count(start.cache_read_input_tokens)
            self._cache_write = _count(start.cache_creation_input_tokens)
            self._note_usage(_count(start.output_tokens))
        elif event.type == "message_delta":
            usage = event.usage  # cumulative counts; input ones only when they change
            if usage.input_tokens is not None:
                self._input_tokens = _count(usage.input_tokens)
            if usage.cache_read_input_tokens is not None:
                self._cache_read = _count(usage.cache_read_input_tokens)
            if usage.cache_creation_input_tokens is not None:
                self._cache_write = _count(usage.cache_creation_input_tokens)
            self._note_usage(_count(usage.output_tokens))
        elif event.type == "message_stop":
            self._finished = True
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            return event.delta.text
        return ""

    def _note_usage(self, output_tokens: int) -> None:
        self._usage = TokenUsage(
            self._input_tokens + self._cache_read + self._cache_write,
            output_tokens,
            cache_read_tokens=self._cache_read,
            cache_write_tokens=self._cache_write,
        )

    def _translate(self, exc: Exception) -> Exception | None:
        if isinstance(exc, anthropic.AnthropicError):
            return translated(exc)
        return None


def _count(value: object) -> int:
    """Return a reported count, or 0 when it is absent or not a sane one."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**62:
        return value
    return 0


def token_usage(usage: object) -> TokenUsage | None:
    """Return a response's ``usage`` as ours: input counts the cached tokens too."""
    if usage is None:
        return None
    read = _count(getattr(usage, "cache_read_input_tokens", None))
    write = _count(getattr(usage, "cache_creation_input_tokens", None))
    return TokenUsage(
        _count(getattr(usage, "input_tokens", None)) + read + write,
        _count(getattr(usage, "output_tokens", None)),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
