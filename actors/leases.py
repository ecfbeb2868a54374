"""Session leases held by one engine: kept alive while their holder works, and released.

A compression holds its session's lease from before it reads until after it commits;
whatever it does meanwhile (counting tokens, extracting pins, waiting for the
summarizer, validating the reply) may take longer than the lease lasts. One keeper
thread per engine renews every held lease once a third of its time has passed, for as
long as it is held, and marks a lease lost when the store says it is gone (expired and
taken): the holder then commits nothing (its next commit is fenced). The thread runs
only while some lease is held, so threads grow with active compressions, not with
sessions.

A release that fails (the database restarted, say) is remembered and retried: before
the next lease this engine takes, and by the keeper while it runs. Until then the
lease is this engine's own orphan, which it recognises and reclaims itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import attrs

from memory_summary.domain import CompressionStore, StoreError

from .workers import daemon

log = logging.getLogger(__name__)

RETRY_S = 1.0
"""How soon a renewal or release that failed on a store error is tried again."""


@attrs.define
class _Held:
    session_id: str
    token: str
    ttl_s: float
    renewed_at: float
    lost: bool = False


class LeaseKeeper:
    """Keeps the leases of one engine's running compressions alive.

    Args:
        store: where the leases live.
        clock: monotonic seconds (tests pass a fake one with ``tick()``).

    Thread-safety: every method may be called from any thread.
    """

    def __init__(
        self, store: CompressionStore, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._store = store
        self._clock = clock
        self._changed = threading.Condition()
        self._held: dict[str, _Held] = {}  # by token
        self._unreleased: dict[str, str] = {}  # token -> session id
        self._thread: threading.Thread | None = None
        # when the keeper, waiting, looks at the clock next (None: not waiting on it)
        self._wake_at: float | None = None

    def acquire(
        self,
        session_id: str,
        owner: str,
        ttl_s: float,
        *,
        is_dead_owner: Callable[[str], bool] = lambda owner: False,
    ) -> str | None:
        """Take the session's lease for ``owner``; break it first if its holder is dead.

        A lease held under ``owner`` while none of this keeper's compressions holds it
        is an orphan (its release failed, say while the database restarted): it is
        reclaimed at once instead of waiting for it to expire. Returns the lease's
        token, or None when a live holder has it.
        """
        store = self._store
        self.retry_releases()
        lease = store.acquire_lease(session_id, owner=owner, ttl_s=ttl_s)
        if lease is not None:
            return lease
        holder = store.lease_owner(session_id)
        if holder is None:
            return None
        if holder == owner and not self.holds_session(session_id):
            log.warning(
                "session %s: reclaiming this engine's own orphaned lease",
                session_id,
                extra={"session_id": session_id},
            )
        elif not is_dead_owner(holder):
            return None
        else:
            log.warning(
                "session %s: breaking the lease of %s, a process that no longer runs",
                session_id,
                holder,
                extra={"session_id": session_id},
            )
        store.break_lease(session_id, holder)
        return store.acquire_lease(session_id, owner=owner, ttl_s=ttl_s)

    def hold(self, session_id: str, token: str, ttl_s: float) -> None:
        """Keep ``token`` alive from now until ``release``.

        The keeper is woken only when the lease is due before it looks at the clock
        again (a shorter lease than those it keeps), not for every hold.
        """
        with self._changed:
            now = self._clock()
            self._held[token] = _Held(session_id, token, ttl_s, now)
            if self._thread is None:
                self._thread = daemon(self._keep, "memory-summary-leases")
                self._thread.start()
                return
            wake_at = self._wake_at
            if wake_at is None or now + ttl_s / 3 < wake_at:
                self._changed.notify_all()  # due before the keeper looks again

    def holds_session(self, session_id: str) -> bool:
        """Tell whether a compression of this engine holds the session's lease now."""
        with self._changed:
            return any(h.session_id == session_id for h in self._held.values())

    def is_lost(self, token: str) -> bool:
        """Tell whether the store refused to renew ``token`` (expired and gone)."""
        with self._changed:
            held = self._held.get(token)
            return held is not None and held.lost

    def release(self, session_id: str, token: str) -> None:
        """Stop renewing ``token`` and release it; a failed release is retried later."""
        self._forget(token)
        if not self._released(session_id, token):
            with self._changed:
                self._unreleased[token] = session_id

    def dropped(self, token: str) -> None:
        """Stop renewing ``token``: the store dropped it with a compression's commit."""
        self._forget(token)

    def _forget(self, token: str) -> None:
        """Stop renewing ``token``; wake the keeper only to let it exit.

        A lease fewer never makes another one due sooner: while others are held, the
        keeper sleeps on until the next is due.
        """
        with self._changed:
            self._held.pop(token, None)
            if not self._held:
                self._changed.notify_all()

    def retry_releases(self) -> None:
        """Release again the leases whose release failed (the store was down)."""
        with self._changed:
            pending = list(self._unreleased.items())
        for token, session_id in pending:
            if self._released(session_id, token):
                with self._changed:
                    self._unreleased.pop(token, None)

    def unreleased(self) -> int:
        """Return how many released leases the store has not confirmed yet."""
        with self._changed:
            return len(self._unreleased)

    def tick(self) -> None:
        """Wake the keeper to look at the clock again (for a fake clock)."""
        with self._changed:
            self._changed.notify_all()

    def _released(self, session_id: str, token: str) -> bool:
        try:
            self._store.release_lease(session_id, token)
        except StoreError as exc:
            log.warning(
                "session %s: releasing the lease failed, will retry: %s",
                session_id,
                exc,
                extra={"session_id": session_id},
            )
            return False
        return True

    def _due(self) -> tuple[list[_Held], float | None]:
        """Return the leases due for renewal and how long to wait for the next one."""
        now = self._clock()
        due: list[_Held] = []
        wait: float | None = None
        for held in self._held.values():
            if held.lost:
                continue
            left = held.renewed_at + held.ttl_s / 3 - now
            if left <= 0:
                due.append(held)
            else:
                wait = left if wait is None else min(wait, left)
        return due, wait

    def _keep(self) -> None:
        """Renew held leases when due; exit once none is held."""
        while True:
            with self._changed:
                due, wait = self._due()
                while not due:
                    if not self._held:
                        self._thread = None
                        return
                    self._wake_at = None if wait is None else self._clock() + wait
                    self._changed.wait(wait)
                    self._wake_at = None  # awake: every lease is looked at again
                    due, wait = self._due()
            for held in due:
                self._renew(held)
            if self._unreleased:
                self.retry_releases()

    def _renew(self, held: _Held) -> None:
        # The store's new expiry counts from no earlier than now: the next renewal
        # counts from here too, not from when the answer came back.
        asked_at = self._clock()
        try:
            kept = self._store.renew_lease(
                held.session_id, held.token, ttl_s=held.ttl_s
            )
        except StoreError as exc:  # the commit is fenced if it expires meanwhile
            log.warning(
                "session %s: renewing the lease failed: %s",
                held.session_id,
                exc,
                extra={"session_id": held.session_id},
            )
            with self._changed:
                held.renewed_at = min(
                    self._clock() - held.ttl_s / 3 + RETRY_S, self._clock()
                )
            return
        with self._changed:
            if kept:
                held.renewed_at = asked_at
            elif self._held.get(held.token) is not held:
                return  # released meanwhile (a commit may drop it): not lost
            else:
                held.lost = True
                self._changed.notify_all()
                log.warning(
                    "session %s: the lease was lost while compressing",
                    held.session_id,
                    extra={"session_id": held.session_id},
                )
