"""The store contract of the fenced commit and of forget_session.

A commit applies everything or nothing: a lost lease, a changed record generation or
a different number of messages to archive each fence it, and a fenced commit leaves
history, record, archive and separator untouched.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from memory_summary import Message
from memory_summary.domain import (
    CommitRequest,
    CommitResult,
    NativeArtifact,
    SummaryRecord,
    read_record,
)

from .lease_contract import poll_until_acquired

NS = "summary"


def save(store: Any, sid: str, count: int) -> list[Message]:
    """Save ``count`` user messages ``m0``, ``m1``...; return them as stored."""
    return [store.save_message(sid, Message("user", f"m{i}")) for i in range(count)]


def snapshot(store: Any, sid: str) -> tuple[object, ...]:
    """Everything a commit may change, to prove a fenced one changed nothing."""
    archive = store.archive_messages(sid) if hasattr(store, "archive_messages") else []
    return (
        store.get_history(sid),
        store.get_full_history(sid),
        store.get_metadata(NS, sid),
        archive,
    )


def commit(store: Any, sid: str, **overrides: Any) -> CommitResult:
    """Commit a compression of ``sid`` with the given overrides of the defaults."""
    arguments: dict[str, Any] = {
        "namespace": NS,
        "record": {"generation": "new", "text": "summary"},
        "expect_generation": None,
    }
    arguments.update(overrides)
    result: CommitResult = store.commit(CommitRequest(session_id=sid, **arguments))
    return result


def commit_native(store: Any, sid: str, native: NativeArtifact) -> Any:
    """Commit a record carrying ``native``; check it reads back whole and fences.

    Returns the stored record, for the caller to check its artifact's fields.
    """
    saved = save(store, sid, 4)
    record = SummaryRecord("Likes tea.", saved[1].id, 3, generation="g1", native=native)

    result = commit(
        store,
        sid,
        record=record.to_mapping(),
        through_id=saved[1].id,
        expect_archived=2,
    )
    stored = store.get_metadata(NS, sid)
    fenced = commit(store, sid, expect_generation="g0")

    assert result.committed
    assert read_record(stored) == record
    assert stored is not None
    assert fenced.fenced == "generation"
    assert store.get_metadata(NS, sid) == stored
    return stored


def marker(archived: int) -> Message:
    """Return a compression separator message."""
    return Message("system", f"[compressed {archived}]", kind="event-marker")


def start_compressing(store: Any, sid: str) -> tuple[list[Message], str]:
    """Put a session mid-compression: 6 messages, record g1, a lease held."""
    saved = save(store, sid, 6)
    assert commit(store, sid, record={"generation": "g1"}).committed
    lease = store.acquire_lease(sid, owner="compressor", ttl_s=60)
    assert lease is not None
    return saved, lease


class FencingContract:
    """The fenced ``commit`` and ``forget_session``."""

    @pytest.fixture
    def compressing(self, store: Any, sid: str) -> Any:
        return start_compressing(store, sid)

    def test_a_commit_with_every_check_passing_applies_everything(
        self, store: Any, sid: str, compressing: Any
    ) -> None:
        saved, lease = compressing

        result = commit(
            store,
            sid,
            expect_generation="g1",
            through_id=saved[3].id,
            expect_archived=4,
            lease=lease,
        )

        assert result == CommitResult(archived=4)
        assert store.get_history(sid) == saved[4:]
        assert store.get_metadata(NS, sid) == {"generation": "new", "text": "summary"}

    @pytest.mark.parametrize(
        ("overrides", "reason"),
        [
            ({"lease": "not-the-token"}, "lease"),
            ({"expect_generation": "g0"}, "generation"),
            ({"expect_generation": None}, "generation"),
            ({"expect_archived": 3}, "archive"),
            ({"expect_archived": 5}, "archive"),
        ],
        ids=["lease", "generation", "no-record-expected", "fewer", "more"],
    )
    def test_each_failed_check_fences_and_applies_nothing(
        self, store: Any, sid: str, compressing: Any, overrides: Any, reason: Any
    ) -> None:
        saved, lease = compressing
        before = snapshot(store, sid)
        arguments = {
            "expect_generation": "g1",
            "through_id": saved[3].id,
            "expect_archived": 4,
            "lease": lease,
            **overrides,
        }

        result = commit(store, sid, **arguments)

        assert result == CommitResult(fenced=reason)
        assert not result.committed
        assert snapshot(store, sid) == before

    def test_the_lease_is_checked_before_the_generation(
        self, store: Any, sid: str, compressing: Any
    ) -> None:
        saved, _ = compressing

        result = commit(
            store, sid, expect_generation="g0", lease="stale", through_id=saved[0].id
        )

        assert result.fenced == "lease"

    def test_a_record_without_text_generation_matches_the_empty_generation(
        self, store: Any, sid: str
    ) -> None:
        store.save_metadata(NS, sid, {"generation": 7, "text": "old"})

        assert commit(store, sid, expect_generation=None).fenced == "generation"
        assert commit(store, sid, expect_generation="").committed

    def test_a_deleted_record_without_generation_fences_a_commit_prepared_before(
        self, store: Any, sid: str
    ) -> None:
        store.save_metadata(NS, sid, {"summary": "legacy", "coveredUpTo": 3})
        store.delete_metadata(NS, sid)  # a clear, while a compression ran

        assert commit(store, sid, expect_generation="").fenced == "generation"

    def test_a_record_with_a_native_artifact_commits_reads_back_and_fences(
        self, store: Any, sid: str
    ) -> None:
        block = {
            "type": "compaction",
            "content": "Likes tea \u2615; \u05e9\u05dc\u05d5\u05dd.",
            "signature": "c2ln",
            "tool_changes": [],
            "later_field": {"nested": [1, None, "x", 2.5, True]},
        }
        native = NativeArtifact("anthropic", "claude-haiku-4-5", block)

        stored = commit_native(store, sid, native)

        assert stored["native"]["block"] == block

    def test_a_record_with_an_openai_item_commits_reads_back_and_fences(
        self, store: Any, sid: str
    ) -> None:
        item = {
            "id": "cmp_1",
            "type": "compaction",
            "encrypted_content": "gAAAAB" + "x" * 4000 + "==",
            "created_by": None,
        }
        native = NativeArtifact(
            "openai",
            "gpt-5.4-mini",
            item,
            "Pinned: tea.",
            lead=(
                {"type": "message", "role": "user", "content": "I like tea."},
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "我喜欢茶"}],
                },
            ),
        )

        stored = commit_native(store, sid, native)

        assert stored["native"]["block"] == item
        assert stored["native"]["lead"][1]["content"][0]["text"] == "我喜欢茶"

    def test_an_expired_lease_fences_the_commit(
        self, store: Any, sid: str, compressing: Any
    ) -> None:
        store.release_lease(sid, compressing[1])
        short = store.acquire_lease(sid, owner="slow", ttl_s=0.05)
        taker = poll_until_acquired(store, sid, owner="taker")

        assert taker is not None
        assert commit(store, sid, expect_generation="g1", lease=short).fenced == "lease"
        assert commit(store, sid, expect_generation="g1", lease=taker).committed

    def test_expect_archived_needs_a_through_id(self, store: Any, sid: str) -> None:
        with pytest.raises(ValueError, match="through_id"):
            commit(store, sid, expect_archived=3)

    @pytest.mark.parametrize("before", [None, "g0"], ids=["first-record", "replacing"])
    def test_racing_commits_with_one_expected_generation_let_one_through(
        self, store: Any, sid: str, before: Any
    ) -> None:
        save(store, sid, 2)
        if before is not None:
            assert commit(store, sid, record={"generation": before}).committed
        racers = 8
        barrier = threading.Barrier(racers)

        def race(index):
            barrier.wait()
            return commit(
                store,
                sid,
                expect_generation=before,
                record={"generation": f"g-{index}"},
            )

        with ThreadPoolExecutor(racers) as pool:
            results = list(pool.map(race, range(racers)))

        winners = [i for i, r in enumerate(results) if r.committed]
        assert len(winners) == 1
        assert {r.fenced for r in results if not r.committed} == {"generation"}
        assert store.get_metadata(NS, sid) == {"generation": f"g-{winners[0]}"}

    def test_forget_erases_the_session_and_nothing_else(
        self, store: Any, sid: str, compressing: Any
    ) -> None:
        saved, _ = compressing
        other = f"{sid}-other"
        kept = save(store, other, 2)
        store.save_metadata(NS, other, {"generation": "o"})
        store.save_metadata("quarantine", sid, {"x": 1})
        store.save_metadata("unrelated", sid, {"y": 2})
        store.trim_history(sid, 2)
        if hasattr(store, "save_archive_message"):
            store.save_archive_message(sid, marker(4))
            store.save_archive_message(other, marker(0))

        deleted = store.forget_session(sid, namespaces=[NS, "quarantine"])

        assert deleted == len(saved)
        assert store.get_full_history(sid) == []
        assert store.count_history(sid) == 0
        assert store.get_metadata(NS, sid) is None
        assert store.get_metadata("quarantine", sid) is None
        assert store.get_metadata("unrelated", sid) == {"y": 2}
        assert store.get_full_history(other) == kept
        assert store.get_metadata(NS, other) == {"generation": "o"}
        assert store.acquire_lease(sid, owner="next", ttl_s=60) is not None
        if hasattr(store, "archive_messages"):
            assert store.archive_messages(sid) == []
            assert len(store.archive_messages(other)) == 1

    @pytest.mark.parametrize(
        ("overrides", "reason"),
        [
            ({"expect_generation": "g1"}, "lease"),
            ({"expect_generation": "g1", "lease": None}, "generation"),
        ],
        ids=["with-lease", "without-lease"],
    )
    def test_a_compression_that_spans_a_forget_commits_nothing(
        self, store: Any, sid: str, compressing: Any, overrides: Any, reason: Any
    ) -> None:
        saved, lease = compressing
        arguments = {
            "through_id": saved[3].id,
            "expect_archived": 4,
            "lease": lease,
            **overrides,
        }

        store.forget_session(sid, namespaces=[NS])
        result = commit(store, sid, **arguments)

        assert result.fenced == reason
        assert store.get_full_history(sid) == []
        assert store.get_metadata(NS, sid) is None

    def test_a_first_compression_that_spans_a_forget_is_fenced_by_the_count(
        self, store: Any, sid: str
    ) -> None:
        saved = save(store, sid, 4)

        store.forget_session(sid, namespaces=[NS])
        result = commit(store, sid, through_id=saved[-1].id, expect_archived=4)

        assert result.fenced == "archive"
        assert store.get_metadata(NS, sid) is None

    def test_forget_of_an_unknown_session_deletes_nothing(
        self, store: Any, sid: str
    ) -> None:
        assert store.forget_session(sid, namespaces=[NS]) == 0

    def test_forget_wants_a_sequence_of_namespaces(self, store: Any, sid: str) -> None:
        with pytest.raises(TypeError, match="namespaces"):
            store.forget_session(sid, namespaces=NS)
