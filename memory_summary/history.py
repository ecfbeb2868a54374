"""Searching and reading a session's whole history, and its summaries' lineage.

The engine's ``search_history``, ``read_history``, ``read_history_range`` and
``summary_history`` run here, on the caller's thread: each is one or two store reads.
The query is parsed in ``domain.recall`` (untrusted text becomes letters-and-digits
terms), so a store never sees the raw text. A search asks the store for
``SPEAKER_DEPTH`` times the hits it returns (``PERIOD_DEPTH`` times when the query
names a date) and lets the dates and the speakers the query names count
(``domain.ranking.by_named_period``, ``by_named_speaker``), the same above every
store. The query's terms go with the other forms of its irregular words
(``domain.forms.with_forms``: "meet" with "met"), which every store ranks as one
term.
"""

from __future__ import annotations

import logging
from typing import cast

from memory_summary.domain import (
    HistoryNotFound,
    MalformedRecord,
    MemoryStore,
    RecallUnsupported,
    SearchableStore,
    StoredHit,
    SummaryConfig,
)
from memory_summary.domain.capabilities import StoreCapabilities, store_capabilities
from memory_summary.domain.forms import with_forms
from memory_summary.domain.lineage import (
    VERSIONS_NAMESPACE,
    Lineage,
    read_lineage,
    summary_versions,
)
from memory_summary.domain.periods import named_periods
from memory_summary.domain.ranking import (
    PERIOD_DEPTH,
    SPEAKER_DEPTH,
    by_named_period,
    by_named_speaker,
)
from memory_summary.domain.recall import (
    HistoryEntry,
    SearchHit,
    SummaryVersion,
    check_around,
    check_message_id,
    check_search_limit,
    query_terms,
)
from memory_summary.domain.summary import SummaryRecord

log = logging.getLogger(__name__)

MAX_RANGE = 1000
"""The most messages ``read_history_range`` returns at once."""


class HistoryAccess:
    """The history search and reads of one engine's store."""

    def __init__(
        self,
        store: MemoryStore,
        config: SummaryConfig,
        can: StoreCapabilities | None = None,
    ) -> None:
        self._store = store
        self._config = config
        self._can = store_capabilities(store) if can is None else can

    def _searchable(self) -> SearchableStore:
        store = self._store
        if not self._can.searchable:
            raise RecallUnsupported(
                f"memory store {type(store).__name__} cannot search its history: it "
                "needs search_messages, read_messages and read_message_range "
                "(SearchableStore; every store this library ships has them, "
                "memory_summary.testing.SearchContract checks your own)"
            )
        return cast(SearchableStore, store)

    def lineage(self, session_id: str) -> Lineage:
        """Return the session's stored lineage (empty when none or unreadable)."""
        try:
            data = self._store.get_metadata(VERSIONS_NAMESPACE, session_id)
        except MalformedRecord:
            log.warning("session %s: unreadable summary lineage ignored", session_id)
            return Lineage()
        return read_lineage(data)

    def search(
        self, session_id: str, query: str, *, limit: int, archived_only: bool
    ) -> list[SearchHit]:
        if self._config.recall_index == "off":
            raise RecallUnsupported(
                "search_history is off: SummaryConfig.recall_index='off' keeps no "
                "history index (set it to 'lazy' or 'eager' to search)"
            )
        store = self._searchable()
        terms = query_terms(query)
        check_search_limit(limit)
        if type(archived_only) is not bool:
            raise ValueError(
                f"archived_only={archived_only!r} is invalid; allowed: bool"
            )
        periods = named_periods(query)
        depth = PERIOD_DEPTH if periods else SPEAKER_DEPTH
        found = store.search_messages(
            session_id,
            with_forms(terms),
            limit=min(limit * depth, 1000),  # a store may hold to 1..1000
            archived_only=archived_only,
        )
        found = by_named_speaker(by_named_period(found, periods), terms, limit)
        lineage = self.lineage(session_id) if any(h.archived for h in found) else None
        return [
            SearchHit(hit.message, hit.score, hit.archived, _version(lineage, hit))
            for hit in found
        ]

    def read(
        self, session_id: str, around_id: int, *, before: int, after: int
    ) -> list[HistoryEntry]:
        store = self._searchable()
        check_message_id("around_id", around_id)
        before, after = check_around(before, after)
        found = store.read_messages(session_id, around_id, before=before, after=after)
        if not found:
            raise HistoryNotFound(session_id, around_id)
        return self._entries(session_id, found)

    def read_range(
        self, session_id: str, first_id: int, last_id: int, *, limit: int
    ) -> list[HistoryEntry]:
        store = self._searchable()
        check_message_id("first_id", first_id)
        check_message_id("last_id", last_id)
        if last_id < first_id:
            raise ValueError(
                f"last_id={last_id} is invalid; allowed: >= first_id={first_id}"
            )
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= MAX_RANGE
        ):
            raise ValueError(f"limit={limit!r} is invalid; allowed: int in 1..1000")
        found = store.read_message_range(session_id, first_id, last_id, limit=limit)
        if not found:
            raise HistoryNotFound(session_id, first_id)
        return self._entries(session_id, found)

    def _entries(self, session_id: str, found: list[StoredHit]) -> list[HistoryEntry]:
        lineage = self.lineage(session_id) if any(h.archived for h in found) else None
        return [
            HistoryEntry(hit.message, hit.archived, _version(lineage, hit))
            for hit in found
        ]

    def versions(
        self, session_id: str, record: SummaryRecord | None
    ) -> list[SummaryVersion]:
        return summary_versions(
            record,
            self.lineage(session_id),
            kept=self._config.summary_versions_kept,
        )


def _version(lineage: Lineage | None, hit: StoredHit) -> int | None:
    if lineage is None or not hit.archived or hit.message.id is None:
        return None
    return lineage.version_of(hit.message.id)
