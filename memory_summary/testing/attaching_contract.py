"""The commit's attached record and the lease's release (``CommitRequest``).

Part of ``contract.StoreContract``. What ``attach`` and ``release_lease`` add to the
fenced commit, in the commit's own transaction and only when the commit applies: a
second record written if its stored one still carries the generation expected (else
left as it is, the commit applying regardless), and the lease dropped.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_summary.domain import (
    AttachedRecord,
    CommitResult,
    EncodedRecord,
    StoreError,
)

from .fencing_contract import NS, commit, snapshot, start_compressing

SIDE = "lineage"
"""The attached record's namespace in these tests."""


def _commit(store: Any, sid: str, **overrides: Any) -> CommitResult:
    arguments: dict[str, Any] = {
        "record": {"generation": "g2", "text": "summary"},
        "expect_generation": "g1",
        **overrides,
    }
    return commit(store, sid, **arguments)


def _side(generation: str, expect: str | None) -> AttachedRecord:
    return AttachedRecord(SIDE, {"generation": generation, "v": [1, 2]}, expect)


class AttachingContract:
    """``commit``'s attached record and lease release, fenced with the commit."""

    def test_an_encoded_attached_record_reads_back_as_its_json(
        self, store: Any, sid: str
    ) -> None:
        """An ``EncodedRecord`` (the lineage) reads back as what its JSON says."""
        _, lease = start_compressing(store, sid)
        side = {"generation": "l1", "v": [1, {"k": "é"}]}
        encoded = EncodedRecord(side, json.dumps(side, ensure_ascii=False))

        result = _commit(
            store, sid, lease=lease, attach=AttachedRecord(SIDE, encoded, None)
        )

        assert result.attached
        assert store.get_metadata(SIDE, sid) == side

    def test_the_attached_record_and_the_release_commit_with_the_summary(
        self, store: Any, sid: str
    ) -> None:
        saved, lease = start_compressing(store, sid)

        result = _commit(
            store,
            sid,
            through_id=saved[2].id,
            expect_archived=3,
            lease=lease,
            attach=_side("l1", None),
            release_lease=True,
        )

        assert result == CommitResult(archived=3, attached=True, released=True)
        assert store.get_history(sid) == saved[3:]
        assert store.get_metadata(NS, sid) == {"generation": "g2", "text": "summary"}
        assert store.get_metadata(SIDE, sid) == {"generation": "l1", "v": [1, 2]}
        assert sid in store.list_metadata(SIDE)
        assert store.lease_owner(sid) is None
        assert store.acquire_lease(sid, owner="next", ttl_s=60) is not None

    def test_an_attached_record_is_replaced_only_over_its_expected_generation(
        self, store: Any, sid: str
    ) -> None:
        _, lease = start_compressing(store, sid)
        store.save_metadata(SIDE, sid, {"generation": "l1", "v": []})

        stale = _commit(store, sid, lease=lease, attach=_side("l2", "l0"))
        fresh = _commit(
            store,
            sid,
            record={"generation": "g3"},
            expect_generation="g2",
            lease=lease,
            attach=_side("l2", "l1"),
        )

        assert stale == CommitResult(attached=False)  # the commit itself applied
        assert fresh == CommitResult(attached=True)
        assert store.get_metadata(NS, sid) == {"generation": "g3"}
        assert store.get_metadata(SIDE, sid) == {"generation": "l2", "v": [1, 2]}

    def test_an_attached_record_expected_missing_is_not_written_over_one(
        self, store: Any, sid: str
    ) -> None:
        _, lease = start_compressing(store, sid)
        store.save_metadata(SIDE, sid, {"text": "a foreign writer's, no generation"})

        missing = _commit(store, sid, lease=lease, attach=_side("l1", None))
        untagged = _commit(
            store,
            sid,
            record={"generation": "g3"},
            expect_generation="g2",
            lease=lease,
            attach=_side("l1", ""),  # a record without a generation reads as ""
        )

        assert (missing.attached, untagged.attached) == (False, True)
        assert store.get_metadata(SIDE, sid) == {"generation": "l1", "v": [1, 2]}

    @pytest.mark.parametrize(
        ("overrides", "reason"),
        [
            ({"lease": "not-the-token"}, "lease"),
            ({"expect_generation": "g0"}, "generation"),
            ({"expect_archived": 2}, "archive"),
        ],
        ids=["lease", "generation", "archive"],
    )
    def test_a_fenced_commit_writes_no_attached_record_and_keeps_the_lease(
        self, store: Any, sid: str, overrides: Any, reason: Any
    ) -> None:
        saved, lease = start_compressing(store, sid)
        before = snapshot(store, sid)
        arguments = {
            "through_id": saved[2].id,
            "expect_archived": 3,
            "lease": lease,
            "attach": _side("l1", None),
            "release_lease": True,
            **overrides,
        }

        result = _commit(store, sid, **arguments)

        assert result == CommitResult(fenced=reason)
        assert snapshot(store, sid) == before
        assert store.get_metadata(SIDE, sid) is None
        assert store.lease_owner(sid) == "compressor"
        assert store.renew_lease(sid, lease, ttl_s=60)

    def test_without_release_the_lease_stays_held(self, store: Any, sid: str) -> None:
        _, lease = start_compressing(store, sid)

        result = _commit(store, sid, lease=lease, attach=_side("l1", None))

        assert result == CommitResult(attached=True)
        assert store.lease_owner(sid) == "compressor"

    @pytest.mark.parametrize(
        ("overrides", "error"),
        [
            ({"release_lease": True}, ValueError),  # no lease to release
            ({"attach": AttachedRecord(NS, {"generation": "x"}, None)}, ValueError),
            ({"attach": AttachedRecord(SIDE, {"bad": {1, 2}}, None)}, StoreError),
            ({"attach": {"namespace": SIDE}}, TypeError),
        ],
        ids=["release-without-lease", "same-namespace", "not-json", "not-a-record"],
    )
    def test_bad_arguments_are_refused_before_anything_is_written(
        self, store: Any, sid: str, overrides: Any, error: type[Exception]
    ) -> None:
        start_compressing(store, sid)
        before = snapshot(store, sid)

        with pytest.raises(error):
            _commit(store, sid, **overrides)

        assert snapshot(store, sid) == before
        assert store.get_metadata(SIDE, sid) is None
        assert store.lease_owner(sid) == "compressor"
