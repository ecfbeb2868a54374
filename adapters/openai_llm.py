"""A summarizer on any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp...).

Configuration comes from the arguments or, as the openai client does, from
``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` and (for the model) ``OPENAI_MODEL``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import openai

from memory_summary.domain import Message, SummarizerError, SummarizerTimeout

log = logging.getLogger(__name__)

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
        timeout_s: per-request timeout; max_retries: the client's retries on 5xx/429.
        context_tokens: the context window, per model (a mapping) or for all (an int);
            overrides the endpoint listing and the known-model table.
        disable_thinking: send ``DISABLE_THINKING_FIELDS`` to turn provider
            "thinking" off (summaries are mechanical); ``extra_body`` adds any fields.

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
        context_tokens: int | Mapping[str, int] | None = None,
        disable_thinking: bool = False,
        extra_body: Mapping[str, object] | None = None,
    ) -> None:
        self.model = model or os.environ.get("OPENAI_MODEL") or "gpt-4o-mini"
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if api_key is None and base_url is None:
            raise SummarizerError(
                "OpenAIChatLLM needs an API key (api_key= or $OPENAI_API_KEY) or a "
                "base_url of a local endpoint"
            )
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed",  # local endpoints accept any key
            base_url=base_url,
            timeout=timeout_s,
            max_retries=max_retries,
        )
        self._context_tokens = context_tokens
        self._extra_body = {
            **(DISABLE_THINKING_FIELDS if disable_thinking else {}),
            **(extra_body or {}),
        }
        self._lengths: dict[str, int | None] = {}
        self._lock = threading.Lock()

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
        return [{"role": m.role, "content": m.content} for m in messages]

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
    ) -> str:
        try:
            response = self._client.chat.completions.create(
                model=model or self.model,
                messages=self._payload(messages),
                max_tokens=max_tokens,
                temperature=temperature,
                extra_body=self._extra_body or None,
            )
        except openai.OpenAIError as exc:
            raise _translated(exc) from exc
        if not response.choices:
            raise SummarizerError("the endpoint returned no choices")
        return response.choices[0].message.content or ""

    def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
    ) -> Iterator[str]:
        """Yield the answer in pieces; a stream that ends before finishing raises."""
        try:
            chunks = self._client.chat.completions.create(
                model=model or self.model,
                messages=self._payload(messages),
                max_tokens=max_tokens,
                temperature=temperature,
                extra_body=self._extra_body or None,
                stream=True,
            )
            finished = False
            for chunk in chunks:
                for choice in chunk.choices:
                    if choice.delta and choice.delta.content:
                        yield choice.delta.content
                    finished = finished or choice.finish_reason is not None
        except openai.OpenAIError as exc:
            raise _translated(exc) from exc
        if not finished:
            raise SummarizerError("the summary stream ended before it finished")


def _translated(exc: openai.OpenAIError) -> SummarizerError:
    """Return the engine's error for a provider error; log the provider's message."""
    log.warning("summarizer endpoint failed: %s: %s", type(exc).__name__, exc)
    if isinstance(exc, openai.APITimeoutError):
        return SummarizerTimeout(f"the summarizer endpoint timed out: {exc}")
    return SummarizerError(f"{type(exc).__name__}: {exc}")
