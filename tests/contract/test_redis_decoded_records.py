"""RedisStore decodes a record's bytes once: the next reads of the same bytes copy.

``DecodedRecords`` keeps, per record, the bytes last read and their mapping; a read
whose bytes equal them gets a copy, any other bytes (another writer's) are decoded.
"""

from __future__ import annotations

import json

import pytest

from memory_summary import Message
from memory_summary.adapters.stores.redis import records
from memory_summary.adapters.stores.redis.records import DecodedRecords
from memory_summary.domain import (
    AttachedRecord,
    CommitRequest,
    EncodedRecord,
    MalformedRecord,
)
from tests.contract.stores import dispose, make_redis

NS, SID = "summary", "s1"


@pytest.fixture
def store(redis_server):
    made = make_redis()
    yield made
    dispose(made)


@pytest.fixture
def decodings(monkeypatch) -> list[object]:
    """The raw values ``DecodedRecords`` decodes from now on."""
    seen: list[object] = []
    real = records.decode_record

    def counting(namespace: str, key: str, raw: object) -> dict[str, object]:
        seen.append(raw)
        return real(namespace, key, raw)

    monkeypatch.setattr(records, "decode_record", counting)
    return seen


def _foreign(store, text: str) -> None:
    """Write the record's key as another program would (no script of the store)."""
    store._client.set(store._record(NS, SID), text)


def test_a_megabyte_summary_is_decoded_once_for_every_read(store, decodings):
    """Before, each read decoded the record: 100 reads of a 1 MB summary cost about
    6.6 ms of the client's CPU each, now about 2.4 ms (the bytes still cross the
    socket and are compared whole)."""
    record = {"generation": "g1", "text": "word " * 200_000}
    store.save_metadata(NS, SID, record)
    store.save_message(SID, Message("user", "hi"))

    reads = [store.get_metadata(NS, SID) for _ in range(10)]
    reads += [store.read_window(SID, limit=5, namespace=NS)[1] for _ in range(5)]
    reads += [store.span_and_metadata(SID, NS)[1] for _ in range(5)]

    assert len(decodings) == 1
    assert all(read == record for read in reads)
    assert store._decoded.size >= 1_000_000


def test_each_read_gets_a_mapping_of_its_own(store):
    store.save_metadata(NS, SID, {"generation": "g1", "list": [1, {"a": 2}]})
    first = store.get_metadata(NS, SID)
    first["list"][1]["a"] = 99
    first["new"] = True

    second = store.get_metadata(NS, SID)
    assert second == {"generation": "g1", "list": [1, {"a": 2}]}
    assert second is not first
    second["list"].append(3)
    assert store.span_and_metadata(SID, NS)[1] == {
        "generation": "g1",
        "list": [1, {"a": 2}],
    }


def test_a_record_another_writer_changed_is_read_as_it_is_now(store, decodings):
    store.save_metadata(NS, SID, {"generation": "g1"})
    assert store.get_metadata(NS, SID) == {"generation": "g1"}

    _foreign(store, json.dumps({"generation": "g2"}))
    assert store.get_metadata(NS, SID) == {"generation": "g2"}
    assert store.read_window(SID, limit=5, namespace=NS)[1] == {"generation": "g2"}
    store.save_metadata(NS, SID, {"generation": "g3"})  # the store's own write
    assert store.span_and_metadata(SID, NS)[1] == {"generation": "g3"}
    _foreign(store, "{not json")
    with pytest.raises(MalformedRecord):
        store.get_metadata(NS, SID)
    with pytest.raises(MalformedRecord):
        store.span_and_metadata(SID, NS)
    assert store.delete_metadata(NS, SID)
    assert store.get_metadata(NS, SID) is None
    assert len(decodings) == 5  # g1, g2, g3, and the broken text twice


def test_the_memo_decodes_equal_bytes_once_and_other_bytes_again(decodings):
    memo = DecodedRecords()
    raw = json.dumps({"generation": "g1", "list": [1, {"a": 2}]}).encode()
    first = memo.decoded(NS, SID, raw)
    first["list"][1]["a"] = 99

    assert memo.decoded(NS, SID, bytes(raw)) == json.loads(raw)  # equal, not same
    assert memo.decoded(NS, SID, b'{"generation": "g2"}') == {"generation": "g2"}
    assert memo.decoded(NS, SID, raw) == json.loads(raw)
    with pytest.raises(MalformedRecord):
        memo.decoded(NS, SID, b"{not json")
    assert memo.decoded(NS, SID, raw) == json.loads(raw)  # kept through the failure
    assert memo.decoded(NS, SID, raw.decode()) == json.loads(raw)  # str: decoded
    assert len(decodings) == 5


def test_the_memo_keeps_at_most_its_bytes_least_used_first():
    raw = json.dumps({"generation": "g1", "text": "x" * 20}).encode()
    size = len(raw)
    memo = DecodedRecords(max_bytes=8 * size)
    for key in "abcdefgh":
        memo.decoded(NS, key, raw)
    assert memo.size == 8 * size
    memo.decoded(NS, "a", raw)  # used: "b" is now the least recently used
    memo.decoded(NS, "i", raw)
    assert memo.size == 8 * size
    assert ("summary", "b") not in memo._kept
    assert ("summary", "a") in memo._kept
    big = json.dumps({"generation": "g1", "text": "x" * 4 * size}).encode()
    assert memo.decoded(NS, "a", big) == json.loads(big)  # over half: not kept
    assert memo.size == 7 * size
    assert ("summary", "a") not in memo._kept


def _encoded(generation: str) -> EncodedRecord:
    record = {"generation": generation, "versions": [{"summary": "s", "n": [1, 2]}]}
    return EncodedRecord(record, json.dumps(record, ensure_ascii=False))


def test_an_attached_record_written_is_read_back_without_decoding(store, decodings):
    """The lineage a commit attaches (an ``EncodedRecord``) is kept as written: the
    next read of its bytes decodes nothing and gets plain containers of its own;
    bytes another writer put there instead are decoded."""
    side = _encoded("v1")
    result = store.commit(
        CommitRequest(
            session_id=SID,
            namespace=NS,
            record={"generation": "g1"},
            expect_generation=None,
            attach=AttachedRecord("lineage", side, None),
        )
    )
    assert result.attached

    first = store.get_metadata("lineage", SID)
    assert decodings == []
    assert first == json.loads(side.json_text)
    assert type(first) is dict
    assert type(first["versions"]) is list
    assert type(first["versions"][0]) is dict
    first["versions"][0]["n"].append(3)
    assert store.get_metadata("lineage", SID) == json.loads(side.json_text)
    assert store.get_metadata(NS, SID) == {"generation": "g1"}  # a dict: decoded
    assert len(decodings) == 1

    store._client.set(store._record("lineage", SID), json.dumps({"generation": "v2"}))
    assert store.get_metadata("lineage", SID) == {"generation": "v2"}
    assert len(decodings) == 2


def test_a_fenced_commit_keeps_nothing_of_what_it_did_not_write(store, decodings):
    store.save_metadata(NS, SID, {"generation": "g0"})
    fenced = store.commit(
        CommitRequest(
            session_id=SID,
            namespace=NS,
            record=_encoded("g1"),
            expect_generation="other",
        )
    )
    assert fenced.fenced

    assert store.get_metadata(NS, SID) == {"generation": "g0"}
    assert len(decodings) == 1


def test_only_an_encoded_record_is_kept_as_written():
    memo = DecodedRecords()
    plain = {"generation": "g1", "pair": (1, 2)}  # a tuple: its JSON reads a list
    memo.wrote(NS, "a", json.dumps(plain), plain)
    assert memo.size == 0
    encoded = _encoded("g2")
    memo.wrote(NS, "b", json.dumps({"other": 1}), encoded)  # not its JSON
    assert memo.size == 0
    memo.wrote(NS, "b", encoded.json_text, encoded)
    raw = encoded.json_text.encode()
    assert memo.size == len(raw)
    assert memo.decoded(NS, "b", raw) == json.loads(raw)


def _lineage_shaped(ranges: int) -> dict[str, object]:
    """Like a lineage: a little text and many small lists (20 bytes apiece)."""
    return {
        "generation": "g1",
        "versions": [{"summary": "facts " * 150, "n": i} for i in range(8)],
        "ranges": [[i, i * 10, i * 10 + 9] for i in range(ranges)],
    }


def test_a_record_of_many_small_lists_is_decoded_each_read(decodings):
    """Copying 2,000 small lists cost 1.4 times decoding them (callgrind: 9.3M
    instructions a hit, 6.5M a decoding): such a record is not kept, read or
    written; a text-heavy one of as many bytes is."""
    memo = DecodedRecords()
    many = json.dumps(_lineage_shaped(2_000)).encode()
    few = json.dumps(_lineage_shaped(20)).encode()
    text = json.dumps({"generation": "g1", "text": "word " * 10_000}).encode()
    for _ in range(2):
        assert memo.decoded(NS, "many", many) == json.loads(many)
        assert memo.decoded(NS, "few", few) == json.loads(few)
        assert memo.decoded(NS, "text", text) == json.loads(text)
    assert decodings == [many, few, text, many]  # 20 lists and the text kept
    assert memo.size == len(few) + len(text)
    encoded = EncodedRecord(_lineage_shaped(2_000), many.decode())
    memo.wrote("lineage", SID, encoded.json_text, encoded)
    assert memo.size == len(few) + len(text)
    huge = json.dumps(_lineage_shaped(20_000)).encode()
    memo.decoded(NS, "huge", huge)
    assert memo.size == len(few) + len(text)
