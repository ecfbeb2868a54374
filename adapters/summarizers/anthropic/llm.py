"""A summarizer on Anthropic's Messages API, through the official ``anthropic`` SDK.

Configuration comes from the arguments or, as the SDK does, from
``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``; the model from ``ANTHROPIC_MODEL``.

Every call is bounded as ``OpenAIChatLLM``'s are (one stream core, ``SDKStream``):
``timeout_s`` caps the whole call, retries included; the stream's deadline closes its
socket, which also stops the server generating. Retries (429, 529 overloaded, 5xx,
408/409, connection errors; ``retry-after`` honoured) happen here, only while they fit
in the deadline. ``max_tokens`` is the summary budget the engine passes; a reply the
API stopped at it (``stop_reason`` ``"max_tokens"``) is refused with
``SummarizerError``, one stopped at the context window
(``"model_context_window_exceeded"``) with ``SummarizerContextError``, and a
``"refusal"`` with ``SummarizerError``: a summary cut short is never kept. Usage comes
from the message's ``usage`` (``message_start``, then ``message_delta``): input tokens
include the tokens read from and written to the prompt cache; a reply whose usage is
missing or null (gateways and local servers send it so) has none, and the engine
counts its tokens. A 200 answer that is not a message is a ``SummarizerError``.
Thinking is never requested: summaries are mechanical. ``temperature`` is not sent:
the SDK (2.x) no longer takes it and current Claude models fix their sampling; a model
that accepts it gets it through ``extra_body={"temperature": ...}``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anthropic
import attrs

from memory_summary.adapters.summarizers.sdk.core import (
    CONNECT_TIMEOUT_S,
    SDKRetry,
    SDKSummarizer,
)
from memory_summary.adapters.summarizers.sdk.core import (
    MIN_REPLY_CHARS as MIN_REPLY_CHARS,
)
from memory_summary.adapters.summarizers.sdk.core import (
    REPLY_CHARS_PER_TOKEN as REPLY_CHARS_PER_TOKEN,
)
from memory_summary.adapters.summarizers.sdk.stream import (
    SDKStream,
    cut_at_max_tokens,
    deadline_at,
)
from memory_summary.domain import (
    Message,
    SummarizerContextError,
    SummarizerError,
    SummaryReply,
    TokenUsage,
)
from memory_summary.domain.measure import KNOWN_CONTEXT_TOKENS as KNOWN_CONTEXT_TOKENS
from memory_summary.domain.measure import known_context_tokens

from .errors import retry_pause_s, translated

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
        self, messages: Sequence[Message], model: str | None, max_tokens: int
    ) -> dict[str, Any]:
        """Return the call's arguments; no ``temperature`` (see the module)."""
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
        arguments = self._arguments(messages, model, max_tokens)
        try:
            response = self._retried(
                lambda timeout: self._client.messages.create(
                    **arguments, timeout=timeout
                ),
                deadline_at(timeout_s),
            )
        except ValueError as exc:  # the SDK's JSON decoding of a 200's body
            raise SummarizerError(
                f"the Anthropic API answered with a body that is not JSON: {exc}"
            ) from exc
        text = message_text(response)
        refused = stop_error(getattr(response, "stop_reason", None))
        if refused is not None:
            raise refused
        usage = token_usage(getattr(response, "usage", None))
        return SummaryReply(self._capped(text, max_tokens), usage)

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
        arguments = self._arguments(messages, model, max_tokens)

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
    ``message_stop`` raises ``SummarizerError``, and so does one whose
    ``message_delta`` says it stopped short (``stop_error``). The usage is known once
    the input counts (``message_start``, or a ``message_delta`` that sends them) and
    the final output count (``message_delta``) came; a gateway that leaves them out
    or sends them null gives None, and the engine counts the tokens.

    Built by ``AnthropicLLM.stream()``; a host only iterates and closes it.

    Args:
        open_stream: sends the request and returns the SDK's stream (called on the
            first ``next()``).
        deadline: the ``time.monotonic()`` instant the whole answer must be read
            by, or None for no bound.
        max_chars: the longest reply read; the stream ends there, cut.
    """

    _input_tokens: int | None = None
    _cache_read = 0
    _cache_write = 0
    _output_tokens: int | None = None

    def _read(self, event: RawMessageStreamEvent) -> str:
        # the SDK builds events without validating them: any field may be missing
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._note_counts(getattr(getattr(event, "message", None), "usage", None))
        elif kind == "message_delta":
            # cumulative counts; the input ones only when they change
            self._note_counts(getattr(event, "usage", None), final=True)
            self._unfinished = stop_error(
                getattr(getattr(event, "delta", None), "stop_reason", None)
            )
        elif kind == "message_stop":
            self._finished = True
        elif kind == "content_block_delta":
            delta = getattr(event, "delta", None)
            text = getattr(delta, "text", None)
            if getattr(delta, "type", None) == "text_delta" and isinstance(text, str):
                return text
        return ""

    def _note_counts(self, usage: object, *, final: bool = False) -> None:
        """Keep the counts ``usage`` reports; the usage is known once both sides are."""
        if usage is None:
            return
        input_tokens = getattr(usage, "input_tokens", None)
        if input_tokens is not None:
            self._input_tokens = _count(input_tokens)
        read = getattr(usage, "cache_read_input_tokens", None)
        if read is not None:
            self._cache_read = _count(read)
        write = getattr(usage, "cache_creation_input_tokens", None)
        if write is not None:
            self._cache_write = _count(write)
        output_tokens = getattr(usage, "output_tokens", None)
        if final and output_tokens is not None:
            self._output_tokens = _count(output_tokens)
        if self._input_tokens is None or self._output_tokens is None:
            return
        self._usage = TokenUsage(
            self._input_tokens + self._cache_read + self._cache_write,
            self._output_tokens,
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


def stop_error(reason: object) -> SummarizerError | None:
    """Return the error for a reply that stopped short of a whole summary, or None.

    >>> stop_error("end_turn") is None, type(stop_error("max_tokens")).__name__
    (True, 'SummarizerError')
    """
    if reason == "max_tokens":
        return cut_at_max_tokens(reason)
    if reason == "model_context_window_exceeded":
        return SummarizerContextError(
            "the reply reached the end of the summarizer model's context window: "
            "a summary cut short is not kept"
        )
    if reason == "refusal":
        return SummarizerError("the summarizer model refused to answer")
    return None


def message_text(response: object) -> str:
    """Return the text of a Messages API answer; refuse what is not a message."""
    content = getattr(response, "content", None)
    if not isinstance(content, list):
        raise SummarizerError(
            "the Anthropic API answered with something that is not a message: "
            f"{type(response).__name__} {str(response)[:200]!r}"
        )
    return "".join(
        text
        for block in content
        if getattr(block, "type", None) == "text"
        and isinstance(text := getattr(block, "text", None), str)
    )


def token_usage(usage: object) -> TokenUsage | None:
    """Return a response's ``usage`` as ours: input counts the cached tokens too.

    With ``iterations`` (server-side compaction: a ``compaction`` entry's tokens are
    not in the top-level fields), the call's tokens are their sum. None when the
    usage is missing or reports no input or no output count.
    """
    steps = _field(usage, "iterations")
    parts = [token_usage(step) for step in steps] if isinstance(steps, list) else []
    if parts and None not in parts:
        fields = attrs.fields_dict(TokenUsage)
        return TokenUsage(**{f: sum(getattr(p, f) for p in parts) for f in fields})
    if _field(usage, "input_tokens") is None or _field(usage, "output_tokens") is None:
        return None
    read = _count(_field(usage, "cache_read_input_tokens"))
    write = _count(_field(usage, "cache_creation_input_tokens"))
    return TokenUsage(
        _count(_field(usage, "input_tokens")) + read + write,
        _count(_field(usage, "output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _field(data: object, name: str) -> object:
    """Return a field of an SDK object, or of a dict (an extra field stays one)."""
    return data.get(name) if isinstance(data, Mapping) else getattr(data, name, None)
