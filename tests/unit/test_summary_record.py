from __future__ import annotations

import json

import pytest

from memory_summary.domain import (
    QUARANTINE_NAMESPACE,
    MalformedRecord,
    StoreError,
    SummaryRecord,
    Unreadable,
    add_unsummarized,
    drop_unsummarized_through,
    read_record,
    resummarized_record,
    trimmed_record,
)

SECRET = "my card is 4111 1111 1111 1111"


def full_record() -> SummaryRecord:
    return SummaryRecord(
        text="The user likes tea.",
        covered_through_id=40,
        tokens=6,
        summarized_count=35,
        compressions=3,
        model="gpt-4o-mini",
        updated_at=1_700_000_000.5,
        generation="g-1",
        unsummarized=((3, 5), (9, 12)),
    )


def test_to_mapping_is_json_compatible_with_ranges_as_lists():
    mapping = full_record().to_mapping()

    assert mapping["unsummarized"] == [[3, 5], [9, 12]]
    assert mapping["generation"] == "g-1"
    assert json.loads(json.dumps(mapping)) == mapping


def test_a_record_round_trips_through_json():
    record = full_record()

    assert read_record(json.loads(json.dumps(record.to_mapping()))) == record


def test_none_reads_as_no_record():
    assert read_record(None) is None


def test_a_record_without_the_new_fields_still_reads():
    data = {"text": "t", "covered_through_id": 9, "tokens": 1, "updated_at": 2}

    record = read_record(data)

    assert record == SummaryRecord(
        text="t", covered_through_id=9, tokens=1, updated_at=2.0
    )
    assert isinstance(record, SummaryRecord)
    assert isinstance(record.updated_at, float)


def test_unknown_keys_of_a_newer_version_are_ignored():
    data = {**full_record().to_mapping(), "pinned_facts": ["x"]}

    assert read_record(data) == full_record()


def test_the_original_plugins_shape_reads_as_a_record_covering_no_id():
    data = {"summary": "Likes tea.", "coveredUpTo": 30, "messageCount": 30}

    record = read_record(data)

    assert record == SummaryRecord(
        text="Likes tea.", covered_through_id=None, tokens=0, summarized_count=30
    )


@pytest.mark.parametrize("count", [None, "30", -1, True, 2.5, 10**400])
def test_a_plugin_record_with_an_odd_message_count_still_reads(count):
    record = read_record({"summary": "Likes tea.", "messageCount": count})

    assert isinstance(record, SummaryRecord)
    assert record.summarized_count == 0
    assert record.text == "Likes tea."


def test_stored_text_is_normalized_on_read():
    record = read_record({"text": "a\x00b\ud800", "tokens": 1, "model": "m\x00"})

    assert isinstance(record, SummaryRecord)
    assert record.text == "ab\ufffd"
    assert record.model == "m"


@pytest.mark.parametrize(
    ("data", "names"),
    [
        ({"summary": 5}, ["'summary'", "int"]),
        ({}, ["neither"]),
        ("a summary", ["str"]),
        (42, ["int"]),
        (3.5, ["float"]),
        ([{"text": "t"}], ["list"]),
        (True, ["bool"]),
        ({"text": 5, "tokens": 1}, ["'text'", "int"]),
        ({"text": "t"}, ["'tokens'", "missing"]),
        ({"text": "t", "tokens": True}, ["'tokens'", "bool"]),
        ({"text": "t", "tokens": -1}, ["'tokens'", "range"]),
        ({"text": "t", "tokens": 1, "compressions": -2}, ["'compressions'"]),
        ({"text": "t", "tokens": 1, "summarized_count": 1.0}, ["float"]),
        ({"text": "t", "tokens": 1, "covered_through_id": "9"}, ["str"]),
        ({"text": "t", "tokens": 1, "covered_through_id": 2**63}, ["range"]),
        ({"text": "t", "tokens": 1, "updated_at": 10**400}, ["'updated_at'"]),
        ({"text": "t", "tokens": 1, "updated_at": float("nan")}, ["'updated_at'"]),
        ({"text": "t", "tokens": 1, "updated_at": float("inf")}, ["'updated_at'"]),
        ({"text": "t", "tokens": 1, "updated_at": -1.0}, ["'updated_at'"]),
        ({"text": "t", "tokens": 1, "updated_at": False}, ["bool"]),
        ({"text": "t", "tokens": 1, "updated_at": "now"}, ["str"]),
        ({"text": "t", "tokens": 1, "model": 3}, ["'model'", "int"]),
        ({"text": "t", "tokens": 1, "generation": 7}, ["'generation'"]),
        ({"text": "t", "tokens": 1, "unsummarized": "1-3"}, ["'unsummarized'"]),
        ({"text": "t", "tokens": 1, "unsummarized": [[3, 1]]}, ["'unsummarized'"]),
        ({"text": "t", "tokens": 1, "unsummarized": [[1, 2, 3]]}, ["list"]),
        ({"text": "t", "tokens": 1, "unsummarized": [5]}, ["int"]),
        ({"text": "t", "tokens": 1, "unsummarized": [[1, True]]}, ["'unsummarized'"]),
        ({"text": "t", "tokens": 1, "unsummarized": [[-1, 2]]}, ["'unsummarized'"]),
    ],
)
def test_anything_else_is_unreadable_with_a_reason_naming_keys_and_types(data, names):
    found = read_record(data)

    assert isinstance(found, Unreadable)
    for name in names:
        assert name in found.reason


def test_an_unreadable_reason_never_quotes_the_stored_text():
    for data in (
        {"text": SECRET.encode(), "tokens": 1},
        {"summary": [SECRET]},
        {SECRET: SECRET},
        {"text": SECRET, "tokens": SECRET},
        {"text": SECRET, "tokens": 1, "model": [SECRET]},
    ):
        found = read_record(data)

        assert isinstance(found, Unreadable)
        assert "4111" not in found.reason


def test_the_reason_lists_a_few_keys_and_counts_the_rest():
    found = read_record({f"key{n}": n for n in range(9)})

    assert isinstance(found, Unreadable)
    assert "'key0'" in found.reason
    assert "+3 more" in found.reason


def test_overlapping_ranges_are_merged_on_read():
    data = {
        "text": "t",
        "tokens": 1,
        "unsummarized": [[9, 12], [1, 3], [4, 5], [11, 20]],
    }

    record = read_record(data)

    assert isinstance(record, SummaryRecord)
    assert record.unsummarized == ((1, 5), (9, 20))


def test_from_mapping_wraps_read_record_and_raises_a_store_error():
    assert SummaryRecord.from_mapping(full_record().to_mapping()) == full_record()
    with pytest.raises(MalformedRecord, match="'text' is int"):
        SummaryRecord.from_mapping({"text": 3, "tokens": 1})
    with pytest.raises(StoreError):
        SummaryRecord.from_mapping({"text": "t", "tokens": True})


def test_the_quarantine_namespace_is_next_to_the_summary_namespace():
    assert QUARANTINE_NAMESPACE == "summary.quarantine"


def test_a_record_refuses_ranges_that_are_not_canonical():
    with pytest.raises(ValueError, match="unsummarized"):
        SummaryRecord("t", None, 0, unsummarized=((1, 3), (4, 5)))
    with pytest.raises(ValueError, match="unsummarized"):
        SummaryRecord("t", None, 0, unsummarized=((5, 4),))


def test_record_ranges_given_as_lists_become_tuples():
    record = SummaryRecord("t", None, 0, unsummarized=[[1, 2], [5, 6]])

    assert record.unsummarized == ((1, 2), (5, 6))
    assert hash(record) == hash(
        SummaryRecord("t", None, 0, unsummarized=((1, 2), (5, 6)))
    )


@pytest.mark.parametrize(
    ("ranges", "first", "last", "expected"),
    [
        ((), 4, 6, ((4, 6),)),
        (((1, 3),), 4, 6, ((1, 6),)),
        (((1, 3),), 5, 6, ((1, 3), (5, 6))),
        (((5, 6),), 1, 3, ((1, 3), (5, 6))),
        (((1, 3), (9, 12)), 2, 10, ((1, 12),)),
        (((1, 3), (9, 12)), 4, 8, ((1, 12),)),
        (((1, 30),), 4, 8, ((1, 30),)),
        (((1, 1),), 1, 1, ((1, 1),)),
    ],
)
def test_add_unsummarized_merges_overlapping_and_adjacent_ranges(
    ranges, first, last, expected
):
    assert add_unsummarized(ranges, first, last) == expected


def test_add_unsummarized_refuses_a_reversed_range():
    with pytest.raises(ValueError, match="first <= last"):
        add_unsummarized((), 5, 4)


@pytest.mark.parametrize(
    ("through", "expected"),
    [
        (0, ((1, 3), (5, 9))),
        (1, ((2, 3), (5, 9))),
        (3, ((5, 9),)),
        (4, ((5, 9),)),
        (6, ((7, 9),)),
        (9, ()),
        (100, ()),
    ],
)
def test_drop_unsummarized_through_removes_ids_up_to_the_bound(through, expected):
    assert drop_unsummarized_through(((1, 3), (5, 9)), through) == expected


def test_a_trim_keeps_the_text_and_records_the_range():
    before = full_record()

    after = trimmed_record(before, first_id=41, last_id=50, generation="g-2", now=9.0)

    assert after.text == before.text
    assert after.tokens == before.tokens
    assert after.covered_through_id == 40
    assert (after.summarized_count, after.compressions) == (35, 3)
    assert after.unsummarized == ((3, 5), (9, 12), (41, 50))
    assert (after.generation, after.updated_at) == ("g-2", 9.0)


def test_a_trim_without_a_previous_record_starts_an_empty_one():
    after = trimmed_record(None, first_id=1, last_id=10, generation="g-1", now=5.0)

    assert after == SummaryRecord(
        text="",
        covered_through_id=None,
        tokens=0,
        updated_at=5.0,
        generation="g-1",
        unsummarized=((1, 10),),
    )


def test_consecutive_trims_merge_into_one_range():
    first = trimmed_record(None, first_id=1, last_id=10, generation="a", now=1.0)

    second = trimmed_record(first, first_id=11, last_id=20, generation="b", now=2.0)

    assert second.unsummarized == ((1, 20),)


def test_resummarizing_replaces_the_text_and_drops_ranges_through_the_bound():
    before = full_record()

    after = resummarized_record(
        before,
        text="Tea, and the billing fix.",
        tokens=7,
        through_id=10,
        folded=5,
        model="m2",
        generation="g-3",
        now=10.0,
    )

    assert (after.text, after.tokens, after.model) == (
        "Tea, and the billing fix.",
        7,
        "m2",
    )
    assert after.unsummarized == ((11, 12),)
    assert after.covered_through_id == 40  # only moves forward
    assert (after.summarized_count, after.compressions) == (40, 4)
    assert (after.generation, after.updated_at) == ("g-3", 10.0)


def test_resummarizing_past_the_covered_id_moves_it_forward():
    trimmed = trimmed_record(None, first_id=1, last_id=10, generation="a", now=1.0)

    after = resummarized_record(
        trimmed,
        text="s",
        tokens=1,
        through_id=10,
        folded=10,
        model=None,
        generation="b",
        now=2.0,
    )

    assert after.covered_through_id == 10
    assert after.unsummarized == ()


def test_resummarizing_refuses_a_negative_fold_count():
    with pytest.raises(ValueError, match="folded"):
        resummarized_record(
            full_record(),
            text="s",
            tokens=1,
            through_id=5,
            folded=-1,
            model=None,
            generation="g",
            now=0.0,
        )
