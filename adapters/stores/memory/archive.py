"""The in-memory message archive (the seed's optional ``message-archive`` service)."""

from __future__ import annotations

import threading

from memory_summary.adapters.stores.rows import stored_message
from memory_summary.domain import Message


class InMemoryArchive:
    """Keeps archive messages (compression separators) per session, in order.

    >>> archive = InMemoryArchive()
    >>> marker = Message("system", "[compressed]", kind="event-marker")
    >>> _ = archive.save_message("s1", marker)
    >>> [m.kind for m in archive.messages("s1")]
    ['event-marker']
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: dict[str, list[Message]] = {}
        self._next_id = 1

    def save_message(self, session_id: str, message: Message) -> Message:
        with self._lock:
            stored = stored_message(message, self._next_id)
            self._next_id += 1
            self._messages.setdefault(session_id, []).append(stored)
        return stored

    def forget_session(self, session_id: str) -> int:
        """Delete the session's archive messages; return how many."""
        with self._lock:
            return len(self._messages.pop(session_id, ()))

    def messages(self, session_id: str) -> list[Message]:
        """Return the session's archive messages, oldest first."""
        with self._lock:
            return list(self._messages.get(session_id, ()))
