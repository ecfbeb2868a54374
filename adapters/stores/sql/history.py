"""The history search and reads of the SQL stores (``SearchableStore``).

``SqlStore`` mixes this in; the database-specific half is a ``SearchIndex``
(``search_index``). A search takes three reads: the session's best BM25 matches with
the id ``CONTEXT_REACH`` messages after each (the context step of
``domain.ranking``), then the messages of the final hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_summary.adapters.recall.policy import refuse_search
from memory_summary.adapters.recall.sql_index import SearchIndex
from memory_summary.adapters.stores.rows import (
    MAX_ROW_ID,
    SELECT_COLUMNS,
    check_key,
    check_limit,
    check_read,
    check_row_id,
    is_archived,
    row_message,
)
from memory_summary.domain import StoredHit
from memory_summary.domain.config import RecallIndex, check_recall_index
from memory_summary.domain.ranking import (
    CONTEXT_REACH,
    CONTEXT_SEEDS,
    Coverage,
    with_context,
)

from .dialect import Dialect
from .driver import SqlDriver


def _id_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _hit(row: Sequence[Any], score: float = 0.0) -> StoredHit:
    return StoredHit(row_message(row[:-1]), is_archived(row[-1]), score)


class SqlHistory:
    """Search and read a session's whole history; needs a ``SearchIndex``."""

    _driver: SqlDriver
    _dialect: Dialect
    _search: SearchIndex

    def _history_queries(self) -> dict[str, str]:
        t, p = self._dialect.tables, self._dialect.placeholder
        ids = self._search.id_source
        columns = f"{SELECT_COLUMNS}, archived"
        queries = {
            # the ids CONTEXT_REACH messages before and after each candidate
            "reach": f"SELECT c.value, (SELECT m.id FROM {t}messages m "
            "WHERE m.session_id = ? AND m.id < c.value ORDER BY m.id DESC "
            f"LIMIT 1 OFFSET {CONTEXT_REACH - 1}), (SELECT m.id FROM {t}messages m "
            "WHERE m.session_id = ? AND m.id > c.value ORDER BY m.id "
            f"LIMIT 1 OFFSET {CONTEXT_REACH - 1}) FROM {ids}",
            "by_ids": f"SELECT {', '.join('m.' + c for c in columns.split(', '))} "
            f"FROM {ids} {self._search.join} {t}messages m ON m.id = c.value "
            "WHERE m.session_id = ?",
            "before": f"SELECT {columns} FROM {t}messages WHERE session_id = ? "
            "AND id <= ? ORDER BY id DESC LIMIT ?",
            "after": f"SELECT {columns} FROM {t}messages WHERE session_id = ? "
            "AND id > ? ORDER BY id LIMIT ?",
            "range": f"SELECT {columns} FROM {t}messages WHERE session_id = ? "
            "AND id >= ? AND id <= ? ORDER BY id LIMIT ?",
        }
        return {name: sql.replace("?", p) for name, sql in queries.items()}

    @property
    def recall_index(self) -> RecallIndex:
        """When a session is indexed for search; see ``IndexPolicyStore``."""
        return self._search.policy

    def set_recall_index(self, policy: RecallIndex) -> None:
        """Index by ``policy`` from now on; see ``IndexPolicyStore``."""
        self._search.policy = check_recall_index(policy)

    def _read(self, sql: str, params: Sequence[object]) -> list[Any]:
        return self._driver.read(sql, params, "search_messages")

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
        refuse_search(self, self._search.policy)
        if not limit or not terms:
            return []
        q = self._hq
        around: set[int] = set()
        coverage = Coverage()
        matches = self._search.matches(
            self._read,
            session_id,
            list(terms),
            archived_only=archived_only,
            held=around,
            coverage=coverage,
        )
        if not matches:
            return []
        near = self._near(session_id, [id_ for id_, _ in matches], around or None)
        scored = dict(matches)
        ranges = [
            (near[id_][0] or 0, near[id_][1] or MAX_ROW_ID)
            for id_, _ in matches[:CONTEXT_SEEDS]
            if id_ in near
        ]
        # The seeds' neighbours, and every id within CONTEXT_REACH of them (what
        # ``_near`` reads of theirs), in one read; two when only the archived count.
        wide = [
            (max(lo - CONTEXT_REACH, 0), min(hi + CONTEXT_REACH, MAX_ROW_ID))
            for lo, hi in ranges
        ]
        held = set(
            self._search.window(self._read, session_id, wide, archived_only=False)
        )
        neighbours = (
            self._search.window(self._read, session_id, ranges, archived_only=True)
            if archived_only
            else [i for i in held if any(lo <= i <= hi for lo, hi in ranges)]
        )
        for id_ in neighbours:
            scored.setdefault(id_, 0.0)
        near.update(self._near(session_id, [i for i in scored if i not in near], held))
        reach = {id_: bounds[1] for id_, bounds in near.items()}
        found = with_context(list(scored.items()), reach, limit, coverage)
        rows = self._read(
            q["by_ids"], (self._search.id_list([i for i, _ in found]), session_id)
        )
        by_id = {int(row[0]): row for row in rows}
        return [_hit(by_id[i], score) for i, score in found if i in by_id]

    def _near(
        self, session_id: str, ids: list[int], held: set[int] | None = None
    ) -> dict[int, tuple[int | None, int | None]]:
        """Return the ids ``CONTEXT_REACH`` messages before and after each id.

        ``held``: the session's ids within ``CONTEXT_REACH`` of each id, when the
        caller read them already.

        A session mostly writes its ids without gaps: when the ``CONTEXT_REACH`` ids
        on one side of an id are all the session's, the farthest is the answer on
        that side. One read of the session's ids around each tells (a range scan
        each); only the ids it leaves open are searched for one side at a time (two
        scans each, several times the cost on PostgreSQL).
        """
        if not ids:
            return {}
        steps = range(1, CONTEXT_REACH + 1)
        if held is None:
            around = [(i - CONTEXT_REACH, i + CONTEXT_REACH) for i in sorted(ids)]
            held = set(
                self._search.window(self._read, session_id, around, archived_only=False)
            )
        near: dict[int, tuple[int | None, int | None]] = {}
        for i in ids:
            before = i - CONTEXT_REACH if all(i - d in held for d in steps) else None
            after = i + CONTEXT_REACH if all(i + d in held for d in steps) else None
            near[i] = (before, after)
        open_ = [i for i, (before, after) in near.items() if None in (before, after)]
        if not open_:
            return near
        rows = self._read(
            self._hq["reach"], (session_id, session_id, self._search.id_list(open_))
        )
        for row in rows:
            before, after = near[int(row[0])]
            near[int(row[0])] = (
                before if before is not None else _id_or_none(row[1]),
                after if after is not None else _id_or_none(row[2]),
            )
        return near

    def read_messages(
        self, session_id: str, around_id: int, *, before: int, after: int
    ) -> list[StoredHit]:
        """Return a message and its neighbours; see ``SearchableStore``."""
        check_key("session_id", session_id)
        check_row_id("around_id", around_id)
        check_limit(before)
        check_limit(after)
        q = self._hq
        older = self._read(q["before"], (session_id, around_id, before + 1))
        if not older or int(older[0][0]) != around_id:
            return []
        newer = self._read(q["after"], (session_id, around_id, after)) if after else []
        return [_hit(row) for row in [*reversed(older), *newer]]

    def read_message_range(
        self, session_id: str, first_id: int, last_id: int, *, limit: int
    ) -> list[StoredHit]:
        """Return the messages of an id range; see ``SearchableStore``."""
        check_read(session_id, limit, first_id=first_id, last_id=last_id)
        if not limit:
            return []
        rows = self._read(self._hq["range"], (session_id, first_id, last_id, limit))
        return [_hit(row) for row in rows]

    @property
    def _hq(self) -> dict[str, str]:
        queries: dict[str, str] | None = getattr(self, "_history_q", None)
        if queries is None:
            queries = self._history_queries()
            self._history_q = queries
        return queries
