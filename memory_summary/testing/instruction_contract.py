"""The store contract of the host's instructions: archiving never takes them.

A system or developer message of no ``kind`` (``is_host_instruction``) is context,
not history: a fenced commit and ``trim_history`` leave it active, in its id order,
and do not count it; every read of the active history returns it; ``pop_message``
can still take it back. Messages of the engine (an event marker) or of an
integration (a ``kind``) are history and archive as before.
"""

from __future__ import annotations

from typing import Any

from memory_summary import Message
from memory_summary.domain import CommitResult

from .fencing_contract import commit, marker, snapshot


def instructed_session(store: Any, sid: str) -> list[Message]:
    """Save system, u1, developer, u2, marker, item, u3; return them as stored."""
    messages = [
        Message("system", "You are terse."),
        Message("user", "u1"),
        Message("developer", "Answer in French."),
        Message("user", "u2"),
        marker(2),
        Message("system", "[reasoning]", kind="openai-agents-item"),
        Message("user", "u3"),
    ]
    return [store.save_message(sid, m) for m in messages]


class InstructionContract:
    """Archiving (commit and trim) leaves the host's instructions active."""

    def test_a_commit_archives_around_instructions_and_counts_only_history(
        self, store: Any, sid: str
    ) -> None:
        saved = instructed_session(store, sid)
        system, u1, developer, u2, separator, item, u3 = saved

        result = commit(store, sid, through_id=item.id, expect_archived=4)

        assert result == CommitResult(archived=4)
        assert store.get_history(sid) == [system, developer, u3]
        assert store.get_history(sid, limit=2) == [developer, u3]
        assert store.count_history(sid) == 3
        assert store.get_oldest_history(sid, 10) == [system, developer, u3]
        assert store.get_oldest_history(sid, 10, after_id=system.id) == [
            developer,
            u3,
        ]
        archived = store.get_archived(sid, after_id=None, through_id=u3.id, limit=10)
        assert archived == [u1, u2, separator, item]
        assert store.get_full_history(sid) == saved

    def test_counting_the_instructions_fences_the_commit(
        self, store: Any, sid: str
    ) -> None:
        saved = instructed_session(store, sid)
        before = snapshot(store, sid)

        result = commit(store, sid, through_id=saved[5].id, expect_archived=6)

        assert result == CommitResult(fenced="archive")
        assert snapshot(store, sid) == before

    def test_instructions_stay_active_through_later_commits_and_trims(
        self, store: Any, sid: str
    ) -> None:
        saved = instructed_session(store, sid)
        system, developer, u3 = saved[0], saved[2], saved[6]
        assert commit(store, sid, through_id=saved[5].id, expect_archived=4).committed
        later = [store.save_message(sid, Message("user", f"v{i}")) for i in range(3)]

        result = commit(
            store,
            sid,
            expect_generation="new",
            through_id=later[1].id,
            expect_archived=3,
        )
        trimmed = store.trim_history(sid, 0)

        assert result == CommitResult(archived=3)
        assert trimmed == 1
        assert store.get_history(sid) == [system, developer]
        assert store.count_history(sid) == 2
        archived = store.get_archived(
            sid, after_id=None, through_id=later[-1].id, limit=10
        )
        assert [m.id for m in archived] == [
            m.id for m in (*saved[1:2], *saved[3:6], u3, *later)
        ]

    def test_trim_keeps_instructions_and_counts_only_what_it_archived(
        self, store: Any, sid: str
    ) -> None:
        saved = instructed_session(store, sid)

        trimmed = store.trim_history(sid, 1)

        assert trimmed == 4
        assert store.get_history(sid) == [saved[0], saved[2], saved[6]]

    def test_pop_takes_back_an_instruction_below_the_archived_messages(
        self, store: Any, sid: str
    ) -> None:
        saved = instructed_session(store, sid)
        store.trim_history(sid, 0)

        popped = [store.pop_message(sid), store.pop_message(sid)]

        assert popped == [saved[2], saved[0]]
        assert store.pop_message(sid) is None
        assert store.get_history(sid) == []
        assert store.get_full_history(sid) == [saved[1], *saved[3:]]
        assert store.count_history(sid) == 0
