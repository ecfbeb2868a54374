"""The SQL core's read for a chat turn: the active span and a record, in one statement.

A part of ``SqlStore`` (``SpanRecordStore``): a ``Conversation`` asks, once a turn,
whether the session's active messages are still the ones it holds and what the
summary record is. One statement reads both from one snapshot (a compression another
process commits is in both or in neither), in one round trip instead of two.
"""

from __future__ import annotations

from functools import cached_property

from memory_summary.adapters.stores.rows import check_key
from memory_summary.domain import NO_SPAN, ActiveSpan

from .dialect import ACTIVE_ENDS, Dialect
from .driver import SqlDriver
from .fence import DecodedRecords, WrittenGenerations

# The span's aggregate, joined to the record's row when there is one (``present``).
# A record whose text is the one the store last wrote there is compared in SQL and
# not copied out (NULL), as ``get_metadata_unless`` does; the column is NOT NULL.
# The ends are two index seeks (``ACTIVE_ENDS``); only count and sum walk the rows.
_SPAN_AND_RECORD = (
    "SELECT s.n, s.lo, s.hi, s.total, m.present, m.data FROM "
    "(SELECT count(*) AS n, {ends}, coalesce(sum(id), 0) AS total "
    "FROM {t}messages WHERE session_id = ? AND archived = {false}) AS s "
    "LEFT JOIN (SELECT 1 AS present, CASE WHEN data = ? THEN NULL ELSE data END "
    "AS data FROM {t}metadata WHERE namespace = ? AND key = ?) AS m ON 1 = 1"
)


class SqlTurnReads:
    """``span_and_metadata`` over ``_driver`` (see ``SpanRecordStore``)."""

    _driver: SqlDriver
    _dialect: Dialect
    _written: WrittenGenerations
    _decoded: DecodedRecords

    @cached_property
    def _span_and_record_sql(self) -> str:
        dialect = self._dialect
        ends = ACTIVE_ENDS.format(t=dialect.tables, false=dialect.false)
        sql = _SPAN_AND_RECORD.format(t=dialect.tables, false=dialect.false, ends=ends)
        return sql.replace("?", dialect.placeholder)

    def span_and_metadata(
        self, session_id: str, namespace: str
    ) -> tuple[ActiveSpan, dict[str, object] | None]:
        """Return the session's ``ActiveSpan`` and its record, read in one statement.

        See ``SpanRecordStore``; the record reads as ``get_metadata``'s.

        Raises:
            MalformedRecord: the record cannot be decoded.
        """
        check_key("session_id", session_id)
        check_key("namespace", namespace)
        known = self._written.known(namespace, session_id)
        rows = self._driver.read(
            self._span_and_record_sql,
            (
                session_id,
                session_id,
                session_id,
                None if known is None else known[0],
                namespace,
                session_id,
            ),
            "span_and_metadata",
            session_id,
        )
        count, first, last, total, present, raw = rows[0]
        span = (
            ActiveSpan(int(count), int(first), int(last), int(total))
            if count
            else NO_SPAN
        )
        if present is None:
            return span, None
        if raw is None and known is not None:  # the text written there
            raw = known[0]
        return span, self._decoded.decoded(namespace, session_id, raw)
