"""Delivery of the engine's events to the host's subscribers; the outcome log line."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memory_summary.domain import Event, Outcome

log = logging.getLogger(__name__)

Subscriber = Callable[[Event], None]


class EventBus:
    """Calls every subscriber with every event; a subscriber that raises is logged.

    Subscribing and emitting are safe from any thread; emitting takes no lock.
    """

    def __init__(self) -> None:
        self._subscribers: tuple[Subscriber, ...] = ()
        self._lock = threading.Lock()

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Register ``callback``; return a function that unregisters it."""
        with self._lock:
            self._subscribers = (*self._subscribers, callback)

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = tuple(
                    s for s in self._subscribers if s is not callback
                )

        return unsubscribe

    def emit(self, event: Event) -> None:
        """Deliver ``event`` to every subscriber, in subscription order."""
        for callback in self._subscribers:
            _deliver(callback, event)


def _deliver(callback: Subscriber, event: Event) -> None:
    try:
        callback(event)
    except Exception:  # a subscriber's bug never breaks the engine
        log.exception("event subscriber %r raised on %r", callback, event)


def log_outcome(outcome: Outcome) -> None:
    """Log one line per compression outcome at the level its kind deserves."""
    if outcome.kind == "skipped":
        log.debug("session %s: skipped (%s)", outcome.session_id, outcome.detail)
        return
    level = logging.INFO if outcome.ok else logging.WARNING
    log.log(
        level,
        "session %s: %s (%s), folded %d (%d recovered), archived %d in %d chunk(s)",
        outcome.session_id,
        outcome.kind,
        outcome.detail or outcome.reason,
        outcome.summarized,
        outcome.recovered,
        outcome.archived,
        outcome.chunks,
        extra={"session_id": outcome.session_id},
    )
