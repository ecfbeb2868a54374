from __future__ import annotations

import pytest

from memory_summary.domain import (
    NO_USAGE,
    Message,
    SummarizerUsage,
    SummaryRecord,
    TokenUsage,
    ToolCall,
    counted_usage,
    message_tokens,
    read_record,
    read_usage,
    total_usage,
)


def test_a_call_adds_tokens_time_and_marks_counted_ones():
    usage = NO_USAGE.with_call(TokenUsage(100, 20), counted=False, seconds=1.5)

    both = usage.with_call(TokenUsage(10, 2), counted=True, seconds=0.5)

    assert (both.input_tokens, both.output_tokens, both.total_tokens) == (110, 22, 132)
    assert (both.calls, both.counted_calls, both.summarizer_s) == (2, 1, 2.0)
    assert (NO_USAGE.source, usage.source, both.source) == (None, "provider", "mixed")
    counted = NO_USAGE.with_call(TokenUsage(1, 1), counted=True, seconds=0)
    assert counted.source == "counted"


def test_totals_saturate_instead_of_overflowing_a_bigint():
    huge = SummarizerUsage(2**63 - 1, 0, 1, 0, 0.0)

    assert huge.plus(huge).input_tokens == 2**63 - 1


def test_total_usage_sums_any_number():
    one = SummarizerUsage(3, 4, 1, 1, 0.25)

    assert total_usage([one, one, one]) == SummarizerUsage(9, 12, 3, 3, 0.75)
    assert total_usage([]) == NO_USAGE


def test_usage_round_trips_through_its_mapping():
    usage = SummarizerUsage(5, 6, 2, 1, 0.125)

    assert read_usage(usage.to_mapping()) == usage


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "lots",
        [1, 2],
        {"input_tokens": "5"},
        {"input_tokens": -1},
        {"input_tokens": True},
        {"output_tokens": 2**64},
        {"calls": 1.5},
        {"summarizer_s": float("nan")},
        {"summarizer_s": -1.0},
        {"summarizer_s": "1"},
        {"summarizer_s": 10**400},
    ],
    ids=repr,
)
def test_malformed_usage_reads_as_none_and_never_raises(raw):
    assert read_usage(raw) == NO_USAGE


def test_counted_calls_never_exceed_calls_on_read():
    assert read_usage({"calls": 1, "counted_calls": 9}).counted_calls == 1


def test_an_old_record_without_usage_reads_with_none():
    old = {"text": "Likes tea.", "covered_through_id": 4, "tokens": 3}

    record = read_record(old)

    assert isinstance(record, SummaryRecord)
    assert record.usage == NO_USAGE


def test_a_malformed_usage_field_keeps_the_summary():
    stored = {"text": "Likes tea.", "covered_through_id": 4, "tokens": 3}

    record = read_record({**stored, "usage": {"input_tokens": "a lot"}})

    assert isinstance(record, SummaryRecord)
    assert record.text == "Likes tea."
    assert record.usage == NO_USAGE


def test_a_record_stores_its_usage_as_a_mapping():
    usage = SummarizerUsage(7, 8, 1, 0, 2.0)
    record = SummaryRecord("Likes tea.", 4, 3, usage=usage)

    mapping = record.to_mapping()

    assert mapping["usage"] == {
        "input_tokens": 7,
        "output_tokens": 8,
        "calls": 1,
        "counted_calls": 0,
        "summarizer_s": 2.0,
    }
    assert read_record(mapping) == record


def test_counted_usage_counts_texts_and_tool_calls():
    call = ToolCall("c1", "search", '{"q": "tea"}')
    request = [Message("system", "abc"), Message("assistant", "de", tool_calls=[call])]

    usage = counted_usage(request, "xyz!", len)

    assert usage == TokenUsage(3 + 2 + len("search") + len('{"q": "tea"}'), 4)
    assert message_tokens(request[1], len) == 2 + 6 + 12 + 4 + 3  # with framing


def test_an_estimated_call_is_marked_and_read_back() -> None:
    from memory_summary.domain import TokenUsage
    from memory_summary.domain.usage import read_usage

    usage = SummarizerUsage().with_call(
        TokenUsage(100, 20), counted=True, seconds=1, estimated=True
    )
    assert usage.is_estimate
    assert usage.estimated_calls == 1
    assert read_usage(usage.to_mapping()) == usage
    provider = SummarizerUsage().with_call(
        TokenUsage(1, 1), counted=False, seconds=0, estimated=True
    )
    assert not provider.is_estimate  # a provider's figures are never estimates
