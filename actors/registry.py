"""The live session actors of one engine: spawned on first use, reaped when idle."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import attrs
import pykka

log = logging.getLogger(__name__)


@attrs.define
class _Entry:
    ref: pykka.ActorRef
    touched_s: float
    stamp: int = 0


class SessionRegistry:
    """One actor per session id, owned by one engine (never pykka's global registry).

    ``tell`` looks the actor up, spawning it on first use, and sends under one lock, so
    a reaped actor never receives a message: reaping removes an entry only if nothing
    was sent to it since the reaper looked (``stamp`` unchanged).
    """

    def __init__(
        self,
        spawn: Callable[[str], pykka.ActorRef],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._spawn = spawn
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._closed = False

    def tell(self, session_id: str, message: object) -> bool:
        """Send ``message`` to the session's actor; return False once closed."""
        with self._lock:
            if self._closed:
                return False
            entry = self._entries.get(session_id)
            if entry is None:
                entry = _Entry(self._spawn(session_id), self._clock())
                self._entries[session_id] = entry
            entry.touched_s = self._clock()
            entry.stamp += 1
            try:
                entry.ref.tell(message)
            except pykka.ActorDeadError:  # it crashed: a new actor takes over
                log.warning(
                    "session %s: its actor had died; starting a new one", session_id
                )
                entry = _Entry(self._spawn(session_id), self._clock())
                self._entries[session_id] = entry
                entry.ref.tell(message)
            return True

    def idle_since(self, cutoff_s: float) -> list[tuple[str, pykka.ActorRef, int]]:
        """Return (session id, actor, stamp) of actors untouched since ``cutoff_s``."""
        with self._lock:
            return [
                (sid, entry.ref, entry.stamp)
                for sid, entry in self._entries.items()
                if entry.touched_s < cutoff_s
            ]

    def remove_if_untouched(self, session_id: str, ref: object, stamp: int) -> bool:
        """Forget the session's actor if it is ``ref`` and still carries ``stamp``."""
        with self._lock:
            entry = self._entries.get(session_id)
            if entry is None or entry.ref is not ref or entry.stamp != stamp:
                return False
            del self._entries[session_id]
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def close(self, timeout_s: float) -> int:
        """Stop every actor, waiting up to ``timeout_s`` in all; count those stopped."""
        with self._lock:
            self._closed = True
            refs = [entry.ref for entry in self._entries.values()]
            self._entries.clear()
        deadline = time.monotonic() + timeout_s
        for ref in refs:
            ref.stop(block=False)
        stopped = 0
        for ref in refs:
            remaining = max(deadline - time.monotonic(), 0.01)
            try:
                ref.actor_stopped.wait(remaining)
            except Exception:  # pragma: no cover - defensive at a thread boundary
                log.exception("waiting for a session actor to stop failed")
            stopped += ref.actor_stopped.is_set()
        return stopped
