"""The fenced commit beyond the contract: separators and foreign records (SQL stores).

The fencing contract itself (and forget_session) is part of
``memory_summary.testing.contract.StoreContract``, run on every store by
``test_store_contract.py``.

A commit applies everything or nothing: a lost lease, a changed record generation or
a different number of messages to archive each fence it, and a fenced commit leaves
history, record, archive and separator untouched.
"""

from __future__ import annotations

import pytest

from memory_summary import Message, StoreError
from memory_summary.adapters import InMemoryStore
from memory_summary.domain import AttachedRecord, CommitRequest, CommitResult
from memory_summary.testing.fencing_contract import (
    NS,
    commit,
    marker,
    save,
    snapshot,
    start_compressing,
)
from tests.contract.stores import read_raw_metadata, write_raw_metadata


def test_the_separator_is_written_only_by_a_commit(sql_store, sid):
    store = sql_store
    saved, lease = start_compressing(store, sid)
    calls = []

    def separator(archived):
        calls.append(archived)
        return marker(archived)

    fenced = commit(
        store,
        sid,
        expect_generation="g0",
        through_id=saved[1].id,
        expect_archived=2,
        lease=lease,
        separator=separator,
    )
    committed = commit(
        store,
        sid,
        expect_generation="g1",
        through_id=saved[1].id,
        expect_archived=2,
        lease=lease,
        separator=separator,
    )

    assert fenced.fenced == "generation"
    assert committed == CommitResult(archived=2)
    assert calls == [2]
    assert [m.content for m in store.archive_messages(sid)] == ["[compressed 2]"]


def test_a_separator_may_decline_to_write(sql_store, sid):
    store = sql_store
    save(store, sid, 2)

    result = commit(store, sid, separator=lambda archived: None)

    assert result.committed
    assert store.archive_messages(sid) == []


def test_the_in_memory_store_refuses_a_separator(sid):
    store = InMemoryStore()

    with pytest.raises(ValueError, match="no archive"):
        commit(store, sid, separator=marker)


def test_a_failing_separator_undoes_the_commit(sql_store, sid):
    store = sql_store
    saved, lease = start_compressing(store, sid)
    before = snapshot(store, sid)

    def broken(archived):
        return Message("system", "marker", metadata={"bad": {1, 2}})

    with pytest.raises(StoreError, match="metadata"):
        commit(
            store,
            sid,
            expect_generation="g1",
            through_id=saved[1].id,
            expect_archived=2,
            lease=lease,
            separator=broken,
        )

    assert snapshot(store, sid) == before


def test_an_undecodable_record_fences_and_is_never_overwritten(foreign_store, sid):
    store = foreign_store
    write_raw_metadata(store, NS, sid, "{not json")

    assert commit(store, sid, expect_generation=None).fenced == "generation"
    assert read_raw_metadata(store, NS, sid) == "{not json"


# -- forget_session


@pytest.mark.parametrize(
    "raw",
    ["not json", "[1, 2]", '{"generation": "l1"', '"a string"'],
    ids=["text", "array", "cut-short", "json-string"],
)
def test_an_undecodable_attached_record_is_left_as_it_is_and_the_commit_applies(
    foreign_store, sid, raw
):
    store = foreign_store
    saved, lease = start_compressing(store, sid)
    write_raw_metadata(store, "lineage", sid, raw)

    result = store.commit(
        CommitRequest(
            session_id=sid,
            namespace=NS,
            record={"generation": "g2"},
            expect_generation="g1",
            through_id=saved[1].id,
            expect_archived=2,
            lease=lease,
            attach=AttachedRecord("lineage", {"generation": "l2"}, None),
            release_lease=True,
        )
    )

    assert result == CommitResult(archived=2, attached=False, released=True)
    # left for the reader to quarantine
    assert read_raw_metadata(store, "lineage", sid) == raw
    assert store.get_metadata(NS, sid) == {"generation": "g2"}
    assert store.lease_owner(sid) is None


def test_commit_takes_a_commit_request_and_nothing_else(store, sid):
    saved = save(store, sid, 2)

    with pytest.raises(TypeError, match="CommitRequest"):
        store.commit({"session_id": sid, "namespace": NS, "record": {}})

    assert store.get_history(sid) == saved
    assert store.get_metadata(NS, sid) is None
