"""The lineage's JSON, made from each version's own, is what encoding it whole gives."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Mapping
from types import MappingProxyType

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.actors.lineage import VersionEntries
from memory_summary.adapters.stores.rows import metadata_json
from memory_summary.domain import EncodedRecord, StoreError
from memory_summary.domain.lineage import (
    encoded_lineage,
    lineage_mapping,
    read_lineage,
    version_json,
)
from memory_summary.domain.recall import SummaryVersion
from memory_summary.domain.text import encodes_to_utf8, normalize_text

ids = st.integers(min_value=0, max_value=2**53)
texts = st.text()  # any code point: quotes, controls, CJK, lone surrogates


@st.composite
def versions(draw: st.DrawFn) -> SummaryVersion:
    first = draw(st.none() | ids)
    last = None if first is None else draw(st.integers(first, first + 10**6))
    created = draw(st.floats(min_value=0, max_value=4e9, allow_nan=False))
    return SummaryVersion(draw(ids), first, last, created, draw(texts))


ranges = st.tuples(ids, ids, ids)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# st.text() draws no surrogate: these mix some in, with wide and Latin-1 text
odd_texts = st.text() | st.text(st.sampled_from("a é“”中😀\ud800\udfff\x00"))


@st.composite
def odd_versions(draw: st.DrawFn) -> SummaryVersion:
    return attrs.evolve(draw(versions()), summary=draw(odd_texts))


@given(odd_texts)
def test_encodes_to_utf8_is_what_the_utf8_encoder_says(text):
    assert encodes_to_utf8(text) == _utf8(text)


@given(
    st.lists(odd_versions(), min_size=1, max_size=4),
    st.lists(odd_versions(), max_size=3),
    st.booleans(),
    odd_texts,
)
def test_a_checked_record_says_so_only_when_its_json_encodes_to_utf8(
    first, then, said, gen
):
    """The writer's path: entries checked once, kept, reused by the next write."""
    entries = VersionEntries()
    made, token, utf8 = entries.checked_entries("s", first)
    assert utf8 == all(_utf8(e) for e in made)
    entries.written("s", first, made, token, utf8=utf8 and said)
    kept = [*first, *then]
    made, _, utf8 = entries.checked_entries("s", kept)
    assert made == tuple(version_json(v) for v in kept)
    assert utf8 == all(_utf8(e) for e in made)
    record = encoded_lineage(kept, [], gen, made, entries_utf8=utf8)
    assert record.utf8_safe == _utf8(record.json_text)
    try:
        plain = metadata_json("summary.versions", "s", dict(record))
    except StoreError:  # refused as made, checked or not
        assert not record.utf8_safe
        with pytest.raises(StoreError, match="lone surrogate"):
            metadata_json("summary.versions", "s", record)
        return
    assert metadata_json("summary.versions", "s", record) == plain


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


def test_an_encoded_record_keeps_its_own_frozen_lists_of_scalars():
    """A lineage's ranges: lists of ints, frozen without a look at each value."""
    ranges = [[1, 2, 3], (4, 5, 6)]
    record = EncodedRecord({"ranges": ranges}, '{"ranges": [[1, 2, 3], [4, 5, 6]]}')
    ranges[0].append(9)  # the caller's lists are not the record's

    for change in (
        lambda: record["ranges"].append([7, 8, 9]),
        lambda: record["ranges"][0].append(4),
        lambda: record["ranges"][1].__setitem__(0, 0),
    ):
        with pytest.raises(TypeError):
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


def _plain(value: object) -> object:
    """What JSON would give back for ``value``: dicts and lists all the way down."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _containers(value: object) -> list[object]:
    """Every mapping and array inside ``value``, ``value`` included."""
    if isinstance(value, Mapping):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
json_values = st.recursive(
    json_scalars | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(MappingProxyType)
    ),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=3), json_values, max_size=4))
def test_an_encoded_record_freezes_every_container_it_holds(record):
    """Dicts, lists, tuples and other mappings at any depth; scalars kept as given."""
    encoded = EncodedRecord(record, "{}")

    assert encoded == _plain(record)
    for container in _containers(encoded):
        assert type(container).__name__ in ("EncodedRecord", "_Frozen", "_FrozenList")
        with pytest.raises(TypeError):
            container.clear()  # type: ignore[attr-defined]


@given(st.lists(versions(), max_size=4), st.lists(ranges, max_size=4), texts)
def test_the_memory_store_keeps_a_lineage_as_its_json_decodes(kept, spans, gen):
    from memory_summary.adapters.stores.memory.store import _decoded

    record = encoded_lineage(kept, spans, gen, [version_json(v) for v in kept])
    kept_copy = _decoded(record, record.json_text)
    decoded = json.loads(record.json_text)
    assert kept_copy == decoded
    assert json.dumps(kept_copy, ensure_ascii=False) == record.json_text
    assert type(kept_copy["versions"]) is list  # plain, free to edit
    assert all(type(v) is dict for v in kept_copy["versions"])
