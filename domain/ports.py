"""The ports: what the engine needs from the outside world, in domain types.

Adapters satisfy these structurally; none inherits from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from .model import Message


@runtime_checkable
class MemoryStore(Protocol):
    """The host's chat history and metadata, as the seed's memory service offers it."""

    def save_message(self, session_id: str, message: Message) -> Message:
        """Store ``message`` and return it with its assigned ``id``."""
        ...

    def get_history(self, session_id: str, limit: int | None = None) -> list[Message]:
        """Return the active messages, oldest first; only the most recent ``limit``."""
        ...

    def get_full_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        """Return active and archived messages, oldest first; the newest ``limit``."""
        ...

    def trim_history(self, session_id: str, keep_recent: int) -> int:
        """Archive all but the newest ``keep_recent`` active messages; count them."""
        ...

    def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        """Store a JSON-compatible mapping under (namespace, key), replacing any."""
        ...

    def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        """Return the mapping under (namespace, key), or None."""
        ...

    def list_metadata(self, namespace: str) -> list[str]:
        """Return the keys of a namespace, sorted."""
        ...

    def delete_metadata(self, namespace: str, key: str) -> bool:
        """Delete (namespace, key); return whether it existed."""
        ...

    def clear_session(self, session_id: str) -> None:
        """Delete a session's messages, active and archived."""
        ...

    def clear_all(self) -> None:
        """Delete every session's messages and all metadata."""
        ...


@runtime_checkable
class CompactionStore(MemoryStore, Protocol):
    """A store the engine can compact safely: archive by id, atomic with the summary.

    Every store this library ships implements it.
    """

    def count_history(self, session_id: str) -> int:
        """Return the number of active messages."""
        ...

    def get_oldest_history(
        self, session_id: str, limit: int, after_id: int | None = None
    ) -> list[Message]:
        """Return the oldest ``limit`` active messages with ``id > after_id``."""
        ...

    def commit_compaction(
        self,
        session_id: str,
        *,
        through_id: int,
        summary: Mapping[str, object] | None,
        namespace: str,
        separator: Callable[[int], Message | None] | None = None,
    ) -> int:
        """Archive active messages with ``id <= through_id`` and save ``summary``.

        Both happen or neither (one transaction on SQL stores). ``summary=None`` leaves
        the stored summary as it is. ``separator``, given the number archived, returns
        the separator message to write to the store's own archive in the same
        transaction; only stores with an archive accept it. Returns the number archived.
        """
        ...


@runtime_checkable
class LockingStore(Protocol):
    """A store shared by several processes that can lock a session's compaction."""

    def compaction_lock(self, session_id: str) -> AbstractContextManager[bool]:
        """Try to lock the session's compaction; the context yields whether it did."""
        ...


@runtime_checkable
class Summarizer(Protocol):
    """An LLM that writes summaries."""

    def context_length(self, model: str | None = None) -> int | None:
        """Return the model's context window in tokens, or None when unknown."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
    ) -> str:
        """Return the model's answer to ``messages``."""
        ...


@runtime_checkable
class StreamingSummarizer(Summarizer, Protocol):
    """A summarizer that can also stream its answer."""

    def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
    ) -> Iterator[str]:
        """Yield the answer in pieces; raise if the stream breaks."""
        ...


@runtime_checkable
class Archive(Protocol):
    """The host's message archive (the seed's optional ``message-archive`` service)."""

    def save_message(self, session_id: str, message: Message) -> object:
        """Store one archive message (the compression separator)."""
        ...


class TokenCounter(Protocol):
    """Counts tokens exactly, in one model's encoding."""

    def count(self, text: str) -> int:
        """Return the number of tokens ``text`` encodes to."""
        ...
