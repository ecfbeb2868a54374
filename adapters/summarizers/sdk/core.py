"""The one core of the SDK summarizers: call limits, the reply cap, bounded retries.

``OpenAIChatLLM`` and ``AnthropicLLM`` derive from ``SDKSummarizer`` as their streams
derive from ``SDKStream``. The core checks the limits every call keeps (a request's
timeout and connect timeout, the retries, the reply cap), cuts a reply far past
``max_tokens``, and retries within a call's deadline; a provider's face says how to
send the request, what its SDK raises (``SDKRetry``) and which context window a model
has when none was configured (``_default_context``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import attrs

from memory_summary.domain import ConfigError, Message, SummarizerError, SummaryReply

from .retry import request_timeout_s, retried

_T = TypeVar("_T")
_Timeout = TypeVar("_Timeout")  # the SDK's Timeout (httpx's or httpx2's)

CONNECT_TIMEOUT_S = 5.0
# A reply longer than this many characters per requested token ignores max_tokens:
# stop reading it (real text averages about 4 characters a token).
REPLY_CHARS_PER_TOKEN = 8
MIN_REPLY_CHARS = 4096


@attrs.frozen
class SDKRetry(Generic[_Timeout]):
    """How to call one provider's SDK: its timeout type, its errors and their pauses."""

    timeout: Callable[..., _Timeout]  # called as Timeout(total_s, connect=...)
    errors: type[Exception]
    pause_s: Callable[[Any, int], float]
    translated: Callable[[Any], SummarizerError]
    who: str  # names the provider in the log


class SDKSummarizer(Generic[_Timeout]):
    """What the SDK summarizers share; see the module docstring."""

    model: str
    _retry: SDKRetry[_Timeout]  # set by each provider's class
    complete_with_usage: Callable[..., SummaryReply]  # each provider sends its own

    def _set_limits(
        self,
        *,
        timeout_s: float,
        connect_timeout_s: float,
        max_retries: int,
        max_reply_chars: int | None,
        context_tokens: int | Mapping[str, int] | None,
    ) -> None:
        """Check and keep the limits every call of this summarizer keeps."""
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
        self._context_tokens = context_tokens

    def context_length(self, model: str | None = None) -> int | None:
        """Return ``model``'s context window in tokens (default: the adapter's model).

        ``context_tokens`` when it was given (for all models, or this one), else what
        the provider is known to offer; None when unknown (the engine then assumes
        4096 tokens).
        """
        name = model or self.model
        if isinstance(self._context_tokens, int):
            return self._context_tokens
        if isinstance(self._context_tokens, Mapping) and name in self._context_tokens:
            return self._context_tokens[name]
        return self._default_context(name)

    def _default_context(self, name: str) -> int | None:
        raise NotImplementedError  # pragma: no cover - each provider knows its own

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

    def _reply_cap_chars(self, max_tokens: int) -> int:
        """Return how many characters of a reply are read before the rest is dropped."""
        if self._max_reply_chars is not None:
            return self._max_reply_chars
        return max(REPLY_CHARS_PER_TOKEN * max_tokens, MIN_REPLY_CHARS)

    def _capped(self, text: str, max_tokens: int) -> str:
        """Return ``text`` cut to the reply cap (logged when it is cut)."""
        cap = self._reply_cap_chars(max_tokens)
        if len(text) > cap:  # logged as the provider's face
            logging.getLogger(type(self).__module__).warning(
                "reply of %d chars cut to %d (max_tokens=%d)",
                len(text),
                cap,
                max_tokens,
            )
        return text[:cap]

    def _request_timeout(self, deadline: float | None) -> _Timeout:
        """Return the next request's timeout: the configured one, cut to deadline."""
        total_s = request_timeout_s(self._timeout_s, deadline)
        return self._retry.timeout(
            total_s, connect=min(self._connect_timeout_s, total_s)
        )

    def _retried(self, call: Callable[[_Timeout], _T], deadline: float | None) -> _T:
        """Return ``call(timeout)``, retried on transient errors before ``deadline``."""
        return retried(
            lambda: call(self._request_timeout(deadline)),
            deadline,
            max_retries=self._max_retries,
            errors=self._retry.errors,
            pause_s=self._retry.pause_s,
            translated=self._retry.translated,
            who=self._retry.who,
        )
