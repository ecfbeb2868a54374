"""Which sessions a turn trigger need not reach now: one of theirs is still coming.

A turn trigger (``TurnEnded``) only asks the session's actor to look at the session
again; what the compression then reads is the store as it is when it starts. So a
turn needs no trigger of its own while the session already has one that will be
heard after the turn's messages were saved:

- *on its way*: a turn trigger sent and not heard yet (queued for the router, at
  the gate, in the actor's inbox). Hearing it comes after this turn's saves, and so
  does everything it starts.
- *a follow-up*: the actor runs a compression and holds a follow-up (``domain.state``)
  that starts, and reads, only once that run ends. A turn would coalesce into it
  and change nothing (``turn`` is the weakest reason).

A host that talks faster than its sessions compress then sends one trigger per
compression instead of one per turn: no thread hop, actor message or count for the
others. The record only ever errs towards sending: a trigger lost on its way (never
delivered, its actor stopped) is forgotten with it, so the next turn sends again.
"""

from __future__ import annotations

import threading


class TurnCover:
    """Per session: a turn trigger on its way, and a follow-up waiting.

    Thread-safety: every method may be called from any thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._on_way: set[str] = set()
        self._follow_ups: set[str] = set()

    def covered(self, session_id: str) -> bool:
        """Tell whether a trigger the session hears later covers a turn ending now."""
        with self._lock:
            return session_id in self._on_way or session_id in self._follow_ups

    def claim(self, session_id: str) -> bool:
        """Mark a turn trigger on its way; False when one already is (send none)."""
        with self._lock:
            if session_id in self._on_way:
                return False
            self._on_way.add(session_id)
            return True

    def heard(self, session_id: str) -> None:
        """Note that the session's turn trigger arrived, or was lost on its way."""
        with self._lock:
            self._on_way.discard(session_id)

    def follow_up(self, session_id: str, *, waiting: bool) -> None:
        """Note whether the session's actor holds a follow-up not yet started."""
        with self._lock:
            if waiting:
                self._follow_ups.add(session_id)
            else:
                self._follow_ups.discard(session_id)

    def forget(self, session_id: str) -> None:
        """Drop all that is noted for the session (its actor stopped)."""
        with self._lock:
            self._on_way.discard(session_id)
            self._follow_ups.discard(session_id)
