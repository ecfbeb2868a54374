"""Turns whose threshold count the store failed: counted, and warned about sparingly.

A turn is gated by the store's count of the session's active messages
(``count_history``). When the store fails that count (a starved pool, a locked
database), the turn passes on to its session's actor, which is safe (its compression
meets the failure and reports it), but a store that keeps failing would otherwise
show only later, as compression errors. So each failure is counted (``total``, read
by ``SummaryEngine.health()``), and logged at WARNING: the first at once, then at
most one per ``WARN_INTERVAL_S`` saying how many failed since, so a failing store
does not flood the log.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

WARN_INTERVAL_S = 60.0
"""Seconds between two warnings about failed turn counts."""


class CountFailures:
    """Counts failed turn counts and logs them, one WARNING per interval at most.

    Args:
        interval_s: the least time between two warnings.
        clock: monotonic seconds (tests pass their own).

    Thread-safety: ``note`` may be called from any thread.
    """

    def __init__(
        self,
        interval_s: float = WARN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._total = 0
        self._unwarned = 0  # failures since the last warning
        self._warned_at: float | None = None

    @property
    def total(self) -> int:
        """Return how many turn counts failed since the engine was made."""
        return self._total

    def note(self, session_id: str, error: Exception) -> None:
        """Count one failed turn count; warn if none was said for ``interval_s``."""
        now = self._clock()
        with self._lock:
            self._total += 1
            self._unwarned += 1
            if self._warned_at is not None and now - self._warned_at < self._interval_s:
                return
            self._warned_at, failed = now, self._unwarned
            self._unwarned = 0
        log.warning(
            "session %s: the store failed the turn's count (%s: %s); the turn goes "
            "to its session's actor. %d turn count(s) failed since the last such "
            "warning (at most one per %g s)",
            session_id,
            type(error).__name__,
            error,
            failed,
            self._interval_s,
            extra={"session_id": session_id, "count_failures": failed},
        )
