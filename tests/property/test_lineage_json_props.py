"""The lineage's JSON, made from each version's own, is what encoding it whole gives."""

from __future__ import annotations

import copy
import json
import pickle

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.adapters.stores.rows import metadata_json
from memory_summary.domain import EncodedRecord, StoreError
from memory_summary.domain.lineage import (
    encoded_lineage,
    lineage_mapping,
    read_lineage,
    version_json,
)
from memory_summary.domain.recall import SummaryVersion
from memory_summary.domain.text import normalize_text

ids = st.integers(min_value=0, max_value=2**53)
texts = st.text()  # any code point: quotes, controls, CJK, lone surrogates


@st.composite
def versions(draw: st.DrawFn) -> SummaryVersion:
    first = draw(st.none() | ids)
    last = None if first is None else draw(st.integers(first, first + 10**6))
    created = draw(st.floats(min_value=0, max_value=4e9, allow_nan=False))
    return SummaryVersion(draw(ids), first, last, created, draw(texts))


ranges = st.tuples(ids, ids, ids)


@given(st.lists(versions(), max_size=6), st.lists(ranges, max_size=6), texts)
def test_the_joined_json_is_the_whole_records_json(kept, spans, generation):
    record = encoded_lineage(kept, spans, generation, [version_json(v) for v in kept])

    whole = json.dumps(
        lineage_mapping(kept, spans, generation), ensure_ascii=False, allow_nan=False
    )
    assert record.json_text == whole
    assert record == json.loads(whole)


@given(st.lists(versions(), min_size=1, max_size=4), texts)
def test_a_store_keeps_the_json_as_made_or_refuses_it_as_it_would_any(kept, gen):
    record = encoded_lineage(kept, [], gen, [version_json(v) for v in kept])

    try:
        plain = metadata_json("summary.versions", "s", dict(record))
    except StoreError:  # a lone surrogate: refused the same way made or not
        with pytest.raises(StoreError, match="lone surrogate"):
            metadata_json("summary.versions", "s", record)
        return
    assert metadata_json("summary.versions", "s", record) == plain
    stored = read_lineage(json.loads(plain))
    assert stored.generation == gen
    # read as a record's text is: a NUL dropped (no lone surrogate got this far)
    assert stored.versions == tuple(
        attrs.evolve(v, summary=normalize_text(v.summary)) for v in kept
    )


def test_an_encoded_record_cannot_be_changed_to_say_something_else():
    record = EncodedRecord({"a": 1, "v": [{"s": "x"}]}, '{"a": 1, "v": [{"s": "x"}]}')
    inner = record["v"][0]

    for change in (
        lambda: record.__setitem__("a", 2),
        lambda: record.update(a=2),
        lambda: record.pop("a"),
        lambda: record.setdefault("b", 2),
        lambda: record.clear(),
        lambda: inner.__setitem__("s", "y"),  # nor what it holds
        lambda: inner.update(s="y"),
        lambda: record["v"].append(1),
        lambda: record["v"].__setitem__(0, 1),
    ):
        with pytest.raises((TypeError, AttributeError)):
            change()
    assert json.loads(record.json_text) == record


def test_a_copy_of_an_encoded_record_is_plain_and_free_to_edit():
    """A store that copies and redacts gets its redaction written, not the old JSON."""
    record = EncodedRecord({"v": [{"s": "card 4111"}]}, '{"v": [{"s": "card 4111"}]}')

    for copied in (
        copy.copy(record),
        copy.deepcopy(record),
        pickle.loads(pickle.dumps(record)),
    ):
        assert type(copied) is dict
        copied["v"][0]["s"] = "[redacted]"
        assert json.loads(metadata_json("ns", "s", copied)) == {
            "v": [{"s": "[redacted]"}]
        }
    assert record["v"][0]["s"] == "card 4111"
