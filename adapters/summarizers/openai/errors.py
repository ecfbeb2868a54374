"""OpenAI-compatible endpoints' errors: which to retry, how soon, as which of ours.

Transient: 408, 409, 429, 5xx and connection errors (a server may say otherwise with
``x-should-retry``); ``retry-after`` is honoured up to a minute, else exponential
backoff with jitter (``retry``). A prompt longer than the context (a 400, 413 or 422
in one of the wordings servers use, or an error event in a 200 stream) is
``SummarizerContextError``; a timeout ``SummarizerTimeout``; the rest
``SummarizerError``.
"""

from __future__ import annotations

import logging
import re

import openai

from memory_summary.adapters.summarizers.sdk.retry import (
    RETRY_STATUSES,
    backoff_s,
    retry_after_s,
)
from memory_summary.domain import (
    SummarizerContextError,
    SummarizerError,
    SummarizerTimeout,
)

log = logging.getLogger(__name__)

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
# How servers word "I do not know stream_options" (a 400 or 422 naming the field).
_STREAM_OPTIONS_WORDING = re.compile(r"stream_options|include_usage", re.IGNORECASE)


def rejects_stream_options(exc: BaseException | None) -> bool:
    """Tell whether ``exc`` is an endpoint refusing the ``stream_options`` field."""
    return (
        isinstance(exc, openai.APIStatusError)
        and exc.status_code in (400, 422)
        and bool(_STREAM_OPTIONS_WORDING.search(f"{exc} {exc.body}"))
    )


def retry_pause_s(exc: openai.OpenAIError, attempt: int) -> float:
    """Return the pause before retrying after ``exc``, or -1 when it is not retried."""
    if isinstance(exc, openai.APIStatusError):
        headers = exc.response.headers
        should = headers.get("x-should-retry")
        if should == "false" or (
            should != "true"
            and exc.status_code not in RETRY_STATUSES
            and exc.status_code < 500
        ):
            return -1.0
        asked_s = retry_after_s(headers)
        if asked_s is not None:
            return asked_s
    elif not isinstance(exc, openai.APIConnectionError):  # includes timeouts
        return -1.0
    return backoff_s(attempt)


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


def translated(exc: openai.OpenAIError) -> SummarizerError:
    """Return the engine's error for a provider error; log the provider's message."""
    log.warning("summarizer endpoint failed: %s: %s", type(exc).__name__, exc)
    if isinstance(exc, openai.APITimeoutError):
        return SummarizerTimeout(f"the summarizer endpoint timed out: {exc}")
    if _is_context_error(exc):
        return SummarizerContextError(
            f"the request exceeds the summarizer model's context window: {exc}"
        )
    return SummarizerError(f"{type(exc).__name__}: {exc}")
