"""``SpanRecordStore``: the active span and a record, read together as apart."""

from __future__ import annotations

import pytest

from memory_summary import MalformedRecord, Message
from memory_summary.domain import NO_SPAN, SpanRecordStore
from memory_summary.domain.capabilities import has_capability
from tests.contract.stores import kind_of, write_raw_metadata


def together(store, sid):
    if not has_capability(store, SpanRecordStore):
        assert kind_of(store) == "redis"  # every other shipped store has it
        pytest.skip("the store reads the span and the record apart")
    return store.span_and_metadata(sid, "summary")


def apart(store, sid):
    return store.active_span(sid), store.get_metadata("summary", sid)


def same(read, expected):
    (span, record), (want_span, want_record) = read, expected
    assert span.matches(want_span)
    assert (span.count, span.first_id, span.last_id) == (
        want_span.count,
        want_span.first_id,
        want_span.last_id,
    )
    assert record == want_record


def test_the_span_and_the_record_read_together_as_apart(store, sid):
    span, record = together(store, sid)
    assert span.matches(NO_SPAN)
    assert record is None
    for text in ("one", "two", "three"):
        store.save_message(sid, Message("user", text))
    same(together(store, sid), apart(store, sid))

    store.save_metadata("summary", sid, {"text": "s", "generation": "g1"})
    store.save_metadata("summary", "other", {"text": "o", "generation": "g2"})
    same(together(store, sid), apart(store, sid))
    _, record = together(store, sid)
    record["text"] = "changed"  # the caller's own: the stored record stays
    assert together(store, sid)[1] == {"text": "s", "generation": "g1"}

    store.save_message(sid, Message("system", "rules"))
    store.save_message(sid, Message("user", "four"))
    store.trim_history(sid, 1)  # the archive leaves the span, the record stays
    same(together(store, sid), apart(store, sid))
    assert together(store, sid)[0].count == 2

    store.delete_metadata("summary", sid)
    same(together(store, sid), apart(store, sid))
    store.clear_session(sid)
    same(together(store, sid), apart(store, sid))
    assert together(store, sid)[0].matches(NO_SPAN)


def test_a_record_without_messages_reads_with_the_empty_span(store, sid):
    store.save_metadata("summary", sid, {"text": "s", "generation": "g1"})
    span, record = together(store, sid)
    assert span.matches(NO_SPAN)
    assert record == {"text": "s", "generation": "g1"}


def test_a_foreign_record_reads_in_the_span_read_as_in_a_read(sql_store, sid):
    store = sql_store
    store.save_message(sid, Message("user", "one"))
    store.save_metadata("summary", sid, {"text": "mine", "generation": "g1"})
    assert together(store, sid)[1] == {"text": "mine", "generation": "g1"}

    # another program rewrites the record the store wrote: read anew, not the kept one
    write_raw_metadata(store, "summary", sid, '{"text": "theirs", "generation": "g9"}')
    same(together(store, sid), apart(store, sid))
    assert together(store, sid)[1] == {"text": "theirs", "generation": "g9"}

    # the very text the store wrote, written back: the store's record again
    write_raw_metadata(store, "summary", sid, read_written(store, sid))
    assert together(store, sid)[1] == {"text": "mine", "generation": "g1"}

    for raw in ("not json", "[1, 2]", '"text"'):
        write_raw_metadata(store, "summary", sid, raw)
        with pytest.raises(MalformedRecord):
            store.get_metadata("summary", sid)
        with pytest.raises(MalformedRecord):
            together(store, sid)


def read_written(store, sid):
    known = store._written.known("summary", sid)
    assert known is not None
    return known[0]
