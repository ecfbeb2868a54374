"""The in-memory store: thread-safe, and the reference every other store must match.

It runs the same checks as the SQL stores (``message_rows``), so it refuses exactly
what they refuse, and it keeps metadata as the SQL stores return it: decoded JSON.
"""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import attrs

from memory_summary.domain import (
    CommitResult,
    Message,
    StoredHit,
    is_host_instruction,
)
from memory_summary.domain.ranking import (
    CANDIDATES,
    CONTEXT_REACH,
    CONTEXT_SEEDS,
    TermIndex,
    with_context,
)
from memory_summary.domain.recall import message_terms

from .fence import commit_prelude, fence_reason
from .message_rows import (
    check_key,
    check_limit,
    check_row_id,
    check_ttl,
    content_column,
    json_copy,
    metadata_column,
    metadata_json,
    new_token,
    record_generation,
    stored_message,
)


@attrs.define
class _Session:
    """A session's messages, archived below ``first_active``, active from it on.

    The host's instructions below the boundary are never archived: ``kept`` holds
    them (in id order), so the active history is ``kept`` then the suffix.
    """

    messages: list[Message] = attrs.Factory(list)
    first_active: int = 0
    kept: list[Message] = attrs.Factory(list)
    index: TermIndex = attrs.Factory(TermIndex)  # every message, active and archived
    terms: dict[int, list[str]] = attrs.Factory(dict)
    unindexed: list[Message] = attrs.Factory(list)  # saved since the last search

    def indexed(self) -> TermIndex:
        """Return the index with every saved message in it (the pending ones added).

        Saving only queues a message: its terms are computed on the first search
        after it, so a session nobody searches never pays for its index.
        """
        for message in self.unindexed:
            row_id: int = message.id  # type: ignore[assignment]
            terms = message_terms(message)
            self.index.add(row_id, terms)
            self.terms[row_id] = terms
        self.unindexed.clear()
        return self.index

    def active(self) -> list[Message]:
        """Return the active messages, oldest first."""
        return [*self.kept, *self.messages[self.first_active :]]

    def active_count(self) -> int:
        """Return the number of active messages."""
        return len(self.kept) + len(self.messages) - self.first_active

    def archived(self) -> list[Message]:
        """Return the archived messages, oldest first."""
        below = self.messages[: self.first_active]
        if not self.kept:
            return below
        kept = {m.id for m in self.kept}
        return [m for m in below if m.id not in kept]

    def archivable(self, end: int) -> int:
        """Return how many messages moving the boundary to ``end`` archives."""
        moved = self.messages[self.first_active : end]
        return sum(1 for m in moved if not is_host_instruction(m))

    def archive_to(self, end: int) -> int:
        """Move the boundary to ``end``, keeping instructions active; count archived."""
        archived = self.archivable(end)
        moved = self.messages[self.first_active : end]
        self.kept.extend(m for m in moved if is_host_instruction(m))
        self.first_active = end
        return archived

    def pop(self) -> Message | None:
        """Delete the newest active message and return it."""
        if self.first_active < len(self.messages):
            return self.messages.pop()
        if not self.kept:
            return None
        newest = self.kept.pop()
        at = next(i for i, m in enumerate(self.messages) if m.id == newest.id)
        del self.messages[at]
        self.first_active -= 1
        return newest

    def position(self, message_id: int) -> int | None:
        """Return the list position of ``message_id`` (ids increase), or None."""
        ids = _Ids(self.messages)
        at = bisect.bisect_left(ids, message_id)
        return at if at < len(ids) and ids[at] == message_id else None

    def hit(self, at: int, score: float = 0.0) -> StoredHit:
        message = self.messages[at]
        archived = at < self.first_active and not (
            self.kept and any(m.id == message.id for m in self.kept)
        )
        return StoredHit(message, archived, score)


class _Ids:
    """The ids of a session's messages as a sequence ``bisect`` can search."""

    def __init__(self, messages: list[Message]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, at: int) -> int:
        return self._messages[at].id  # type: ignore[return-value]


@attrs.frozen
class _Lease:
    owner: str
    token: str
    expires_at: float  # time.monotonic() seconds


def _newest(messages: list[Message], limit: int | None) -> list[Message]:
    check_limit(limit)
    if limit is None:
        return list(messages)
    return messages[max(len(messages) - limit, 0) :] if limit else []


def _row(message: Message, metadata: dict[str, object], row_id: int) -> Message:
    """Return the message as kept: its own copy of the metadata, its id."""
    return Message.from_row(
        message.role,
        message.content,  # parts are frozen, safe to share
        message.tool_calls,
        message.tool_call_id,
        message.name,
        message.kind,
        message.timestamp,
        metadata,
        row_id,
        message.refusal,
    )


class InMemoryStore:
    """A memory store in a dict, guarded by one lock; for tests, demos and single runs.

    Message ids increase across the whole store, so they order a session's messages.
    Leases time out on ``time.monotonic()``; they bind the threads of this process.

    >>> store = InMemoryStore()
    >>> store.save_message("s1", Message("user", "hi")).id
    1
    >>> [m.content for m in store.get_history("s1")]
    ['hi']
    """

    counts_locally: ClassVar[bool] = True
    """Whether ``count_history`` is a cheap local read the host's thread may run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._metadata: dict[tuple[str, str], dict[str, object]] = {}
        self._leases: dict[str, _Lease] = {}
        self._next_id = 1

    def save_message(self, session_id: str, message: Message) -> Message:
        check_key("session_id", session_id)
        metadata = metadata_column(message)  # refuses what the SQL stores refuse
        content_column(message)
        kept: dict[str, object] = json.loads(metadata) if metadata else {}
        with self._lock:
            row_id = self._next_id
            self._next_id += 1
            session = self._sessions.setdefault(session_id, _Session())
            row = _row(message, kept, row_id)
            session.messages.append(row)
            session.unindexed.append(row)
        return stored_message(message, row_id)

    def save_messages(
        self, session_id: str, messages: Sequence[Message]
    ) -> list[Message]:
        """Store ``messages`` in order, all or nothing; see ``BatchSavingStore``."""
        check_key("session_id", session_id)
        checked = []
        for message in messages:  # every one checked before any is kept
            metadata = metadata_column(message)
            content_column(message)
            kept = json.loads(metadata) if metadata else {}
            checked.append((message, kept))
        with self._lock:
            first = self._next_id
            self._next_id += len(checked)
            session = self._sessions.setdefault(session_id, _Session())
            for offset, (message, kept) in enumerate(checked):
                row = _row(message, kept, first + offset)
                session.messages.append(row)
                session.unindexed.append(row)
        return [
            stored_message(message, first + offset)
            for offset, (message, _) in enumerate(checked)
        ]

    def get_history(self, session_id: str, limit: int | None = None) -> list[Message]:
        check_key("session_id", session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return _newest([], limit)
            return _newest(session.active(), limit)

    def get_full_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        check_key("session_id", session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            return _newest(session.messages if session else [], limit)

    def read_window(
        self, session_id: str, *, limit: int, namespace: str
    ) -> tuple[list[Message], dict[str, object] | None]:
        """Return the newest ``limit`` active messages and the record, under one lock.

        See ``WindowReadingStore``.
        """
        check_key("session_id", session_id)
        check_key("namespace", namespace)
        check_limit(limit)
        with self._lock:
            session = self._sessions.get(session_id)
            window = _newest(session.active() if session else [], limit)
            record = self._metadata.get((namespace, session_id))
        return window, None if record is None else json_copy(record)  # type: ignore[return-value]

    def count_history(self, session_id: str) -> int:
        check_key("session_id", session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            return session.active_count() if session else 0

    def get_oldest_history(
        self, session_id: str, limit: int, after_id: int | None = None
    ) -> list[Message]:
        check_key("session_id", session_id)
        check_limit(limit)
        check_row_id("after_id", after_id)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            active = session.active()
        if after_id is not None:
            active = [m for m in active if m.id > after_id]  # type: ignore[operator]
        return active[:limit]

    def pop_message(self, session_id: str) -> Message | None:
        """Delete the newest active message and return it; see ``PoppingStore``."""
        check_key("session_id", session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            popped = None if session is None else session.pop()
            if session is None or popped is None:
                return None
            row_id: int = popped.id  # type: ignore[assignment]
            pending = session.unindexed
            at = next(
                (i for i in range(len(pending) - 1, -1, -1) if pending[i].id == row_id),
                None,
            )
            if at is not None:
                del pending[at]  # never indexed: nothing to take out
            else:
                session.index.remove(row_id, session.terms.pop(row_id, ()))
            return popped

    # -- the history index (SearchableStore)

    def search_messages(
        self,
        session_id: str,
        terms: Sequence[str],
        *,
        limit: int,
        archived_only: bool = False,
    ) -> list[StoredHit]:
        """Return the best matches of ``terms``; see ``SearchableStore``."""
        check_key("session_id", session_id)
        check_limit(limit)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or not limit:
                return []
            allowed = None
            if archived_only:
                allowed = {m.id for m in session.archived()}
            matches = session.indexed().search(list(terms), CANDIDATES, allowed)  # type: ignore[arg-type]
            messages = session.messages
            scored = dict(matches)
            positions: dict[int, int] = {}
            for row_id, _ in matches[:CONTEXT_SEEDS]:  # neighbours that matched nothing
                at = session.position(row_id)
                if at is None:  # pragma: no cover - the index holds stored ids only
                    continue
                for near in messages[
                    max(at - CONTEXT_REACH, 0) : at + CONTEXT_REACH + 1
                ]:
                    if allowed is None or near.id in allowed:
                        scored.setdefault(near.id, 0.0)  # type: ignore[arg-type]
            reach: dict[int, int | None] = {}
            for row_id in scored:
                at = session.position(row_id)
                if at is not None:
                    positions[row_id] = at
                    later = at + CONTEXT_REACH
                    reach[row_id] = (
                        messages[later].id if later < len(messages) else None
                    )
            found = with_context(list(scored.items()), reach, limit)
            return [session.hit(positions[row_id], score) for row_id, score in found]

    def read_messages(
        self, session_id: str, around_id: int, *, before: int, after: int
    ) -> list[StoredHit]:
        """Return a message and its neighbours; see ``SearchableStore``."""
        check_key("session_id", session_id)
        check_row_id("around_id", around_id)
        with self._lock:
            session = self._sessions.get(session_id)
            at = None if session is None else session.position(around_id)
            if session is None or at is None:
                return []
            low, high = max(at - before, 0), min(at + after + 1, len(session.messages))
            return [session.hit(i) for i in range(low, high)]

    def read_message_range(
        self, session_id: str, first_id: int, last_id: int, *, limit: int
    ) -> list[StoredHit]:
        """Return the messages of an id range; see ``SearchableStore``."""
        check_key("session_id", session_id)
        check_row_id("first_id", first_id)
        check_row_id("last_id", last_id)
        check_limit(limit)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            ids = _Ids(session.messages)
            low = bisect.bisect_left(ids, first_id)
            high = min(bisect.bisect_right(ids, last_id), low + limit)
            return [session.hit(i) for i in range(low, high)]

    def get_archived(
        self, session_id: str, *, after_id: int | None, through_id: int, limit: int
    ) -> list[Message]:
        check_key("session_id", session_id)
        check_limit(limit)
        check_row_id("after_id", after_id)
        check_row_id("through_id", through_id)
        low = 0 if after_id is None else after_id
        with self._lock:
            session = self._sessions.get(session_id)
            archived = session.archived() if session else []
        return [m for m in archived if low < m.id <= through_id][:limit]  # type: ignore[operator]

    def trim_history(self, session_id: str, keep_recent: int) -> int:
        check_key("session_id", session_id)
        if keep_recent < 0:
            raise ValueError(f"keep_recent={keep_recent} is invalid; allowed: int >= 0")
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return 0
            new_first = max(session.first_active, len(session.messages) - keep_recent)
            return session.archive_to(new_first)

    def commit_compaction(
        self,
        session_id: str,
        *,
        namespace: str,
        record: Mapping[str, object],
        expect_generation: str | None,
        through_id: int | None = None,
        expect_archived: int = 0,
        lease: str | None = None,
        separator: Callable[[int], Message | None] | None = None,
    ) -> CommitResult:
        """Archive and replace the summary record, fenced; see ``CompressionStore``."""
        if separator is not None:
            raise ValueError("InMemoryStore has no archive; write separators to one")
        kept = json.loads(
            commit_prelude(
                session_id,
                namespace=namespace,
                record=record,
                through_id=through_id,
                expect_archived=expect_archived,
                lease=lease,
            )
        )
        with self._lock:
            checks = _MemoryChecks(self, session_id, namespace)
            outcome = fence_reason(
                checks,
                expect_generation=expect_generation,
                through_id=through_id,
                expect_archived=expect_archived,
                lease=lease,
            )
            if isinstance(outcome, str):
                return CommitResult(fenced=outcome)
            if checks.end is not None:
                self._sessions[session_id].archive_to(checks.end)
            self._metadata[(namespace, session_id)] = kept
            return CommitResult(archived=outcome)

    def forget_session(self, session_id: str, *, namespaces: Sequence[str]) -> int:
        check_key("session_id", session_id)
        if isinstance(namespaces, str):
            raise TypeError("namespaces must be a sequence of names, not one str")
        for namespace in namespaces:
            check_key("namespace", namespace)
        with self._lock:
            session = self._sessions.pop(session_id, None)
            self._leases.pop(session_id, None)
            for namespace in namespaces:
                self._metadata.pop((namespace, session_id), None)
            return len(session.messages) if session else 0

    def _holds(self, session_id: str, token: str) -> bool:
        lease = self._leases.get(session_id)
        return (
            lease is not None
            and lease.token == token
            and lease.expires_at > time.monotonic()
        )

    def acquire_lease(self, session_id: str, *, owner: str, ttl_s: float) -> str | None:
        check_key("session_id", session_id)
        check_key("owner", owner)
        check_ttl(ttl_s)
        with self._lock:
            now = time.monotonic()
            lease = self._leases.get(session_id)
            if lease is not None and lease.expires_at > now:
                return None
            token = new_token()
            self._leases[session_id] = _Lease(owner, token, now + ttl_s)
            return token

    def renew_lease(self, session_id: str, token: str, *, ttl_s: float) -> bool:
        check_key("session_id", session_id)
        check_key("token", token)
        check_ttl(ttl_s)
        with self._lock:
            if not self._holds(session_id, token):
                return False
            lease = self._leases[session_id]
            self._leases[session_id] = attrs.evolve(
                lease, expires_at=time.monotonic() + ttl_s
            )
            return True

    def release_lease(self, session_id: str, token: str) -> None:
        check_key("session_id", session_id)
        check_key("token", token)
        with self._lock:
            lease = self._leases.get(session_id)
            if lease is not None and lease.token == token:
                del self._leases[session_id]

    def lease_owner(self, session_id: str) -> str | None:
        check_key("session_id", session_id)
        with self._lock:
            lease = self._leases.get(session_id)
            if lease is None or lease.expires_at <= time.monotonic():
                return None
            return lease.owner

    def break_lease(self, session_id: str, owner: str) -> bool:
        check_key("session_id", session_id)
        check_key("owner", owner)
        with self._lock:
            lease = self._leases.get(session_id)
            if lease is None or lease.owner != owner:
                return False
            del self._leases[session_id]
            return True

    def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        kept = json.loads(metadata_json(namespace, key, data))
        with self._lock:
            self._metadata[(namespace, key)] = kept

    def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        check_key("namespace", namespace)
        check_key("key", key)
        with self._lock:
            record = self._metadata.get((namespace, key))
        # Stored records are never mutated, only replaced: copy outside the lock.
        return None if record is None else json_copy(record)  # type: ignore[return-value]

    def list_metadata(self, namespace: str) -> list[str]:
        check_key("namespace", namespace)
        with self._lock:
            return sorted(key for ns, key in self._metadata if ns == namespace)

    def session_counts(
        self, *, after: str | None = None, limit: int = 500
    ) -> list[tuple[str, int, int]]:
        """Return up to ``limit`` (session id, active, archived) with id > ``after``.

        Sessions that hold messages, in code-point order of their ids.
        """
        check_limit(limit)
        if after is not None:
            check_key("after", after)
        with self._lock:
            counts = [
                (sid, s.active_count(), len(s.messages) - s.active_count())
                for sid, s in self._sessions.items()
                if s.messages and (after is None or sid > after)
            ]
        return sorted(counts)[:limit]

    def metadata_page(
        self, namespace: str, *, after_key: str | None = None, limit: int = 500
    ) -> list[tuple[str, dict[str, object] | None]]:
        check_key("namespace", namespace)
        if after_key is not None:
            check_key("after_key", after_key)
        check_limit(limit)
        with self._lock:
            keys = sorted(
                key
                for ns, key in self._metadata
                if ns == namespace and (after_key is None or key > after_key)
            )[:limit]
            rows = [(key, self._metadata[(namespace, key)]) for key in keys]
        return [(key, json_copy(data)) for key, data in rows]  # type: ignore[misc]

    def delete_metadata(self, namespace: str, key: str) -> bool:
        check_key("namespace", namespace)
        check_key("key", key)
        with self._lock:
            return self._metadata.pop((namespace, key), None) is not None

    def quarantine_metadata(self, namespace: str, key: str, to_namespace: str) -> bool:
        check_key("namespace", namespace)
        check_key("key", key)
        check_key("to_namespace", to_namespace)
        if to_namespace == namespace:
            raise ValueError(
                f"to_namespace={to_namespace!r} must differ from namespace"
            )
        with self._lock:
            record = self._metadata.pop((namespace, key), None)
            if record is None:
                return False
            self._metadata[(to_namespace, key)] = record
            return True

    def clear_session(self, session_id: str) -> None:
        check_key("session_id", session_id)
        with self._lock:
            self._sessions.pop(session_id, None)

    def clear_all(self) -> None:
        with self._lock:
            self._sessions.clear()
            self._metadata.clear()
            self._leases.clear()


class _MemoryChecks:
    """The fences' reads for one commit (``fence.CommitChecks``), under the lock.

    ``archivable`` only counts; the commit archives through ``end`` once every
    fence passed.
    """

    def __init__(self, store: InMemoryStore, session_id: str, namespace: str) -> None:
        self._store = store
        self._session_id = session_id
        self._namespace = namespace
        self.end: int | None = None

    def lease_held(self, lease: str) -> bool:
        return self._store._holds(self._session_id, lease)

    def stored_generation(self) -> str | None:
        stored = self._store._metadata.get((self._namespace, self._session_id))
        return record_generation(stored)

    def archivable(self, through_id: int) -> int:
        session = self._store._sessions.get(self._session_id)
        if session is None:
            return 0
        end, messages = session.first_active, session.messages
        while end < len(messages) and messages[end].id <= through_id:  # type: ignore[operator]
            end += 1
        self.end = end
        return session.archivable(end)
