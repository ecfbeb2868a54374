"""A summarizer on any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp...).

Configuration comes from the arguments or, as the openai client does, from
``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` and (for the model) ``OPENAI_MODEL``.

Every call is bounded: ``timeout_s`` caps the whole call, retries included; the connect
timeout is short; a stream can be closed from another thread (the engine does so at its
deadline), which also stops the server generating; a reply far past ``max_tokens`` is
cut off instead of read whole. A reply the endpoint stopped at ``max_tokens``
(``finish_reason`` ``"length"``) is refused with ``SummarizerError``, streamed or not:
a summary cut short is never kept.

Streams ask for the provider's token usage (``stream_options={"include_usage":
true}``, answered by a last chunk with no choices); an endpoint that rejects the
option is asked without it from then on, and its usage is counted by the engine.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import openai

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
    cut_at_max_tokens,
    deadline_at,
)
from memory_summary.domain import (
    Message,
    SummarizerError,
    SummaryReply,
)
from memory_summary.domain.measure import KNOWN_CONTEXT_TOKENS as KNOWN_CONTEXT_TOKENS
from memory_summary.domain.measure import known_context_tokens

from .errors import rejects_stream_options, retry_pause_s, translated
from .stream import OpenAIChatStream, token_usage

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionChunk

log = logging.getLogger(__name__)

_LISTING_KEYS = (
    "max_model_len",
    "context_length",
    "context_window",
    "max_context_length",
)
_STREAM_USAGE: Mapping[str, object] = {"stream_options": {"include_usage": True}}
DISABLE_THINKING_FIELDS: Mapping[str, object] = {
    "chat_template_kwargs": {"enable_thinking": False},  # vLLM / SGLang chat templates
}


class OpenAIChatLLM(SDKSummarizer[openai.Timeout]):
    """Summarizes with the chat completions API of an OpenAI-compatible endpoint.

    Args:
        model: the default model (``$OPENAI_MODEL`` when omitted, else
            ``"gpt-4o-mini"``).
        base_url: the endpoint (``$OPENAI_BASE_URL``, else OpenAI's).
        api_key: the key (``$OPENAI_API_KEY``; a placeholder for local endpoints).
        timeout_s: the timeout of one request (a call's ``timeout_s`` lowers it).
        max_retries: retries on connection errors, 408/409/429 and 5xx, with backoff;
            all of them fit in a call's ``timeout_s``.
        connect_timeout_s: the timeout of opening a connection (default 5 s).
        context_tokens: the context window, per model (a mapping) or for all (an int);
            overrides the endpoint listing and the known-model table.
        disable_thinking: send ``DISABLE_THINKING_FIELDS`` (vLLM's and SGLang's
            ``chat_template_kwargs={"enable_thinking": False}``) to turn provider
            "thinking" off (summaries are mechanical); ``extra_body`` adds any fields.
        extra_body: more request fields, sent as given (they win over
            ``DISABLE_THINKING_FIELDS`` when both name a field).
        max_reply_chars: the longest reply read, in characters; the rest is not read
            (default ``REPLY_CHARS_PER_TOKEN`` x ``max_tokens``, at least
            ``MIN_REPLY_CHARS``: 8 x ``max_tokens``, at least 4096).

    Example:
        >>> llm = OpenAIChatLLM("qwen2.5-7b", base_url="http://127.0.0.1:8000/v1")
        >>> llm.model
        'qwen2.5-7b'
    """

    _retry = SDKRetry(
        openai.Timeout,
        openai.OpenAIError,
        retry_pause_s,
        translated,
        "summarizer endpoint",
    )

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
        self._set_limits(
            timeout_s=timeout_s,
            connect_timeout_s=connect_timeout_s,
            max_retries=max_retries,
            max_reply_chars=max_reply_chars,
            context_tokens=context_tokens,
        )
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed",  # local endpoints accept any key
            base_url=base_url,
            timeout=self._request_timeout(None),
            max_retries=0,  # retried here, within the call's deadline
        )
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

    def _default_context(self, name: str) -> int | None:
        """Return the endpoint's listed window, else the known one (asked once)."""
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
        if response.choices[0].finish_reason == "length":
            raise cut_at_max_tokens("length")
        text = self._capped(response.choices[0].message.content or "", max_tokens)
        return SummaryReply(text, token_usage(response.usage))

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
                if not with_usage or not rejects_stream_options(exc.__cause__):
                    raise
            log.info("the endpoint rejects stream_options; streaming without usage")
            self._stream_usage = False
            return self._retried(lambda t: create(t, False), deadline)

        return OpenAIChatStream(
            open_stream, deadline=deadline, max_chars=self._reply_cap_chars(max_tokens)
        )
