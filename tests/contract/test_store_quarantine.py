"""Rows a foreign writer left behind: reading them fails cleanly; they can be moved.

The SQL tests write with the bare driver, as another program sharing the database
would; ``InMemoryStore`` has no such writer, so it only runs the moving tests.
"""

from __future__ import annotations

import pytest

from memory_summary import StoreError
from memory_summary.adapters import SqliteStore
from memory_summary.domain import CommitRequest, MalformedRecord
from tests.contract.stores import read_raw_metadata, write_raw_metadata

NS, QUARANTINE = "summary", "summary-quarantine"
UNDECODABLE = {
    "invalid-json": "{not json",
    "json-string": '"just text"',
    "json-number": "42",
    "json-array": "[1, 2]",
    "json-null": "null",
    "empty": "",
}


@pytest.mark.parametrize("raw", UNDECODABLE.values(), ids=UNDECODABLE.keys())
def test_an_undecodable_record_raises_a_store_error_naming_it(foreign_store, sid, raw):
    write_raw_metadata(foreign_store, NS, sid, raw)

    with pytest.raises(MalformedRecord, match=f"metadata {NS}/{sid}") as caught:
        foreign_store.get_metadata(NS, sid)

    assert isinstance(caught.value, StoreError)
    assert sid in foreign_store.list_metadata(NS)


@pytest.mark.parametrize("raw", [42, 1.5, b"\xff\xfe", b'{"a": 1'], ids=repr)
def test_sqlite_values_that_are_not_json_text_are_malformed_too(tmp_path, sid, raw):
    store = SqliteStore(tmp_path / "typed.sqlite3")  # a SQLite column holds any type
    write_raw_metadata(store, NS, sid, raw)
    stored = read_raw_metadata(store, NS, sid)  # TEXT affinity turns numbers to text

    try:
        with pytest.raises(MalformedRecord, match=f"metadata {NS}/{sid}"):
            store.get_metadata(NS, sid)
        assert store.quarantine_metadata(NS, sid, QUARANTINE) is True
        assert read_raw_metadata(store, QUARANTINE, sid) == stored
    finally:
        store.close()


@pytest.mark.parametrize("raw", UNDECODABLE.values(), ids=UNDECODABLE.keys())
def test_quarantine_moves_the_raw_row_unchanged(foreign_store, sid, raw):
    write_raw_metadata(foreign_store, NS, sid, raw)

    moved = foreign_store.quarantine_metadata(NS, sid, QUARANTINE)

    assert moved is True
    assert foreign_store.get_metadata(NS, sid) is None
    assert read_raw_metadata(foreign_store, NS, sid) is None
    assert read_raw_metadata(foreign_store, QUARANTINE, sid) == raw


def test_quarantine_replaces_an_earlier_quarantined_row(foreign_store, sid):
    write_raw_metadata(foreign_store, QUARANTINE, sid, "old garbage")
    write_raw_metadata(foreign_store, NS, sid, "new garbage")

    assert foreign_store.quarantine_metadata(NS, sid, QUARANTINE) is True

    assert read_raw_metadata(foreign_store, QUARANTINE, sid) == "new garbage"


def test_after_quarantine_the_session_starts_afresh(foreign_store, sid):
    write_raw_metadata(foreign_store, NS, sid, "{broken")
    foreign_store.quarantine_metadata(NS, sid, QUARANTINE)

    result = foreign_store.commit(
        CommitRequest(
            session_id=sid,
            namespace=NS,
            record={"generation": "g1"},
            expect_generation=None,
        )
    )

    assert result.committed
    assert foreign_store.get_metadata(NS, sid) == {"generation": "g1"}


def test_quarantine_moves_a_readable_record_too(store, sid):
    store.save_metadata(NS, sid, {"generation": "g1", "text": "kept"})
    store.save_metadata(QUARANTINE, sid, {"older": True})

    assert store.quarantine_metadata(NS, sid, QUARANTINE) is True

    assert store.get_metadata(NS, sid) is None
    assert store.get_metadata(QUARANTINE, sid) == {"generation": "g1", "text": "kept"}


def test_quarantine_of_a_missing_row_moves_nothing(store, sid):
    store.save_metadata(QUARANTINE, sid, {"older": True})

    assert store.quarantine_metadata(NS, sid, QUARANTINE) is False

    assert store.get_metadata(QUARANTINE, sid) == {"older": True}


def test_quarantine_into_the_same_namespace_is_refused(store, sid):
    store.save_metadata(NS, sid, {"generation": "g1"})

    with pytest.raises(ValueError, match="to_namespace"):
        store.quarantine_metadata(NS, sid, NS)

    assert store.get_metadata(NS, sid) == {"generation": "g1"}
