"""The calendar periods a query names: "on October 13, 2023", "in May 2023".

A history search whose query names a date asks about what was said then
("What did Tim say about his injury on 16 November, 2023?"): ``domain.ranking``
lets the messages whose ``timestamp`` falls in a named period score more
(``by_named_period``). A period is read from English dates:

- a day: "13 October 2023", "October 13, 2023", "8th of December", "May 3";
- a month: "May 2023", "December, 2023", and a month named alone with a capital
  letter ("in June"); "may" and "march" are months only with a capital letter in
  every form ("may 10 people come?" names no date) and not before a pronoun or
  "not" ("May I ask...?"), and a day the month does not have ("31 February")
  names none;
- a year: "in 2023" (1900 to 2099).

A period without a year holds in any year. A day also holds the days either side
of it (``DAY_SLACK_DAYS``): a timestamp's day is read in UTC, while whoever wrote the
query counted days where they live. Only the first ``MAX_PERIODS`` periods count.
"""

from __future__ import annotations

import functools
import math
import re

import attrs

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
DAY_SLACK_DAYS = 1
"""A named day also holds this many days before and after it (time zones)."""
MAX_PERIODS = 8
"""A query's periods past this many are ignored."""
SECONDS_PER_DAY = 86_400

_MONTH = "(?P<month>" + "|".join(MONTHS) + ")"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
# Longest forms first: each match is blanked out before the next pattern reads.
# ASCII only: a long s or a dotless i is no "s" or "i"; no digits of other scripts.
_FLAGS = re.IGNORECASE | re.ASCII
_PATTERNS = (
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b,?\s*(?:{_YEAR}\b)?", _FLAGS),
    re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\d),?\s*(?:{_YEAR}\b)?", _FLAGS),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", _FLAGS),
    re.compile(rf"\b{_MONTH}\b", _FLAGS),
    re.compile(rf"\b{_YEAR}\b", re.ASCII),
)
_ALONE = 3  # the pattern of a month named alone
_VERBS = frozenset({"may", "march"})
"""Months that are also verbs: a month only when capitalized ("May 3", not "may 10")."""
_ASKING = re.compile(r"\s+(?:i|we|you|he|she|they|it|one|someone|not)\b", _FLAGS)
"""What follows a capitalized "May" or "March" that is the verb ("May I ask..."),
checked where the month is named alone."""
_DAYS_IN = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # 29 February: leap years
_ANY = re.compile(rf"{_MONTH}|{_YEAR}", _FLAGS)  # most queries name no date


@attrs.frozen
class Period:
    """A year, a month or a day of the calendar; None parts hold any value.

    Attributes:
        year: e.g. 2023, or None (any year).
        month: 1 to 12, or None (the whole year).
        day: 1 to 31, or None (the whole month); only with a month.
    """

    year: int | None = None
    month: int | None = None
    day: int | None = None

    def holds(self, timestamp: float | None) -> bool:
        """Tell whether ``timestamp`` (seconds since the epoch, UTC) falls in it.

        >>> Period(2023, 10, 13).holds(1697155200.0)  # 2023-10-13 00:00 UTC
        True
        >>> Period(2023, 10, 13).holds(1697155200.0 + 2 * 86_400)
        False
        >>> Period(None, 10, None).holds(1697155200.0), Period(2024).holds(None)
        (True, False)
        """
        if timestamp is None or not math.isfinite(timestamp):
            return False
        days = math.floor(timestamp / SECONDS_PER_DAY)
        slack = DAY_SLACK_DAYS if self.day is not None else 0
        return any(
            self._holds_date(*civil_date(days + offset))
            for offset in range(-slack, slack + 1)
        )

    def _holds_date(self, year: int, month: int, day: int) -> bool:
        return (
            (self.year is None or self.year == year)
            and (self.month is None or self.month == month)
            and (self.day is None or self.day == day)
        )


def civil_date(days: int) -> tuple[int, int, int]:
    """Return the Gregorian (year, month, day) ``days`` days after 1970-01-01.

    Negative ``days`` are before it; years before 1 are astronomical (0 is 1 BC).

    >>> civil_date(0), civil_date(19_643), civil_date(-1)
    ((1970, 1, 1), (2023, 10, 13), (1969, 12, 31))
    """
    # H. Hinnant's days-to-civil: eras of 400 years (146,097 days) from 0000-03-01.
    shifted = days + 719_468
    era = shifted // 146_097
    of_era = shifted - era * 146_097
    year_of_era = (
        of_era - of_era // 1_460 + of_era // 36_524 - of_era // 146_096
    ) // 365
    day_of_year = of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    year = year_of_era + era * 400 + (month <= 2)
    return year, month, day


def named_periods(query: str) -> tuple[Period, ...]:
    """Return the periods ``query`` names, longest forms first (at most 8).

    >>> named_periods("What did Tim say on 16 November, 2023 and in May 2024?")
    (Period(year=2023, month=11, day=16), Period(year=2024, month=5, day=None))
    >>> named_periods("When did Melanie go camping in June?")
    (Period(year=None, month=6, day=None),)
    >>> named_periods("What may I bring for 30 people in 2099 or 1800?")
    (Period(year=2099, month=None, day=None),)
    >>> named_periods("May I ask what Tim did in May?")
    (Period(year=None, month=5, day=None),)
    """
    if not _ANY.search(query):
        return ()
    found: list[Period] = []
    for at, pattern in enumerate(_PATTERNS):
        query = pattern.sub(functools.partial(_read, at=at, found=found), query)
    return tuple(found[:MAX_PERIODS])


def _read(match: re.Match[str], *, at: int, found: list[Period]) -> str:
    """Add the period ``match`` names to ``found``; blank it out if it names one."""
    parts = match.groupdict()
    month_name = parts.get("month")
    if (
        month_name is not None
        and not month_name[0].isupper()
        and (month_name.lower() in _VERBS or at == _ALONE)
    ):
        return match.group()  # "may", "march": verbs; "in june": not a date
    if (
        at == _ALONE
        and month_name is not None
        and month_name.lower() in _VERBS
        and _ASKING.match(match.string, match.end())
    ):
        return match.group()  # "May I ask...", "March we on?": the verb
    month = MONTHS.index(month_name.lower()) + 1 if month_name else None
    year = int(parts["year"]) if parts.get("year") else None
    day = int(parts["day"]) if parts.get("day") else None
    if day is not None and month is not None and not 1 <= day <= _DAYS_IN[month - 1]:
        return match.group()  # "31 February": no day; "February 2023" still reads
    if day == 29 and month == 2 and year is not None and not _leap(year):
        return match.group()
    found.append(Period(year=year, month=month, day=day))
    return " "


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
