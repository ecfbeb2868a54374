"""Anthropic API errors: which to retry, after how long, and as which of our errors.

Transient: 408, 409, 429, 5xx (529 overloaded included) and error bodies of type
``overloaded_error``, ``rate_limit_error`` or ``api_error`` (an ``error`` event inside
a 200 stream carries only its body), and connection errors; ``retry-after`` is honoured
up to a minute, else exponential backoff with jitter, as the SDK's own. A request longer
than the model's context (a 413, a ``request_too_large`` error, or a 400 worded as
Anthropic, Bedrock or Vertex word it: "prompt is too long: N tokens > M maximum",
"input length and `max_tokens` exceed context limit: N + M > L", "Input is too long
for requested model") is ``SummarizerContextError``, so the engine folds a smaller
chunk; a timeout ``SummarizerTimeout``; the rest ``SummarizerError``, overload named
as such.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

import anthropic

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

_RETRY_ERROR_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error"})
# How Anthropic's API (and Bedrock's and Vertex's faces of it) words "the request does
# not fit the model's context". Not "max_tokens: N > M, which is the maximum allowed
# number of output tokens": that one is about the reply alone, and no smaller chunk
# helps it.
_CONTEXT_WORDING = re.compile(
    "|".join(
        (
            r"prompt is too long",  # "...: 212043 tokens > 200000 maximum"
            r"exceeds? (the )?context limit",  # "input length and `max_tokens` ..."
            r"exceeds? (the )?(model's )?(maximum )?context (window|length)",
            r"input is too long",  # Bedrock: "Input is too long for requested model."
            r"too many (input )?tokens",
            r"context window",
            r"context length",
        )
    ),
    re.IGNORECASE,
)
# 200: an ``error`` event inside a stream is raised with the stream's own status
_CONTEXT_STATUSES = frozenset({200, 400, 413, 422})


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


def _is_context_error(exc: anthropic.AnthropicError, kind: str | None) -> bool:
    """Tell whether ``exc`` says the request is longer than the model's context."""
    if isinstance(exc, anthropic.APIConnectionError):  # timeouts included
        return False
    status = getattr(exc, "status_code", None)
    if status == 413 or kind == "request_too_large":
        return True
    if status is not None and status not in _CONTEXT_STATUSES:
        return False
    if kind not in (None, "invalid_request_error"):
        return False
    return bool(_CONTEXT_WORDING.search(str(exc)))


def translated(exc: anthropic.AnthropicError) -> SummarizerError:
    """Return the engine's error for an SDK error; log the provider's message."""
    log.warning("Anthropic API failed: %s: %s", type(exc).__name__, exc)
    if isinstance(exc, anthropic.APITimeoutError):
        return SummarizerTimeout(f"the Anthropic API timed out: {exc}")
    kind = _error_type(exc)
    if _is_context_error(exc, kind):
        return SummarizerContextError(
            f"the request exceeds the summarizer model's context window: {exc}"
        )
    if getattr(exc, "status_code", None) == 529 or kind == "overloaded_error":
        return SummarizerError(f"the Anthropic API is overloaded: {exc}")
    return SummarizerError(f"{type(exc).__name__}: {exc}")
