"""The in-memory store: thread-safe, and the reference every other store must match."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping

import attrs

from memory_summary.domain import Message, StoreError


@attrs.define
class _Session:
    messages: list[Message] = attrs.Factory(list)
    first_active: int = 0  # archived messages are always a prefix: active is a suffix


def _json_copy(
    namespace: str, key: str, data: Mapping[str, object]
) -> dict[str, object]:
    """Return a deep copy of ``data``, proving it JSON-compatible as SQL stores do."""
    if not isinstance(data, Mapping):
        raise StoreError(f"metadata {namespace}/{key} must be a mapping")
    try:
        copied: dict[str, object] = json.loads(json.dumps(dict(data), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise StoreError(
            f"metadata {namespace}/{key} is not JSON-compatible: {exc}"
        ) from exc
    return copied


def _newest(messages: list[Message], limit: int | None) -> list[Message]:
    if limit is None:
        return list(messages)
    if limit < 0:
        raise ValueError(f"limit={limit} is invalid; allowed: None or int >= 0")
    return messages[max(len(messages) - limit, 0) :] if limit else []


class InMemoryStore:
    """A memory store in a dict, guarded by one lock; for tests, demos and single runs.

    Message ids increase across the whole store, so they order a session's messages.

    >>> store = InMemoryStore()
    >>> store.save_message("s1", Message("user", "hi")).id
    1
    >>> [m.content for m in store.get_history("s1")]
    ['hi']
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._metadata: dict[tuple[str, str], dict[str, object]] = {}
        self._next_id = 1

    def save_message(self, session_id: str, message: Message) -> Message:
        with self._lock:
            stored = attrs.evolve(
                message, id=self._next_id, metadata=dict(message.metadata)
            )
            self._next_id += 1
            self._sessions.setdefault(session_id, _Session()).messages.append(stored)
        return stored

    def get_history(self, session_id: str, limit: int | None = None) -> list[Message]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return _newest([], limit)
            return _newest(session.messages[session.first_active :], limit)

    def get_full_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        with self._lock:
            session = self._sessions.get(session_id)
            return _newest(session.messages if session else [], limit)

    def count_history(self, session_id: str) -> int:
        with self._lock:
            session = self._sessions.get(session_id)
            return len(session.messages) - session.first_active if session else 0

    def get_oldest_history(
        self, session_id: str, limit: int, after_id: int | None = None
    ) -> list[Message]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            active = session.messages[session.first_active :]
            if after_id is not None:
                active = [m for m in active if (m.id or 0) > after_id]
            return active[:limit]

    def trim_history(self, session_id: str, keep_recent: int) -> int:
        if keep_recent < 0:
            raise ValueError(f"keep_recent={keep_recent} is invalid; allowed: int >= 0")
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return 0
            new_first = max(session.first_active, len(session.messages) - keep_recent)
            archived = new_first - session.first_active
            session.first_active = new_first
            return archived

    def commit_compaction(
        self,
        session_id: str,
        *,
        through_id: int,
        summary: Mapping[str, object] | None,
        namespace: str,
        separator: Callable[[int], Message | None] | None = None,
    ) -> int:
        if separator is not None:
            raise ValueError("InMemoryStore has no archive; write separators to one")
        record = None if summary is None else _json_copy(namespace, session_id, summary)
        with self._lock:
            session = self._sessions.get(session_id)
            archived = 0
            if session is not None:
                messages, index = session.messages, session.first_active
                while index < len(messages) and (messages[index].id or 0) <= through_id:
                    index += 1
                archived = index - session.first_active
                session.first_active = index
            if record is not None:
                self._metadata[(namespace, session_id)] = record
            return archived

    def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        record = _json_copy(namespace, key, data)
        with self._lock:
            self._metadata[(namespace, key)] = record

    def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        with self._lock:
            record = self._metadata.get((namespace, key))
        copied: dict[str, object] | None = (
            None if record is None else json.loads(json.dumps(record))
        )
        return copied

    def list_metadata(self, namespace: str) -> list[str]:
        with self._lock:
            return sorted(key for ns, key in self._metadata if ns == namespace)

    def delete_metadata(self, namespace: str, key: str) -> bool:
        with self._lock:
            return self._metadata.pop((namespace, key), None) is not None

    def clear_session(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def clear_all(self) -> None:
        with self._lock:
            self._sessions.clear()
            self._metadata.clear()
