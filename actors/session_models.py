"""The chat model each session's last turn named, for the most recent sessions only."""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_SESSION_MODELS = 50_000
"""Sessions whose model is remembered; the least recently reported one is forgotten
first. A forgotten session reads as "no model named" until its next ``turn_after``
names one again, so a long-running server holds a bounded number of entries."""


class SessionModels:
    """A bounded LRU map ``session id -> model``, safe to share between threads.

    >>> models = SessionModels(capacity=2)
    >>> models.set("a", "gpt-4o"); models.set("b", "gpt-4o"); models.set("c", "o3")
    >>> models.get("a") is None, models.get("c"), len(models)
    (True, 'o3', 2)
    """

    def __init__(self, capacity: int = MAX_SESSION_MODELS) -> None:
        self._capacity = max(capacity, 1)
        self._models: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def set(self, session_id: str, model: str) -> None:
        """Remember ``model`` for the session; it becomes the most recent entry."""
        with self._lock:
            self._models[session_id] = model
            self._models.move_to_end(session_id)
            while len(self._models) > self._capacity:
                self._models.popitem(last=False)

    def get(self, session_id: str) -> str | None:
        """Return the session's model, or None when none is remembered."""
        return self._models.get(session_id)

    def pop(self, session_id: str) -> None:
        """Forget the session."""
        with self._lock:
            self._models.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._models)
