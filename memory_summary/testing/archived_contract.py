"""The store contract of ``get_archived``: an id range's archived messages, in order."""

from __future__ import annotations

from typing import Any

import pytest

from memory_summary import Message


def archived_session(
    store: Any, sid: str, count: int = 10, keep: int = 4
) -> list[Message]:
    """Save ``count`` messages and archive all but ``keep``; return them as stored."""
    saved = [store.save_message(sid, Message("user", f"m{i}")) for i in range(count)]
    store.trim_history(sid, keep)
    return saved


class ArchivedContract:
    """``get_archived``: ranges, paging, bounds."""

    def test_it_returns_archived_messages_of_the_range_oldest_first(
        self, store: Any, sid: str
    ) -> None:
        saved = archived_session(store, sid)

        found = store.get_archived(
            sid, after_id=saved[1].id, through_id=saved[4].id, limit=100
        )

        assert found == saved[2:5]

    def test_after_none_starts_at_the_first_and_limit_pages(
        self, store: Any, sid: str
    ) -> None:
        saved = archived_session(store, sid)

        first = store.get_archived(sid, after_id=None, through_id=saved[-1].id, limit=4)
        rest = store.get_archived(
            sid, after_id=first[-1].id, through_id=saved[-1].id, limit=4
        )

        assert first == saved[:4]
        assert rest == saved[4:6]

    def test_active_messages_and_other_sessions_are_never_returned(
        self, store: Any, sid: str
    ) -> None:
        saved = archived_session(store, sid)
        other = archived_session(store, f"{sid}-other")

        found = store.get_archived(
            sid, after_id=None, through_id=other[-1].id, limit=100
        )

        assert found == saved[:6]

    def test_an_empty_range_or_session_returns_nothing(
        self, store: Any, sid: str
    ) -> None:
        saved = archived_session(store, sid)

        assert (
            store.get_archived(
                sid, after_id=saved[5].id, through_id=saved[5].id, limit=9
            )
            == []
        )
        assert (
            store.get_archived(sid, after_id=None, through_id=saved[3].id, limit=0)
            == []
        )
        assert (
            store.get_archived("nobody", after_id=None, through_id=10**9, limit=9) == []
        )

    @pytest.mark.parametrize(
        "arguments",
        [
            {"after_id": None, "through_id": 5, "limit": -1},
            {"after_id": None, "through_id": 2**64, "limit": 5},
        ],
        ids=["negative-limit", "id-beyond-64-bits"],
    )
    def test_bad_bounds_are_refused_alike(
        self, store: Any, sid: str, arguments: Any
    ) -> None:
        with pytest.raises(ValueError, match="is invalid"):
            store.get_archived(sid, **arguments)
