"""One circuit breaker per summarizer, shared by every session of an engine.

The breaker's rules are ``domain.breaker``'s; this box keeps each summarizer's state
behind a lock and logs when a circuit opens.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from memory_summary.domain import (
    Breaker,
    Summarizer,
    SummarizerHealth,
    SummaryConfig,
    breaker_admit,
    breaker_failed,
    breaker_is_open,
    breaker_released,
    breaker_state,
    breaker_succeeded,
)

from .summary_model import label_for

log = logging.getLogger(__name__)


class BreakerBox:
    """One circuit breaker per summarizer, shared by every session of the engine."""

    def __init__(
        self, config: SummaryConfig, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._config = config
        self._clock = clock
        self._lock = threading.Lock()
        self._breakers: dict[int, Breaker] = {}
        self._labels: dict[int, str] = {}

    def report(self) -> list[SummarizerHealth]:
        """Return every summarizer called so far with its breaker's state now."""
        now = self._clock()
        with self._lock:
            breakers = [
                (self._labels.get(key, "unknown"), b)
                for key, b in self._breakers.items()
            ]
        return [
            SummarizerHealth(
                label,
                breaker_state(breaker, now),
                breaker.failures,
                None
                if breaker.open_until is None or breaker.open_until <= now
                else breaker.open_until - now,
            )
            for label, breaker in breakers
        ]

    def admit(self, llm: Summarizer) -> bool:
        """Tell whether a call to ``llm`` may go out now (False while open)."""
        with self._lock:
            if id(llm) not in self._labels:  # decided once: it reads the Protocols
                self._labels[id(llm)] = label_for(llm, None)
            state, admitted = breaker_admit(
                self._breakers.get(id(llm), Breaker()), self._clock()
            )
            self._breakers[id(llm)] = state
            return admitted

    def is_open(self, llm: Summarizer) -> bool:
        """Tell whether a call to ``llm`` would be refused now (admits nothing)."""
        with self._lock:
            return breaker_is_open(
                self._breakers.get(id(llm), Breaker()), self._clock()
            )

    def failed(self, llm: Summarizer) -> None:
        """Count a failed call of ``llm``."""
        with self._lock:
            before = self._breakers.get(id(llm), Breaker())
            after = breaker_failed(
                before,
                self._clock(),
                max_failures=self._config.breaker_failures,
                cooldown_s=self._config.breaker_cooldown_s,
            )
            self._breakers[id(llm)] = after
        if after.open_until is not None and after.open_until != before.open_until:
            log.warning(
                "summarizer %s: circuit open for %.0f s after %d failures",
                label_for(llm, None),
                after.open_until - self._clock(),
                after.failures,
            )

    def succeeded(self, llm: Summarizer) -> None:
        """Count a successful call of ``llm``: the breaker closes."""
        with self._lock:
            self._breakers[id(llm)] = breaker_succeeded(
                self._breakers.get(id(llm), Breaker())
            )

    def released(self, llm: Summarizer) -> None:
        """Hand back an admission whose call never went out."""
        with self._lock:
            self._breakers[id(llm)] = breaker_released(
                self._breakers.get(id(llm), Breaker())
            )
