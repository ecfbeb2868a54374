"""The in-memory store's sessions and their history search (``SearchableStore``).

``InMemoryStore`` mixes ``MemoryHistory`` in. A ``MemorySession`` holds one session's
messages, its archive boundary, the host's instructions kept active below it, and
its term index; the search ranks with ``domain.ranking`` as the SQL and Redis
stores do.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from collections.abc import Sequence

import attrs

from memory_summary.adapters.recall.policy import refuse_search
from memory_summary.adapters.stores.rows import (
    check_key,
    check_limit,
    check_read,
    check_row_id,
)
from memory_summary.domain import Message, StoredHit, is_host_instruction
from memory_summary.domain.config import RecallIndex
from memory_summary.domain.ranking import (
    CANDIDATES,
    CONTEXT_REACH,
    CONTEXT_SEEDS,
    Coverage,
    TermIndex,
    with_context,
)
from memory_summary.domain.recall import message_terms


@attrs.define
class MemorySession:
    """A session's messages, archived below ``first_active``, active from it on.

    The host's instructions below the boundary are never archived: ``kept`` holds
    them (in id order), so the active history is ``kept`` then the suffix.
    """

    messages: list[Message] = attrs.Factory(list)
    first_active: int = 0
    kept: list[Message] = attrs.Factory(list)
    index: TermIndex = attrs.Factory(TermIndex)  # every message, active and archived
    terms: dict[int, list[str]] = attrs.Factory(dict)  # each indexed id's terms
    unindexed: dict[int, Message] = attrs.Factory(dict)  # saved since the last search

    def append(self, row: Message, policy: RecallIndex) -> None:
        """Keep a saved row, indexed by ``policy`` (``InMemoryStore.recall_index``).

        ``lazy``: its terms wait for the next search (``take_in``); ``off``: it is
        not even queued (``requeue`` queues it if the policy changes); ``eager``:
        the caller indexes it at once (``index_now``).
        """
        self.messages.append(row)
        if policy == "lazy":
            self.unindexed[row.id] = row  # type: ignore[index]

    def index_now(self, row_id: int, counts: Counter[str]) -> None:
        """Index a row just saved under ``eager`` (its terms counted by the caller)."""
        self.index.add_counted(row_id, counts)
        self.terms[row_id] = list(counts)

    def requeue(self) -> None:
        """Queue every stored message that is not indexed, in id order."""
        self.unindexed = {
            m.id: m  # type: ignore[misc]
            for m in self.messages
            if m.id not in self.terms
        }

    def pending(self) -> list[Message]:
        """Return the saved messages not indexed yet, oldest first."""
        return list(self.unindexed.values())

    def take_in(self, counted: Sequence[tuple[int, Counter[str]]]) -> None:
        """Index the messages whose terms were counted (``count_terms``).

        Saving only queues a message: its terms are counted on the first search
        after it, outside the store's lock, so a session nobody searches never pays
        for its index. A message popped or forgotten since it was counted is no
        longer pending and stays out.
        """
        for row_id, counts in counted:
            if self.unindexed.pop(row_id, None) is not None:
                self.index.add_counted(row_id, counts)
                self.terms[row_id] = list(counts)

    def active(self) -> list[Message]:
        """Return the active messages, oldest first."""
        return [*self.kept, *self.messages[self.first_active :]]

    def active_ends(self) -> tuple[int | None, int | None]:
        """Return the oldest and newest active ids (None, None when none is)."""
        above = len(self.messages) > self.first_active
        first = self.kept[0] if self.kept else None
        if first is None and above:
            first = self.messages[self.first_active]
        last = self.messages[-1] if above else (self.kept[-1] if self.kept else None)
        return (None if first is None else first.id, None if last is None else last.id)

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
        """Delete the newest active message, and its index entry, and return it."""
        popped = self._pop_row()
        if popped is None:
            return None
        row_id: int = popped.id  # type: ignore[assignment]
        if self.unindexed.pop(row_id, None) is None and row_id in self.terms:
            self.index.remove(row_id, self.terms.pop(row_id))
        return popped

    def _pop_row(self) -> Message | None:
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

    def search(
        self, terms: Sequence[str], limit: int, *, archived_only: bool
    ) -> list[StoredHit]:
        """Return the best ``limit`` matches of ``terms`` and their context.

        Indexes what is still pending first (``MemoryHistory`` counts it outside the
        store's lock beforehand; this is what was saved since).
        """
        self.take_in(count_terms(self.pending()))
        allowed = None
        if archived_only:
            allowed = {m.id for m in self.archived()}
        coverage = Coverage()
        matches = self.index.search(list(terms), CANDIDATES, allowed, coverage)  # type: ignore[arg-type]
        messages = self.messages
        scored = dict(matches)
        positions: dict[int, int] = {}
        for row_id, _ in matches[:CONTEXT_SEEDS]:  # neighbours that matched nothing
            at = self.position(row_id)
            if at is None:  # pragma: no cover - the index holds stored ids only
                continue
            for near in messages[max(at - CONTEXT_REACH, 0) : at + CONTEXT_REACH + 1]:
                if allowed is None or near.id in allowed:
                    scored.setdefault(near.id, 0.0)  # type: ignore[arg-type]
        reach: dict[int, int | None] = {}
        for row_id in scored:
            at = self.position(row_id)
            if at is not None:
                positions[row_id] = at
                later = at + CONTEXT_REACH
                reach[row_id] = messages[later].id if later < len(messages) else None
        found = with_context(list(scored.items()), reach, limit, coverage)
        return [self.hit(positions[row_id], score) for row_id, score in found]


def count_terms(messages: Sequence[Message]) -> list[tuple[int, Counter[str]]]:
    """Return each message's id and the counts of the terms it is indexed under."""
    return [(m.id, Counter(message_terms(m))) for m in messages]  # type: ignore[misc]


class _Ids:
    """The ids of a session's messages as a sequence ``bisect`` can search."""

    def __init__(self, messages: list[Message]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, at: int) -> int:
        return self._messages[at].id  # type: ignore[return-value]


class MemoryHistory:
    """The ``SearchableStore`` methods of ``InMemoryStore``, which mixes this in."""

    _lock: threading.Lock
    _sessions: dict[str, MemorySession]
    recall_index: RecallIndex

    def search_messages(
        self,
        session_id: str,
        terms: Sequence[str],
        *,
        limit: int,
        archived_only: bool = False,
    ) -> list[StoredHit]:
        """Return the best matches of ``terms``; see ``SearchableStore``."""
        check_read(session_id, limit)
        refuse_search(self, self.recall_index)
        while True:
            with self._lock:
                session = self._sessions.get(session_id)
                if session is None or not limit:
                    return []
                pending = session.pending()
                if not pending:
                    return session.search(terms, limit, archived_only=archived_only)
            # One session's indexing (a 35 MB session: about two minutes) holds no
            # lock: every other session, and this one's saves, go on meanwhile.
            counted = count_terms(pending)
            with self._lock:
                session = self._sessions.get(session_id)
                if session is not None:
                    session.take_in(counted)

    def read_messages(
        self, session_id: str, around_id: int, *, before: int, after: int
    ) -> list[StoredHit]:
        """Return a message and its neighbours; see ``SearchableStore``."""
        check_key("session_id", session_id)
        check_row_id("around_id", around_id)
        check_limit(before)
        check_limit(after)
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
        check_read(session_id, limit, first_id=first_id, last_id=last_id)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            ids = _Ids(session.messages)
            low = bisect.bisect_left(ids, first_id)
            high = min(bisect.bisect_right(ids, last_id), low + limit)
            return [session.hit(i) for i in range(low, high)]
