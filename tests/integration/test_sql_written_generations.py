"""A SQL commit reads the generation of the text it wrote without decoding it, exactly.

``WrittenGenerations`` keeps the text a store last wrote per record: a stored row with
that very text has its generation. Whatever another writer put there instead (another
process on the same file here: a raw connection), even with the same generation, or
text that is no JSON, is read in full, so the fence and the attached record behave as
they would without it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_summary import Message
from memory_summary.adapters import SqliteStore
from memory_summary.adapters.stores.sql.fence import (
    DecodedRecords,
    Fenced,
    WrittenGenerations,
)
from memory_summary.domain import (
    AttachedRecord,
    CommitRequest,
    EncodedRecord,
    MalformedRecord,
)

NS, SIDE, SID = "summary", "summary.versions", "s"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite3"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(path)
    yield opened
    opened.close()


def _foreign(path: Path, namespace: str, text: str) -> None:
    """Write a record's row as another process would: not through this store."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(
            "UPDATE metadata SET data = ? WHERE namespace = ? AND key = ?",
            (text, namespace, SID),
        )
    finally:
        conn.close()


def _stored(path: Path, namespace: str) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(
            conn.execute(
                "SELECT data FROM metadata WHERE namespace = ? AND key = ?",
                (namespace, SID),
            ).fetchone()[0]
        )
    finally:
        conn.close()


def _side(generation: str) -> EncodedRecord:
    record = {"generation": generation, "versions": [], "ranges": []}
    return EncodedRecord(record, json.dumps(record, ensure_ascii=False))


@pytest.fixture(params=["unleased", "leased"])
def lease(request: pytest.FixtureRequest, store: SqliteStore) -> str | None:
    """No lease, or one held through the test: a leased commit reads the records
    with the lease, in one statement."""
    if request.param == "unleased":
        return None
    token = store.acquire_lease(SID, owner="test", ttl_s=3600)
    assert token is not None
    return token


def _commit(
    store: SqliteStore,
    lease: str | None,
    expect: str | None,
    generation: str,
    *,
    side: tuple[str | None, str] | None = None,
):
    attach = None
    if side is not None:
        attach = AttachedRecord(SIDE, _side(side[1]), side[0])
    return store.commit(
        CommitRequest(
            session_id=SID,
            namespace=NS,
            record={"generation": generation, "text": f"summary {generation}"},
            expect_generation=expect,
            attach=attach,
            lease=lease,
        )
    )


def test_a_record_rewritten_by_another_writer_fences_the_commit(store, path, lease):
    assert _commit(store, lease, None, "g1").committed
    _foreign(path, NS, json.dumps({"generation": "g2", "text": "theirs"}))

    assert _commit(store, lease, "g1", "g3").fenced == "generation"
    assert json.loads(_stored(path, NS))["generation"] == "g2"
    assert _commit(store, lease, "g2", "g3").committed


def test_the_same_generation_in_other_text_is_read_in_full(store, path, lease):
    assert _commit(store, lease, None, "g1").committed
    _foreign(
        path, NS, json.dumps({"text": "reformatted", "generation": "g1"}, indent=2)
    )

    assert _commit(store, lease, "g1", "g2").committed
    assert json.loads(_stored(path, NS))["generation"] == "g2"


def test_a_record_corrupted_since_it_was_written_fences_and_stays(store, path, lease):
    assert _commit(store, lease, None, "g1").committed
    _foreign(path, NS, "{not json")

    assert _commit(store, lease, "g1", "g2").fenced == "generation"
    assert _stored(path, NS) == "{not json"


def test_an_attached_record_rewritten_by_another_writer_is_left_alone(
    store, path, lease
):
    first = _commit(store, lease, None, "g1", side=(None, "l1"))
    assert first.committed
    assert first.attached
    theirs = json.dumps({"generation": "l2", "versions": [], "ranges": []})
    _foreign(path, SIDE, theirs)

    stale = _commit(store, lease, "g1", "g2", side=("l1", "l3"))
    assert stale.committed
    assert not stale.attached
    assert _stored(path, SIDE) == theirs
    fresh = _commit(store, lease, "g2", "g3", side=("l2", "l3"))
    assert fresh.attached
    assert json.loads(_stored(path, SIDE))["generation"] == "l3"


def test_an_attached_record_corrupted_since_it_was_written_is_left_alone(
    store, path, lease
):
    assert _commit(store, lease, None, "g1", side=(None, "l1")).attached
    _foreign(path, SIDE, '["no", "object"]')

    result = _commit(store, lease, "g1", "g2", side=("l1", "l2"))
    assert result.committed
    assert not result.attached
    assert _stored(path, SIDE) == '["no", "object"]'


def test_save_metadata_is_remembered_as_what_it_wrote(store, path, lease):
    store.save_metadata(NS, SID, {"generation": "g1", "text": "mine"})
    assert _commit(store, lease, "g1", "g2").committed
    store.save_metadata(NS, SID, {"generation": "g3", "text": "mine"})

    assert _commit(store, lease, "g2", "g4").fenced == "generation"
    _foreign(path, NS, json.dumps({"generation": "g5"}))
    assert _commit(store, lease, "g3", "g4").fenced == "generation"


def test_a_store_reopened_on_the_file_reads_what_the_other_wrote(store, path, lease):
    assert _commit(store, lease, None, "g1", side=(None, "l1")).attached
    other = SqliteStore(path)
    try:
        assert other.commit(
            CommitRequest(
                session_id=SID,
                namespace=NS,
                record={"generation": "g2"},
                expect_generation="g1",
                attach=AttachedRecord(SIDE, _side("l2"), "l1"),
            )
        ).attached
    finally:
        other.close()

    assert _commit(store, lease, "g1", "g3").fenced == "generation"
    assert not _commit(store, lease, "g2", "g3", side=("l1", "l3")).attached
    assert _commit(store, lease, "g3", "g4", side=("l2", "l4")).attached


def test_messages_archived_by_a_fenced_commit_stay_active(store, path, lease):
    """The fence rolls back what the commit archived before it, as always."""
    saved = [store.save_message(SID, Message("user", f"m{i}")) for i in range(3)]
    assert _commit(store, lease, None, "g1").committed
    _foreign(path, NS, json.dumps({"generation": "g9"}))

    result = store.commit(
        CommitRequest(
            session_id=SID,
            namespace=NS,
            record={"generation": "g2"},
            expect_generation="g1",
            through_id=saved[-1].id,
            expect_archived=3,
        )
    )
    assert result.fenced == "generation"
    assert store.count_history(SID) == 3


# -- the memo alone


def test_the_text_written_gives_its_generation_without_decoding():
    memo = WrittenGenerations()
    text = json.dumps({"generation": "g1"})
    memo.wrote(NS, SID, text, {"generation": "g1"})

    assert memo.generation(NS, SID, (text,)) == "g1"
    assert memo.generation(NS, SID, (json.dumps({"generation": "g2"}),)) == "g2"
    assert memo.generation(NS, SID, None) is None
    assert memo.generation(NS, "other", (json.dumps({}),)) == ""
    with pytest.raises(Fenced):
        memo.generation(NS, SID, ("{",))


def test_only_records_whose_json_is_known_exactly_are_remembered():
    from types import MappingProxyType

    memo = WrittenGenerations()
    memo.wrote(NS, SID, '{"generation": "g1"}', {"generation": "g1"})
    # another mapping could answer .get differently from what it encoded: forgotten
    memo.wrote(NS, SID, '{"generation": "x"}', MappingProxyType({"generation": "y"}))

    assert memo.chars == 0
    assert memo.generation(NS, SID, ('{"generation": "x"}',)) == "x"


def test_the_memo_keeps_at_most_its_characters_oldest_written_first():
    memo = WrittenGenerations(max_chars=60)
    texts = {key: json.dumps({"generation": key * 3}) for key in "abc"}  # 21 each
    for key, text in texts.items():
        memo.wrote(NS, key, text, {"generation": key * 3})

    assert memo.chars == 42  # "a" went first
    big = json.dumps({"generation": "z" * 80})
    memo.wrote(NS, "b", big, {"generation": "z" * 80})  # too large: not kept
    assert memo.chars == 21  # "c" alone
    # what is not kept is decoded: the answers never change
    for key, text in texts.items():
        assert memo.generation(NS, key, (text,)) == key * 3
    assert memo.generation(NS, "b", (big,)) == "z" * 80


def test_an_undecodable_record_fences_only_after_a_lost_lease(store, path):
    """The order holds with both reads in one statement: the lease comes first."""
    assert _commit(store, None, None, "g1", side=(None, "l1")).attached
    _foreign(path, NS, "{not json")
    _foreign(path, SIDE, "{not json")
    token = store.acquire_lease(SID, owner="test", ttl_s=3600)
    assert token is not None

    assert _commit(store, token + "-lost", "g1", "g2").fenced == "lease"
    assert _commit(store, token, "g1", "g2").fenced == "generation"
    _foreign(path, NS, json.dumps({"generation": "g1"}))
    result = _commit(store, token, "g1", "g2", side=("l1", "l2"))
    assert result.committed
    assert not result.attached
    assert _stored(path, SIDE) == "{not json"


# -- reading a record the store wrote


def test_a_record_read_twice_is_decoded_into_independent_copies(store, path):
    store.save_metadata(NS, SID, {"generation": "g1", "list": [1, {"a": 2}]})
    first = store.get_metadata(NS, SID)
    assert first == {"generation": "g1", "list": [1, {"a": 2}]}
    first["list"][1]["a"] = 99  # type: ignore[index]
    first["added"] = True

    second = store.get_metadata(NS, SID)
    assert second == {"generation": "g1", "list": [1, {"a": 2}]}
    second["list"].append(3)  # type: ignore[union-attr]
    assert store.get_metadata(NS, SID) == {"generation": "g1", "list": [1, {"a": 2}]}
    _, record = store.read_window(SID, limit=5, namespace=NS)
    assert record == {"generation": "g1", "list": [1, {"a": 2}]}


def test_a_record_another_writer_changed_is_read_as_it_is_now(store, path):
    store.save_metadata(NS, SID, {"generation": "g1"})
    assert store.get_metadata(NS, SID) == {"generation": "g1"}
    store.save_message(SID, Message("user", "hi"))

    _foreign(path, NS, json.dumps({"generation": "g2"}))
    assert store.get_metadata(NS, SID) == {"generation": "g2"}
    assert store.read_window(SID, limit=5, namespace=NS)[1] == {"generation": "g2"}
    _foreign(path, NS, "{not json")
    with pytest.raises(MalformedRecord):
        store.get_metadata(NS, SID)


def test_a_text_is_decoded_once_into_copies_of_the_callers_own():
    memo = DecodedRecords()
    text = json.dumps({"generation": "g1", "list": [1, {"a": 2}]})
    first = memo.decoded(NS, SID, text)
    first["list"][1]["a"] = 99  # type: ignore[index]

    second = memo.decoded(NS, SID, text)
    assert second == json.loads(text)
    assert second is not first
    other = json.dumps({"generation": "g2"})
    assert memo.decoded(NS, SID, other) == {"generation": "g2"}  # the text changed
    assert memo.decoded(NS, SID, text) == json.loads(text)
    with pytest.raises(MalformedRecord):
        memo.decoded(NS, SID, "{not json")
    assert memo.decoded(NS, SID, text) == json.loads(text)


def test_the_decoded_memo_keeps_at_most_its_characters_least_used_first():
    text = json.dumps({"generation": "g1", "text": "x" * 20})
    size = len(text)
    memo = DecodedRecords(max_chars=8 * size)
    for key in "abcdefgh":
        memo.decoded(NS, key, text)
    assert memo.chars == 8 * size
    memo.decoded(NS, "a", text)  # used: "b" is now the least recently used
    memo.decoded(NS, "i", text)
    assert memo.chars == 8 * size
    big = json.dumps({"generation": "g1", "text": "x" * 4 * size})  # over half
    assert memo.decoded(NS, "j", big) == json.loads(big)
    assert memo.chars == 8 * size


def test_a_megabyte_summary_is_decoded_once_for_every_read(store, path, monkeypatch):
    """Before, a record over 500,000 characters was decoded at every read: 100
    reads of a 1 MB summary took about 230 ms, now about 8 ms. Another store
    reading the same text (another process) decodes it once too."""
    import memory_summary.adapters.stores.sql.fence as fence

    record = {"generation": "g1", "text": "word " * 200_000}
    store.save_metadata(NS, SID, record)
    decoded: list[object] = []
    real = fence.decode_record

    def counting(namespace: str, key: str, raw: object) -> dict[str, object]:
        decoded.append(raw)
        return real(namespace, key, raw)

    monkeypatch.setattr(fence, "decode_record", counting)
    other = SqliteStore(path)
    try:
        reads = [s.get_metadata(NS, SID) for s in (store, other) for _ in range(20)]
    finally:
        other.close()

    assert len(decoded) == 2  # once by each store
    assert all(read == record for read in reads)
    assert store._decoded.chars >= 1_000_000  # type: ignore[attr-defined]


def test_an_attached_record_written_is_read_back_without_decoding(
    store, path, lease, monkeypatch
):
    """The lineage a commit attaches (an ``EncodedRecord``) is kept as written: the
    next read of that very text decodes nothing and gets plain containers of its
    own; a text another writer put there instead is decoded."""
    side = EncodedRecord(
        {"generation": "v1", "versions": [{"summary": "s", "n": [1, 2]}]},
        json.dumps({"generation": "v1", "versions": [{"summary": "s", "n": [1, 2]}]}),
    )
    store.commit(
        CommitRequest(
            session_id=SID,
            namespace=NS,
            record={"generation": "g1"},
            expect_generation=None,
            attach=AttachedRecord(SIDE, side, None),
            lease=lease,
        )
    )
    import memory_summary.adapters.stores.sql.fence as fence

    decoded: list[object] = []
    real = fence.decode_record

    def counting(namespace: str, key: str, raw: object) -> dict[str, object]:
        decoded.append(raw)
        return real(namespace, key, raw)

    monkeypatch.setattr(fence, "decode_record", counting)
    first = store.get_metadata(SIDE, SID)
    assert decoded == []
    assert first == json.loads(side.json_text)
    assert type(first) is dict
    assert type(first["versions"]) is list
    assert type(first["versions"][0]) is dict  # type: ignore[index]
    first["versions"][0]["n"].append(3)  # type: ignore[index]
    assert store.get_metadata(SIDE, SID) == json.loads(side.json_text)

    _foreign(path, SIDE, json.dumps({"generation": "v2"}))
    assert store.get_metadata(SIDE, SID) == {"generation": "v2"}
    assert len(decoded) == 1


def test_only_an_encoded_record_is_kept_as_written():
    memo = DecodedRecords()
    plain = {"generation": "g1", "pair": (1, 2)}  # a tuple: its JSON reads a list
    memo.wrote(NS, "a", json.dumps(plain), plain)
    assert memo.chars == 0
    encoded = _side("g2")
    memo.wrote(NS, "b", json.dumps({"other": 1}), encoded)  # not its JSON
    assert memo.chars == 0
    memo.wrote(NS, "b", encoded.json_text, encoded)
    assert memo.chars == len(encoded.json_text)
    assert memo.decoded(NS, "b", encoded.json_text) == json.loads(encoded.json_text)
