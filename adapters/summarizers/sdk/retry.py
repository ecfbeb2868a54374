"""The retry policy both SDK summarizers share (OpenAI's and Anthropic's).

A call is retried, as the SDKs do it, while its provider says the error is transient
and the pause still ends before the call's deadline: ``retry-after`` is honoured up to
``MAX_RETRY_AFTER_S``, else the pause doubles from ``FIRST_BACKOFF_S`` up to
``MAX_BACKOFF_S``, with jitter. Each request's timeout is the configured one, cut to
what is left before the deadline.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from memory_summary.domain import SummarizerError, SummarizerTimeout

log = logging.getLogger(__name__)

T = TypeVar("T")
E = TypeVar("E", bound=Exception)

FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
MAX_RETRY_AFTER_S = 60.0
RETRY_STATUSES = frozenset({408, 409, 429})
"""Statuses below 500 that are transient."""


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Return the pause a ``retry-after`` header asks for, if sane; else None."""
    with contextlib.suppress(ValueError):
        pause_s = float(headers.get("retry-after", ""))
        if 0 <= pause_s <= MAX_RETRY_AFTER_S:
            return pause_s
    return None


def backoff_s(attempt: int) -> float:
    """Return the pause before retry ``attempt + 1``: doubling, capped, jittered."""
    pause_s = min(FIRST_BACKOFF_S * 2.0**attempt, MAX_BACKOFF_S)
    return pause_s * (1 - 0.25 * random.random())  # jitter, as the SDKs'


def request_timeout_s(timeout_s: float, deadline: float | None) -> float:
    """Return the next request's timeout: ``timeout_s``, cut to the deadline.

    Raises:
        SummarizerTimeout: the deadline has passed.
    """
    if deadline is None:
        return timeout_s
    left_s = min(timeout_s, deadline - time.monotonic())
    if left_s <= 0:
        raise SummarizerTimeout("the summarizer call ran out of time")
    return left_s


def retried(
    call: Callable[[], T],
    deadline: float | None,
    *,
    max_retries: int,
    errors: type[E],
    pause_s: Callable[[E, int], float],
    translated: Callable[[E], SummarizerError],
    who: str,
) -> T:
    """Return ``call()``, retried on transient ``errors`` before ``deadline``.

    ``pause_s(exc, attempt)`` is the pause before the next attempt, negative when
    ``exc`` is not transient; ``translated(exc)`` is what is raised when no retry is
    left; ``who`` names the provider in the log.
    """
    attempt = 0
    while True:
        try:
            return call()
        except errors as exc:
            pause = pause_s(exc, attempt)
            fits = deadline is None or time.monotonic() + pause < deadline
            if attempt >= max_retries or pause < 0 or not fits:
                raise translated(exc) from exc
            log.warning(
                "%s failed (%s); retry %d of %d in %.1f s",
                who,
                type(exc).__name__,
                attempt + 1,
                max_retries,
                pause,
            )
        time.sleep(pause)
        attempt += 1
