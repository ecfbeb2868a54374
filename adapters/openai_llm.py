"""A summarizer on any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp...).

Configuration comes from the arguments or, as the openai client does, from
``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` and (for the model) ``OPENAI_MODEL``.

Every call is bounded: ``timeout_s`` caps the whole call, retries included; the connect
timeout is short; a stream can be closed from another thread (the engine does so at its
deadline), which also stops the server generating; a reply far past ``max_tokens`` is
cut off instead of read whole.

Streams ask for the provider's token usage (``stream_options={"include_usage":
true}``, answered by a last chunk with no choices); an endpoint that rejects the
option is asked without it from then on, and its usage is counted by the engine.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import openai

from memory_summary.domain import (
    ConfigError,
    Message,
    SummarizerContextError,
    SummarizerError,
    SummarizerTimeout,
    SummaryReply,
    TokenUsage,
)

from .sdk_stream import SDKStream, deadline_at

if TYPE_CHECKING:
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk

log = logging.getLogger(__name__)

_T = TypeVar("_T")

CONNECT_TIMEOUT_S = 5.0
# A reply longer than this many characters per requested token ignores max_tokens:
# stop reading it (real text averages about 4 characters a token).
REPLY_CHARS_PER_TOKEN = 8
MIN_REPLY_CHARS = 4096
_FIRST_BACKOFF_S = 0.5
_MAX_BACKOFF_S = 8.0
_MAX_RETRY_AFTER_S = 60.0
_RETRY_STATUSES = frozenset({408, 409, 429})
# How servers word "the prompt does not fit the context window".
_CONTEXT_WORDING = re.compile(
    "|".join(
        (
            r"context_length_exceeded",  # OpenAI, Azure, Groq: the error code
            r"context length exceeded",
            r"maximum context length",  # OpenAI, vLLM, DeepSeek, Mistral
            r"exceeds? the available context size",  # llama.cpp server
            r"exceeds? (the )?context window",  # llama-cpp-python
            r"exceeds? (the )?(model's )?(maximum )?context length",  # Ollama, vLLM
            r"too long to fit into the model",  # vLLM
            r"longer than the maximum model length",  # vLLM
            r"prompt is too long",  # Anthropic's compatible endpoint
            r"input token count .* exceeds the maximum",  # Gemini's
            r"max_new_tokens` must be <=",  # text-generation-inference
            r"reduce the length of the messages",
        )
    ),
    re.IGNORECASE,
)
_CONTEXT_STATUSES = frozenset({400, 413, 422})

# Context windows of well-known models, longest prefix first; used when neither the
# configuration nor the endpoint's model listing says. Tokens.
KNOWN_CONTEXT_TOKENS: tuple[tuple[str, int], ...] = (
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
_LISTING_KEYS = (
    "max_model_len",
    "context_length",
    "context_window",
    "max_context_length",
)
# How servers word "I do not know stream_options" (a 400 or 422 naming the field).
_STREAM_OPTIONS_WORDING = re.compile(r"stream_options|include_usage", re.IGNORECASE)
_STREAM_USAGE: Mapping[str, object] = {"stream_options": {"include_usage": True}}
DISABLE_THINKING_FIELDS: Mapping[str, object] = {
    "chat_template_kwargs": {"enable_thinking": False},  # vLLM / SGLang chat templates
}


def known_context_tokens(model: str) -> int | None:
    """Return the context window of a well-known model, matched by name prefix."""
    name = model.lower().rsplit("/", 1)[-1]
    for prefix, tokens in sorted(KNOWN_CONTEXT_TOKENS, key=lambda p: -len(p[0])):
        if name.startswith(prefix):
            return tokens
    return None


class OpenAIChatLLM:
    """Summarizes with the chat completions API of an OpenAI-compatible endpoint.

    Args:
        model: the default model (``$OPENAI_MODEL`` when omitted).
        base_url: the endpoint (``$OPENAI_BASE_URL``, else OpenAI's).
        api_key: the key (``$OPENAI_API_KEY``; a placeholder for local endpoints).
        timeout_s: the timeout of one request (a call's ``timeout_s`` lowers it).
        max_retries: retries on connection errors, 408/409/429 and 5xx, with backoff;
            all of them fit in a call's ``timeout_s``.
        connect_timeout_s: the timeout of opening a connection.
        context_tokens: the context window, per model (a mapping) or for all (an int);
            overrides the endpoint listing and the known-model table.
        disable_thinking: send ``DISABLE_THINKING_FIELDS`` to turn provider
            "thinking" off (summaries are mechanical); ``extra_body`` adds any fields.
        max_reply_chars: the longest reply read, in characters; the rest is not read
            (default ``REPLY_CHARS_PER_TOKEN`` x ``max_tokens``, at least
            ``MIN_REPLY_CHARS``).

    Example:
        >>> llm = OpenAIChatLLM("qwen2.5-7b", base_url="http://127.0.0.1:8000/v1")
        >>> llm.model
        'qwen2.5-7b'
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        context_tokens: int | Mapping[str, int] | None = None,
        disable_thinking: bool = False,
        extra_body: Mapping[str, object] | None = None,
        max_reply_chars: int | None = None,
    ) -> None:
        self.model = model or os.environ.get("OPENAI_MODEL") or "gpt-4o-mini"
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if api_key is None and base_url is None:
            raise SummarizerError(
                "OpenAIChatLLM needs an API key (api_key= or $OPENAI_API_KEY) or a "
                "base_url of a local endpoint"
            )
        for field, value in (
            ("timeout_s", timeout_s),
            ("connect_timeout_s", connect_timeout_s),
        ):
            if not value > 0:
                raise ConfigError(field, value, "a number of seconds > 0")
        if max_retries < 0:
            raise ConfigError("max_retries", max_retries, "int >= 0")
        if max_reply_chars is not None and max_reply_chars < 1:
            raise ConfigError("max_reply_chars", max_reply_chars, "int >= 1 or None")
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._max_retries = max_retries
        self._max_reply_chars = max_reply_chars
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed",  # local endpoints accept any key
            base_url=base_url,
            timeout=self._request_timeout(None),
            max_retries=0,  # retried here, within the call's deadline
        )
        self._context_tokens = context_tokens
        self._extra_body = {
            **(DISABLE_THINKING_FIELDS if disable_thinking else {}),
            **(extra_body or {}),
        }
        self._lengths: dict[str, int | None] = {}
        self._lock = threading.Lock()
        self._stream_usage = True  # False once the endpoint refused stream_options

    def close(self) -> None:
        """Close the adapter's idle connections; do not use it afterwards."""
        self._client.close()

    def context_length(self, model: str | None = None) -> int | None:
        name = model or self.model
        if isinstance(self._context_tokens, int):
            return self._context_tokens
        if isinstance(self._context_tokens, Mapping) and name in self._context_tokens:
            return self._context_tokens[name]
        with self._lock:
            if name in self._lengths:
                return self._lengths[name]
        length = self._listed_context(name) or known_context_tokens(name)
        with self._lock:
            self._lengths[name] = length
        return length

    def _listed_context(self, name: str) -> int | None:
        """Return the context length the endpoint's model listing reports, if any."""
        try:
            listing = self._client.models.list()
        except openai.OpenAIError as exc:
            log.info("model listing unavailable (%s); using known windows", exc)
            return None
        for entry in listing.data:
            if entry.id == name:
                extra = entry.model_extra or {}
                for key in _LISTING_KEYS:
                    value = extra.get(key)
                    if isinstance(value, int) and value > 0:
                        return value
        return None

    def _payload(self, messages: Sequence[Message]) -> Any:
        """Return the chat messages in the wire format (the SDK types them loosely)."""
        return [{"role": m.role, "content": m.text} for m in messages]

    def _reply_cap_chars(self, max_tokens: int) -> int:
        """Return how many characters of a reply are read before the rest is dropped."""
        if self._max_reply_chars is not None:
            return self._max_reply_chars
        return max(REPLY_CHARS_PER_TOKEN * max_tokens, MIN_REPLY_CHARS)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
        timeout_s: float | None = None,
    ) -> str:
        """Return the answer; ``timeout_s`` bounds the call, retries included.

        The bound holds per read of the reply (the SDK's timeout): a server that
        trickles bytes of a non-streamed reply can stretch it. Use ``stream()`` for a
        hard bound.
        """
        return self.complete_with_usage(
            messages,
            model=model,
            max_tokens=max_tokens,
            temperature=temperature,
            timeout_s=timeout_s,
        ).text

    def complete_with_usage(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
        timeout_s: float | None = None,
    ) -> SummaryReply:
        """Return the answer with the usage the endpoint reported (None if none)."""
        response = self._retried(
            lambda timeout: self._client.chat.completions.create(
                model=model or self.model,
                messages=self._payload(messages),
                max_tokens=max_tokens,
                temperature=temperature,
                extra_body=self._extra_body or None,
                timeout=timeout,
            ),
            deadline_at(timeout_s),
        )
        if not response.choices:
            raise SummarizerError("the endpoint returned no choices")
        text = response.choices[0].message.content or ""
        cap = self._reply_cap_chars(max_tokens)
        if len(text) > cap:
            log.warning(
                "reply of %d chars cut to %d (max_tokens=%d)",
                len(text),
                cap,
                max_tokens,
            )
        return SummaryReply(text[:cap], _token_usage(response.usage))

    def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
        timeout_s: float | None = None,
    ) -> OpenAIChatStream:
        """Return the answer's pieces as they arrive; nothing is sent before iterating.

        ``timeout_s`` bounds the whole stream: at the deadline it is closed and raises
        ``SummarizerTimeout``. ``close()`` may be called from any thread.

        Example:
            >>> llm = OpenAIChatLLM("m", base_url="http://127.0.0.1:9/v1")
            >>> pieces = llm.stream([], max_tokens=10, temperature=0.3, timeout_s=5)
            >>> pieces.close()
        """
        deadline = deadline_at(timeout_s)

        def create(
            timeout: openai.Timeout, with_usage: bool
        ) -> openai.Stream[ChatCompletionChunk]:
            body = {**self._extra_body, **(_STREAM_USAGE if with_usage else {})}
            return self._client.chat.completions.create(
                model=model or self.model,
                messages=self._payload(messages),
                max_tokens=max_tokens,
                temperature=temperature,
                extra_body=body or None,
                # never pooled: close() may shut the socket down at any time
                extra_headers={"Connection": "close"},
                timeout=timeout,
                stream=True,
            )

        def open_stream() -> openai.Stream[ChatCompletionChunk]:
            with_usage = self._stream_usage
            try:
                return self._retried(lambda t: create(t, with_usage), deadline)
            except SummarizerError as exc:
                if not with_usage or not _rejects_stream_options(exc.__cause__):
                    raise
            log.info("the endpoint rejects stream_options; streaming without usage")
            self._stream_usage = False
            return self._retried(lambda t: create(t, False), deadline)

        return OpenAIChatStream(
            open_stream, deadline=deadline, max_chars=self._reply_cap_chars(max_tokens)
        )

    def _request_timeout(self, deadline: float | None) -> openai.Timeout:
        """Return the next request's timeout: the configured one, cut to deadline."""
        total_s = self._timeout_s
        if deadline is not None:
            total_s = min(total_s, deadline - time.monotonic())
            if total_s <= 0:
                raise SummarizerTimeout("the summarizer call ran out of time")
        return openai.Timeout(total_s, connect=min(self._connect_timeout_s, total_s))

    def _retried(
        self, call: Callable[[openai.Timeout], _T], deadline: float | None
    ) -> _T:
        """Return ``call(timeout)``, retried like the SDK does, before ``deadline``."""
        attempt = 0
        while True:
            try:
                return call(self._request_timeout(deadline))
            except openai.OpenAIError as exc:
                pause_s = _retry_pause_s(exc, attempt)
                fits = deadline is None or time.monotonic() + pause_s < deadline
                if attempt >= self._max_retries or pause_s < 0 or not fits:
                    raise _translated(exc) from exc
                log.warning(
                    "summarizer endpoint failed (%s); retry %d of %d in %.1f s",
                    type(exc).__name__,
                    attempt + 1,
                    self._max_retries,
                    pause_s,
                )
            time.sleep(pause_s)
            attempt += 1


class OpenAIChatStream(SDKStream["ChatCompletionChunk"]):
    """The pieces of one streamed answer, closable from any thread (``SDKStream``).

    Iterating sends the request (the first ``next()``), then yields text pieces. It
    raises ``SummarizerError`` when the stream breaks or was closed,
    ``SummarizerTimeout`` at its deadline and ``SummarizerContextError`` when the
    endpoint refuses the prompt as too long. A reply past ``max_chars`` ends early,
    cut to ``max_chars``, and its connection is closed.

    ``close()`` is idempotent and thread-safe: it shuts the connection down, so a
    ``next()`` blocked on another thread (say, on a server's keep-alive comments)
    fails at once, and the server sees the client leave and stops generating.

    Example:
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
        usage = _token_usage(event.usage)
        if usage is not None:  # the last chunk, with no choices (or each chunk)
            self._usage = usage
        self._finished = self._finished or any(
            choice.finish_reason is not None for choice in event.choices
        )
        return "".join(
            choice.delta.content
            for choice in event.choices
            if choice.delta and choice.delta.content
        )

    def _translate(self, exc: Exception) -> Exception | None:
        return _translated(exc) if isinstance(exc, openai.OpenAIError) else None

    def _ended_early(self) -> SummarizerError:
        if self._chars == 0:
            return SummarizerContextError(
                "the summary stream ended with neither text nor a finish_reason; "
                "llama.cpp's server answers a prompt longer than its context so"
            )
        return SummarizerError("the summary stream ended before it finished")


def _token_usage(usage: CompletionUsage | None) -> TokenUsage | None:
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


def _rejects_stream_options(exc: BaseException | None) -> bool:
    """Tell whether ``exc`` is an endpoint refusing the ``stream_options`` field."""
    return (
        isinstance(exc, openai.APIStatusError)
        and exc.status_code in (400, 422)
        and bool(_STREAM_OPTIONS_WORDING.search(f"{exc} {exc.body}"))
    )


def _retry_pause_s(exc: openai.OpenAIError, attempt: int) -> float:
    """Return the pause before retrying after ``exc``, or -1 when it is not retried."""
    if isinstance(exc, openai.APIStatusError):
        headers = exc.response.headers
        should = headers.get("x-should-retry")
        if should == "false" or (
            should != "true"
            and exc.status_code not in _RETRY_STATUSES
            and exc.status_code < 500
        ):
            return -1.0
        with contextlib.suppress(ValueError):
            retry_after_s = float(headers.get("retry-after", ""))
            if 0 <= retry_after_s <= _MAX_RETRY_AFTER_S:
                return retry_after_s
    elif not isinstance(exc, openai.APIConnectionError):  # includes timeouts
        return -1.0
    backoff_s = min(_FIRST_BACKOFF_S * 2.0**attempt, _MAX_BACKOFF_S)
    return backoff_s * (1 - 0.25 * random.random())  # jitter, as the SDK's


def _is_context_error(exc: openai.OpenAIError) -> bool:
    """Return whether ``exc`` says the request is longer than the model's context."""
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 413:  # too large for the server or a proxy in front
            return True
        if exc.status_code not in _CONTEXT_STATUSES:
            return False
    elif not isinstance(exc, openai.APIError) or isinstance(
        exc, openai.APIConnectionError
    ):
        return False
    # an error event inside a 200 stream is a bare APIError: its message decides
    return bool(_CONTEXT_WORDING.search(f"{exc} {exc.code} {exc.body}"))


def _translated(exc: openai.OpenAIError) -> SummarizerError:
    """Return the engine's error for a provider error; log the provider's message."""
    log.warning("summarizer endpoint failed: %s: %s", type(exc).__name__, exc)
    if isinstance(exc, openai.APITimeoutError):
        return SummarizerTimeout(f"the summarizer endpoint timed out: {exc}")
    if _is_context_error(exc):
        return SummarizerContextError(
            f"the request exceeds the summarizer model's context window: {exc}"
        )
    return SummarizerError(f"{type(exc).__name__}: {exc}")
