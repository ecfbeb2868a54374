"""Reading a session's summary record so that no stored data can crash the engine.

A record the engine cannot read (a foreign shape, corrupt JSON, absurd numbers) is
treated as no summary. The compression job, which holds the session's lease, also moves
it aside into ``QUARANTINE_NAMESPACE`` so that it never blocks the session again; every
such record is logged once per session.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import cast

from memory_summary.domain import (
    NAMESPACE,
    QUARANTINE_NAMESPACE,
    CompressionStore,
    GenerationReadingStore,
    MalformedRecord,
    Message,
    MetadataPages,
    SummaryRecord,
    Unreadable,
    WindowReadingStore,
    read_record,
)
from memory_summary.domain.capabilities import (
    StoreCapabilities,
    has_capability,
    store_capabilities,
)

log = logging.getLogger(__name__)

_MAX_REMEMBERED = 10_000
PAGE_SIZE = 500


class RecordReader:
    """Reads summary records poison-proof; logs each unreadable one once.

    A record whose generation was read before is not validated again: a generation
    is a fresh random token per commit, so it names one record's content. On a
    ``GenerationReadingStore`` the record read before is not even copied out of the
    store while the row still holds the text the store wrote (compared in the read).
    """

    def __init__(
        self, store: CompressionStore, can: StoreCapabilities | None = None
    ) -> None:
        self._store = store
        self._can = store_capabilities(store) if can is None else can
        self._lock = threading.Lock()
        self._reported: set[str] = set()
        self._known: dict[str, SummaryRecord] = {}

    def read(
        self, session_id: str, *, quarantine: bool = False
    ) -> SummaryRecord | None:
        """Return the session's record, or None when absent or unreadable.

        With ``quarantine`` (only under the session's lease) an unreadable record is
        moved aside. A store failure (``StoreError``) still raises.
        """
        known = self._known.get(session_id) if self._can.reads_generation else None
        try:
            if known is not None and known.generation:
                store = cast(GenerationReadingStore, self._store)
                same, data = store.get_metadata_unless(
                    NAMESPACE, session_id, known.generation
                )
                if same:  # the text it last wrote, compared whole: nothing copied
                    return known
            else:
                data = self._store.get_metadata(NAMESPACE, session_id)
        except MalformedRecord as exc:
            self._unreadable(session_id, str(exc), quarantine)
            return None
        return self._decoded(session_id, data, quarantine)

    def decode(
        self, session_id: str, data: dict[str, object] | None
    ) -> SummaryRecord | None:
        """Return the record ``data`` the store returned for the session, as ``read``.

        For a record read along with something else (``SpanRecordStore``).
        """
        return self._decoded(session_id, data, False)

    def read_with_window(
        self, session_id: str, limit: int
    ) -> tuple[SummaryRecord | None, list[Message]]:
        """Return the record (read under the lease) and the newest ``limit`` messages.

        One round trip where the store can (``read_window``). A store failure
        (``StoreError``) still raises.
        """
        try:
            window, data = read_window(
                self._store, session_id, limit=limit, one_read=self._can.reads_window
            )
        except MalformedRecord:
            # The record or a message row: read apart, so that only a record that
            # is unreadable is moved aside; a message row raises from the history.
            record = self.read(session_id, quarantine=True)
            return record, self._store.get_history(session_id, limit=limit)
        return self._decoded(session_id, data, True), window

    def _decoded(
        self, session_id: str, data: dict[str, object] | None, quarantine: bool
    ) -> SummaryRecord | None:
        if data is not None:
            known = self._known.get(session_id)
            generation = data.get("generation")
            if known is not None and known.generation == generation:
                return known
        found = read_record(data)
        if isinstance(found, Unreadable):
            self._unreadable(session_id, found.reason, quarantine)
            return None
        if found is not None and found.generation is not None:
            if len(self._known) >= _MAX_REMEMBERED:
                self._known.clear()
            self._known[session_id] = found
        return found

    def scan(self) -> Iterator[tuple[str, SummaryRecord]]:
        """Yield every readable record with its session id, in session-id order.

        Reads page by page where the store can (``MetadataPages``), else key by
        key; unreadable records are skipped (logged once), never raised.
        """
        store = self._store
        if not self._can.pages_metadata:
            for session_id in store.list_metadata(NAMESPACE):
                record = self.read(session_id)
                if record is not None:
                    yield session_id, record
            return
        after: str | None = None
        while True:
            page = cast(MetadataPages, store).metadata_page(
                NAMESPACE, after_key=after, limit=PAGE_SIZE
            )
            for session_id, data in page:
                found = (
                    Unreadable("not a JSON object")
                    if data is None
                    else read_record(data)
                )
                if isinstance(found, SummaryRecord):
                    yield session_id, found
                elif isinstance(found, Unreadable):
                    self._unreadable(session_id, found.reason, False)
            if len(page) < PAGE_SIZE:
                return
            after = page[-1][0]

    def _unreadable(self, session_id: str, reason: str, quarantine: bool) -> None:
        """Log (once) and, under the lease, move aside an unreadable record."""
        moved = quarantine and self._store.quarantine_metadata(
            NAMESPACE, session_id, QUARANTINE_NAMESPACE
        )
        with self._lock:
            first = session_id not in self._reported
            if first and len(self._reported) < _MAX_REMEMBERED:
                self._reported.add(session_id)
        if moved:
            log.warning(
                "session %s: unreadable summary record moved to %r (%s); the session "
                "continues without a summary",
                session_id,
                QUARANTINE_NAMESPACE,
                reason,
                extra={"session_id": session_id},
            )
        elif first:
            log.warning(
                "session %s: unreadable summary record ignored (%s)",
                session_id,
                reason,
                extra={"session_id": session_id},
            )


def read_window(
    store: CompressionStore,
    session_id: str,
    *,
    limit: int,
    namespace: str = NAMESPACE,
    one_read: bool | None = None,
) -> tuple[list[Message], dict[str, object] | None]:
    """Return the session's newest ``limit`` active messages and its stored record.

    One round trip on a ``WindowReadingStore`` (every shipped store), the two calls
    otherwise; ``one_read`` is that capability as decided when wiring (None: decide
    now, ``domain.capabilities``).

    Raises:
        MalformedRecord: the record cannot be decoded (as ``get_metadata``).
    """
    if one_read is None:
        one_read = has_capability(store, WindowReadingStore)
    if one_read:
        return cast(WindowReadingStore, store).read_window(
            session_id, limit=limit, namespace=namespace
        )
    window = store.get_history(session_id, limit=limit)
    return window, store.get_metadata(namespace, session_id)
