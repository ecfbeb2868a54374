"""The calendar periods a query names (``domain.periods``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain.periods import Period, civil_date, named_periods


def _at(year: int, month: int, day: int, hour: int = 12) -> float:
    return datetime(year, month, day, hour, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize(
    ("query", "periods"),
    [
        ("What did Tim say on 16 November, 2023?", [Period(2023, 11, 16)]),
        ("What did Melanie show on October 13, 2023?", [Period(2023, 10, 13)]),
        ("Which book did Tim finish on 8th December, 2023?", [Period(2023, 12, 8)]),
        ("the picture shared on December 1,2023", [Period(2023, 12, 1)]),
        ("the 3rd of june", [Period(None, 6, 3)]),
        ("What did John host in May 2023?", [Period(2023, 5, None)]),
        ("When did Melanie go camping in June?", [Period(None, 6, None)]),
        ("How many times did she go to the beach in 2023?", [Period(2023)]),
        (
            "Where was John between August 11 and August 15 2023?",
            [Period(None, 8, 11), Period(2023, 8, 15)],
        ),
    ],
)
def test_a_query_names_the_periods_its_dates_say(query, periods) -> None:
    assert list(named_periods(query)) == periods


@pytest.mark.parametrize(
    "query",
    [
        "What may I bring?",  # the verb, not the month
        "Shall we march on?",
        "We were 30 people in room 7",
        "When did Caroline go to the LGBTQ support group?",
        "Is 3000 or 1899 a year?",  # outside 1900..2099
    ],
)
def test_a_query_without_a_date_names_no_period(query) -> None:
    assert named_periods(query) == ()


def test_a_query_keeps_its_first_periods_only() -> None:
    query = " ".join(f"in {year}" for year in range(2000, 2020))

    assert [p.year for p in named_periods(query)] == list(range(2000, 2008))


def test_a_day_holds_the_days_either_side_of_it_and_no_further() -> None:
    day = Period(2023, 10, 13)

    assert day.holds(_at(2023, 10, 13))
    assert day.holds(_at(2023, 10, 12, hour=1))  # a time zone ahead of UTC
    assert day.holds(_at(2023, 10, 14, hour=23))
    assert not day.holds(_at(2023, 10, 15))
    assert not day.holds(_at(2023, 10, 11))
    assert not day.holds(_at(2022, 10, 13))


def test_a_month_or_a_year_holds_exactly_its_days() -> None:
    assert Period(2023, 5).holds(_at(2023, 5, 31, hour=23))
    assert not Period(2023, 5).holds(_at(2023, 6, 1, hour=0))
    assert Period(None, 5).holds(_at(1999, 5, 2))
    assert Period(2024).holds(_at(2024, 1, 1, hour=0))
    assert not Period(2024).holds(_at(2023, 12, 31, hour=23))


@pytest.mark.parametrize("timestamp", [None, float("nan"), float("inf"), -1e300])
def test_a_message_without_a_usable_timestamp_is_in_no_period(timestamp) -> None:
    assert not Period(2023, 10, 13).holds(timestamp)


@given(days=st.integers(-719_162, 2_932_896))  # years 1 to 9999
def test_civil_date_is_the_gregorian_calendar(days) -> None:
    expected = datetime(1970, 1, 1) + timedelta(days=days)

    assert civil_date(days) == (expected.year, expected.month, expected.day)


@given(query=st.text(max_size=200))
def test_any_text_names_at_most_the_bounded_number_of_valid_periods(query) -> None:
    periods = named_periods(query)

    assert len(periods) <= 8
    for period in periods:
        assert period.month is None or 1 <= period.month <= 12
        assert period.day is None or (1 <= period.day <= 31 and period.month)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What happened in Augu\u017ft 2023?", (Period(2023),)),  # a long s: no month
        ("apr\u0131l 2023", (Period(2023),)),  # a dotless i
        ("APR\u0130L 2023", (Period(2023),)),
        ("in 20\u0662\u0663", ()),  # other scripts' digits are no year
        ("may 10 people come?", ()),  # the verb, even before a number
        ("march 3", ()),
        ("May 3", (Period(None, 5, 3),)),
        ("May I ask what Tim did?", ()),  # the verb, capitalized at the start
        ("May we bring friends? It was in May.", (Period(None, 5),)),
        ("May not be true", ()),
        ("May it rain in March 2023?", (Period(2023, 3),)),
        ("on 31 February 2023", (Period(2023, 2),)),  # no such day: the month
        ("29 February 2023", (Period(2023, 2),)),
        ("29 February 2024", (Period(2024, 2, 29),)),
        ("29 February", (Period(None, 2, 29),)),
        ("31 April", (Period(None, 4),)),
    ],
)
def test_odd_letters_verbs_and_days_no_month_has(query, named):
    assert named_periods(query) == named
