from __future__ import annotations

import itertools
import json

import attrs
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import (
    SummaryRecord,
    Unreadable,
    add_unsummarized,
    drop_unsummarized_through,
    read_record,
)
from memory_summary.domain.text import normalize_text
from memory_summary.testing.strategies import id_ranges, json_like, summary_records


def is_canonical(ranges: tuple[tuple[int, int], ...]) -> bool:
    return all(first <= last for first, last in ranges) and all(
        before[1] + 1 < after[0] for before, after in itertools.pairwise(ranges)
    )


def ids_of(ranges) -> set[int]:
    return {i for first, last in ranges for i in range(first, last + 1)}


@given(data=json_like())
def test_read_record_never_raises_on_json_like_data(data):
    found = read_record(data)

    assert found is None or isinstance(found, (SummaryRecord, Unreadable))
    if isinstance(found, Unreadable):
        assert len(found.reason) < 200


@given(
    base=summary_records(),
    key=st.sampled_from(
        ["text", "tokens", "covered_through_id", "updated_at", "unsummarized"]
    ),
    value=json_like(),
)
def test_one_poisoned_field_never_makes_read_record_raise(base, key, value):
    data = {**base.to_mapping(), key: value}

    found = read_record(data)

    assert isinstance(found, (SummaryRecord, Unreadable))


@given(record=summary_records())
def test_every_valid_record_round_trips(record):
    assert read_record(record.to_mapping()) == record
    assert read_record(json.loads(json.dumps(record.to_mapping()))) == record


@given(record=summary_records(), text=st.text())
def test_a_read_record_is_normalized_and_reads_back_unchanged(record, text):
    found = read_record({**record.to_mapping(), "text": text})

    assert found == attrs.evolve(record, text=normalize_text(text))
    assert isinstance(found, SummaryRecord)
    assert read_record(found.to_mapping()) == found


@given(
    pairs=st.lists(
        st.tuples(st.integers(0, 60), st.integers(0, 20)).map(
            lambda p: (p[0], p[0] + p[1])
        ),
        max_size=8,
    )
)
def test_added_ranges_stay_sorted_disjoint_merged_and_cover_their_union(pairs):
    ranges: tuple[tuple[int, int], ...] = ()
    for first, last in pairs:
        ranges = add_unsummarized(ranges, first, last)

        assert is_canonical(ranges)
    assert ids_of(ranges) == ids_of(pairs)


@given(ranges=id_ranges(), through=st.integers(-1, 400))
def test_dropping_keeps_exactly_the_ids_above_the_bound(ranges, through):
    kept = drop_unsummarized_through(ranges, through)

    assert is_canonical(kept)
    assert ids_of(kept) == {i for i in ids_of(ranges) if i > through}


@given(ranges=id_ranges())
def test_canonical_ranges_are_a_fixed_point_of_reading(ranges):
    data = {"text": "t", "tokens": 1, "unsummarized": [list(r) for r in ranges]}

    found = read_record(data)

    assert isinstance(found, SummaryRecord)
    assert found.unsummarized == ranges


@given(base=summary_records(), value=json_like())
def test_a_poisoned_usage_field_never_costs_the_summary(base, value):
    found = read_record({**base.to_mapping(), "usage": value})

    assert isinstance(found, SummaryRecord)
    assert found.text == base.text
    assert found.usage.counted_calls <= found.usage.calls


@given(
    base=summary_records(),
    native=json_like()
    | st.fixed_dictionaries(
        {"provider": st.just("anthropic"), "model": st.none(), "block": json_like()}
    )
    | st.fixed_dictionaries(
        {
            "provider": st.just("anthropic"),
            "model": st.none() | st.text(max_size=20),
            "block": st.fixed_dictionaries(
                {"type": st.just("compaction"), "content": json_like()},
                optional={"signature": json_like(), "extra": json_like()},
            ),
        }
    ),
)
def test_a_poisoned_native_artifact_never_costs_the_record(base, native):
    found = read_record({**base.to_mapping(), "native": native})

    assert isinstance(found, SummaryRecord)
    assert attrs.evolve(found, native=None) == attrs.evolve(base, native=None)
    if found.native is not None:
        assert read_record(found.to_mapping()) == found
