"""The in-memory store: thread-safe, and the reference every other store must match.

It runs the same checks as the SQL stores (``message_rows``), so it refuses exactly
what they refuse, and it keeps metadata as the SQL stores return it: decoded JSON.
Like ``SqlStore``, it mixes in what stands apart: ``memory_history`` (the sessions,
their archive boundary and the history search) and ``memory_records`` (leases and
metadata records); the messages, the fenced commit and forgetting stay here.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import ClassVar

from memory_summary.adapters.stores.fence import (
    DeprecatedCommits,
    commit_prelude,
    fence_reason,
)
from memory_summary.adapters.stores.rows import (
    check_forget,
    check_key,
    check_limit,
    check_read,
    content_column,
    json_copy,
    metadata_column,
    plain_copy,
    record_generation,
    stored_message,
)
from memory_summary.domain import (
    NO_SPAN,
    ActiveSpan,
    CommitRequest,
    CommitResult,
    EncodedRecord,
    Message,
)
from memory_summary.domain.config import RecallIndex, check_recall_index
from memory_summary.domain.recall import message_terms

from .history import MemoryHistory, MemorySession
from .records import Lease, MemoryRecords


def _newest(messages: list[Message], limit: int | None) -> list[Message]:
    check_limit(limit)
    if limit is None:
        return list(messages)
    return messages[max(len(messages) - limit, 0) :] if limit else []


class InMemoryStore(MemoryHistory, MemoryRecords, DeprecatedCommits):
    """A memory store in a dict, guarded by one lock; for tests, demos and single runs.

    Message ids increase across the whole store, so they order a session's messages.
    Leases time out on ``time.monotonic()``; they bind the threads of this process.

    Args:
        recall_index: when a session is indexed for search (``IndexPolicyStore``):
            ``"lazy"`` at its first search (the terms counted outside the store's
            lock), ``"eager"`` as each message is saved, ``"off"`` never (search
            refused). An engine applies its own ``SummaryConfig.recall_index``.

    Example:
        >>> from memory_summary import Message
        >>> from memory_summary.adapters import InMemoryStore
        >>> store = InMemoryStore()
        >>> store.save_message("s1", Message("user", "hi")).id
        1
        >>> [m.content for m in store.get_history("s1")]
        ['hi']
    """

    counts_locally: ClassVar[bool] = True
    """Whether ``count_history`` is a cheap local read the host's thread may run."""

    def __init__(self, *, recall_index: RecallIndex = "lazy") -> None:
        self.recall_index: RecallIndex = check_recall_index(recall_index)
        self._lock = threading.Lock()
        self._sessions: dict[str, MemorySession] = {}
        self._metadata: dict[tuple[str, str], dict[str, object]] = {}
        self._leases: dict[str, Lease] = {}
        self._next_id = 1

    def save_message(self, session_id: str, message: Message) -> Message:
        check_key("session_id", session_id)
        metadata = metadata_column(message)  # refuses what the SQL stores refuse
        content_column(message)
        kept: dict[str, object] = json.loads(metadata) if metadata else {}
        policy = self.recall_index
        counts = Counter(message_terms(message)) if policy == "eager" else None
        with self._lock:
            row_id = self._next_id
            self._next_id += 1
            session = self._session(session_id)
            self._keep(session, stored_message(message, row_id, kept), counts)
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
        policy = self.recall_index
        counted = [
            Counter(message_terms(m)) if policy == "eager" else None for m in messages
        ]
        with self._lock:
            first = self._next_id
            self._next_id += len(checked)
            session = self._session(session_id)
            for offset, (message, kept) in enumerate(checked):
                self._keep(
                    session,
                    stored_message(message, first + offset, kept),
                    counted[offset],
                )
        return [
            stored_message(message, first + offset)
            for offset, (message, _) in enumerate(checked)
        ]

    def _session(self, session_id: str) -> MemorySession:
        """Return the session's record, made on its first message (under the lock)."""
        session = self._sessions.get(session_id)
        if session is None:  # not ``setdefault``: a record (and index) per save
            session = self._sessions[session_id] = MemorySession()
        return session

    def _keep(
        self, session: MemorySession, row: Message, counts: Counter[str] | None
    ) -> None:
        """Keep ``row`` by the policy as it is now (under the lock).

        The policy may have changed since ``counts`` were (or were not) computed:
        a row ``eager`` cannot index at once is queued, as ``lazy`` queues it, for
        the next search; under ``off`` it waits for ``requeue``.
        """
        policy = self.recall_index
        if policy == "eager" and counts is not None:
            session.append(row, "eager")
            session.index_now(row.id, counts)  # type: ignore[arg-type]
        else:
            session.append(row, "off" if policy == "off" else "lazy")

    def set_recall_index(self, policy: RecallIndex) -> None:
        """Index by ``policy`` from now on; see ``IndexPolicyStore``.

        Leaving ``off`` queues every message saved meanwhile for the next search.
        """
        policy = check_recall_index(policy)
        with self._lock:
            if self.recall_index == "off" and policy != "off":
                for session in self._sessions.values():
                    session.requeue()
            self.recall_index = policy

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

    def active_span(self, session_id: str) -> ActiveSpan:
        """Return the session's ``ActiveSpan``, without its id sum.

        See ``SpanningStore``.
        """
        check_key("session_id", session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or not session.active_count():
                return NO_SPAN
            first, last = session.active_ends()
            # Ids are taken under this lock as a message is kept: none lands below
            # one already seen, so the count and the ends tell every change.
            return ActiveSpan(session.active_count(), first, last, None)

    def span_and_metadata(
        self, session_id: str, namespace: str
    ) -> tuple[ActiveSpan, dict[str, object] | None]:
        """Return ``active_span`` and the record, read under one lock.

        See ``SpanRecordStore``.
        """
        check_key("session_id", session_id)
        check_key("namespace", namespace)
        with self._lock:
            session = self._sessions.get(session_id)
            span = NO_SPAN
            if session is not None and session.active_count():
                first, last = session.active_ends()
                span = ActiveSpan(session.active_count(), first, last, None)
            record = self._metadata.get((namespace, session_id))
        # Stored records are never mutated, only replaced: copy outside the lock.
        return span, None if record is None else json_copy(record)  # type: ignore[return-value]

    def count_history(self, session_id: str) -> int:
        check_key("session_id", session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            return session.active_count() if session else 0

    def get_oldest_history(
        self, session_id: str, limit: int, after_id: int | None = None
    ) -> list[Message]:
        check_read(session_id, limit, after_id=after_id)
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
            return None if session is None else session.pop()

    def get_archived(
        self, session_id: str, *, after_id: int | None, through_id: int, limit: int
    ) -> list[Message]:
        check_read(session_id, limit, after_id=after_id, through_id=through_id)
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

    def commit(self, request: CommitRequest) -> CommitResult:
        """The fenced commit, its attached record and the lease's release at once.

        See ``CommitRequest``.
        """
        data, attached = commit_prelude(request)
        if request.separator is not None:
            raise ValueError("InMemoryStore has no archive; write separators to one")
        sid, attach, lease = request.session_id, request.attach, request.lease
        with self._lock:
            checks = _MemoryChecks(self, sid, request.namespace)
            outcome = fence_reason(checks, request)
            if isinstance(outcome, str):
                return CommitResult(fenced=outcome)
            if checks.end is not None:
                self._sessions[sid].archive_to(checks.end)
            self._metadata[(request.namespace, sid)] = json.loads(data)
            wrote = False
            if attach is not None and attached is not None:
                key = (attach.namespace, sid)
                current = record_generation(self._metadata.get(key))
                if current == attach.expect_generation:
                    self._metadata[key] = _decoded(attach.record, attached)
                    wrote = True
            if request.release_lease:
                assert lease is not None
                self._drop_lease(sid, lease)
            return CommitResult(
                archived=outcome, attached=wrote, released=request.release_lease
            )

    def forget_session(self, session_id: str, *, namespaces: Sequence[str]) -> int:
        check_forget(session_id, namespaces)
        with self._lock:
            session = self._sessions.pop(session_id, None)
            self._leases.pop(session_id, None)
            for namespace in namespaces:
                self._metadata.pop((namespace, session_id), None)
            return len(session.messages) if session else 0

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


def _decoded(record: Mapping[str, object], text: str) -> dict[str, object]:
    """Return what ``json.loads(text)`` gives for ``record``'s JSON ``text``.

    An ``EncodedRecord`` whose JSON ``text`` is equals its decoding: copied in plain
    dicts and lists (a lineage: a fraction of decoding every kept summary again).
    """
    if type(record) is EncodedRecord and record.json_text is text:
        return plain_copy(record)
    return json.loads(text)
