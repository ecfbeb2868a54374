"""The basic history and metadata contract: save, read, trim, commit, clear.

Part of ``contract.StoreContract``; ``InMemoryStore`` is the reference.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from memory_summary import Message, StoreError, ToolCall
from memory_summary.domain import CommitResult

from .fencing_contract import commit


def save(store: Any, sid: str, count: int, start: int = 0) -> list[Message]:
    """Save user messages ``m<start>``... to ``sid``; return them as stored."""
    return [
        store.save_message(sid, Message("user", f"m{i}"))
        for i in range(start, start + count)
    ]


class HistoryContract:
    """History and metadata: save, read, trim, commit, clear, hostile text."""

    def test_save_assigns_increasing_ids_and_keeps_every_field(
        self, store: Any, sid: str
    ) -> None:
        message = Message(
            "assistant",
            "calling",
            tool_calls=[ToolCall("c1", "search", '{"q": "x"}')],
            name="bot",
            kind="chat",
            timestamp=1700000000.5,
            metadata={"lang": "en", "n": [1, 2]},
        )

        first = store.save_message(sid, message)
        second = store.save_message(
            sid, Message("tool", "result", tool_call_id="c1", name="search")
        )

        assert first.id is not None
        assert second.id > first.id
        assert store.get_history(sid) == [first, second]
        assert first.tool_calls == message.tool_calls
        assert first.metadata == {"lang": "en", "n": [1, 2]}
        assert (first.name, first.kind, first.timestamp) == (
            "bot",
            "chat",
            1700000000.5,
        )

    def test_history_is_oldest_first_and_limit_takes_the_newest(
        self, store: Any, sid: str
    ) -> None:
        saved = save(store, sid, 10)

        assert store.get_history(sid) == saved
        assert store.get_history(sid, limit=3) == saved[7:]
        assert store.get_history(sid, limit=50) == saved
        assert store.get_history(sid, limit=0) == []
        assert store.get_history("missing") == []

    def test_trim_archives_all_but_the_newest_and_full_history_keeps_them(
        self, store: Any, sid: str
    ) -> None:
        saved = save(store, sid, 10)

        assert store.trim_history(sid, 4) == 6
        assert store.get_history(sid) == saved[6:]
        assert store.get_full_history(sid) == saved
        assert store.get_full_history(sid, limit=5) == saved[5:]
        assert store.count_history(sid) == 4
        assert store.trim_history(sid, 10) == 0

    def test_oldest_history_reads_the_oldest_active(self, store: Any, sid: str) -> None:
        saved = save(store, sid, 10)
        store.trim_history(sid, 7)

        assert store.get_oldest_history(sid, 2) == saved[3:5]
        assert store.get_oldest_history("missing", 2) == []

    def test_commit_archives_through_an_id_and_saves_the_record(
        self, store: Any, sid: str
    ) -> None:
        saved = save(store, sid, 10)

        result = commit(
            store,
            sid,
            record={"generation": "g1", "text": "s"},
            through_id=saved[5].id,
            expect_archived=6,
        )

        assert result == CommitResult(archived=6)
        assert result.committed
        assert store.get_history(sid) == saved[6:]
        assert store.get_full_history(sid) == saved
        assert store.get_metadata("summary", sid) == {"generation": "g1", "text": "s"}

    def test_the_active_span_is_the_span_of_get_history(
        self, store: Any, sid: str
    ) -> None:
        if not callable(getattr(store, "active_span", None)):
            pytest.skip("the store tells no ActiveSpan (an optional capability)")

        def span_of_history() -> tuple[int, int | None, int | None, int]:
            ids = [m.id for m in store.get_history(sid)]
            return (len(ids), min(ids, default=None), max(ids, default=None), sum(ids))

        def matches() -> bool:
            span = store.active_span(sid)
            count, first, last, total = span_of_history()
            return (span.count, span.first_id, span.last_id) == (
                count,
                first,
                last,
            ) and (span.id_sum is None or span.id_sum == total)

        assert store.active_span(sid).count == 0
        saved = save(store, sid, 6)
        store.save_message(sid, Message("system", "a host instruction"))
        saved += save(store, sid, 6, start=6)
        save(store, "another session", 3)
        assert matches()
        before = store.active_span(sid)
        commit(
            store,
            sid,
            record={"generation": "g1", "text": "s"},
            through_id=saved[4].id,
            expect_archived=5,
        )
        assert matches()
        assert store.active_span(sid) != before
        store.pop_message(sid)
        assert matches()
        store.clear_session(sid)
        assert matches()
        assert store.active_span(sid).count == 0

    def test_a_commit_without_through_id_only_replaces_the_record(
        self, store: Any, sid: str
    ) -> None:
        saved = save(store, sid, 4)
        store.save_metadata("summary", sid, {"generation": "g1"})

        result = commit(store, sid, record={"generation": "g2"}, expect_generation="g1")

        assert result == CommitResult(archived=0)
        assert store.get_history(sid) == saved
        assert store.get_metadata("summary", sid) == {"generation": "g2"}

    def test_commit_never_archives_messages_of_another_session(
        self, store: Any, sid: str
    ) -> None:
        other = f"{sid}-other"
        save(store, other, 3)
        mine = save(store, sid, 3)

        commit(
            store,
            sid,
            record={"generation": "g1"},
            through_id=mine[-1].id,
            expect_archived=3,
        )

        assert store.count_history(other) == 3
        assert store.get_metadata("summary", other) is None

    def test_metadata_put_get_list_delete(self, store: Any, sid: str) -> None:
        store.save_metadata("ns", f"{sid}-b", {"x": 1})
        store.save_metadata("ns", f"{sid}-a", {"x": 2, "nested": {"y": [1, "二"]}})
        store.save_metadata("ns", f"{sid}-a", {"x": 3})

        assert store.get_metadata("ns", f"{sid}-a") == {"x": 3}
        assert [k for k in store.list_metadata("ns") if k.startswith(sid)] == [
            f"{sid}-a",
            f"{sid}-b",
        ]
        assert store.delete_metadata("ns", f"{sid}-a") is True
        assert store.delete_metadata("ns", f"{sid}-a") is False
        assert store.get_metadata("ns", f"{sid}-a") is None
        assert store.get_metadata("other-ns", f"{sid}-b") is None

    def test_metadata_must_be_json_compatible(self, store: Any, sid: str) -> None:
        with pytest.raises(StoreError, match="JSON"):
            store.save_metadata("ns", sid, {"bad": object()})
        with pytest.raises(StoreError, match="JSON"):
            store.save_metadata("ns", sid, {"nan": float("nan")})

    def test_returned_metadata_is_a_copy(self, store: Any, sid: str) -> None:
        store.save_metadata("ns", sid, {"list": [1]})

        store.get_metadata("ns", sid)["list"].append(2)

        assert store.get_metadata("ns", sid) == {"list": [1]}

    def test_clear_session_and_clear_all(self, store: Any, sid: str) -> None:
        save(store, sid, 3)
        save(store, f"{sid}-2", 3)
        store.save_metadata("summary", sid, {"t": 1})

        store.clear_session(sid)

        assert store.get_full_history(sid) == []
        assert store.count_history(f"{sid}-2") == 3
        store.clear_all()
        assert store.get_full_history(f"{sid}-2") == []
        assert store.get_metadata("summary", sid) is None

    @pytest.mark.parametrize(
        "content",
        [
            "emoji 👩‍👩‍👧 🇳🇴",
            "中文内容，标点。",
            "e\u0301 combining",
            "x" * 1_000_000,
            "",
        ],
        ids=["emoji", "cjk", "combining", "1MB", "empty"],
    )
    def test_hostile_text_round_trips(self, store: Any, sid: str, content: Any) -> None:
        saved = store.save_message(sid, Message("user", content))

        assert store.get_history(sid) == [saved]
        assert store.get_history(sid)[0].content == content

    def test_lone_surrogates_and_nul_are_normalized_before_storage(
        self, store: Any, sid: str
    ) -> None:
        store.save_message(sid, Message("user", "a\ud800b\x00c"))

        assert store.get_history(sid)[0].content == "a\ufffdbc"

    def test_concurrent_writers_lose_nothing(self, store: Any, sid: str) -> None:
        barrier = threading.Barrier(8)

        def write(worker):
            barrier.wait()
            return [
                store.save_message(sid, Message("user", f"w{worker}-{i}")).id
                for i in range(50)
            ]

        with ThreadPoolExecutor(8) as pool:
            ids = [i for batch in pool.map(write, range(8)) for i in batch]

        history = store.get_history(sid)
        assert len(history) == 400
        assert sorted(ids) == [m.id for m in history]
        assert len(set(ids)) == 400

    def test_negative_limits_are_rejected(self, store: Any, sid: str) -> None:
        with pytest.raises(ValueError, match="limit"):
            store.get_history(sid, limit=-1)

    def test_a_failure_inside_the_commit_leaves_nothing_half_written(
        self, store: Any, sid: str
    ) -> None:
        saved = save(store, sid, 10)
        store.save_metadata("summary", sid, {"text": "before"})

        with pytest.raises(StoreError, match="JSON"):
            commit(
                store,
                sid,
                record={"bad": object()},
                through_id=saved[5].id,
                expect_archived=6,
            )

        assert store.get_history(sid) == saved
        assert store.get_metadata("summary", sid) == {"text": "before"}

    def test_oldest_history_pages_with_a_cursor(self, store: Any, sid: str) -> None:
        saved = save(store, sid, 10)

        first = store.get_oldest_history(sid, 4)
        second = store.get_oldest_history(sid, 4, after_id=first[-1].id)

        assert first + second == saved[:8]
