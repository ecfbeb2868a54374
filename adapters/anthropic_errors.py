"""Anthropic API errors: which to retry, after how long, and as which of our errors.

Transient: 408, 409, 429, 5xx (529 overloaded included) and error bodies of type
``overloaded_error``, ``rate_limit_error`` or ``api_error`` (an ``error`` event inside
a 200 stream carries only its body), and connection errors; ``retry-after`` is honoured
up to a minute, else exponential backoff with jitter, as the SDK's own. A prompt too
long is ``SummarizerContextError``; a timeout ``SummarizerTimeout``; the rest
``SummarizerError``, overload named as such.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import anthropic

from memory_summary.domain import (
    SummarizerContextError,
    SummarizerError,
    SummarizerTimeout,
)

from .retry import RETRY_STATUSES, backoff_s, retry_after_s

log = logging.getLogger(__name__)

_RETRY_ERROR_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error"})
_CONTEXT_WORDING = ("prompt is too long", "context window", "context length")


def _error_type(exc: anthropic.AnthropicError) -> str | None:
    """Return the ``error.type`` of an API error's body (an error event's too)."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, Mapping) else None
    kind = error.get("type") if isinstance(error, Mapping) else None
    return kind if isinstance(kind, str) else None


def retry_pause_s(exc: anthropic.AnthropicError, attempt: int) -> float:
    """Return the pause before retrying after ``exc``, or -1 when it is not retried."""
    if isinstance(exc, anthropic.APIStatusError):
        headers = exc.response.headers
        should = headers.get("x-should-retry")
        transient = (
            exc.status_code in RETRY_STATUSES
            or exc.status_code >= 500
            or _error_type(exc) in _RETRY_ERROR_TYPES
        )
        if should == "false" or (should != "true" and not transient):
            return -1.0
        asked_s = retry_after_s(headers)
        if asked_s is not None:
            return asked_s
    elif not isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
        return -1.0
    return backoff_s(attempt)


def translated(exc: anthropic.AnthropicError) -> SummarizerError:
    """Return the engine's error for an SDK error; log the provider's message."""
    log.warning("Anthropic API failed: %s: %s", type(exc).__name__, exc)
    if isinstance(exc, anthropic.APITimeoutError):
        return SummarizerTimeout(f"the Anthropic API timed out: {exc}")
    kind = _error_type(exc)
    status = getattr(exc, "status_code", None)
    wording = str(exc).lower()
    if status == 413 or (
        kind == "invalid_request_error"
        and any(words in wording for words in _CONTEXT_WORDING)
    ):
        return SummarizerContextError(
            f"the request exceeds the summarizer model's context window: {exc}"
        )
    if status == 529 or kind == "overloaded_error":
        return SummarizerError(f"the Anthropic API is overloaded: {exc}")
    return SummarizerError(f"{type(exc).__name__}: {exc}")
