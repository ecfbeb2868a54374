"""Awaitable store calls for asyncio hosts: every call runs in a worker thread.

The stores are synchronous (SQLite, PostgreSQL and Redis calls wait on a file, a
socket or a lock). ``AsyncStore`` runs each call with ``asyncio.to_thread``, so the
event loop keeps serving other tasks while a store works: one thread hop costs tens
of microseconds, a blocked loop costs every other request the store's latency.
``benchmarks/aio_stall.py`` measures the loop's longest stall with and without it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from memory_summary.domain import Message


class AsyncStore:
    """Awaitable face of a store: the same calls, each one off the event loop.

    ``store`` is the synchronous store itself, for anything not wrapped here.

    Example:
        >>> import asyncio
        >>> from memory_summary import Message
        >>> from memory_summary.adapters import InMemoryStore
        >>> async def main():
        ...     store = AsyncStore(InMemoryStore())
        ...     await store.save_message("s1", Message("user", "hi"))
        ...     return [m.content for m in await store.get_history("s1")]
        >>> asyncio.run(main())
        ['hi']
    """

    def __init__(self, store: Any) -> None:
        self.store = store

    async def save_message(self, session_id: str, message: Message) -> Message:
        """Store ``message`` and return it with its id (``save_message``)."""
        saved: Message = await asyncio.to_thread(
            self.store.save_message, session_id, message
        )
        return saved

    async def get_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        """Return the active messages, oldest first; the most recent ``limit``."""
        history: list[Message] = await asyncio.to_thread(
            self.store.get_history, session_id, limit
        )
        return history

    async def get_full_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        """Return active and archived messages, oldest first; the newest ``limit``."""
        history: list[Message] = await asyncio.to_thread(
            self.store.get_full_history, session_id, limit
        )
        return history

    async def count_history(self, session_id: str) -> int:
        """Return the number of active messages."""
        count: int = await asyncio.to_thread(self.store.count_history, session_id)
        return count

    async def pop_message(self, session_id: str) -> Message | None:
        """Delete and return the newest active message (``PoppingStore``); or None."""
        popped: Message | None = await asyncio.to_thread(
            self.store.pop_message, session_id
        )
        return popped

    async def clear_session(self, session_id: str) -> None:
        """Delete a session's messages, active and archived."""
        await asyncio.to_thread(self.store.clear_session, session_id)

    async def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        """Return the mapping under (namespace, key), or None."""
        record: dict[str, object] | None = await asyncio.to_thread(
            self.store.get_metadata, namespace, key
        )
        return record

    async def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        """Store a JSON-compatible mapping under (namespace, key), replacing any."""
        await asyncio.to_thread(self.store.save_metadata, namespace, key, data)
